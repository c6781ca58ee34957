"""The JSON report's schema (issue 5): ``eagle3-lint schema json`` is snapshot-tested, so a change is
deliberate, and real reports (every sample tree, real releases) validate against it strictly."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from eagle3_lint.outcome import json_report
from eagle3_lint.report import SCHEMA_VERSION
from eagle3_lint.report.sarif import SARIF_SCHEMA
from tests.cihelp import REPO, cli, cli_json, report_schema, run_case, sample, sample_cases, sarif_schema, validate_report

SNAPSHOT = REPO / "tests" / "snapshots" / f"report.schema.v{SCHEMA_VERSION}.json"


def test_schema_matches_snapshot(tmp_path: Path) -> None:
    p = cli("schema", "json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    if os.environ.get("EAGLE3_LINT_REGEN"):
        SNAPSHOT.write_text(p.stdout, encoding="utf-8")
    assert SNAPSHOT.is_file(), f"no snapshot for schema_version {SCHEMA_VERSION}: create {SNAPSHOT.name} deliberately"
    assert p.stdout == SNAPSHOT.read_text(encoding="utf-8"), (
        "the report schema changed: an additive change (a new optional field) may update the snapshot "
        "(EAGLE3_LINT_REGEN=1); a breaking one (removed/renamed/retyped field, new required field) must "
        "bump report.SCHEMA_VERSION and add a new snapshot")


def test_schema_is_valid_and_versioned() -> None:
    schema = report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["schema_version"] == {"const": SCHEMA_VERSION}


@pytest.mark.parametrize("case", sample_cases(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sample_tree_reports_validate(case: Path, tmp_path: Path) -> None:
    ctx, out = run_case(case, tmp_path / "tree")
    validate_report(json_report(ctx, out))


def test_cli_report_with_suppressions_and_baseline_validates(tmp_path: Path) -> None:
    root = sample("workflow/inline_suppression", tmp_path / "t")
    args = ["check", str(root), "--format", "json", "--no-cache", "--arch", "SilencedForCausalLM",
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
    p, rep = cli_json("check", str(real_trees.get(version)), "--format", "json", "--arch", arch, cwd=tmp_path)
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

    args = ("check", str(SAMPLES / "_bases" / "v016_draft"), "--plugin", str(SAMPLES / "_plugins" / "eagle3-demo-plugin"),
            "--no-cache", "--arch", "DemoVLForConditionalGeneration")
    p, rep = cli_json(*args, "--format", "json", cwd=tmp_path)
    assert p.returncode in (0, 1), p.stderr
    assert rep["plugins"][0]["name"] == "eagle3-demo-plugin"
    validate_report(rep)
    p, doc = cli_json(*args, "--format", "sarif", cwd=tmp_path)
    validate_sarif(doc)
