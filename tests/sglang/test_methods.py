"""SGLang's DFLASH and DSPARK on EAGLE-3's gates (issue 23 item 3, engines/sglang/methods.py, method_chain.py).

Every expectation is written from the release's source, cited file:line (0.5.23 unless said). No DFlash drafter
config is in ``sample_trees/_checkpoints``; the tests write one with the fields 0.5.23's parser reads
(``speculative/dflash_utils.py``: ``num_hidden_layers`` :594-598, ``dflash_config.target_layer_ids`` :657-660,
``mask_token_id`` :688) for Llama-3.1-8B's published config (32 layers, hidden 4096).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eagle3_lint import engine_hooks
from eagle3_lint.analysis import Analysis, Options, analyze
from eagle3_lint.engines import dir_source
from eagle3_lint.engines.sglang import method_chain, methods
from eagle3_lint.serving import Gate, Outcome, ServingVerdict, StepResult
from eagle3_lint.source import DirSource
from tests.cihelp import cli
from tests.conftest import SAMPLES

CHECKPOINTS = SAMPLES / "_checkpoints"
LLAMA = "LlamaForCausalLM"
SETUP = "sglang/srt/model_executor/model_runner_components/attention_backend_setup.py"
AUX = "sglang/srt/model_executor/model_runner_components/spec_aux_hidden_state.py"
DFLASH_UTILS = "sglang/srt/speculative/dflash_utils.py"
DFLASH_SETTER, DSPARK_SETTER = "set_dflash_layers_to_capture", "set_dspark_layers_to_capture"


def _dflash(ids: list[int] | None, layers: int = 5) -> dict[str, Any]:
    cfg: dict[str, Any] = {"architectures": ["DFlashDraftModel"], "num_hidden_layers": layers, "hidden_size": 4096,
                           "block_size": 16}
    if ids is not None:
        cfg["dflash_config"] = {"target_layer_ids": ids, "mask_token_id": 128002}
    return cfg


def _ctx(root: Path, method: str, draft: dict[str, Any] | None, tmp_path: Path, arch: str = LLAMA,
         target: str = "llama-3.1-8b-instruct.json", pp: int | None = None) -> Analysis:
    dpath = tmp_path / "draft.json"
    if draft is not None:
        dpath.write_text(json.dumps(draft, indent=1))
    tpath = CHECKPOINTS / target
    opts = Options(targets=(arch,), target_config=json.loads(tpath.read_text()), target_config_path=str(tpath),
                   draft_config=draft, draft_config_path=str(dpath) if draft is not None else None, method=method,
                   pipeline_parallel=pp)
    ctx = analyze(dir_source(root), opts, select=lambda _rule: False)  # the chain needs no rule: run none
    assert not ctx.errors, [e.message for e in ctx.errors]
    return ctx


def _verdict(ctx: Analysis, arch: str = LLAMA, method: str | None = None,
             draft: dict[str, Any] | None | str = "check's") -> ServingVerdict:
    """The chain with the check's drafter, or (sharing the analysis: the tree's facts do not depend on the drafter)
    with another drafter config or method."""
    if draft == "check's" and method is None:
        sv = engine_hooks.serving_verdict(ctx.model, arch)
        assert sv is not None
        return sv
    d = ctx.options.draft_config if draft == "check's" else draft
    assert not isinstance(d, str)
    return method_chain.chain_for(ctx.model, arch, method or ctx.options.method or "", d, "draft.json")


@pytest.fixture(scope="module")
def ctx_0_5_23(sglang_trees: Any, tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    return _ctx(sglang_trees.get("0.5.23"), "DFLASH", _dflash([1, 8, 15, 22, 29]), tmp_path_factory.mktemp("d"))


def _at(sv: ServingVerdict, gate: Gate) -> tuple[str, str | None, int | None]:
    s = sv.step(gate)
    assert s is not None, gate
    return s.result.value, s.location.path if s.location else None, s.location.line if s.location else None


@pytest.mark.real
def test_real_methods_a_release_has(sglang_trees: Any) -> None:
    """SpeculativeAlgorithm's members: 0.5.23 spec_info.py:39-47, 0.5.13 :35-41 (DFLASH, no DSPARK), 0.5.10 :18-22
    (neither). ``from_string`` raises for any other name (0.5.23 spec_info.py:65, 0.5.10 :31)."""
    assert methods.algorithms(dir_source(sglang_trees.get("0.5.23"))).names == (  # type: ignore[union-attr]
        "DFLASH", "UNO", "DSPARK", "EAGLE", "EAGLE3", "FROZEN_KV_MTP", "STANDALONE", "NGRAM")
    old = sglang_trees.get("0.5.10")
    r = cli("check", str(old), "--arch", LLAMA, "--method", "DFLASH")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "eagle3-lint: error: --method 'DFLASH': SGLang 0.5.10 has no speculative algorithm DFLASH (its "
        "SpeculativeAlgorithm, sglang/srt/speculative/spec_info.py:15, has EAGLE, EAGLE3, STANDALONE, NGRAM); "
        "eagle3-lint checks EAGLE3 on this release"]
    r = cli("check", str(sglang_trees.get("0.5.13")), "--arch", LLAMA, "--method", "DSPARK")
    assert r.returncode == 2 and "has no speculative algorithm DSPARK" in r.stderr
    assert "eagle3-lint checks EAGLE3, DFLASH on this release" in r.stderr
    # A method SGLang has but the tool does not check (EAGLE-1) is refused before the tree is read.
    r = cli("check", str(old), "--arch", LLAMA, "--method", "EAGLE")
    assert r.returncode == 2 and "checks SGLang's methods EAGLE3, DFLASH, DSPARK" in r.stderr


@pytest.mark.real
def test_real_method_names_are_read_as_from_string_reads_them(sglang_trees: Any, real_trees: Any) -> None:
    """SGLang upper-cases the ``--speculative-algorithm`` name before its lookup (0.4.7 spec_info.py:26
    ``name = name.upper()``, 0.5.10 :29 ``cls[name.upper()]``, 0.5.23 :55 ``upper = name.upper()``), so ``dflash``
    serves as DFLASH: the tool reads ``--method`` the same way and gives the same report. vLLM's
    ``SpeculativeConfig.method`` is a ``Literal`` of lower-case names (0.33.0 config/speculative.py:74, :419), so
    ``EAGLE3`` stays a usage error there."""
    for v in ("0.4.7", "0.5.10", "0.5.23"):
        algos = methods.algorithms(dir_source(sglang_trees.get(v)))
        assert algos is not None and algos.upper_cases, v
    for v, method in (("0.5.23", "DFLASH"), ("0.4.7", "EAGLE3")):
        root = str(sglang_trees.get(v))
        want = cli("check", root, "--arch", LLAMA, "--method", method, "--output-format", "json")
        got = cli("check", root, "--arch", LLAMA, "--method", method.lower(), "--output-format", "json")
        assert (got.returncode, got.stdout) == (want.returncode, want.stdout) and want.returncode in (0, 1), v
        assert json.loads(got.stdout)["serving"][0]["outcome"] == json.loads(want.stdout)["serving"][0]["outcome"]
    r = cli("check", str(sglang_trees.get("0.5.10")), "--arch", LLAMA, "--method", "dflash")
    assert r.returncode == 2 and "--method 'DFLASH': SGLang 0.5.10 has no speculative algorithm DFLASH" in r.stderr
    r = cli("check", str(real_trees.get("0.33.0")), "--arch", "LlamaForCausalLM", "--method", "EAGLE3")
    assert r.returncode == 2 and "checks vLLM's methods eagle3, dflash" in r.stderr


@pytest.mark.real
def test_real_0_5_23_which_setter_per_method_and_class(ctx_0_5_23: Analysis) -> None:
    """configure_aux_hidden_state_capture (attention_backend_setup.py:54-72): EAGLE-3's setter only under
    eagle_use_aux_hidden_state (:54), set only for is_eagle3() (spec_aux_hidden_state.py:185-186); under
    dflash_use_aux_hidden_state (:62, set True for is_dflash_family(), spec_aux_hidden_state.py:207/279):
    set_dspark_layers_to_capture when is_dspark (spec_aux_hidden_state.py:60, SpeculativeAlgorithm.is_dspark,
    spec_info.py:123-124) and the class has it (:63-64), else set_dflash_layers_to_capture if it has it (:65-66),
    else ValueError (:67-72, raised at :68)."""
    ctx = ctx_0_5_23
    want = {("DFLASH", True, True): (DFLASH_SETTER, 66), ("DFLASH", True, False): (DFLASH_SETTER, 66),
            ("DSPARK", True, True): (DSPARK_SETTER, 64), ("DSPARK", True, False): (DFLASH_SETTER, 66),
            ("DSPARK", False, True): (DSPARK_SETTER, 64)}
    for (m, dflash, dspark), (setter, line) in want.items():
        r = methods.route(ctx.model, m, {DFLASH_SETTER: dflash, DSPARK_SETTER: dspark})
        assert [(c.setter, c.where.path, c.where.line) for c in r.calls] == [(setter, SETUP, line)], (m, r)
        assert r.refusal is None
    for m in ("DFLASH", "DSPARK"):
        r = methods.route(ctx.model, m, {DFLASH_SETTER: False, DSPARK_SETTER: False})
        assert r.calls == () and r.refusal is not None and (r.refusal.path, r.refusal.line) == (SETUP, 68)
        assert r.refusal.text.startswith("ValueError: Model <model class> implements neither")
    # EAGLE-3 itself reaches only its own setter (:61).
    r = methods.route(ctx.model, "EAGLE3", {DFLASH_SETTER: True, DSPARK_SETTER: True})
    assert [(c.setter, c.where.line) for c in r.calls] == [("set_eagle3_layers_to_capture", 61)]
    # Llama4ForConditionalGeneration (mllama4.py:443) has set_eagle3_layers_to_capture (:971) and neither DFlash
    # setter: the runner's ValueError, after the weights load (whatever the drafter: the step comes first).
    arch = "Llama4ForConditionalGeneration"
    sv = _verdict(ctx, arch, "DFLASH", None)
    assert sv.outcome is Outcome.REFUSED_AT_LOAD and _at(sv, Gate.RUNNER_INTERFACE) == ("fail", SETUP, 68)
    step = sv.step(Gate.RUNNER_INTERFACE)
    assert step is not None and f"Model {arch} implements neither" in step.message


@pytest.mark.real
def test_real_0_5_23_dflash_on_llama(ctx_0_5_23: Analysis) -> None:
    """The runner hands the setter dflash_config.target_layer_ids (dflash_utils.py:657-660 -> resolve_target_layer_ids
    :556-585 -> spec_aux_hidden_state.py:283); LlamaForCausalLM.set_dflash_layers_to_capture (llama.py:943) stores
    val + 1 (:953) in self.model.layers_to_capture, which LlamaModel.forward tests per layer (llama.py:485-493):
    the states entering ids + 1, the outputs of the layers the config names."""
    ctx = ctx_0_5_23
    sv = _verdict(ctx)
    assert sv.outcome is Outcome.SERVABLE
    assert _at(sv, Gate.RUNNER_INTERFACE) == ("pass", SETUP, 66)
    assert _at(sv, Gate.AUX_IDS) == ("pass", AUX, 283)
    assert sv.captured_layers == (2, 9, 16, 23, 30) == sv.drafter_trained_ids
    # No ids: build_target_layer_ids(32 target layers, 4 drafter layers) (dflash_utils.py:348-386): start 1, end
    # n - 3, round(start + i * span / (k - 1)); captured +1. What the drafter was trained on is not written.
    sv = _verdict(ctx, draft=_dflash(None, layers=4))
    chosen = [int(round(1 + i * (32 - 3 - 1) / (4 - 1))) for i in range(4)]
    assert chosen == [1, 10, 20, 29]
    assert sv.captured_layers == tuple(i + 1 for i in chosen) and sv.aux_layer_ids_source == "model-default"
    assert sv.outcome is Outcome.UNCHECKED and sv.stage is Gate.TRAINED_LAYERS
    # One drafter layer: the middle layer, num_target_layers // 2 (dflash_utils.py:370-371).
    assert methods.target_ids(ctx.model, "DFLASH", _dflash(None, layers=1), ctx.options.target_config).ids == (16,)
    # Id 31, the last layer's output, becomes 32, which the loop over range(start_layer, end_layer) never tests
    # (llama.py:485-493): the drafter receives 2 of 3 states.
    sv = _verdict(ctx, draft=_dflash([1, 15, 31], layers=3))
    assert sv.outcome is Outcome.DRAFTER_SHAPE_MISMATCH and sv.stage is Gate.CAPTURE
    assert sv.captured_layers == (2, 16)
    # The check exits 1 on it: EGL007 reports the failing capture step under the method.
    draft = Path(str(ctx.options.draft_config_path)).with_name("last.json")
    draft.write_text(json.dumps(_dflash([1, 15, 31], layers=3)))
    r = cli("check", str(ctx.source.root_label), "--arch", LLAMA, "--method", "DFLASH", "--select", "EGL007",
            "--target-config", str(CHECKPOINTS / "llama-3.1-8b-instruct.json"), "--draft-config", str(draft))
    assert r.returncode == 1, r.stderr
    assert "sglang/srt/models/llama.py:492:1: error: EGL007" in r.stdout
    # Id 32 is refused by resolve_target_layer_ids (dflash_utils.py:579-583) while the runner is set up.
    sv = _verdict(ctx, draft=_dflash([1, 15, 32], layers=3))
    assert sv.outcome is Outcome.DRAFTER_UNLOADABLE
    assert _at(sv, Gate.DRAFTER_CLASS) == ("fail", DFLASH_UTILS, 581)
    step = sv.step(Gate.DRAFTER_CLASS)
    assert step is not None and "out-of-range layer id" in step.message


@pytest.mark.real
def test_real_0_5_23_dspark_and_pp(ctx_0_5_23: Analysis, sglang_trees: Any, tmp_path: Path) -> None:
    # DSPARK without markov_rank: parse_dspark_draft_config's default 0 (dspark_config.py:239-249), refused by
    # require_markov (dspark_config.py:74-75) at spec_aux_hidden_state.py:268-269.
    sv = _verdict(ctx_0_5_23, method="DSPARK")
    assert sv.outcome is Outcome.DRAFTER_UNLOADABLE and _at(sv, Gate.DRAFTER_CLASS) == ("fail", AUX, 269)
    # With markov_rank and a supported head (dspark_config.py:265-275), LlamaForCausalLM has no DSpark setter: the
    # DFlash one (attention_backend_setup.py:65-66) stores the same +1.
    dspark = {**_dflash([1, 8, 15, 22, 29]), "markov_rank": 1, "markov_head_type": "vanilla"}
    sv = _verdict(ctx_0_5_23, method="DSPARK", draft=dspark)
    assert sv.outcome is Outcome.SERVABLE and _at(sv, Gate.RUNNER_INTERFACE) == ("pass", SETUP, 66)
    assert sv.captured_layers == (2, 9, 16, 23, 30)
    # Pipeline parallelism: check_pipeline_parallel_compat allows only EAGLE but for DSPARK (validation_hook.py:
    # 124-138): DFLASH is refused at launch (the assert at :132); DSPARK's own branch asks for prefill
    # disaggregation, another option, which is not a refusal of DSPARK.
    ctx = _ctx(sglang_trees.get("0.5.23"), "DFLASH", _dflash([1, 8, 15, 22, 29]), tmp_path, pp=2)
    sv = _verdict(ctx)
    assert sv.outcome is Outcome.PP_REFUSED and _at(sv, Gate.PP_VERIFIER) == (
        "fail", "sglang/srt/arg_groups/validation_hook.py", 132)
    assert _at(_verdict(ctx, method="DSPARK", draft=dspark), Gate.PP_VERIFIER)[0] == "pass"


@pytest.mark.real
def test_real_0_5_13_dflash_inside_the_model_runner(sglang_trees: Any, tmp_path: Path) -> None:
    """0.5.13 resolves the ids in ModelRunner.__init__ (model_runner.py:477 ``if self.spec_algorithm.is_dflash()
    and not self.is_draft_worker``, assigned at :518) and calls the setter in init_aux_hidden_state_capture behind
    ``if not hasattr(...): raise ValueError`` (:953-959)."""
    mr = "sglang/srt/model_executor/model_runner.py"
    ctx = _ctx(sglang_trees.get("0.5.13"), "DFLASH", _dflash([1, 8, 15, 22, 29]), tmp_path)
    sv = _verdict(ctx)
    assert sv.outcome is Outcome.SERVABLE
    assert _at(sv, Gate.RUNNER_INTERFACE) == ("pass", mr, 959) and _at(sv, Gate.AUX_IDS) == ("pass", mr, 518)
    # LlamaForCausalLM.set_dflash_layers_to_capture stores val + 1 (llama.py:837).
    assert sv.captured_layers == (2, 9, 16, 23, 30)
    r = methods.route(ctx.model, "DFLASH", {DFLASH_SETTER: False})
    assert r.refusal is not None and (r.refusal.path, r.refusal.line) == (mr, 955)
    assert r.refusal.text == ("ValueError: Model <model class> does not implement set_dflash_layers_to_capture, "
                              "which is required for DFLASH.")
    step = _verdict(ctx, draft=None).step(Gate.AUX_IDS)
    assert step is not None and step.result is StepResult.UNCHECKED


@pytest.mark.real
def test_real_dspark_setters_own_list(sglang_trees: Any, tmp_path: Path) -> None:
    """DSPARK's setters write a list of their own, ``dspark_layers_to_capture``, which EAGLE-3's idiom does not name:
    the capture step derives it from the setter's write. KimiLinearForCausalLM.set_dspark_layers_to_capture stores
    list(layer_ids) in self.model.dspark_layers_to_capture (kimi_linear.py:803-809); KimiLinearModel.forward tests
    ``i in self.dspark_layers_to_capture`` after layer i's call (:735-743): the outputs of the layers the config
    names, which is what the drafter was trained on (dflash_utils.py:359-361). KimiK3ForConditionalGeneration
    delegates to its language model (kimi_k3.py:3568-3573), whose model tests ``i - 1 in captures`` in layer i's
    call and ``i in captures`` after it (``captures = self.dspark_layers_to_capture or ()``, :2872, :2899, :2904):
    the same outputs. DeepseekV4Model collects after layer i on one path (deepseek_v4.py:4559) and before it,
    "the attention input of its target layers", on the hc_pre_from_prev path (:4203): which runs is not known."""
    dspark = {**_dflash([1, 30, 57], layers=3), "hidden_size": 7168, "markov_rank": 1, "markov_head_type": "vanilla"}
    ctx = _ctx(sglang_trees.get("0.5.23"), "DSPARK", dspark, tmp_path, arch="KimiLinearForCausalLM",
               target="deepseek-v3.json")
    for arch, site in (("KimiLinearForCausalLM", "sglang/srt/models/kimi_linear.py:743"),
                       ("KimiK3ForConditionalGeneration", "sglang/srt/models/kimi_k3.py:2899")):
        sv = _verdict(ctx, arch, "DSPARK")
        assert sv.outcome is Outcome.SERVABLE, (arch, sv.steps)
        assert sv.captured_layers == (2, 31, 58) == sv.drafter_trained_ids
        cap = sv.step(Gate.CAPTURE)
        assert cap is not None and cap.location is not None and f"{cap.location.path}:{cap.location.line}" == site
    sv = _verdict(ctx, "DeepseekV4ForCausalLM", "DSPARK")
    cap = sv.step(Gate.CAPTURE)
    assert sv.outcome is Outcome.UNKNOWN and cap is not None and cap.result is StepResult.UNKNOWN
    assert "line 4203: the state entering layer i; line 4559: the state leaving layer i" in cap.message


@pytest.mark.real
def test_real_egl011_on_the_dflash_drafter_class(ctx_0_5_23: Analysis, sglang_trees: Any, tmp_path: Path) -> None:
    """The keys SGLang's DFlash drafter class reads, as for EAGLE-3's: DFlashDraftModel (0.5.23 dflash.py:671) reads
    use_gemma_norm (:247) and swiglu_limit; 0.5.19's dflash.py reads neither. Its load_weights ignores tensors it has
    no parameter for (0.5.23 dflash.py:943-945), so on 0.5.19 the drafter loads and another one runs."""
    keys = {**_dflash([1, 8, 15, 22, 29]), "use_gemma_norm": True}
    ctx = _ctx(sglang_trees.get("0.5.19"), "DFLASH", keys, tmp_path)
    ik = engine_hooks.draft_analysis(ctx.model, LLAMA)
    assert ik is not None and [(k.key, k.reader, k.reader_where.path if k.reader_where else None)
                               for k in ik.ignored_keys or ()] == [
        ("use_gemma_norm", "0.5.23", "sglang/srt/models/dflash.py")]
    sv = _verdict(ctx)
    assert sv.outcome is Outcome.DRAFTER_DIFFERS and sv.stage is Gate.DRAFTER_CLASS
    r = cli("check", str(ctx.source.root_label), "--arch", LLAMA, "--method", "DFLASH", "--select", "EGL011",
            "--target-config", str(CHECKPOINTS / "llama-3.1-8b-instruct.json"), "--draft-config",
            str(ctx.options.draft_config_path))
    assert r.returncode == 1 and "error: EGL011 use_gemma_norm is ignored by SGLang 0.5.19's drafter" in r.stdout
    # 0.5.23 reads it: no ignored key, and the chain serves.
    sv = _verdict(ctx_0_5_23, draft=keys)
    assert sv.outcome is Outcome.SERVABLE and sv.step(Gate.DRAFTER_CLASS) is None


@pytest.mark.real
def test_real_ids_always_given_under_dflash_not_eagle3(sglang_trees: Any) -> None:
    """Whether the runner ever hands the method's setter None, read off the assignments of what it passes
    (``methods.ids_given``). 0.5.23: ``configure_aux_hidden_state_capture`` calls the DFLASH-family setters under
    ``if dflash_use_aux_hidden_state:`` (attention_backend_setup.py:62-66); that flag is set true at
    spec_aux_hidden_state.py:279 in the block that sets ``config.dflash_target_layer_ids = target_layer_ids``
    (:283), whose value is ``resolve_target_layer_ids(...)`` (:247, ``-> List[int]``, dflash_utils.py:556-561),
    ``_map_muse_target_layer_ids`` (:254, which returns a list or its ``layer_ids`` argument, :29) or
    ``list(...)`` (:274); the one None is the field's default (:40). EAGLE3's ids are
    ``eagle_config["eagle_aux_hidden_state_layer_ids"]`` or None (:192, :196). 0.5.11 sets
    ``self.dflash_target_layer_ids = None`` (model_runner.py:389) before the flag and the ids are set together in
    the same function (:455, :457)."""
    from eagle3_lint.engines.treereader import TreeReader

    for v, where in (("0.5.23", (AUX, 283)), ("0.5.11", ("sglang/srt/model_executor/model_runner.py", 457))):
        src = DirSource(sglang_trees.get(v), "sglang")
        mi = methods.method_interface(src, "DFLASH")
        assert mi.ids_given is not None and (mi.ids_given.path, mi.ids_given.line) == where, v
    src = DirSource(sglang_trees.get("0.5.23"), "sglang")
    assert methods.method_interface(src, "DSPARK").ids_given is not None
    r = TreeReader(src)
    eagle = methods.route(r, methods.EAGLE3, {"set_eagle3_layers_to_capture": True})
    assert [c.where.line for c in eagle.calls] == [61]
    assert methods.ids_given(r, methods.EAGLE3, eagle.calls) is None
