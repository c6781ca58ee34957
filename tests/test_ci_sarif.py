"""``--format sarif`` (issue 5): real output validated against the official SARIF 2.1.0 schema, on
every sample tree and on a real release, and its regions, fixes, fingerprints, suppressions and
notifications checked against what they describe."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from eagle3_lint import fixes
from eagle3_lint.config import Settings
from eagle3_lint.model import Edit, Fix
from eagle3_lint.outcome import finalize
from eagle3_lint.report.sarif import FINGERPRINT_KEY, build_sarif
from eagle3_lint.rules import all_rules
from tests.cihelp import broken, cli_json, run_case, sample, sample_cases, tree, validate_sarif

KIMI = "KimiK25ForConditionalGeneration"


def _apply_replacements(text: str, replacements: list[dict[str, Any]]) -> str:
    """Apply SARIF replacements (1-based lines, 1-based code-point columns, end exclusive) to text."""
    lines = text.splitlines(keepends=True)
    offs = [0]
    for ln in lines:
        offs.append(offs[-1] + len(ln))

    def pos(line: int, col: int) -> int:
        if line - 1 >= len(lines):
            return len(text)
        return offs[line - 1] + col - 1

    spans = []
    for r in replacements:
        d = r["deletedRegion"]
        spans.append((pos(d["startLine"], d["startColumn"]), pos(d["endLine"], d["endColumn"]),
                      r.get("insertedContent", {}).get("text", "")))
    assert spans == sorted(spans, key=lambda s: (s[0], s[1])), "replacements are in file order"
    for start, end, new in reversed(spans):
        text = text[:start] + new + text[end:]
    return text


def _check_fixes_and_regions(ctx: Any, out: Any, doc: dict[str, Any]) -> int:
    """Every SARIF fix, applied literally, gives what fixes.apply_edits gives for that finding; every
    region is 1-based and ordered. Returns the number of fixes checked."""
    run = doc["runs"][0]
    findings = list(out.findings) + [s.finding for s in out.suppressed]
    assert len(run["results"]) == len(findings)
    checked = 0
    for res, f in zip(run["results"], findings, strict=True):
        assert res["ruleId"] == f.rule and res["level"] == f.severity.value and res["message"]["text"] == f.message
        reg = res["locations"][0]["physicalLocation"]["region"]
        assert reg["startLine"] == f.location.line and reg["startColumn"] == f.location.col + 1
        assert (reg["endLine"], reg["endColumn"]) >= (reg["startLine"], reg["startColumn"])
        assert run["tool"]["driver"]["rules"][res["ruleIndex"]]["id"] == f.rule
        if f.fix is None:
            assert "fixes" not in res
            continue
        (sfix,) = res["fixes"]
        for change in sfix["artifactChanges"]:
            path = change["artifactLocation"]["uri"]
            text = ctx.read_text(path)
            ours, _ = fixes.apply_edits(text, [e for e in f.fix.edits if e.path == path])
            assert _apply_replacements(text, change["replacements"]) == ours, (f.rule, path)
            checked += 1
    return checked


@pytest.mark.parametrize("case", sample_cases(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sample_trees_sarif_validates(case: Path, tmp_path: Path) -> None:
    ctx, out = run_case(case, tmp_path / "tree")
    doc = build_sarif(ctx, out)
    validate_sarif(doc)
    _check_fixes_and_regions(ctx, out, doc)
    driver = doc["runs"][0]["tool"]["driver"]
    assert [r["id"] for r in driver["rules"]] == [r.meta.id for r in all_rules()]
    for rd in driver["rules"]:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rd["name"]), rd["name"]
        assert rd["helpUri"].endswith(f"/rules/{rd['id']}.md")
        assert rd["help"]["text"].startswith("## What it does")
        assert rd["defaultConfiguration"]["level"] in ("error", "warning", "note")


@pytest.mark.real
def test_real_v016_kimi_sarif(real_trees: Any, tmp_path: Path) -> None:
    root = real_trees.get("0.16.0")
    p, doc = cli_json("check", str(root), "--arch", KIMI, "--output-format", "sarif", cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    validate_sarif(doc)
    run = doc["runs"][0]
    assert doc["version"] == "2.1.0" and run["columnKind"] == "unicodeCodePoints"
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == root.resolve().as_uri() + "/"
    egl001 = [r for r in run["results"] if r["ruleId"] == "EGL001"]
    assert len(egl001) == 1
    loc = egl001[0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "vllm/model_executor/models/kimi_k25.py", "uriBaseId": "SRCROOT"}
    line = (root / "vllm/model_executor/models/kimi_k25.py").read_text().splitlines()[loc["region"]["startLine"] - 1]
    assert line.startswith(f"class {KIMI}(")
    # A finding without an end covers its whole line (columns count characters, end exclusive).
    assert loc["region"]["startColumn"] == 1 and loc["region"]["endColumn"] == len(line) + 1
    assert re.fullmatch(r"[0-9a-f]{32}:1", egl001[0]["partialFingerprints"][FINGERPRINT_KEY])
    assert egl001[0]["properties"]["architecture"] == KIMI
    assert any(r["physicalLocation"]["artifactLocation"]["uri"].endswith("deepseek_v2.py")
               for r in egl001[0].get("relatedLocations", []))
    inv = run["invocations"][0]
    assert inv["executionSuccessful"] is True and inv["toolExecutionNotifications"] == []


@pytest.mark.real
def test_real_v016_fixes_match_diff(real_trees: Any) -> None:
    """Every fix on the real tree (all architectures targeted, unsafe ones too) round-trips."""
    from eagle3_lint.app import CheckRequest, run_check

    ctx = run_check(CheckRequest(str(real_trees.get("0.16.0")), (KIMI, "DeepseekV2ForCausalLM", "LlamaForCausalLM")))
    out = finalize(ctx, Settings(unsafe_fixes=True))
    doc = build_sarif(ctx, out)
    validate_sarif(doc)
    assert _check_fixes_and_regions(ctx, out, doc) > 0


def test_insertions_and_multiline_replacements(tmp_path: Path) -> None:
    """Edit columns are 0-based characters, SARIF's 1-based code points; an insertion is an empty
    deletedRegion. Checked with a non-ASCII line, an insertion, a replacement across lines and a
    column past the end of its line (apply_edits clamps it)."""
    uni = 'from torch import nn\n\nNAME = "ÄÖÜ-名前"  # non-ASCII\n\n\nclass UniForCausalLM(nn.Module):\n    pass\n'
    root = tree(tmp_path / "t", {"uni": uni})
    from eagle3_lint.app import CheckRequest, run_check

    ctx = run_check(CheckRequest(str(root), ("UniForCausalLM",), no_cache=True))
    path = "vllm/model_executor/models/uni.py"
    f = next(f for f in ctx.findings if f.rule == "EGL001")
    edits = (Edit(path, 3, 12, 3, 12, "++"),  # insertion after the non-ASCII word
             Edit(path, 6, 0, 7, 8, "class UniForCausalLM(nn.Module, SupportsEagle3):\n    x = 1"),
             Edit(path, 1, 0, 1, 0, "import os\n"),
             Edit(path, 3, 18, 3, 99, " # clamped"))
    ctx = dataclasses.replace(ctx, findings=(dataclasses.replace(f, fix=Fix("synthetic", edits)),))
    out = finalize(ctx, Settings())
    doc = build_sarif(ctx, out)
    validate_sarif(doc)
    assert _check_fixes_and_regions(ctx, out, doc) == 1
    repl = doc["runs"][0]["results"][0]["fixes"][0]["artifactChanges"][0]["replacements"]
    assert [r["deletedRegion"] for r in repl] == [
        {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 1},
        {"startLine": 3, "startColumn": 13, "endLine": 3, "endColumn": 13},  # before 名: 13th character
        {"startLine": 3, "startColumn": 19, "endLine": 3, "endColumn": len('NAME = "ÄÖÜ-名前"  # non-ASCII') + 1},
        {"startLine": 6, "startColumn": 1, "endLine": 7, "endColumn": 9},
    ]


def test_suppressions_and_fixes_in_sarif(tmp_path: Path) -> None:
    root = sample("workflow/inline_suppression", tmp_path / "t")
    archs = ["SilencedForCausalLM", "NextLineForCausalLM", "StaleForCausalLM", "PartlyForCausalLM",
             "BlanketForCausalLM"]
    args = ["check", str(root),
                         "--output-format", "sarif", "--no-cache", "--target-config", str(root / "configs/target.json")]
    args += [a for x in archs for a in ("--arch", x)]
    p, doc = cli_json(*args, cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    validate_sarif(doc)
    results = doc["runs"][0]["results"]
    sup = {r["properties"]["architecture"]: r["suppressions"] for r in results if "suppressions" in r}
    assert sup["SilencedForCausalLM"] == [{
        "kind": "inSource", "status": "accepted", "justification": "served without EAGLE-3 in this fork",
        "location": sup["SilencedForCausalLM"][0]["location"]}]
    assert sup["NextLineForCausalLM"][0]["justification"] == "tracked in FORK-123"
    assert sup["NextLineForCausalLM"][0]["location"]["physicalLocation"]["region"]["startLine"] == 14
    unused = [r for r in results if r["ruleId"] == "EGL100"]
    assert len(unused) == 3 and all(r["level"] == "warning" and r["fixes"] for r in unused)
    assert all("suppressions" not in r for r in unused)
    assert "baselineState" not in results[0]

    # The same tree with a baseline: the baselined results are external suppressions, "unchanged".
    base = tmp_path / "baseline.json"
    p = cli_json(*args, "--write-baseline", str(base), cwd=tmp_path)[0]
    assert p.returncode == 0, p.stderr
    p, doc = cli_json(*args, "--baseline", str(base), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    validate_sarif(doc)
    states = {(r["ruleId"], r.get("suppressions", [{}])[0].get("kind"), r["baselineState"])
              for r in doc["runs"][0]["results"]}
    assert states == {("EGL001", "inSource", "new"), ("EGL001", "external", "unchanged"),
                      ("EGL100", "external", "unchanged")}


def test_parse_failures_are_notifications(tmp_path: Path) -> None:
    root = tree(tmp_path / "t", {"mod_broken": "class Broken(:\n    pass\n"})
    (root / "vllm/model_executor/models/latin.py").write_bytes(b"x = '\xff\xfe'\n")
    p, doc = cli_json("check", str(root), "--output-format", "sarif", "--no-cache", cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    validate_sarif(doc)
    run = doc["runs"][0]
    notes = run["invocations"][0]["toolExecutionNotifications"]
    where = {n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: n for n in notes}
    assert set(where) == {"vllm/model_executor/models/mod_broken.py", "vllm/model_executor/models/latin.py"}
    assert all(n["level"] == "error" and n["descriptor"]["id"] == "EGL000" for n in notes)
    broken_note = where["vllm/model_executor/models/mod_broken.py"]
    assert broken_note["locations"][0]["physicalLocation"]["region"]["startLine"] == 1
    egl000_uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                   for r in run["results"] if r["ruleId"] == "EGL000"}
    assert egl000_uris == set(where)
    # Deselecting EGL000 removes the results, not the notifications: the tool still could not read them.
    p, doc = cli_json("check", str(root), "--output-format", "sarif", "--no-cache", "--ignore", "EGL000", cwd=tmp_path)
    validate_sarif(doc)
    assert not [r for r in doc["runs"][0]["results"] if r["ruleId"] == "EGL000"]
    assert len(doc["runs"][0]["invocations"][0]["toolExecutionNotifications"]) == 2
    overrides = doc["runs"][0]["invocations"][0]["ruleConfigurationOverrides"]
    assert overrides == [{"descriptor": {"id": "EGL000", "index": 0}, "configuration": {"enabled": False}}]


def test_severity_override_in_sarif(tmp_path: Path) -> None:
    root = tree(tmp_path / "t", {"bad": broken("BadForCausalLM")})
    (tmp_path / "eagle3-lint.toml").write_text('architectures = ["BadForCausalLM"]\n[severity]\nEGL001 = "warning"\n')
    p, doc = cli_json("check", str(root), "--output-format", "sarif", "--no-cache", cwd=tmp_path)
    validate_sarif(doc)
    run = doc["runs"][0]
    res = next(r for r in run["results"] if r["ruleId"] == "EGL001")
    assert res["level"] == "warning"
    assert run["tool"]["driver"]["rules"][res["ruleIndex"]]["defaultConfiguration"]["level"] == "error"
    assert {"descriptor": {"id": "EGL001", "index": res["ruleIndex"]}, "configuration": {"level": "warning"}} in \
        run["invocations"][0]["ruleConfigurationOverrides"]


def test_path_prefix_applies_to_every_format(tmp_path: Path) -> None:
    root = sample("workflow/inline_suppression", tmp_path / "t")
    frm, to = "vllm/", "third_party/vllm/vllm/"
    base = ["check", str(root), "--no-cache", "--arch", "BlanketForCausalLM", "--arch", "SilencedForCausalLM",
            "--path-prefix", f"{frm}={to}"]
    p, doc = cli_json(*base, "--output-format", "sarif", cwd=tmp_path)
    validate_sarif(doc)
    run = doc["runs"][0]
    uris = [loc["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"] for loc in r["locations"]]
    uris += [c["artifactLocation"]["uri"]
             for r in run["results"] for fx in r.get("fixes", []) for c in fx["artifactChanges"]]
    uris += [s["location"]["physicalLocation"]["artifactLocation"]["uri"]
             for r in run["results"] for s in r.get("suppressions", [])]
    assert uris and all(u.startswith(to) for u in uris), uris
    assert "originalUriBaseIds" not in run

    p, rep = cli_json(*base, "--output-format", "json", cwd=tmp_path)
    paths = [f["path"] for f in rep["findings"] + rep["suppressed"]]
    paths += [f["suppression"]["path"] for f in rep["suppressed"]]
    paths += [e["path"] for f in rep["findings"] if f["fix"] for e in f["fix"]["edits"]]
    paths += [a["path"] for a in rep["architectures"] if a["path"]] + [rep["contract"]["path"]]
    assert paths and all(p.startswith(to) for p in paths), paths

    from tests.cihelp import cli

    gh = cli(*base, "--output-format", "github", cwd=tmp_path).stdout
    assert gh.count(f"file={to}") == len(rep["findings"]) > 0
    # The derivation preamble and the table are shown with -v (the default text report leads with the verdict).
    text = cli(*base, "--output-format", "text", "-v", cwd=tmp_path, env={"COLUMNS": "400"}).stdout
    assert f"contract: SupportsEagle3 at {to}model_executor/models/interfaces.py:" in text
    assert f"runner: {to}v1/worker/gpu_model_runner.py:" in text and f"gate: {to}config/speculative.py:" in text
    assert f" {to}model_executor/models/silenced.py:54 " in text  # the architecture table
    assert f"\n{to}model_executor/models/silenced.py:54:39: warning: EGL100" in text
    assert "\nvllm/model_executor" not in text
    diff = cli(*base, "--fix", cwd=tmp_path).stdout
    silenced = f"{to}model_executor/models/silenced.py"
    assert f"--- a/{silenced}" in diff and f"+++ b/{silenced}" in diff
    # The tree itself is untouched, and a diff rewritten back applies in the vendoring repository.
    vendor = tmp_path / "vendor"
    (vendor / "third_party" / "vllm").mkdir(parents=True)
    import shutil
    import subprocess

    shutil.copytree(root / "vllm", vendor / "third_party" / "vllm" / "vllm")
    subprocess.run(["git", "init", "-q"], cwd=vendor, check=True)
    subprocess.run(["git", "apply", "-"], cwd=vendor, input=diff, text=True, check=True)
    patched = (vendor / "third_party/vllm/vllm/model_executor/models/silenced.py").read_text()
    assert "class BlanketForCausalLM(nn.Module):  # expect: EGL001, EGL100" in patched


def test_vendored_schema_is_the_oasis_file() -> None:
    """The SARIF tests validate against the OASIS 2.1.0 errata-01 schema itself: the vendored copy is
    unchanged (its hash as published), it is a valid draft-04 schema, and it rejects what SARIF forbids,
    so the validation cannot pass vacuously."""
    import hashlib

    import jsonschema

    from tests import cihelp

    assert hashlib.sha256(cihelp.SARIF_SCHEMA_PATH.read_bytes()).hexdigest() == cihelp.SARIF_SCHEMA_SHA256
    schema = cihelp.sarif_schema()
    jsonschema.Draft4Validator.check_schema(schema)
    ok = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "eagle3-lint"}},
                                        "results": [{"ruleId": "EGL001", "level": "error", "message": {"text": "m"}}]}]}
    validate_sarif(ok)
    for bad in ({**ok, "version": "2.0.0"},
                {"version": "2.1.0", "runs": [{"tool": {"driver": {}}}]},
                {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}},
                                               "results": [{"level": "fatal", "message": {"text": "m"}}]}]}):
        with pytest.raises(AssertionError):
            validate_sarif(bad)
