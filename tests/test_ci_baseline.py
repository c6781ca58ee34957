"""Baselines (issue 5): ``--write-baseline`` records fingerprints without line numbers, ``--baseline``
reports only new findings, stale entries are listed, and with CI=true a stale baseline fails."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cihelp import broken, cli, cli_json, tree, validate_report

ARCHS = ("--arch", "BadForCausalLM", "--arch", "WorseForCausalLM")
SEL = ("--select", "EGL001,EGL100")


def run(root: Path, cwd: Path, *args: str, ci: bool = False) -> tuple[int, dict[str, Any], str]:
    p, rep = cli_json("check", str(root), "--output-format", "json", "--no-cache", *SEL, *args, cwd=cwd,
                      env={"CI": "true"} if ci else None)
    validate_report(rep)
    return p.returncode, rep, p.stderr


def test_baseline_lifecycle(tmp_path: Path) -> None:
    models = {"bad": broken("BadForCausalLM", "WorseForCausalLM")}
    root = tree(tmp_path / "t", models)
    base = tmp_path / "ci" / "eagle3-baseline.json"

    code, rep, err = run(root, tmp_path, *ARCHS, "--write-baseline", str(base))
    assert code == 0, err
    assert "wrote 2 finding(s) to the baseline" in err
    doc = json.loads(base.read_text())
    assert doc["eagle3_lint_baseline"] == 1 and len(doc["findings"]) == 2
    for e in doc["findings"]:
        assert set(e) == {"fingerprint", "rule", "architecture", "symbol", "path", "snippet"}
        assert e["snippet"] == f"class {e['architecture']}(nn.Module):"
        assert e["symbol"] == f"vllm.model_executor.models.bad:{e['architecture']}"
    assert rep["findings"] == [] and len(rep["suppressed"]) == 2
    assert rep["baseline"] == {"path": str(base), "written": True, "entries": 2, "matched": 2, "new": 0, "stale": []}

    # Same tree: everything is known, exit 0.
    code, rep, err = run(root, tmp_path, *ARCHS, "--baseline", str(base))
    assert code == 0 and rep["findings"] == [] and rep["baseline"]["matched"] == 2, err
    assert {s["suppression"]["kind"] for s in rep["suppressed"]} == {"external"}
    fps = sorted(s["fingerprint"] for s in rep["suppressed"])
    assert fps == sorted(e["fingerprint"] for e in doc["findings"])
    lines = {s["architecture"]: s["line"] for s in rep["suppressed"]}

    # Lines shift (a header, reflowed whitespace): same fingerprints, still nothing new.
    src = root / "vllm/model_executor/models/bad.py"
    text = src.read_text()
    src.write_text('"""A header."""\n\nimport os\n\n' + text.replace("class BadForCausalLM(nn.Module):",
                                                                    "class   BadForCausalLM( nn.Module ):"))
    code, rep, err = run(root, tmp_path, *ARCHS, "--baseline", str(base))
    assert code == 0 and rep["findings"] == [] and rep["baseline"]["stale"] == [], err
    assert sorted(s["fingerprint"] for s in rep["suppressed"]) == fps
    assert {s["architecture"]: s["line"] - 4 for s in rep["suppressed"]} == lines

    # A new problem is reported (exit 1); the baselined ones stay quiet.
    src.write_text(src.read_text() + "\n\nclass NewForCausalLM(nn.Module):\n    pass\n")
    models_reg = root / "vllm/model_executor/models/registry.py"
    models_reg.write_text(models_reg.read_text().replace('"WorseForCausalLM": ("bad", "WorseForCausalLM"),',
                                                         '"WorseForCausalLM": ("bad", "WorseForCausalLM"),\n'
                                                         '    "NewForCausalLM": ("bad", "NewForCausalLM"),'))
    code, rep, err = run(root, tmp_path, *ARCHS, "--arch", "NewForCausalLM", "--baseline", str(base))
    assert code == 1 and [(f["rule"], f["architecture"]) for f in rep["findings"]] == [("EGL001", "NewForCausalLM")]
    assert rep["baseline"]["new"] == 1 and rep["baseline"]["matched"] == 2

    # Fix one (it now inherits a class that supports EAGLE-3): its entry is stale. Listed on stderr
    # and in JSON; only CI=true makes that fail.
    subclass_of_good = "from .good import GoodForCausalLM\n\n\nclass WorseForCausalLM(GoodForCausalLM):"
    src.write_text(src.read_text().replace("class WorseForCausalLM(nn.Module):", subclass_of_good))
    code, rep, err = run(root, tmp_path, *ARCHS, "--baseline", str(base))
    assert code == 0 and rep["findings"] == [], err
    stale = rep["baseline"]["stale"]
    assert [e["architecture"] for e in stale] == ["WorseForCausalLM"]
    assert "1 stale entry" in err and "EGL001 vllm/model_executor/models/bad.py" in err
    code, rep, err = run(root, tmp_path, *ARCHS, "--baseline", str(base), ci=True)
    assert code == 1
    assert (f"eagle3-lint: error: baseline {base} has 1 stale entry (fixed or changed findings) and CI is set; "
            f"update it with --write-baseline {base}") in err
    # --exit-zero still wins, and rewriting the baseline clears the staleness.
    assert run(root, tmp_path, *ARCHS, "--baseline", str(base), "--exit-zero", ci=True)[0] == 0
    assert run(root, tmp_path, *ARCHS, "--write-baseline", str(base), ci=True)[0] == 0
    code, rep, err = run(root, tmp_path, *ARCHS, "--baseline", str(base), ci=True)
    assert code == 0 and rep["baseline"]["entries"] == 1 and rep["baseline"]["stale"] == [], err


def test_duplicates_are_counted(tmp_path: Path) -> None:
    """Two findings with the same fingerprint: a baseline of one lets the second through."""
    line = "X = 1  # eagle3-lint: ignore[EGL001]\n"
    root = tree(tmp_path / "t", {"dup": "class Helper:\n    pass\n\n" + line})
    base = tmp_path / "b.json"
    assert run(root, tmp_path, "--write-baseline", str(base))[0] == 0
    src = root / "vllm/model_executor/models/dup.py"
    src.write_text(src.read_text() + line)
    code, rep, _ = run(root, tmp_path, "--baseline", str(base), "--fail-on", "warning")
    assert code == 1 and [f["rule"] for f in rep["findings"]] == ["EGL100"]
    assert rep["findings"][0]["line"] == 5 and rep["findings"][0]["fingerprint"].endswith(":2")


def test_baseline_from_config_and_errors(tmp_path: Path) -> None:
    root = tree(tmp_path / "t", {"bad": broken("BadForCausalLM")})
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "eagle3-lint.toml").write_text('architectures = ["BadForCausalLM"]\nbaseline = "base/line.json"\n')
    p = cli("check", str(root), "--no-cache", *SEL, cwd=proj)
    assert p.returncode == 2 and p.stderr.strip() == (
        f"eagle3-lint: error: baseline file not found: {proj / 'base/line.json'} "
        f"(create it with --write-baseline {proj / 'base/line.json'})")
    written = cli("check", str(root), "--no-cache", *SEL, "--write-baseline", str(proj / "base/line.json"), cwd=proj)
    assert written.returncode == 0
    code, rep, _ = run(root, proj)
    assert code == 0 and rep["baseline"]["path"] == str(proj / "base/line.json") and rep["baseline"]["matched"] == 1
    (proj / "base/line.json").write_text('{"findings": []}')
    p = cli("check", str(root), "--no-cache", *SEL, cwd=proj)
    assert p.returncode == 2 and "is not an eagle3-lint baseline" in p.stderr


@pytest.mark.real
def test_real_v016_baseline(real_trees: Any, tmp_path: Path) -> None:
    root = real_trees.get("0.16.0")
    base = tmp_path / "b.json"
    args = ("check", str(root), "--output-format", "json", "--arch", "KimiK25ForConditionalGeneration")
    p, rep = cli_json(*args, cwd=tmp_path)
    assert p.returncode == 1 and rep["findings"]
    # The baseline records every finding of the run, also those the scoped report leaves out (about other
    # architectures): the same baseline then serves a run with --all or another --arch.
    n = len(rep["findings"]) + rep["scope"]["findings_left_out"]
    p, rep = cli_json(*args, "--write-baseline", str(base), cwd=tmp_path)
    assert p.returncode == 0 and rep["baseline"]["entries"] == n and rep["findings"] == []
    p, rep = cli_json(*args, "--baseline", str(base), cwd=tmp_path, env={"CI": "true"})
    assert p.returncode == 0 and rep["baseline"] == {"path": str(base), "written": False, "entries": n,
                                                     "matched": n, "new": 0, "stale": []}
    validate_report(rep)
