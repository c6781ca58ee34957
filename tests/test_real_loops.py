"""Loops over the decoder layers, read once (facts.py) and answered by the semantic model, on real releases.

Issue 22: the layer loop used to be chosen in three places with different logic, so on vLLM 0.16.0 and 0.33.0
the serving chain's capture step read Qwen3-VL's decoder as collecting nothing (``drafter-shape-mismatch`` with a
real SpecForge drafter) while its verdict was supported and EGL004 was silent. Here the serving chain's capture
step and EGL004 must agree on every registered architecture of vLLM 0.16.0, 0.33.0 and SGLang 0.5.23; the
Qwen3-VL case is checked against vLLM's source; and a decoder that lost its last-rank return while keeping the
non-last-rank ``IntermediateTensors`` relay is not read as returning the states.
"""

from __future__ import annotations

import ast
import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from eagle3_lint import semantic as sem
from eagle3_lint.analysis import Context, Options, analyze
from eagle3_lint.model import Status
from eagle3_lint.rules import egl004_aux_states_not_collected as egl004
from eagle3_lint.serving import Gate, Outcome, StepResult
from eagle3_lint.source import DirSource
from tests import mutate
from tests.conftest import session_cache
from tests.sglang.conftest import SglangTrees

pytestmark = pytest.mark.real

REPO = Path(__file__).resolve().parent.parent
CHECKPOINTS = REPO / "sample_trees" / "_checkpoints"
# A published SpecForge drafter (no aux ids in its config: trained on the default layers) and the published
# config of the target it was trained for, whose 36 layers every architecture is then asked about.
DRAFTER = json.loads((CHECKPOINTS / "specforge-qwen3-8b-eagle3.json").read_text())
TARGET = json.loads((CHECKPOINTS / "qwen3-8b.json").read_text())
# EGL004 reports these before it reads the forward (the setter's assertion fails, or it writes another object):
# it concludes nothing about collection for them.
EARLIER_DEFECTS = {"not-mixin", "wrong-object"}


def _tree(engine: str, version: str, real_trees: Any) -> Path:
    return SglangTrees().get(version) if engine == "sglang" else real_trees.get(version)


def _egl004_kinds(ctx: Context) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for _f, g in egl004._pairs(ctx):
        for arch in g.archs:
            out.setdefault(arch, set()).add(g.kind)
    return out


@pytest.mark.parametrize(("engine", "version"), [("vllm", "0.16.0"), ("vllm", "0.33.0"), ("sglang", "0.5.23")])
def test_serving_capture_agrees_with_egl004(engine: str, version: str, real_trees: Any) -> None:
    """Every architecture that passes the check and has a layer owner: the serving chain says its decoder collects
    no aux hidden states exactly when EGL004 says the layer owner's forward never collects them.

    One target config for all (the published Qwen3-8B config, 36 layers): the capture step needs a layer count, and
    whether a forward collects does not depend on which."""
    root = _tree(engine, version, real_trees)
    ctx = analyze(DirSource(root), Options(target_config=TARGET, draft_config=DRAFTER, cache_dir=session_cache()),
                  keep=False)
    kinds = _egl004_kinds(ctx)
    compared, disagree = 0, []
    for arch, key in sem.scoped_archs(ctx):
        if sem.status(ctx, arch) is not Status.SUPPORTED or sem.owner(ctx, key) is None:
            continue
        flagged = kinds.get(arch, set())
        if flagged & EARLIER_DEFECTS:
            continue
        sv = ctx.engine.serving_verdict(ctx, arch)
        assert sv is not None
        step = next(s for s in sv.steps if s.gate is Gate.CAPTURE)
        none = step.result is StepResult.FAIL and sv.captured_layers == ()
        compared += 1
        # An unknown capture may say the setter is not followed, or that the forward collects in a way the tool does
        # not follow (as EGL004 reads it: it collects); never that the forward tests no ids while EGL004 says it does.
        vague = step.result is StepResult.UNKNOWN and "forward" in step.message \
            and "does not follow" not in step.message
        if none != ("no-collect" in flagged) or vague:
            disagree.append(f"{arch}: capture {step.result.value} ({step.message}); EGL004 {sorted(flagged)}")
    assert not disagree, "\n".join(disagree)
    print(f"{engine} {version}: {compared} architectures compared")
    assert compared >= 25, compared  # so that the test cannot pass by comparing nothing


# Qwen3-VL's text config: 36 layers (Qwen3-VL-8B), the model_type vLLM's allow-list reads from hf_text_config.
QWEN3_VL = {"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl",
            "text_config": {"model_type": "qwen3_vl_text", "num_hidden_layers": 36, "hidden_size": 4096}}


