"""EGL003-EGL005 on released SGLang trees: how the setter feeds collection and how the decoder collects.

Expectations read from SGLang's source (paths under ``sglang/srt/models/``):

- List vs per-layer flags (PR #25408). 0.5.11 - 0.5.21: ``Qwen3_5ForConditionalGeneration`` and
  ``Qwen3_5MoeForConditionalGeneration`` (qwen3_5.py:1440/:1593 in 0.5.11, :2094/:2255 in 0.5.19, :2248/:2409 in
  0.5.21) inherit ``Qwen3VLForConditionalGeneration.set_eagle3_layers_to_capture`` (qwen3_vl.py:1398 / :1633 /
  :1766), which writes ``self.model.layers_to_capture``; ``self.model`` is ``Qwen3_5ForCausalLM`` (the
  ``language_model_cls`` default), whose forward reads only ``getattr(layer, "_is_layer_to_capture", False)``
  (qwen3_5.py:1114 / :1716 / :1826), set by its ``set_dflash_layers_to_capture`` (qwen3_5.py:1065 in 0.5.11).
  0.5.20 - 0.5.21 add ``Qwen4ExpForConditionalGeneration`` (qwen4_exp.py:1836 in 0.5.21) over the same setter:
  its ``self.model`` is ``Qwen4ExpVLModel`` (``language_model_cls`` default, :1851), whose forward calls
  ``super().forward`` (:1821), ``Qwen4ExpModel(Qwen3_5ForCausalLM)``'s, which reads the flags (:1771).
  0.5.22 fixes it: ``Qwen3_5ForCausalLM.set_eagle3_layers_to_capture`` sets the flags (qwen3_5.py:1837-1840) and
  the wrapper's setter calls it behind ``hasattr`` (qwen3_vl.py:1793-1794).
- The same on a setter the class owns. 0.5.16 - 0.5.17: ``MiniMaxM3SparseForCausalLM.set_eagle3_layers_to_capture``
  (minimax_m3.py:1491 in 0.5.16, :1511 in 0.5.17) writes ``self.model.layers_to_capture``; ``MiniMaxM3Model``'s forward
  reads ``getattr(layer, "_is_layer_to_capture", False)`` (minimax_m3.py:1398 in 0.5.16). 0.5.18 appends, at
  minimax_m3.py:1631-1635, "forward checks the per-layer ``_is_layer_to_capture`` flag, not the id list, so set it
  explicitly" and a ``setattr`` loop over ``self.model.layers_to_capture``.
- A setter inherited over another decoder. 0.5.2: ``Glm4vForConditionalGeneration(Qwen2_5_VLForConditionalGeneration)``
  (glm4v.py:463) inherits the setter at qwen2_5_vl.py:657 writing ``self.model.layers_to_capture``; its
  ``self.model = Glm4Model(...)`` (glm4v.py:474), whose forward (glm4.py:228-250) runs the layers and returns
  ``hidden_states`` without collecting. ``Glm4vMoeForConditionalGeneration(Glm4vForConditionalGeneration)``
  (glm4v_moe.py:33) holds ``Glm4MoeModel`` (glm4v_moe.py:54), a ``DeepseekV2Model`` whose forward
  (deepseek_v2.py:2252) has no ``layers_to_capture`` either.
- Plumbing without a setter. 0.4.10: ``ArceeForCausalLM`` (arcee.py:372) unpacks ``hidden_states,
  aux_hidden_states`` behind ``self.capture_aux_hidden_states`` (arcee.py:450) and ``ArceeModel.forward`` tests
  ``i in self.layers_to_capture`` (arcee.py:325), but nothing in its MRO defines the setter the runner calls
  (model_runner.py:361).
- A forward that drops its base's aux states. 0.5.22 / 0.5.23: ``Qwen4ExpVLModel.forward`` (qwen4_exp.py:2085 /
  :2192) calls ``super().forward`` (``Qwen4ExpModel``'s, which collects through the flags) and, when that returns a
  tuple, keeps ``hidden_states, self.last_hc_hidden_states = model_output`` (:2108 / :2215) and returns
  ``hidden_states`` alone: the aux states never reach ``Qwen4ExpForConditionalGeneration``.
- Slice-relative indices. 0.5.23: the only enumerate loops over a layer slice (qwen3_vl.py:1230-1233,
  qwen3_vl_moe.py:107-110) re-base the index with ``start_layer`` first: no EGL005.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle3_lint import analysis
from eagle3_lint.model import Status
from eagle3_lint.source import DirSource
from tests import cihelp
from tests.conftest import session_cache

AUX = ("EGL003", "EGL004", "EGL005")
QWEN35 = {"Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"}


def _analyze(root: Path) -> analysis.Analysis:
    return analysis.analyze(DirSource(root, "sglang"), analysis.Options(cache_dir=session_cache()),
                             select=lambda r: r in AUX)


@pytest.mark.real
@pytest.mark.parametrize(("version", "line"), [("0.5.11", 1398), ("0.5.19", 1633), ("0.5.21", 1766)])
def test_setter_writes_the_list_while_the_decoder_reads_flags(sglang_trees, version: str, line: int) -> None:
    ctx = _analyze(sglang_trees.get(version))
    assert not ctx.errors, ctx.errors
    hits = [f for f in ctx.findings if f.rule == "EGL004" and "reads only per-layer" in f.message]
    (f,) = [f for f in hits if f.location.path == "sglang/srt/models/qwen3_vl.py"]
    assert f.location.line == line
    assert all(a in f.message for a in QWEN35)
    # One finding per setter; its message names the decoder of the first architecture (0.5.19's InternS2 wrappers
    # subclass the Qwen3.5 ones and come first).
    assert ".forward reads only per-layer `_is_layer_to_capture` flags, so it captures nothing" in f.message
    assert "self.model.layers_to_capture" in f.message
    # The fix feeds the flags through the decoder's own DFlash setter, on each wrapper that inherits the setter.
    assert f.fix is not None
    text = "".join(e.new_text for e in f.fix.edits)
    qwen4 = version == "0.5.21"
    assert text.count("self.model.set_dflash_layers_to_capture(self.model.layers_to_capture)") == 2 + qwen4
    assert {e.path for e in f.fix.edits} == {"sglang/srt/models/qwen3_5.py"} | (
        {"sglang/srt/models/qwen4_exp.py"} if qwen4 else set())


@pytest.mark.real
@pytest.mark.parametrize(("version", "line"), [("0.5.22", 2085), ("0.5.23", 2192)])
def test_fixed_upstream_by_pr_25408(sglang_trees, version: str, line: int) -> None:
    ctx = _analyze(sglang_trees.get(version))
    assert not ctx.errors, ctx.errors
    assert not [f for f in ctx.findings if f.rule == "EGL004" and any(a in f.message for a in QWEN35)]
    assert all(ctx.verdicts[a].status is Status.SUPPORTED for a in QWEN35)
    # What is left: the Qwen4Exp VL decoder drops the states its base collects (no fix: it needs a human).
    (f,) = [f for f in ctx.findings if f.rule == "EGL004"]
    assert (f.location.path, f.location.line, f.architecture) == (
        "sglang/srt/models/qwen4_exp.py", line, "Qwen4ExpForConditionalGeneration")
    assert "collects aux hidden states but never returns them" in f.message and f.fix is None


@pytest.mark.real
@pytest.mark.parametrize(("version", "line"), [("0.5.16", 1491), ("0.5.17", 1511), ("0.5.18", None)])
def test_minimax_m3_setter_feeds_the_list_only(sglang_trees, version: str, line: int | None) -> None:
    ctx = _analyze(sglang_trees.get(version))
    assert not ctx.errors, ctx.errors
    got = [f for f in ctx.findings if f.rule == "EGL004" and f.location.path == "sglang/srt/models/minimax_m3.py"]
    if line is None:
        assert not got  # fixed upstream with the loop the fix writes
        return
    (f,) = got
    assert f.location.line == line and f.architecture == "MiniMaxM3SparseForCausalLM"
    assert "MiniMaxM3Model.forward reads only per-layer `_is_layer_to_capture` flags" in f.message
    # The setter is the class's own: the setattr loop is appended to it, as upstream did in 0.5.18.
    assert f.fix is not None
    (edit,) = f.fix.edits
    assert "setattr(self.model.layers[layer_id], \"_is_layer_to_capture\", True)" in edit.new_text


@pytest.mark.real
def test_inherited_setter_over_a_decoder_that_never_collects_0_5_2(sglang_trees) -> None:
    ctx = _analyze(sglang_trees.get("0.5.2"))
    assert not ctx.errors, ctx.errors
    got = {(f.location.path, f.location.line, f.architecture) for f in ctx.findings if f.rule == "EGL004"}
    assert got == {("sglang/srt/models/glm4.py", 228, "Glm4vForConditionalGeneration"),
                   ("sglang/srt/models/deepseek_v2.py", 2252, "Glm4vMoeForConditionalGeneration")}
    glm = next(f for f in ctx.findings if f.rule == "EGL004" and f.location.path.endswith("glm4.py"))
    assert "inherits it from Qwen2_5_VLForConditionalGeneration" in glm.message
    assert "never collects hidden states" in glm.message


@pytest.mark.real
def test_plumbing_without_setter_0_4_10(sglang_trees) -> None:
    ctx = _analyze(sglang_trees.get("0.4.10"))
    assert not ctx.errors, ctx.errors
    (f,) = [f for f in ctx.findings if f.rule == "EGL003"]
    assert (f.location.path, f.location.line, f.architecture) == ("sglang/srt/models/arcee.py", 372, "ArceeForCausalLM")
    assert "ArceeModel.forward collects them" in f.message and "model_runner.py:361" in f.message
    assert f.fix is not None and "self.model.layers_to_capture = [val + 1 for val in layer_ids]" in \
        "".join(e.new_text for e in f.fix.edits)


@pytest.mark.real
def test_no_slice_relative_index_0_5_23(sglang_trees) -> None:
    ctx = _analyze(sglang_trees.get("0.5.23"))
    assert not ctx.errors, ctx.errors
    assert not [f for f in ctx.findings if f.rule == "EGL005"]


@pytest.mark.real
def test_fixes_apply_compile_and_recheck_clean_0_5_19(sglang_trees, tmp_path: Path) -> None:
    """The EGL003 and EGL004 fixes of 0.5.19 apply with ``git apply`` on a copy, compile, leave those rules silent
    where a fix was given, and break nothing that passed (the new setters make their classes pass)."""
    root = sglang_trees.get("0.5.19")
    before = _analyze(root)
    fixed = [f for f in before.findings if f.fix is not None]
    assert {f.rule for f in fixed} == {"EGL003", "EGL004"}
    copy = cihelp.patched_copy(before.source, fixed, tmp_path)
    after = _analyze(copy)
    assert not after.errors
    # What is left had no fix (a subclass whose base got the setter is fixed through it and is gone too).
    left = {(f.rule, f.architecture) for f in after.findings}
    assert left < {(f.rule, f.architecture) for f in before.findings if f.fix is None}
    assert {"DeepseekV4ForCausalLM", "KimiLinearForCausalLM", "OPTForCausalLM"} <= {a for _r, a in left}
    ok_before = {a for a, v in before.verdicts.items() if v.status is Status.SUPPORTED}
    ok_after = {a for a, v in after.verdicts.items() if v.status is Status.SUPPORTED}
    assert ok_before <= ok_after
    assert {"ArceeForCausalLM", "Glm4ForCausalLM", "LagunaForCausalLM"} <= ok_after - ok_before


@pytest.mark.real
def test_a_second_fix_is_empty_0_5_23(sglang_trees, tmp_path: Path) -> None:
    """The runner asks the top-level model for the setter (attention_backend_setup.py:55-61 in 0.5.23).
    ``BailingMoeV3VLForConditionalGeneration`` (bailing_mm_v3.py:62) holds ``self.model = BailingMoeV3ForCausalLM``
    (:90) and ``NemotronH_Nano_VL_V2`` (nano_nemotron_vl.py:52) ``self.language_model = NemotronHForCausalLM`` (:86);
    neither wrapper has the setter, and neither inner class does (bailing_moe_v3.py:1375, nemotron_h.py:907), though
    both unpack the aux states (EGL003). The EGL003 fix that gives the inner class its setter writes the wrappers'
    delegating setters too: a second ``--fix`` on the patched copy finds nothing, and both wrappers pass."""
    root = sglang_trees.get("0.5.23")
    mine = {"EGL002", "EGL003"}
    opts = analysis.Options(cache_dir=tmp_path / "cache")
    before = analysis.analyze(DirSource(root, "sglang"), opts, select=lambda r: r in mine)
    fixed = [f for f in before.findings if f.fix is not None]
    copy = cihelp.patched_copy(before.source, fixed, tmp_path)
    after = analysis.analyze(DirSource(copy, "sglang"), opts, select=lambda r: r in mine)
    assert not after.errors
    assert [(f.rule, f.symbol) for f in after.findings if f.fix is not None] == []
    wrappers = ("BailingMoeV3VLForConditionalGeneration", "NemotronH_Nano_VL_V2")
    assert [before.verdicts[a].status for a in wrappers] == [Status.UNSUPPORTED] * 2
    assert [after.verdicts[a].status for a in wrappers] == [Status.SUPPORTED] * 2
