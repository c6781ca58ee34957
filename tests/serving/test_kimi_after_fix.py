"""The seeds' case: Kimi-K2.5 on vLLM 0.16.0, patched by the tool's own fixes, is never called servable while a
gate it cannot see or has not patched still refuses it.

0.16.0: ``kimi_k25.py`` builds ``self.language_model = init_vllm_registered_model(...)`` and implements no
``SupportsEagle3``; ``config/speculative.py:698`` refuses ``hf_text_config.model_type`` 'deepseek_v3' (Kimi's
text config) for method eagle3 (the allow-list upstream extended in 0.18.0).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
KIMI = "KimiK25ForConditionalGeneration"
TARGET = REPO / "sample_trees/_checkpoints/kimi-k2.5.json"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "eagle3_lint", "check", *args, "--no-cache"],
                          capture_output=True, text=True, cwd=cwd)


def _serving(tree: Path, cwd: Path, *extra: str) -> dict[str, Any]:
    p = _cli(str(tree), "--arch", KIMI, "--output-format", "json", *extra, cwd=cwd)
    assert p.returncode in (0, 1), p.stderr
    (sv,) = json.loads(p.stdout)["serving"]
    return dict(sv)


@pytest.mark.real
@pytest.mark.slow
def test_kimi_after_the_fix_is_not_servable_until_the_gate_is_patched(real_trees: Any, tmp_path: Path) -> None:
    tree = tmp_path / "vllm-0.16.0"
    shutil.copytree(real_trees.get("0.16.0") / "vllm", tree / "vllm")
    before = _serving(tree, tmp_path)
    assert before["outcome"] == "refused-at-load" and before["stage"] == "runner-interface"

    # The interface fixes (EGL001 on the wrapper and DeepSeek V2), without a target config.
    p = _cli(str(tree), "--arch", KIMI, "--fix", "--unsafe-fixes", "--apply", cwd=tmp_path)
    assert p.returncode in (0, 1), p.stderr
    bare = _serving(tree, tmp_path)
    # The interface passes now, but the gate is unchecked (no model_type without a target config): never servable.
    assert bare["outcome"] == "unchecked" and bare["outcome"] != "servable"
    steps = {s["gate"]: s["result"] for s in bare["steps"]}
    assert steps["runner-interface"] == "pass" and steps["config-gate"] == "unchecked"
    # With Kimi-K2.5's config the gate refuses it at config time.
    gated = _serving(tree, tmp_path, "--target-config", str(TARGET))
    assert gated["outcome"] == "refused-at-config" and gated["stage"] == "config-gate"

    # With the target config, EGL009's (unsafe) fix adds 'deepseek_v3' to the allow-list, as upstream 0.18.0 did.
    p = _cli(str(tree), "--arch", KIMI, "--target-config", str(TARGET), "--fix", "--unsafe-fixes", "--apply",
             cwd=tmp_path)
    assert p.returncode in (0, 1), p.stderr
    assert "deepseek_v3" in (tree / "vllm/config/speculative.py").read_text()
    after = _serving(tree, tmp_path, "--target-config", str(TARGET))
    steps = {s["gate"]: s["result"] for s in after["steps"]}
    assert steps["config-gate"] == "pass" and steps["runner-interface"] == "pass"
    # No drafter config: the drafter's steps are unchecked, so still not "servable".
    assert after["outcome"] == "unchecked"