@pytest.mark.parametrize(("version", "loop_line"), [("0.16.0", 1147), ("0.33.0", 1870)])
def test_qwen3_vl_captures_the_default_layers(version: str, loop_line: int, real_trees: Any) -> None:
    """vLLM captures the default layers of Qwen3-VL, whose decoder loops ``islice(enumerate(self.layers), start,
    end)``: the index counts over the whole list, so it is absolute.

    0.16.0: ``Qwen3VLForConditionalGeneration.get_eagle3_aux_hidden_state_layers`` returns ``(2, n // 2, n - 3)``
    with n = len(self.language_model.model.layers) (qwen3_vl.py:1311-1313), = (2, 18, 33) for 36 layers; the setter
    stores them on ``self.language_model.model`` (qwen3_vl.py:1308-1309), a ``Qwen3LLMModel`` (qwen3_vl.py:1114),
    whose forward loops ``for layer_idx, layer in islice(enumerate(self.layers), self.start_layer, self.end_layer)``
    (qwen3_vl.py:1147-1149) and appends ``hidden_states + residual`` when ``layer_idx in
    self.aux_hidden_state_layers`` before the layer call (qwen3_vl.py:1150-1151): the states entering layers
    2, 18, 33, returned with the hidden states on the last rank (qwen3_vl.py:1173-1174).

    0.33.0: the default is the mixin's ``(2, n // 2, n - 3)`` (interfaces.py:1751-1772); ``Qwen3LLMModel.forward``
    adds the state entering layer 0 before the loop (qwen3_vl.py:1869), loops the same
    ``islice(enumerate(self.layers), ...)`` (qwen3_vl.py:1870-1872) and calls ``_maybe_add_hidden_state(aux,
    layer_idx + 1, ...)`` after each layer (qwen3_vl.py:1886-1888), which appends when the index is in
    ``aux_hidden_state_layers`` (interfaces.py:1640-1650): the output of layer k - 1 is the state entering layer k.
    """
    root = real_trees.get(version)
    arch = "Qwen3VLForConditionalGeneration"
    ctx = analyze(DirSource(root), Options(targets=(arch,), target_config=QWEN3_VL, draft_config=DRAFTER,
                                           cache_dir=session_cache()), keep=False)
    sv = ctx.serving[arch]
    step = next(s for s in sv.steps if s.gate is Gate.CAPTURE)
    assert step.result is StepResult.PASS, step.message
    assert step.location is not None
    assert (step.location.path, step.location.line) == ("vllm/model_executor/models/qwen3_vl.py", loop_line)
    assert sv.aux_layer_ids == (2, 18, 33)
    assert sv.captured_layers == (2, 18, 33)
    # The SpecForge drafter (no ids: trained on the states entering 2, n // 2, n - 3) and 3 x 4096 inputs to fc.
    assert sv.outcome is Outcome.SERVABLE, [(s.gate.value, s.result.value, s.message) for s in sv.steps]
    assert arch not in _egl004_kinds(ctx)
    cap = sem.capture(ctx, ctx.keys[arch])
    assert cap is not None and cap.absolute and cap.loop_line == loop_line


def test_v033_qwen2_lost_last_rank_return_is_not_read_as_returning(real_trees: Any, tmp_path: Path) -> None:
    """vLLM 0.33.0 ``Qwen2Model.forward`` relays the aux states to the next rank in ``IntermediateTensors`` on
    non-last ranks (qwen2.py:436-443) and returns ``hidden_states, aux_hidden_states`` on the last one
    (qwen2.py:447-449). With that return gone (one edit, tests/mutate.py), the runner on the last rank gets no aux
    states from it: EGL004 must say the states are collected but never returned, and the relay must stay."""
    root = real_trees.get("0.33.0")
    tree = tmp_path / "vllm-0.33.0"
    shutil.copytree(root, tree)
    rel = "vllm/model_executor/models/qwen2.py"
    text = (tree / rel).read_text(encoding="utf-8")
    edit = mutate.drop_aux_return(text, ast.parse(text), random.Random(0))
    assert edit is not None, "no aux return in qwen2.py"
    assert edit.detail.startswith("line 449: return (hidden_states, aux_hidden_states)"), edit.detail
    assert "**self.pack_local_aux_hidden_states(aux_hidden_states)" in edit.text  # the relay is kept
    (tree / rel).write_text(edit.text, encoding="utf-8")
    ctx = analyze(DirSource(tree), Options(), keep=False)
    hits = [(f, g) for f, g in egl004._pairs(ctx) if g.kind == "no-return" and f.symbol == "Qwen2Model.forward"]
    assert len(hits) == 1, [(f.symbol, g.kind) for f, g in egl004._pairs(ctx)]
    f, g = hits[0]
    # Qwen3Model subclasses Qwen2Model and keeps its forward (qwen3.py:269). Qwen2ForCausalLM itself is out of the
    # tool's scope on 0.33.0: registry.py:247 lists it among the embedding models too.
    assert (f.location.path, f.location.line) == (rel, 402) and "Qwen3ForCausalLM" in g.archs, (f.location, g.archs)
    key = ctx.keys["Qwen3ForCausalLM"]
    own = sem.owner(ctx, key) if key is not None else None
    fw = sem.forward_of(ctx, own.key) if own is not None else None
    assert fw is not None and fw.collects and not fw.returns_aux
