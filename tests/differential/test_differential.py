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
    p = subprocess.run([sys.executable, "-m", "eagle3_lint", "check", str(root), "--arch", "KimiK25ForConditionalGeneration",
                        "--fix", "--unsafe-fixes", "--apply", "--no-cache"], capture_output=True, text=True, cwd=REPO)
    assert p.returncode in (0, 1), p.stderr
    assert "kimi_k25.py" in p.stderr and "deepseek_v2.py" in p.stderr
    oracle = differential.runtime_verdicts("0.16.0", root, [])
    assert oracle["vllm_file"].startswith(str(root))
    assert oracle["verdicts"]["KimiK25ForConditionalGeneration"] is True
    assert oracle["verdicts"]["DeepseekV3ForCausalLM"] is True
    c = differential.compare("0.16.0", root, oracle, [])
    assert c.ok, differential.render(c)
