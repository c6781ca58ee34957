"""EGL011 on SGLang: drafter config keys the drafter class SGLang builds never reads (engines/drafter_keys.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eagle3_lint.engines import drafter_keys as dk
from eagle3_lint.engines.sglang.drafter import DRAFTER_MODULE_GLOBS
from eagle3_lint.serving import Gate, Outcome, StepResult
from tests.conftest import SAMPLES
from tests.test_drafter_keys import _ctx, _egl011

LLAMA = "sglang/srt/models/llama_eagle3.py"
# The reference EAGLE-3 drafter for Llama-3.1-8B (LlamaForCausalLMEagle3, SGLang's class too), with SpecForge's
# eagle_config and EAGLE 3.1's norm_before_fc both at the top level and in eagle_config (SGLang reads either).
DRAFT = {**json.loads((SAMPLES / "_checkpoints" / "yuhuili-eagle3-llama3.1-8b.json").read_text()),
         "norm_before_fc": True, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 15, 28],
                                                  "norm_before_fc": True}}


def _reads(root: Path, key: str) -> dict[str, int]:
    return {m: v[0] for m, reads in dk.examine(str(root), DRAFTER_MODULE_GLOBS).items()
            for k, v in reads.items() if k == key}


@pytest.mark.real
def test_real_sglang_norm_before_fc_first_read_in_0_5_17(sglang_trees: Any, tmp_path: Path) -> None:
    # 0.5.17's llama_eagle3.py:166 `eagle_config.get("norm_before_fc", getattr(config, "norm_before_fc", False))`
    # (0.5.18 and 0.5.19 the same line); 0.5.16, the release before, has no such read in any EAGLE module. The
    # issue put the first read in 0.5.19.
    old, new = sglang_trees.get("0.5.16"), sglang_trees.get("0.5.17")
    assert _reads(old, "norm_before_fc") == {} and _reads(old, "eagle_config.norm_before_fc") == {}
    for v in ("0.5.17", "0.5.19"):
        t = sglang_trees.get(v)
        assert _reads(t, "norm_before_fc") == {LLAMA: 166} and _reads(t, "eagle_config.norm_before_fc") == {LLAMA: 166}
    c16 = _ctx(old, DRAFT, tmp_path)
    got = _egl011(c16)
    assert set(got) == {"norm_before_fc", "eagle_config.norm_before_fc"}
    assert "SGLang 0.5.17 reads it (sglang/srt/models/llama_eagle3.py:166; 0.5.16, the" in got["norm_before_fc"]
    # 0.5.16's load_weights loads only tensors with a parameter (llama_eagle3.py:334-349, ``if param_name in
    # params_dict``): input_norm's tensors are skipped, the checkpoint loads and another drafter runs.
    sv = c16.engine.serving_verdict(c16.model, "LlamaForCausalLM")
    assert sv is not None and sv.outcome is Outcome.DRAFTER_DIFFERS
    step = sv.step(Gate.DRAFTER_CLASS)
    assert step is not None and step.result is StepResult.FAIL
    c17 = _ctx(new, DRAFT, tmp_path)
    assert _egl011(c17) == {}
    sv = c17.engine.serving_verdict(c17.model, "LlamaForCausalLM")
    assert sv is not None and sv.step(Gate.DRAFTER_CLASS) is None  # shown only failing on SGLang


@pytest.mark.real
def test_real_sglang_table_rows_are_what_the_trees_read(sglang_trees: Any) -> None:
    rows = dk.table()["sglang"]["releases"]
    for v in ("0.5.16", "0.5.17", "0.5.23"):
        assert dk.examine(str(sglang_trees.get(v)), DRAFTER_MODULE_GLOBS) == rows[v], v


@pytest.mark.real
def test_real_sglang_fc_norm_and_norm_output_first_read_in_0_5_12(sglang_trees: Any, tmp_path: Path) -> None:
    """EAGLE 3.1's per-aux fc_norm and norm_output: 0.5.12's llama_eagle3.py reads ``getattr(config, "fc_norm",
    None)`` (:167) and ``getattr(config, "norm_output", False)`` (:188); 0.5.11 reads neither in any drafter module
    (its only ``fc_norm`` is qwen3_5_mtp.py's ``pre_fc_norm_*`` layers, not a config read). So a check of 0.5.11
    names 0.5.12 as the first release that reads them (the table's rows of both, data/drafter_keys.json), and a
    check of 0.5.12 names neither."""
    old, new = sglang_trees.get("0.5.11"), sglang_trees.get("0.5.12")
    for key, line in (("fc_norm", 167), ("norm_output", 188)):
        assert _reads(old, key) == {} and _reads(new, key) == {LLAMA: line}, key
    rows = dk.table()["sglang"]["releases"]
    for v, t in (("0.5.11", old), ("0.5.12", new)):
        assert dk.examine(str(t), DRAFTER_MODULE_GLOBS) == rows[v], v
    draft = {**DRAFT, "fc_norm": True, "norm_output": True}
    got = _egl011(_ctx(old, draft, tmp_path))
    for key, line in (("fc_norm", 167), ("norm_output", 188)):
        assert f"SGLang 0.5.12 reads it (sglang/srt/models/llama_eagle3.py:{line}; 0.5.11, the" in got[key], got
    got = _egl011(_ctx(new, draft, tmp_path))
    assert "fc_norm" not in got and "norm_output" not in got
