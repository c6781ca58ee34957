"""EGL011 on SGLang: drafter config keys the drafter class SGLang builds never reads (engines/drafter_keys.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eagle3_lint import engine_hooks
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
    sv = engine_hooks.serving_verdict(c16.model, "LlamaForCausalLM")
    assert sv is not None and sv.outcome is Outcome.DRAFTER_DIFFERS
    step = sv.step(Gate.DRAFTER_CLASS)
    assert step is not None and step.result is StepResult.FAIL
    c17 = _ctx(new, DRAFT, tmp_path)
    assert _egl011(c17) == {}
    sv = engine_hooks.serving_verdict(c17.model, "LlamaForCausalLM")
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


# The reference drafter as it is (no EAGLE 3.1 keys): hidden_size 4096, draft_vocab_size 32000.
REF = json.loads((SAMPLES / "_checkpoints" / "yuhuili-eagle3-llama3.1-8b.json").read_text())


@pytest.mark.real
def test_real_sglang_num_aux_hidden_states_first_read_in_0_5_12(sglang_trees: Any, tmp_path: Path) -> None:
    """0.5.12's llama_eagle3.py:154 ``self.num_aux_hidden_states = getattr(config, "num_aux_hidden_states", None)``
    (else len(eagle_config's ids) or 3, :155-158), fc = ``torch.nn.Linear(self.hidden_size_in *
    self.num_aux_hidden_states, ...)`` (:160-161). 0.5.11 reads it nowhere and builds ``torch.nn.Linear(
    self.hidden_size_in * 3, ...)`` (llama_eagle3.py:138-139); its load_weights skips only names with no parameter
    (:278-279), so the checkpoint's fc.weight reaches default_weight_loader (:280-284), whose ``assert param.size()
    == loaded_weight.size()`` (model_loader/weight_utils.py:1212) refuses 4 x 4096 inputs: drafter-unloadable, not
    the drafter-differs of an ignored key without weights. 3 states are the fc 0.5.11 builds: not flagged."""
    old, new = sglang_trees.get("0.5.11"), sglang_trees.get("0.5.12")
    assert _reads(old, "num_aux_hidden_states") == {} and _reads(new, "num_aux_hidden_states") == {LLAMA: 154}
    four = _ctx(old, {**REF, "num_aux_hidden_states": 4}, tmp_path)
    msg = _egl011(four)["num_aux_hidden_states"]
    assert "SGLang 0.5.12 reads it (sglang/srt/models/llama_eagle3.py:154; 0.5.11, the" in msg
    assert "the checkpoint's fc takes 16384 inputs" in msg and "the fc this release builds 12288" in msg
    sv = engine_hooks.serving_verdict(four.model, "LlamaForCausalLM")
    assert sv is not None and (sv.outcome, sv.stage) == (Outcome.DRAFTER_UNLOADABLE, Gate.DRAFTER_CLASS)
    step = sv.step(Gate.DRAFTER_CLASS)
    assert step is not None and "default_weight_loader" in step.message
    three = _ctx(old, {**REF, "num_aux_hidden_states": 3}, tmp_path)
    assert _egl011(three) == {}
    sv = engine_hooks.serving_verdict(three.model, "LlamaForCausalLM")
    assert sv is not None and sv.step(Gate.DRAFTER_CLASS) is None
    assert _egl011(_ctx(new, {**REF, "num_aux_hidden_states": 4}, tmp_path)) == {}


@pytest.mark.real
def test_real_sglang_target_hidden_size_and_draft_vocab_size_read_from_0_4_7(sglang_trees: Any, tmp_path: Path) -> None:
    """0.4.7, the earliest release the table covers: llama_eagle3.py:109 ``if hasattr(config, "target_hidden_size"):``
    (fc = Linear(target_hidden_size * 3, ...), :110) and :174 ``config.draft_vocab_size`` (its ParallelLMHead). Every
    later examined release's llama_eagle3.py reads both, so EGL011 never flags them."""
    t = sglang_trees.get("0.4.7")
    assert dk.releases("sglang")[0] == "0.4.7"
    assert _reads(t, "target_hidden_size") == {LLAMA: 109} and _reads(t, "draft_vocab_size") == {LLAMA: 174}
    assert dk.examine(str(t), DRAFTER_MODULE_GLOBS) == dk.table()["sglang"]["releases"]["0.4.7"]
    for key in ("target_hidden_size", "draft_vocab_size"):
        assert [r.release for r in dk.readers("sglang", key, (LLAMA,))] == dk.releases("sglang"), key
    draft = {**REF, "target_hidden_size": 4096}
    for v in ("0.4.7", "0.5.23"):
        got = _egl011(_ctx(sglang_trees.get(v), draft, tmp_path))
        assert not {"target_hidden_size", "draft_vocab_size"} & set(got), (v, got)


def test_fc_states_are_data_that_name_where_each_engine_reads_and_refuses_them() -> None:
    """``fc_states`` (a count of the aux states fc takes -> the keys one state's width is read from) is version
    knowledge the release that ignores the key cannot give: each engine's entry names the reading release's lines,
    with the width it multiplies (vLLM 0.25.1 llama_eagle3.py:184-187 ``getattr(self.config, "target_hidden_size",
    self.config.hidden_size)``; SGLang 0.5.12 :148-151 ``config.target_hidden_size`` if set, else
    ``config.hidden_size``), and the ignoring release's refusal of another count."""
    import re

    for engine, release, path, line in (("vllm", "0.25.1", "vllm/model_executor/models/llama_eagle3.py", 176),
                                        ("sglang", "0.5.12", LLAMA, 154)):
        section = dk.table()[engine]["fc_states"]
        assert section["reason"] and section["refusal"]
        assert dk.fc_states(engine) == {"num_aux_hidden_states": ("target_hidden_size", "hidden_size")}
        where = section["keys"]["num_aux_hidden_states"]["where"]
        m = re.match(r"(\S+) (\S+\.py):(\d+)-(\d+) ", where)
        assert m and (m.group(1), m.group(2)) == (release, path), where
        assert int(m.group(3)) <= line <= int(m.group(4))
        assert dk.table()[engine]["releases"][release][path]["num_aux_hidden_states"][0] == line
