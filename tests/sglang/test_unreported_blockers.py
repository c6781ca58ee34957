"""No silent pass (issue 23): under every method's chain, a target the engine refuses makes the check fail.

For each method the tool checks on the real trees (vLLM 0.33.0: eagle3, dflash, extract_hidden_states, eagle;
SGLang 0.5.23: EAGLE3, DFLASH, DSPARK), with and without a drafter config, and for a sample of every registered
architecture plus the ones named below: an architecture whose serving chain stops at a failing step (any outcome
but ``drafter-differs``, where the drafter loads and runs) has an error finding on it, and the check's exit code
over the findings on that architecture (what ``check --arch`` counts, cli._report_tail) is 1.

Where no other rule reports the step, EGL012 does, at the engine's own refusal; those places are written from the
release's source below. The case list also says which outcomes it must meet, so a sample that drifts away from
the refusals it is about fails too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from eagle3_lint.analysis import Analysis, Options, analyze
from eagle3_lint.app import exit_code
from eagle3_lint.engines import dir_source
from eagle3_lint.model import Severity
from eagle3_lint.report.headline import split
from eagle3_lint.serving import Outcome, StepResult
from tests.cihelp import cli
from tests.conftest import SAMPLES, session_cache

CHECKPOINTS = SAMPLES / "_checkpoints"
SETUP = "sglang/srt/model_executor/model_runner_components/attention_backend_setup.py"
AUX = "sglang/srt/model_executor/model_runner_components/spec_aux_hidden_state.py"
VALIDATION = "sglang/srt/arg_groups/validation_hook.py"

# 0.5.23's DFlash drafter config in the shape its parser reads (dflash_utils.py:594-598, :657-660, :688), and the
# DSPARK one with the markov head parse_dspark_draft_config asks for (dspark_config.py:239-249, :265-275).
SGL_DFLASH: dict[str, Any] = {"architectures": ["DFlashDraftModel"], "num_hidden_layers": 5, "hidden_size": 4096,
                              "block_size": 16,
                              "dflash_config": {"target_layer_ids": [1, 8, 15, 22, 29], "mask_token_id": 128002}}
SGL_DSPARK = {**SGL_DFLASH, "markov_rank": 1, "markov_head_type": "vanilla"}
# vLLM 0.33.0's DFlash drafter (registry.py:664 maps DFlashDraftModel), as tests/test_methods.py writes it.
VLLM_DFLASH = {"architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": 4096,
               "num_hidden_layers": 1, "vocab_size": 151936}
YUHUILI = json.loads((CHECKPOINTS / "yuhuili-eagle3-llama3.1-8b.json").read_text())
LLAMA_CFG, QWEN3_CFG = "llama-3.1-8b-instruct.json", "qwen3-8b.json"

STOPS_NOT = frozenset({Outcome.SERVABLE, Outcome.UNKNOWN, Outcome.UNCHECKED, Outcome.DRAFTER_DIFFERS})

# (engine, method, drafter config, target config, pipeline parallel, outcomes the case must meet)
CASES: list[tuple[str, str, dict[str, Any] | None, str | None, int | None, set[Outcome]]] = [
    ("vllm", "eagle3", None, None, None, {Outcome.REFUSED_AT_LOAD}),
    ("vllm", "dflash", VLLM_DFLASH, QWEN3_CFG, None, {Outcome.REFUSED_AT_LOAD, Outcome.DRAFTER_SHAPE_MISMATCH}),
    ("vllm", "extract_hidden_states", VLLM_DFLASH, QWEN3_CFG, None, {Outcome.REFUSED_AT_LOAD}),
    # EAGLEConfig's eagle branch renames LlamaForCausalLMEagle3 to a class the registry lacks (eagle.py:46-53).
    ("vllm", "eagle", YUHUILI, LLAMA_CFG, None, {Outcome.DRAFTER_UNLOADABLE}),
    ("sglang", "EAGLE3", None, None, 2, {Outcome.PP_REFUSED}),
    ("sglang", "DFLASH", None, None, None, {Outcome.REFUSED_AT_LOAD}),
    ("sglang", "DFLASH", None, None, 2, {Outcome.PP_REFUSED}),
    # No markov_rank: require_markov refuses it (dspark_config.py:74-75) at spec_aux_hidden_state.py:268-269.
    ("sglang", "DSPARK", SGL_DFLASH, LLAMA_CFG, None, {Outcome.DRAFTER_UNLOADABLE}),
    ("sglang", "DSPARK", SGL_DSPARK, LLAMA_CFG, None, {Outcome.REFUSED_AT_LOAD, Outcome.SERVABLE}),
]
# Named besides the sample: the refusals the EGL012 expectations below are about, and the DSPARK decoders.
NAMED = {"vllm": ("LlamaForCausalLM", "Qwen3ForCausalLM", "KimiK25ForConditionalGeneration"),
         "sglang": ("LlamaForCausalLM", "Llama4ForConditionalGeneration", "DeepseekV4ForCausalLM",
                    "KimiLinearForCausalLM", "KimiK3ForConditionalGeneration")}
SAMPLE_EVERY = {"vllm": 48, "sglang": 24}


def _analysis(root: Path, engine: str, method: str, draft: dict[str, Any] | None, target: str | None,
              pp: int | None, tmp: Path) -> Analysis:
    an0 = analyze(dir_source(root), Options(cache_dir=session_cache()), select=lambda _r: False)
    archs = sorted(an0.model.registry.entries)
    targets = tuple(sorted({*archs[::SAMPLE_EVERY[engine]], *NAMED[engine]}))
    dpath = tmp / f"{engine}-{method}-{len(json.dumps(draft))}.json"
    if draft is not None:
        dpath.write_text(json.dumps(draft, indent=1))
    tcfg = json.loads((CHECKPOINTS / target).read_text()) if target else None
    an = analyze(dir_source(root), Options(
        targets=targets, method=method, draft_config=draft, draft_config_path=str(dpath) if draft else None,
        target_config=tcfg, target_config_path=str(CHECKPOINTS / target) if target else None, pipeline_parallel=pp,
        cache_dir=session_cache()))
    assert not an.errors, [e.message for e in an.errors]
    return an


@pytest.fixture(scope="module")
def analyses(real_trees: Any, sglang_trees: Any, tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    roots = {"vllm": real_trees.get("0.33.0"), "sglang": sglang_trees.get("0.5.23")}
    tmp = tmp_path_factory.mktemp("drafters")
    return [(case, _analysis(roots[case[0]], *case[:5], tmp)) for case in CASES]


@pytest.mark.real
def test_real_a_chain_that_stops_fails_the_check(analyses: list[Any]) -> None:
    for (engine, method, draft, _t, pp, must), an in analyses:
        seen: set[Outcome] = set()
        for arch, sv in an.serving.items():
            seen.add(sv.outcome)
            if sv.outcome in STOPS_NOT:
                continue
            assert any(s.result is StepResult.FAIL for s in sv.steps), (arch, sv.outcome)
            mine = split(an, an.findings, [arch])[0]
            case = (engine, method, draft is not None, pp, arch, sv.outcome.value, sv.stage)
            assert any(f.severity is Severity.ERROR for f in mine), case
            assert exit_code(mine, "error", len(an.errors)) == 1, case
        assert must <= seen, (engine, method, draft is not None, pp, seen)


def _egl012(an: Analysis, arch: str) -> tuple[str, int, str] | None:
    f = next((f for f in an.findings if f.rule == "EGL012" and f.architecture == arch), None)
    return (f.location.path, f.location.line, f.symbol or "") if f is not None else None


@pytest.mark.real
def test_real_egl012_at_the_engines_refusal(analyses: list[Any]) -> None:
    by = {(c[0], c[1], c[2] is SGL_DSPARK, c[2] is not None, c[4]): an for c, an in analyses}
    # Llama4ForConditionalGeneration (mllama4.py:443) has set_eagle3_layers_to_capture (:971) but neither DFlash
    # setter: configure_aux_hidden_state_capture raises ValueError (attention_backend_setup.py:67-72, the raise at
    # :68) under DFLASH, and under DSPARK (the is_dspark branch at :63-64 needs set_dspark_layers_to_capture, else
    # :65-66 the DFlash one). The rules judge by the method's setter, so EGL002 reports it (its language model,
    # LlamaForCausalLM, has set_dflash_layers_to_capture) and EGL012 does not.
    for key in (("sglang", "DFLASH", False, False, None), ("sglang", "DSPARK", True, True, None)):
        assert _egl012(by[key], "Llama4ForConditionalGeneration") is None, key
        assert any(f.rule == "EGL002" and f.architecture == "Llama4ForConditionalGeneration"
                   for f in by[key].findings), key
    # DSPARK with a drafter config without markov_rank: parse_dspark_draft_config defaults it to 0
    # (dspark_config.py:239-249) and require_markov raises (dspark_config.py:74-75), called at
    # spec_aux_hidden_state.py:268-269, before the weights load; LlamaForCausalLM passes every EAGLE-3 rule.
    assert _egl012(by[("sglang", "DSPARK", False, True, None)], "LlamaForCausalLM") == (AUX, 269, "drafter-class")
    # With PP 2, check_pipeline_parallel_compat (validation_hook.py:124-138) asserts at :132 that any algorithm but
    # DSPARK is EAGLE: DFLASH is refused at launch, and so is EAGLE3 (without a drafter config no rule reads the PP
    # refusal; EGL007 does with one).
    for pp_key in (("sglang", "DFLASH", False, False, 2), ("sglang", "EAGLE3", False, False, 2)):
        assert _egl012(by[pp_key], "LlamaForCausalLM") == (VALIDATION, 132, "pp-verifier"), pp_key
    # Where a rule reports the step, EGL012 does not: KimiK25ForConditionalGeneration fails supports_eagle3 on 0.33.0
    # (EGL001), and LlamaForCausalLM serves DSPARK with a markov head on 0.5.23 (tests/sglang/test_methods.py).
    assert _egl012(by[("vllm", "eagle3", False, False, None)], "KimiK25ForConditionalGeneration") is None
    assert _egl012(by[("sglang", "DSPARK", True, True, None)], "LlamaForCausalLM") is None


@pytest.mark.real
def test_real_cli_exits_1_on_a_method_refusal(sglang_trees: Any) -> None:
    """The silent pass itself: ``check --method DFLASH`` on a class without the method's setter exited 0; now the
    method-aware EGL002 reports it."""
    r = cli("check", str(sglang_trees.get("0.5.23")), "--arch", "Llama4ForConditionalGeneration", "--method",
            "DFLASH")
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"refused at load ({SETUP}:68)" in r.stdout.splitlines()[0]
    assert "sglang/srt/models/mllama4.py:443:1: error: EGL002" in r.stdout and "EGL012" not in r.stdout
