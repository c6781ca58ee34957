"""The JSON report's schema (issues 5, 15): generated from the typed model (eagle3_lint/report/schema.py),
shipped as the file ``eagle3-lint schema json`` prints, snapshot-tested per schema_version so a change is
a decision, and real reports (every sample tree, real releases) validate against it strictly."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from eagle3_lint.outcome import json_report
from eagle3_lint.report import SCHEMA_VERSION
from eagle3_lint.report.sarif import SARIF_SCHEMA
from eagle3_lint.report.schema import DATA_FILE, schema_text
from tests.cihelp import (
    REPO,
    breaking_changes,
    cli,
    cli_json,
    report_schema,
    run_case,
    sample,
    sample_cases,
    sarif_schema,
    validate_report,
)

SNAPSHOT = REPO / "tests" / "snapshots" / f"report.schema.v{SCHEMA_VERSION}.json"


def test_schema_matches_snapshot(tmp_path: Path) -> None:
    """The schema ``eagle3-lint schema json`` prints is the generated one, and equals the snapshot of its
    schema_version: any change to the model fails here until someone decides. An additive change may
    refresh the snapshot (EAGLE3_LINT_REGEN=1); a breaking one cannot, it needs a new schema_version."""
    p = cli("schema", "json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == schema_text(), "data/report.schema.json is stale: python scripts/report_schema.py --write"
    assert SNAPSHOT.is_file(), f"no snapshot for schema_version {SCHEMA_VERSION}: create {SNAPSHOT.name} deliberately"
    recorded = SNAPSHOT.read_text(encoding="utf-8")
    breaking = breaking_changes(json.loads(recorded), json.loads(p.stdout))
    assert not breaking, (f"breaking change to schema_version {SCHEMA_VERSION}: bump report.SCHEMA_VERSION "
                          "and add a new snapshot:\n" + "\n".join(breaking))
    if os.environ.get("EAGLE3_LINT_REGEN"):
        SNAPSHOT.write_text(p.stdout, encoding="utf-8")
        recorded = p.stdout
    assert p.stdout == recorded, (
        "the report schema changed (additively: nothing breaking was found); if that is meant, refresh the "
        "snapshot with EAGLE3_LINT_REGEN=1 and keep schema_version")


def test_schema_is_valid_and_versioned() -> None:
    schema = report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["schema_version"] == {"const": SCHEMA_VERSION}


def test_data_file_is_generated() -> None:
    """The shipped file is the generator's output, byte for byte (nobody edits it by hand)."""
    assert DATA_FILE.read_text(encoding="utf-8") == schema_text()
    p = subprocess.run([sys.executable, "scripts/report_schema.py", "--check"], cwd=REPO, capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr


def test_breaking_changes_are_told_from_additive_ones() -> None:
    """The snapshot test's judge, on the real schema: what it calls additive is, what it calls breaking is."""
    base = report_schema()
    assert breaking_changes(base, base) == []

    def changed(edit: Any) -> list[str]:
        new = copy.deepcopy(base)
        edit(new)
        return breaking_changes(base, new)

    def finding(s: dict[str, Any]) -> Any:
        return s["$defs"]["finding"]

    # Additive: a new optional property, a new definition, a reworded description.
    assert changed(lambda s: finding(s)["properties"].update(hint={"type": "string"})) == []
    assert changed(lambda s: s["$defs"].update(extra={"type": "object"})) == []
    assert changed(lambda s: finding(s)["properties"]["path"].update(description="where")) == []
    # Breaking: removed, newly required, retyped, narrowed enum, a new constraint.
    assert changed(lambda s: finding(s)["properties"].pop("message")) == ["/$defs/finding/properties/message: removed"]
    assert changed(lambda s: finding(s)["required"].append("title")) == [
        "/$defs/finding/required: ['title'] now required, [] no longer"]
    assert changed(lambda s: finding(s)["properties"]["line"].update(type="string"))
    assert changed(lambda s: s["$defs"]["severity"]["enum"].remove("note"))
    assert changed(lambda s: s["properties"]["target"]["properties"]["root"].update(minLength=1)) == [
        "/properties/target/properties/root/minLength: added to an existing node"]
    # The model itself: dropping a field of the report is breaking against the recorded snapshot.
    recorded = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    without = copy.deepcopy(recorded)
    del without["properties"]["contract"]["properties"]["mixin"]
    assert "/properties/contract/properties/mixin: removed" in breaking_changes(recorded, without)


def test_model_covers_the_analysis_types() -> None:
    """Objects copied field by field into the report (report/build.py: _copy) are declared whole in the
    model, so a field added to the analysis types shows up here instead of silently missing from the report."""
    import dataclasses

    from eagle3_lint import contract, runner
    from eagle3_lint.report import schema as rs

    for analysis_type, model_type in ((contract.ContractMember, rs.Member), (runner.RunnerSite, rs.RunnerSite),
                                      (runner.Gate, rs.Gate)):
        assert [f.name for f in dataclasses.fields(analysis_type)] == [f.name for f in dataclasses.fields(model_type)]
    # A section builder that grows a key the model does not declare is refused (plugins, draft).
    with pytest.raises(TypeError, match="no field"):
        rs.from_mapping(rs.EntryPoint, {"name": "n", "value": "v", "source": "s", "undeclared": 1})


def test_optional_fields_of_other_issues_are_declared(tmp_path: Path) -> None:
    """Declared now, produced later (serving verdict, SGLang, finding titles): optional, so reports
    without them stay valid, and a report with them validates."""
    schema = report_schema()
    assert "serving" not in schema["required"]
    assert "engine" not in schema["properties"]["target"]["required"]
    assert "title" not in schema["$defs"]["finding"]["required"]
    step = {"gate": "runner-interface", "result": "fail", "path": "vllm/v1/worker/gpu_model_runner.py", "line": 10,
            "message": "supports_eagle3 is False"}
    verdict = {"architecture": "KimiK25ForConditionalGeneration", "engine": "vllm", "engine_version": "0.16.0",
               "runner": "v1", "runner_reason": "the only runner", "outcome": "refused-at-load",
               "stage": "runner-interface", "aux_layer_ids": [2, 30, 58], "aux_layer_ids_source": "model-default",
               "captured_layers": None, "drafter_trained_ids": None, "drafter_convention": None,
               "drafter_architecture": None, "pipeline_parallel": 1, "tensor_parallel": None,
               "steps": [step], "next_step": "apply the fix"}
    ctx, out = run_case(sample_cases()[0], tmp_path / "tree")
    rep = json_report(ctx, out)
    rep["serving"] = [verdict]
    rep["target"].update(engine="vllm", engine_version=None)
    for f in rep["findings"]:
        f["title"] = f["message"].split(". ")[0]
    validate_report(rep)
    rep["serving"][0]["outcome"] = "maybe"
    with pytest.raises(AssertionError, match="maybe"):
        validate_report(rep)


@pytest.mark.parametrize("case", sample_cases(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sample_tree_reports_validate(case: Path, tmp_path: Path) -> None:
    ctx, out = run_case(case, tmp_path / "tree")
    validate_report(json_report(ctx, out))


def test_cli_report_with_suppressions_and_baseline_validates(tmp_path: Path) -> None:
    root = sample("workflow/inline_suppression", tmp_path / "t")
    args = ["check", str(root), "--output-format", "json", "--no-cache", "--arch", "SilencedForCausalLM",
            "--arch", "BlanketForCausalLM"]
    p, rep = cli_json(*args, "--write-baseline", str(tmp_path / "b.json"), cwd=tmp_path)
    validate_report(rep)
    assert rep["suppressed"] and rep["baseline"]["written"] is True
    p, rep = cli_json(*args, "--baseline", str(tmp_path / "b.json"), cwd=tmp_path)
    validate_report(rep)
    kinds = {s["suppression"]["kind"] for s in rep["suppressed"]}
    assert kinds == {"inSource", "external"}
    # A finding that is not valid against the schema is caught (the validator is not vacuous).
    rep["suppressed"][0]["suppression"]["kind"] = "other"
    with pytest.raises(AssertionError):
        validate_report(rep)
    rep["suppressed"][0]["suppression"]["kind"] = "external"
    rep["findings"] = [{**rep["suppressed"][0], "undocumented": 1}]
    with pytest.raises(AssertionError, match="undocumented"):
        validate_report(rep)


@pytest.mark.real
@pytest.mark.parametrize("version, arch", [("0.16.0", "KimiK25ForConditionalGeneration"),
                                           ("0.9.2", "LlamaForCausalLM"), ("0.33.0", "LlamaForCausalLM")])
def test_real_reports_validate(real_trees: Any, tmp_path: Path, version: str, arch: str) -> None:
    p, rep = cli_json("check", str(real_trees.get(version)), "--output-format", "json", "--arch", arch, cwd=tmp_path)
    assert p.returncode in (0, 1), p.stderr
    assert rep["target"]["vllm_version"] == version
    validate_report(rep)


def test_schema_sarif_prints_the_official_id(tmp_path: Path) -> None:
    p = cli("schema", "sarif", cwd=tmp_path)
    assert p.returncode == 0 and p.stdout == SARIF_SCHEMA + "\n"
    assert sarif_schema()["id"] == SARIF_SCHEMA
    assert cli("schema", "xml", cwd=tmp_path).returncode == 2


def test_plugin_report_validates(tmp_path: Path) -> None:
    """``--plugin`` adds a "plugins" section and findings on ``<plugin>/...`` paths: JSON and SARIF."""
    from tests.cihelp import SAMPLES, validate_sarif

    args = ("check", str(SAMPLES / "_bases" / "v016_draft"),
            "--plugin", str(SAMPLES / "_plugins" / "eagle3-demo-plugin"),
            "--no-cache", "--arch", "DemoVLForConditionalGeneration")
    p, rep = cli_json(*args, "--output-format", "json", cwd=tmp_path)
    assert p.returncode in (0, 1), p.stderr
    assert rep["plugins"][0]["name"] == "eagle3-demo-plugin"
    validate_report(rep)
    p, doc = cli_json(*args, "--output-format", "sarif", cwd=tmp_path)
    validate_sarif(doc)
