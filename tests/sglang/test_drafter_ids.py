"""EGL007 and the serving chain on real SGLang releases, with real drafter configs.

Every expectation is written from SGLang's source (file:line in the comments), not from the tool's output. The
drafter configs are the public ones in ``sample_trees/_checkpoints`` (README there names each source); where a
test needs ids a published config does not have (the last layer, PP), it starts from a published config and
changes only the ids, and says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eagle3_lint import engine_hooks
from eagle3_lint.analysis import Analysis, Options, analyze
from eagle3_lint.engines import dir_source
from eagle3_lint.report.title import title
from tests.conftest import SAMPLES, session_cache

CHECKPOINTS = SAMPLES / "_checkpoints"
KIMI = "KimiK25ForConditionalGeneration"
DSV3 = "DeepseekV3ForCausalLM"


def _check(root: Path, arch: str, draft: Path | dict[str, Any], target: str, tmp_path: Path,
           pp: int | None = None, convention: str | None = None) -> Analysis:
    if isinstance(draft, dict):
        path = tmp_path / "draft.json"
        path.write_text(json.dumps(draft, indent=2) + "\n")
        draft = path
    tpath = CHECKPOINTS / target
    opts = Options(targets=(arch,), target_config=json.loads(tpath.read_text()), target_config_path=str(tpath),
                   draft_config=json.loads(draft.read_text()), draft_config_path=str(draft), pipeline_parallel=pp,
                   drafter_convention=convention, cache_dir=session_cache())
    ctx = analyze(dir_source(root), opts)
    assert not ctx.errors, [e.message + e.traceback for e in ctx.errors]
    return ctx


def _egl007(ctx: Analysis, arch: str) -> list[Any]:
    return [f for f in ctx.findings if f.rule == "EGL007" and f.architecture == arch]


def _step(ctx: Analysis, arch: str, gate: str) -> Any:
    return next(s for s in ctx.serving[arch].steps if s.gate.value == gate)


def _with_ids(name: str, ids: list[int]) -> dict[str, Any]:
    cfg = json.loads((CHECKPOINTS / name).read_text())
    cfg["eagle_config"] = {**cfg.get("eagle_config", {}), "eagle_aux_hidden_state_layer_ids": ids}
    return cfg


@pytest.mark.real
def test_kimi_k25_off_by_one_before_and_after_pr_25454(sglang_trees: Any, tmp_path: Path) -> None:
    """SpecForge's Kimi-K2.5 drafter names [2, 30, 58]: Kimi-K2.5's 61 layers' default (2, n//2, n-3) as the state
    entering each layer (SGLang PR #25454's "input to layer X" convention).

    0.5.12: ``KimiK25ForConditionalGeneration.set_eagle3_layers_to_capture`` (kimi_k25.py:799) hands the ids to
    ``self.language_model`` (kimi_k25.py:810), a ``DeepseekV3ForCausalLM`` (kimi_k25.py:660), whose setter
    (deepseek_v2.py:2529) stores ``[val + 1 for val in layer_ids]`` (deepseek_v2.py:2541): [3, 31, 59], collected
    before each layer by ``if i in self.layers_to_capture`` (deepseek_v2.py:2275): one layer late.
    0.5.13: the same setter (deepseek_v2.py:2740) adds 1 only ``if layer_ids and layer_ids[0] == 1``
    (deepseek_v2.py:2752): [2, 30, 58] are stored as they are."""
    draft = CHECKPOINTS / "specforge-kimi-k25-eagle3.json"
    old = _check(sglang_trees.get("0.5.12"), KIMI, draft, "kimi-k2.5.json", tmp_path)
    sv = old.serving[KIMI]
    assert sv.outcome.value == "wrong-layers" and sv.engine == "sglang"
    assert sv.aux_layer_ids == (3, 31, 59) and sv.drafter_trained_ids == (2, 30, 58)
    # The next step names the ids that deepseek_v2.py:2541's +1 turns into [2, 30, 58].
    assert sv.next_step is not None and "eagle_aux_hidden_state_layer_ids = [1, 29, 57]" in sv.next_step
    ids = _step(old, KIMI, "aux-ids")
    assert (ids.location.path, ids.location.line) == ("sglang/srt/model_executor/model_runner.py", 436)
    cap = _step(old, KIMI, "capture")
    assert (cap.location.path, cap.location.line) == ("sglang/srt/models/deepseek_v2.py", 2275)
    [f] = _egl007(old, KIMI)
    assert f.severity.value == "error" and "one layer late" in f.message
    assert "sglang/srt/models/deepseek_v2.py:2529" in f.message and "[1, 29, 57] would capture them" in f.message
    assert (f.location.path, f.location.line) == (str(draft), 9)
    # The concise line says the layers, whole (it used to be the message's first sentence, clipped mid-way).
    assert title(f) == f"{KIMI}: captures layers [3, 31, 59], but the drafter was trained on [2, 30, 58]"

    new = _check(sglang_trees.get("0.5.13"), KIMI, draft, "kimi-k2.5.json", tmp_path)
    assert new.serving[KIMI].outcome.value == "servable" and new.serving[KIMI].aux_layer_ids == (2, 30, 58)
    assert not _egl007(new, KIMI)

    # Stated otherwise (trained on the outputs of layers 2, 30, 58), 0.5.12's +1 is right and 0.5.13's is not.
    said = _check(sglang_trees.get("0.5.13"), KIMI, draft, "kimi-k2.5.json", tmp_path, convention="sglang")
    assert said.serving[KIMI].outcome.value == "wrong-layers" and said.serving[KIMI].drafter_trained_ids == (3, 31, 59)


@pytest.mark.real
@pytest.mark.parametrize("version", ["0.5.12", "0.5.23"])
def test_specforge_output_numbering_is_shifted_onto_the_default(sglang_trees: Any, tmp_path: Path,
                                                               version: str) -> None:
    """SpecForge's DeepSeek-V3 drafter names [1, 29, 57] (output numbering); both setters add 1 for a first id of 1
    (0.5.12 deepseek_v2.py:2541, 0.5.23 deepseek_v2.py:3470-3471): [2, 30, 58], the trained layers. 0.5.23 reads
    the ids at spec_aux_hidden_state.py:192 (``config.eagle_aux_hidden_state_layer_ids = eagle_config[...]``)."""
    ctx = _check(sglang_trees.get(version), DSV3, CHECKPOINTS / "specforge-deepseek-v3-eagle3.json",
                 "deepseek-v3.json", tmp_path)
    sv = ctx.serving[DSV3]
    assert sv.outcome.value == "servable", [(s.gate.value, s.result.value, s.message) for s in sv.steps]
    assert sv.aux_layer_ids == sv.captured_layers == (2, 30, 58)
    assert not _egl007(ctx, DSV3)
    if version == "0.5.23":
        read = _step(ctx, DSV3, "aux-ids").location
        assert (read.path, read.line) == ("sglang/srt/model_executor/model_runner_components/spec_aux_hidden_state.py",
                                          192)


@pytest.mark.real
def test_last_layer_after_plus_one_is_never_captured(sglang_trees: Any, tmp_path: Path) -> None:
    """The SpecForge DeepSeek-V3 config with its last id moved to 60 (n - 1, the last layer's output): the 0.5.23
    setter adds 1 (first id 1, deepseek_v2.py:3470-3471) and stores 61; ``DeepseekV2Model.forward`` collects only
    ``if i in self.layers_to_capture`` inside ``for i in range(self.start_layer, self.end_layer)``
    (deepseek_v2.py:3194) and nothing after the loop, so 61 is never captured."""
    ctx = _check(sglang_trees.get("0.5.23"), DSV3, _with_ids("specforge-deepseek-v3-eagle3.json", [1, 30, 60]),
                 "deepseek-v3.json", tmp_path)
    [f] = _egl007(ctx, DSV3)
    assert f.severity.value == "error" and "[61] never captured" in f.message and "becomes 61" in f.message
    sv = ctx.serving[DSV3]
    assert (sv.outcome.value, sv.stage.value if sv.stage else None) == ("drafter-shape-mismatch", "capture")
    assert sv.captured_layers == (2, 31)


@pytest.mark.real
def test_gpt_oss_captures_the_last_layer_output(sglang_trees: Any, tmp_path: Path) -> None:
    """SpecForge's gpt-oss-120b config with its last id moved to 36 (= num_hidden_layers, the last layer's output).
    0.5.23's setter keeps ids whose max is num_layers as they are (gpt_oss.py:1349-1350) and the decoder collects
    index n after the loop (``self.end_layer in self.layers_to_capture``, gpt_oss.py:732 and :735): served.
    0.5.10's setter adds 1 unconditionally (gpt_oss.py:1186-1199): 37 is past everything the decoder collects."""
    cfg = _with_ids("specforge-gpt-oss-120b-eagle3.json", [1, 17, 36])
    new = _check(sglang_trees.get("0.5.23"), "GptOssForCausalLM", cfg, "gpt-oss-120b.json", tmp_path)
    assert new.serving["GptOssForCausalLM"].outcome.value == "servable"
    assert new.serving["GptOssForCausalLM"].captured_layers == (1, 17, 36)
    assert not _egl007(new, "GptOssForCausalLM")
    old = _check(sglang_trees.get("0.5.10"), "GptOssForCausalLM", cfg, "gpt-oss-120b.json", tmp_path)
    assert old.serving["GptOssForCausalLM"].outcome.value == "drafter-shape-mismatch"
    assert any("[37] never captured" in f.message for f in _egl007(old, "GptOssForCausalLM"))


@pytest.mark.real
def test_flag_setter_raises_index_error_past_the_last_layer(sglang_trees: Any, tmp_path: Path) -> None:
    """Qwen3-MoE 0.5.23: the top-level setter (qwen3_moe.py:1128) passes ``[val + 1 for val in layer_ids]`` to
    ``Qwen2MoeModel.set_eagle3_layers_to_capture`` (qwen2_moe.py:1153), which marks
    ``setattr(self.layers[layer_id], "_is_layer_to_capture", True)`` (qwen2_moe.py:1156): id 93 of 94 layers
    becomes 94 and ``self.layers[94]`` raises IndexError at start-up. (SpecForge's Qwen3-235B config, last id
    moved to 93.)"""
    cfg = _with_ids("specforge-qwen3-235b-a22b-eagle3.json", [1, 46, 93])
    ctx = _check(sglang_trees.get("0.5.23"), "Qwen3MoeForCausalLM", cfg, "qwen3-235b-a22b.json", tmp_path)
    [f] = _egl007(ctx, "Qwen3MoeForCausalLM")
    assert "IndexError" in f.message and "sglang/srt/models/qwen2_moe.py:1156" in f.message
    cap = _step(ctx, "Qwen3MoeForCausalLM", "capture")
    assert cap.result.value == "fail" and (cap.location.path, cap.location.line) == (
        "sglang/srt/models/qwen2_moe.py", 1156)


@pytest.mark.real
def test_vllm_format_drafter_ids_are_not_read(sglang_trees: Any, tmp_path: Path) -> None:
    """The speculators-format Qwen3-235B drafter keeps its ids at the top level, which SGLang never reads (0.5.23
    reads only ``eagle_config[...]``, spec_aux_hidden_state.py:192): the setter's default
    ``[2, num_layers // 2, num_layers - 3]`` (qwen3_moe.py, handed to Qwen2MoeModel) is captured. Whether its
    [1, 46, 90] meant that default (SpecForge numbering lifted as-is) or layers 1, 46, 90 the tool cannot know:
    a warning, and the trained-layers step stays unchecked."""
    ctx = _check(sglang_trees.get("0.5.23"), "Qwen3MoeForCausalLM",
                 CHECKPOINTS / "nm-testing-qwen3-235b-eagle3-speculators.json", "qwen3-235b-a22b.json", tmp_path)
    [f] = _egl007(ctx, "Qwen3MoeForCausalLM")
    assert f.severity.value == "warning" and "is ignored" in f.message and "[2, 47, 91]" in f.message
    sv = ctx.serving["Qwen3MoeForCausalLM"]
    assert sv.aux_layer_ids == (2, 47, 91) and sv.aux_layer_ids_source == "model-default"
    assert _step(ctx, "Qwen3MoeForCausalLM", "trained-layers").result.value == "unchecked"
    # Stated as vLLM numbering, the drafter wants layers 1, 46, 90 and SGLang captures others.
    said = _check(sglang_trees.get("0.5.23"), "Qwen3MoeForCausalLM",
                  CHECKPOINTS / "nm-testing-qwen3-235b-eagle3-speculators.json", "qwen3-235b-a22b.json", tmp_path,
                  convention="vllm")
    assert said.serving["Qwen3MoeForCausalLM"].outcome.value == "wrong-layers"


@pytest.mark.real
@pytest.mark.parametrize(("version", "where", "via"), [
    # ``if cfg.pp_size > 1: assert (cfg.disable_overlap_schedule and cfg.speculative_algorithm is None)``
    # (arg_groups/validation_hook.py:51-54).
    ("0.5.19", ("sglang/srt/arg_groups/validation_hook.py", 52), ""),
    # ``if cfg.pp_size > 1: check_pipeline_parallel_compat(cfg)`` (validation_hook.py:196-197), which asserts
    # ``cfg.speculative_algorithm.upper() == "EAGLE"`` for any algorithm but DSPARK (validation_hook.py:131-138):
    # EAGLE3 fails it. The watermark's PP test (validation_hook.py:95) and DFLASH's (speculative_hook.py:320)
    # are not that refusal.
    ("0.5.23", ("sglang/srt/arg_groups/validation_hook.py", 132), "check_pipeline_parallel_compat"),
])
def test_pipeline_parallel_refused_at_launch(sglang_trees: Any, tmp_path: Path, version: str,
                                             where: tuple[str, int], via: str) -> None:
    """EAGLE-3 with pipeline parallelism never starts on a released SGLang up to 0.5.23: the server-argument
    validation refuses it before any weight loads (the last-rank-only setters, deepseek_v2.py:3459-3460 in 0.5.23,
    would lose the ids on earlier ranks if it did not: sample case ``sglang_pp_last_rank``)."""
    ctx = _check(sglang_trees.get(version), DSV3, CHECKPOINTS / "specforge-deepseek-v3-eagle3.json",
                 "deepseek-v3.json", tmp_path, pp=2)
    sv = ctx.serving[DSV3]
    # Refused because of pipeline parallelism: the pp-refused outcome (issue 24), at launch, before any weight loads.
    assert (sv.outcome.value, sv.stage.value if sv.stage else None) == ("pp-refused", "pp-verifier")
    [f] = _egl007(ctx, DSV3)
    assert (f.location.path, f.location.line) == where and f.severity.value == "error"
    assert (f"in {via}()" in f.message) if via else "in check_" not in f.message
    assert engine_hooks.pp_refused(ctx.model) is not None
