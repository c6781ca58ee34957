"""SGLang's contract derived from released trees: call sites, id reads, setters, registry and verdicts.

The verdicts' agreement with SGLang's own answer is tested on the full analysis (``test_check.py``), which
``verdicts.contract`` is an adapter over.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle3_lint.engines.sglang.runner import IdsPassed, MissingMethod
from eagle3_lint.engines.sglang.setter import Heuristic, capture_indices, default_indices
from eagle3_lint.engines.sglang.verdicts import Contract, Status, contract

ORACLE = Path(__file__).resolve().parents[1] / "differential" / "oracle"
_CACHE: dict[str, Contract] = {}


def _contract(sglang_trees, version: str) -> Contract:
    if version not in _CACHE:
        _CACHE[version] = contract(sglang_trees.get(version))
    return _CACHE[version]


@pytest.mark.real
def test_call_sites_and_id_reads_0_5_10(sglang_trees) -> None:
    c = _contract(sglang_trees, "0.5.10")
    sites = {(s.path.rsplit("/", 1)[-1], s.ids) for s in c.call_sites}
    # The CUDA-graph runner asks for the default layers (no argument): the custom-ids-ignored bug.
    assert ("cuda_graph_runner.py", IdsPassed.DEFAULT) in sites
    assert ("model_runner.py", IdsPassed.DRAFTER) in sites
    assert all(s.missing is MissingMethod.ATTRIBUTE_ERROR for s in c.call_sites)
    (ids,) = c.id_sources
    assert ids.path.endswith("model_executor/model_runner.py") and ids.bare_except and ids.fallback == "None"


@pytest.mark.real
def test_call_sites_and_id_reads_0_5_23(sglang_trees) -> None:
    c = _contract(sglang_trees, "0.5.23")
    (site,) = c.call_sites
    assert site.path.endswith("model_runner_components/attention_backend_setup.py")
    assert site.ids is IdsPassed.DRAFTER and site.receiver == "model"
    assert site.missing is MissingMethod.RAISES
    # attention_backend_setup.py:55-60: `raise ValueError(f"Model {model.__class__.__name__} does not implement "
    # "set_eagle3_layers_to_capture, ...")`, read as the user sees it, the class name left for the trace to fill.
    assert site.error == ("ValueError: Model <model class> does not implement set_eagle3_layers_to_capture, which "
                          "EAGLE3 aux hidden-state capture requires.")
    (ids,) = c.id_sources
    assert ids.path.endswith("spec_aux_hidden_state.py") and not ids.bare_except and ids.fallback == "None"


@pytest.mark.real
def test_setter_transforms_0_5_23(sglang_trees) -> None:
    d = _contract(sglang_trees, "0.5.23").by_arch()
    llama = d["LlamaForCausalLM"].setter
    assert llama is not None and llama.offset == 1 and not llama.conditional and llama.pp_last_rank_only
    assert llama.default == "[2, num_layers // 2, num_layers - 3]"
    assert llama.num_layers == "self.config.num_hidden_layers"
    assert "self.model.layers_to_capture" in llama.writes
    assert capture_indices(llama, [1, 15, 28], 32) == [2, 16, 29]
    assert default_indices(llama, 32) == [2, 16, 29]
    # DeepSeek adds 1 only when the first id is 1; gpt-oss keeps ids whose max is n (already +1-ed).
    ds = d["DeepseekV3ForCausalLM"].setter
    assert ds is not None
    assert ds.offset is None and ds.branches == ((Heuristic.FIRST_IS_ONE, 1, 0),)
    assert capture_indices(ds, [1, 30, 58], 61) == [2, 31, 59]
    assert capture_indices(ds, [2, 30, 58], 61) == [2, 30, 58]  # a vLLM-convention drafter: not shifted
    gpt_oss = d["GptOssForCausalLM"].setter
    assert gpt_oss is not None
    assert gpt_oss.branches == ((Heuristic.MAX_IS_N, 0, 1),)
    assert capture_indices(gpt_oss, [2, 12, 24], 24) == [2, 12, 24]
    assert capture_indices(gpt_oss, [1, 11, 23], 24) == [2, 12, 24]
    moe = d["Qwen3MoeForCausalLM"].setter  # delegates to its decoder with the +1 applied, default as a call argument
    assert moe is not None
    assert moe.delegates_to == ("self.model",) and moe.offset == 1 and (moe.default or "").startswith("[2,")
    # A VL wrapper that delegates behind hasattr and passes the ids on unchanged.
    k25 = d["KimiK25ForConditionalGeneration"].setter
    assert k25 is not None
    assert k25.delegates_to == ("self.language_model",) and k25.delegation_guarded and k25.offset == 0
    assert capture_indices(k25, [1, 2, 3], 61) is None
    # 0.4.7's setter takes no ids: what it stores is its default.
    old = _contract(sglang_trees, "0.4.7").by_arch()["LlamaForCausalLM"].setter
    assert old is not None
    assert old.param == "" and old.default == "[2, num_layers // 2, num_layers - 3]" and old.offset is None
    assert default_indices(old, 80) == [2, 40, 77] and default_indices(k25, 61) is None


@pytest.mark.real
def test_registry_and_known_cases(sglang_trees) -> None:
    old, new = _contract(sglang_trees, "0.5.10"), _contract(sglang_trees, "0.5.23")
    o, n = old.by_arch(), new.by_arch()
    # SGLang #17935: Qwen3-VL-MoE held a decoder with the setter but had none itself; fixed by 0.5.23.
    assert o["Qwen3VLMoeForConditionalGeneration"].status is Status.WRAPPER_GAP
    assert o["Qwen3VLMoeForConditionalGeneration"].inner == ("Qwen3MoeLLMModel",)
    assert n["Qwen3VLMoeForConditionalGeneration"].status is Status.SUPPORTED
    # Kimi-VL and DeepSeek-VL2 over DeepSeek-V2 in recent releases.
    for arch in ("KimiVLForConditionalGeneration", "DeepseekVL2ForCausalLM"):
        assert n[arch].status is Status.WRAPPER_GAP and n[arch].inner == ("DeepseekV2ForCausalLM",)
        assert any(e.path.endswith("deepseek_v2.py") for e in n[arch].evidence)
    # A class re-exported from a helper package is registered under its own name.
    dots = n["Dots3NoteForCausalLM"]
    assert dots.cls == "sglang.srt.models.dots3_common.modeling.Dots3NoteForCausalLM"
    assert new.registry.modules == 255 and not new.registry.duplicates
    assert all(e.kind.value == "class" for e in new.registry.entries)
    assert all(v.status is not Status.UNKNOWN for v in new.verdicts)
    for v in new.verdicts:
        assert v.evidence and all(e.line > 0 for e in v.evidence), v
