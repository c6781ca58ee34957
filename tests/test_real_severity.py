"""Severity, locations and loops that follow the serving chain, on real releases (expectations from the source).

- 0.20.2 ``config/speculative.py`` refuses method eagle3 unless ``hf_text_config.model_type`` contains one of a
  hard-coded list (llama, qwen, minicpm, ...): ``mimo`` and ``exaone4_5`` are not on it, so an EGL004 defect on
  their forward can never bite with EAGLE-3 today: a warning, saying why.
- 0.20.2 ``qwen3_omni_moe_thinker.py``: ``Qwen3OmniMoeForConditionalGeneration`` fails ``supports_eagle3`` (the
  runner raises before configuring aux layers), so the forward defect behind it is a warning.
- ``mimo.py``: ``MiMoModel(Qwen2Model)`` inherits ``__init__``; ``self.layers`` is assigned in ``qwen2.py``
  (0.20.2: line 400), so the related location points there, not at mimo.py.
- 0.33.0 ``deepseek_v2.py``: the old-name getter ``get_eagle3_aux_hidden_state_layers`` is dead (the runner calls
  ``get_eagle3_default_aux_hidden_state_layers``) and returns the same ``(2, n // 2, n - 3)`` as the Protocol's
  default body: a note.
- 0.33.0 ``vllm/models/minimax_m3/amd/model.py``: ``MiniMaxM3Model.forward`` has two slice-relative loops, the
  prefill one (``enumerate(self.layers[s:e])``, line 1547) and the decode one (``layers = self.layers[s:e]`` then
  ``enumerate(layers)``, line 1557); both are flagged and both get ``start=self.start_layer``.
- 0.33.0: ``verify_supports_aux_hidden_states_over_pp`` is V2's (``eagle3_utils.py:57``); V1's
  ``gpu_model_runner.py`` has no PP verifier, so EGL005's latent message must not claim start_layer is always 0.
"""

from __future__ import annotations

from typing import Any

import pytest

from eagle3_lint.analysis import Analysis, Options, analyze
from eagle3_lint.engines import dir_source
from eagle3_lint.model import Finding, Severity
from tests.conftest import session_cache

_CTX: dict[str, Analysis] = {}


def _ctx(real_trees: Any, version: str) -> Analysis:
    if version not in _CTX:
        _CTX[version] = analyze(dir_source(real_trees.get(version)), Options(cache_dir=session_cache()))
    return _CTX[version]


def _find(ctx: Analysis, rule: str, path_end: str) -> list[Finding]:
    return [f for f in ctx.findings if f.rule == rule and f.location.path.endswith(path_end)]


@pytest.mark.real
def test_v0202_gate_refused_and_wrapped_forwards_are_warnings(real_trees: Any) -> None:
    ctx = _ctx(real_trees, "0.20.2")
    (mimo,) = _find(ctx, "EGL004", "models/mimo.py")
    assert mimo.severity is Severity.WARNING and "refuses EAGLE-3 for model_type 'mimo' at config time" in mimo.message
    layers = next(s for s in mimo.related if s.kind == "layers")
    assert layers.location is not None and layers.location.path.endswith("models/qwen2.py")
    assert layers.location.line == 400
    (exaone,) = _find(ctx, "EGL004", "models/exaone4.py")
    assert exaone.severity is Severity.WARNING and "at config time" in exaone.message
    (omni,) = _find(ctx, "EGL004", "qwen3_omni_moe_thinker.py")
    assert omni.severity is Severity.WARNING and "fails the runner's supports_eagle3 check first" in omni.message
    # No EGL004/EGL005 error is left on an architecture nobody targets that the release cannot reach.
    for f in ctx.findings:
        if f.rule in ("EGL004", "EGL005"):
            assert f.severity is not Severity.ERROR, f.message


@pytest.mark.real
def test_v0330_dead_getter_equal_to_default_is_a_note(real_trees: Any) -> None:
    ctx = _ctx(real_trees, "0.33.0")
    (f,) = _find(ctx, "EGL006", "models/deepseek_v2.py")
    assert f.severity is Severity.NOTE and "returns the same ids" in f.message


@pytest.mark.real
def test_v0330_both_minimax_m3_loops_are_flagged_and_fixed(real_trees: Any) -> None:
    ctx = _ctx(real_trees, "0.33.0")
    got = {f.location.line: f for f in _find(ctx, "EGL005", "minimax_m3/amd/model.py")}
    assert {1547, 1557} <= set(got), sorted(got)
    for line in (1547, 1557):
        fix = got[line].fix
        assert fix is not None and [e.new_text for e in fix.edits] == [", start=self.start_layer"]


@pytest.mark.real
def test_v0330_egl005_latent_message_names_the_v2_verifier(real_trees: Any) -> None:
    ctx = _ctx(real_trees, "0.33.0")
    latent = [f for f in ctx.findings if f.rule == "EGL005" and "verify_supports_aux_hidden_states_over_pp" in f.message
              and f.severity is Severity.WARNING]
    assert latent
    for f in latent:
        assert "V2 runner" in f.message and "V1 runner" in f.message and "has no such verifier" in f.message


@pytest.mark.real
def test_v0330_checkpoint_chosen_inner_model(real_trees: Any) -> None:
    """``llava_next.py`` builds ``self.language_model = init_vllm_registered_model(vllm_config,
    hf_config=config.text_config, ...)`` (no architectures): the inner model is what the checkpoint's
    ``text_config.architectures`` names. Without a target config the verdict says it depends on the checkpoint;
    with one naming ``LlamaForCausalLM`` (which implements SupportsEagle3 in 0.33.0) the wrapper is a wrapper gap."""
    tree = real_trees.get("0.33.0")
    bare = analyze(dir_source(tree), Options(cache_dir=session_cache())).verdicts["LlavaNextForConditionalGeneration"]
    assert bare.status.value == "unsupported" and "depends on the checkpoint" in bare.reason
    cfg = {"architectures": ["LlavaNextForConditionalGeneration"], "model_type": "llava_next",
           "text_config": {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 32}}
    ctx = analyze(dir_source(tree), Options(targets=("LlavaNextForConditionalGeneration",), target_config=cfg,
                                           cache_dir=session_cache()))
    v = ctx.verdicts["LlavaNextForConditionalGeneration"]
    assert v.status.value == "wrapper-gap" and v.inner == ("vllm.model_executor.models.llama.LlamaForCausalLM",)
    # Only the targeted wrapper reads that checkpoint: another wrapper of the same shape stays open.
    assert "depends on the checkpoint" in ctx.verdicts["InternVLChatModel"].reason


@pytest.mark.real
@pytest.mark.parametrize("version", ["0.20.2", "0.33.0"])
def test_dead_getter_delegating_to_the_checkpoints_model_is_a_note(real_trees: Any, version: str) -> None:
    """``pixtral.py``: ``PixtralForConditionalGeneration.get_eagle3_aux_hidden_state_layers`` (0.33.0: line 511) is
    dead (the runner calls ``get_eagle3_default_aux_hidden_state_layers``) and returns
    ``self.language_model.get_eagle3_aux_hidden_state_layers()``, the ids of a language model the checkpoint
    chooses (``init_vllm_registered_model(hf_config=config.text_config)``): nothing in the tree says they differ from
    what runs, so it is dead code to clean up (a note), not a layer choice known to be lost (a warning)."""
    ctx = _ctx(real_trees, version)
    (f,) = [f for f in _find(ctx, "EGL006", "models/pixtral.py") if f.symbol and f.symbol.startswith("Pixtral")]
    assert f.severity is Severity.NOTE, f.message
    assert "depends on the checkpoint" in f.message
