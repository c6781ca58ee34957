"""Differential tests: the tool's verdict must equal vLLM's own ``supports_eagle3(cls)``.

Two layers. The snapshot tests compare with runtime verdicts committed in
``tests/differential/oracle/`` (fast; any developer runs them). The live tests build (or reuse)
the CPU oracle venv from the committed lock and ask vLLM itself; they run in CI (``CI=true``) or
with ``EAGLE3_LINT_ORACLE=1``, and fail rather than skip in CI when the oracle cannot run.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import differential  # noqa: E402

SNAPSHOTS = sorted((REPO / "tests/differential/oracle").glob("vllm-*.json"))
LIVE_VERSIONS = ["0.16.0", "0.33.0"]


def _live_enabled() -> bool:
    return os.environ.get("CI") == "true" or os.environ.get("EAGLE3_LINT_ORACLE") == "1"


@pytest.mark.real
@pytest.mark.parametrize("snap", SNAPSHOTS, ids=lambda p: p.stem)
def test_snapshot_agreement(snap: Path, real_trees: object) -> None:
    oracle = json.loads(snap.read_text())
    version = oracle["vllm_version"]
    tree = real_trees.get(version)  # type: ignore[attr-defined]
    c = differential.compare(version, tree, oracle, [])
    assert c.importable >= 0.95 * c.registered, "too few architectures imported for a meaningful comparison"
    assert c.ok, differential.render(c)
    assert not c.tool_only, c.tool_only


@pytest.mark.real
@pytest.mark.oracle
@pytest.mark.parametrize("version", LIVE_VERSIONS)
def test_live_oracle_agreement(version: str, real_trees: object) -> None:
    if not _live_enabled():
        pytest.skip("live oracle runs in CI or with EAGLE3_LINT_ORACLE=1 (builds a CPU vLLM venv)")
    oracle = differential.runtime_verdicts(version, None, [])
    assert oracle["vllm_version"] == version
    c = differential.compare(version, real_trees.get(version), oracle, [])  # type: ignore[attr-defined]
    print(differential.render(c))
    assert c.ok, differential.render(c)


@pytest.mark.real
@pytest.mark.oracle
def test_live_oracle_accepts_the_kimi_fix(real_trees: object, tmp_path: Path) -> None:
    """0.16.0 patched by ``check --arch KimiK25ForConditionalGeneration --fix --unsafe-fixes --apply``:
    vLLM's own ``supports_eagle3`` must say True for the wrapper and DeepSeek V3, and agree with the
    tool on every importable architecture of the patched tree."""
    if not _live_enabled():
        pytest.skip("live oracle runs in CI or with EAGLE3_LINT_ORACLE=1 (builds a CPU vLLM venv)")
    import shutil
    import subprocess

    src = real_trees.get("0.16.0")  # type: ignore[attr-defined]
    root = tmp_path / "patched"
    shutil.copytree(src / "vllm", root / "vllm")
    args = ["check", str(root), "--arch", "KimiK25ForConditionalGeneration", "--fix", "--unsafe-fixes", "--apply",
            "--no-cache"]
    p = subprocess.run([sys.executable, "-m", "eagle3_lint", *args], capture_output=True, text=True, cwd=REPO)
    assert p.returncode in (0, 1), p.stderr
    assert "kimi_k25.py" in p.stderr and "deepseek_v2.py" in p.stderr
    oracle = differential.runtime_verdicts("0.16.0", root, [])
    assert oracle["vllm_file"].startswith(str(root))
    assert oracle["verdicts"]["KimiK25ForConditionalGeneration"] is True
    assert oracle["verdicts"]["DeepseekV3ForCausalLM"] is True
    c = differential.compare("0.16.0", root, oracle, [])
    assert c.ok, differential.render(c)


# --- serving facts: vLLM's own answers behind the serving verdict (scripts/oracle/serving_facts.py) ---------------

SERVING_SNAPSHOTS = sorted((REPO / "tests/differential/oracle").glob("serving-vllm-*.json"))
CHECKPOINTS = REPO / "sample_trees/_checkpoints"
ANSWER_KEYS = {"call", "ok", "value", "error"}


def _serving_facts_script() -> object:
    """scripts/oracle/serving_facts.py as a module (importing it does not import vLLM or touch the environment)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("serving_facts", REPO / "scripts/oracle/serving_facts.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _answers(node: object) -> list[dict]:
    if isinstance(node, dict):
        if set(node) >= ANSWER_KEYS:
            return [node]
        return [a for v in node.values() for a in _answers(v)]
    return []


@pytest.mark.parametrize("snap", SERVING_SNAPSHOTS, ids=lambda p: p.stem)
def test_serving_snapshot_covers_every_checkpoint(snap: Path) -> None:
    """A config added to sample_trees/_checkpoints without regenerating the snapshots fails here."""
    facts = json.loads(snap.read_text())
    sf = _serving_facts_script()
    configs = {p.name: json.loads(p.read_text()) for p in sorted(CHECKPOINTS.glob("*.json"))}
    drafters = sorted(n for n, c in configs.items() if sf.drafter_reasons(c))  # type: ignore[attr-defined]
    targets = sorted(n for n, c in configs.items() if not sf.drafter_reasons(c))  # type: ignore[attr-defined]
    assert drafters and targets
    assert sorted(facts["drafters"]) == drafters == sorted(facts["drafter_files"])
    assert sorted(facts["targets"]) == targets == sorted(facts["target_files"])
    assert {d: sorted(t) for d, t in facts["pairs"].items()} == {d: targets for d in drafters}
    answers = _answers(facts)
    assert len(answers) >= len(drafters) * len(targets) * 3
    for a in answers:
        assert set(a) == ANSWER_KEYS, a
        assert (a["error"] is None) == a["ok"], a  # every raise is recorded with its text
    assert facts["schema"] == sf.SCHEMA  # type: ignore[attr-defined]
    assert snap.name == f"serving-vllm-{facts['vllm_version']}.json"


@pytest.mark.real
@pytest.mark.parametrize("snap", SERVING_SNAPSHOTS, ids=lambda p: p.stem)
def test_serving_snapshot_gate_refusals_point_at_the_release_tree(snap: Path, real_trees: object) -> None:
    """Where vLLM's model_type gate refused a target, ``raised_at`` names a line of the released tree (the one
    eagle3-lint reads) that raises the allow-list error."""
    facts = json.loads(snap.read_text())
    tree = real_trees.get(facts["vllm_version"])  # type: ignore[attr-defined]
    refusals = [t["model_type_gate"]["value"] for t in facts["targets"].values()
                if t["model_type_gate"]["ok"] and not t["model_type_gate"]["value"]["accepted"]]
    for r in refusals:
        path, line = r["raised_at"].rsplit(":", 1)
        lines = (tree / path).read_text().splitlines()
        window = "\n".join(lines[int(line) - 1:int(line) + 3])
        assert "raise ValueError" in window and "Eagle3 is only supported" in window, (r, window)
        assert r["model_type"] in r["message"]


@pytest.mark.real
@pytest.mark.oracle
@pytest.mark.parametrize("version", LIVE_VERSIONS)
def test_live_serving_facts_match_snapshot(version: str) -> None:
    """Rebuild vLLM's serving answers in the oracle venv and compare with the committed snapshot."""
    if not _live_enabled():
        pytest.skip("live oracle runs in CI or with EAGLE3_LINT_ORACLE=1 (builds a CPU vLLM venv)")
    snap = REPO / f"tests/differential/oracle/serving-vllm-{version}.json"
    live = differential.serving_facts(version)
    assert live["vllm_version"] == version
    diff = differential.json_diff(json.loads(snap.read_text()), live)
    assert not diff, "live answers differ from the snapshot (regenerate it if intended):\n" + "\n".join(diff)
