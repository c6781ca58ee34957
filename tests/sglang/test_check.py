"""``check`` on real SGLang trees: the core's verdicts against SGLang's own (the CPU oracle snapshots), and the
findings the rules give on SGLang (EGL001/EGL002 with SGLang's names, EGL003-EGL005 on its collection; no rule
SGLang is not modelled for).

The oracle snapshots (tests/differential/oracle/sglang-<V>.json) were recorded by importing every registered
class in a CPU venv of that release and asking ``hasattr(cls, "set_eagle3_layers_to_capture")``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from eagle3_lint import analysis
from eagle3_lint.model import Severity, Status
from eagle3_lint.source import DirSource
from tests import cihelp
from tests.conftest import session_cache

ORACLE = Path(__file__).resolve().parents[1] / "differential" / "oracle"
SETTER = "set_eagle3_layers_to_capture"
# What runs on SGLang trees today (engine.Capability: the others rest on vLLM's plumbing, gates or serving chain;
# EGL003-EGL005 on SGLang's collection, tests/sglang/test_aux_collection.py).
SGLANG_RULES = {"EGL000", "EGL001", "EGL002", "EGL003", "EGL004", "EGL005", "EGL008", "EGL012", "EGL100"}


def _analyze(root: Path, targets: tuple[str, ...] = ()) -> analysis.Analysis:
    return analysis.analyze(DirSource(root, "sglang"), analysis.Options(targets=targets, cache_dir=session_cache()))


@pytest.mark.real
@pytest.mark.parametrize("version", ["0.5.10", "0.5.19", "0.5.23"])
def test_check_agrees_with_sglang_itself(sglang_trees, version: str) -> None:
    ctx = _analyze(sglang_trees.get(version))
    assert not ctx.errors, ctx.errors
    assert ctx.engine.name == "sglang" and ctx.version == version
    oracle = json.loads((ORACLE / f"sglang-{version}.json").read_text())
    compared, wrong = 0, []
    for arch, o in oracle["archs"].items():
        v = ctx.verdicts.get(arch)
        if v is None:
            wrong.append(f"{arch}: registered by SGLang, not in the registry check derived")
            continue
        compared += 1
        gap = v.status is Status.WRAPPER_GAP
        if v.supports_eagle3 is not o["supports"] or gap != o["wrapper_gap"]:
            wrong.append(f"{arch}: check says {v.status.value} {v.inner}, SGLang supports={o['supports']} "
                         f"wrapper_gap={o['wrapper_gap']} {o['inner_with_setter']}")
    assert not wrong, f"{len(wrong)} of {compared} disagree:\n" + "\n".join(wrong)
    assert compared == len(oracle["archs"]) >= 190
    # Architectures SGLang could not import on the oracle's machine are left out of its snapshot; the static
    # side has them all. They must be a small part of the registry for the comparison to mean something.
    missing = set(ctx.verdicts) - set(oracle["archs"])
    assert len(missing) <= 0.05 * len(ctx.verdicts), sorted(missing)
    assert sum(v.supports_eagle3 is True for v in ctx.verdicts.values()) == oracle["supports_true"]
    assert sum(v.status is Status.WRAPPER_GAP for v in ctx.verdicts.values()) == oracle["wrapper_gap"]


@pytest.mark.real
def test_egl001_egl002_before_sglang_17935(sglang_trees) -> None:
    """0.5.10: Qwen3-VL-MoE holds Qwen3MoeLLMModel (an __init__ default passed up through super()), which has
    the setter, and has none itself (SGLang #17935); Afmoe has none anywhere."""
    targets = ("Qwen3VLMoeForConditionalGeneration", "AfmoeForCausalLM", "LlamaForCausalLM")
    ctx = _analyze(sglang_trees.get("0.5.10"), targets)
    assert not ctx.errors, ctx.errors
    mine = {(f.rule, f.architecture): f for f in ctx.findings if f.architecture in targets}
    gap = mine[("EGL002", "Qwen3VLMoeForConditionalGeneration")]
    assert gap.severity is Severity.ERROR and gap.engine == "sglang"
    assert "self.model -> Qwen3MoeLLMModel" in gap.message and SETTER in gap.message
    assert gap.location.path == "sglang/srt/models/qwen3_vl.py"  # reported on the class that builds self.model
    missing = mine[("EGL001", "AfmoeForCausalLM")]
    assert f"the runner's {SETTER}() check" in missing.message
    assert "sglang/srt/model_executor/model_runner.py" in missing.message  # where the runner calls it
    assert not any(f.architecture == "LlamaForCausalLM" for f in ctx.findings)
    for f in ctx.findings:  # the names are SGLang's, never vLLM's
        assert "SupportsEagle3" not in f.message and "supports_eagle3" not in f.message, f.message
    # The serving chain: both refused after the weights load at the runner's unguarded call
    # (model_runner.py:668, ``self.model.set_eagle3_layers_to_capture(self.eagle_aux_hidden_state_layer_ids)``
    # in ``initialize``); Llama passes that step (llama.py:783 defines the setter) and, with no drafter config,
    # stays unchecked.
    for arch in ("Qwen3VLMoeForConditionalGeneration", "AfmoeForCausalLM"):
        sv = ctx.serving[arch]
        assert (sv.outcome.value, sv.stage.value if sv.stage else None) == ("refused-at-load", "runner-interface")
        assert sv.stage is not None
        step = sv.step(sv.stage)
        assert step is not None and step.location is not None
        assert (step.location.path, step.location.line) == ("sglang/srt/model_executor/model_runner.py", 668)
        assert "AttributeError" in step.message
    llama = ctx.serving["LlamaForCausalLM"]
    assert llama.outcome.value == "unchecked" and llama.engine == "sglang"
    runner_step = next(s.message for s in llama.steps if s.gate.value == "runner-interface")
    assert "sglang/srt/models/llama.py:783" in runner_step


@pytest.mark.real
def test_check_every_architecture_0_5_23(sglang_trees) -> None:
    """Every registered architecture targeted at once: no internal error, only the rules SGLang is modelled for,
    EGL001 exactly on the unsupported in-scope architectures and EGL002 on the wrappers whose inner model has the
    setter (Kimi-VL and DeepSeek-VL2 over DeepseekV2ForCausalLM; Qwen3-VL-MoE fixed by then)."""
    root = sglang_trees.get("0.5.23")
    archs = tuple(_analyze(root).verdicts)
    ctx = _analyze(root, archs)
    assert not ctx.errors, ctx.errors
    assert {f.rule for f in ctx.findings} <= SGLANG_RULES
    by_rule: dict[str, set[str]] = {}
    for f in ctx.findings:
        by_rule.setdefault(f.rule, set()).add(f.architecture or "")
    unsupported = {a for a, v in ctx.verdicts.items() if v.status is Status.UNSUPPORTED}
    assert by_rule["EGL001"] == unsupported
    # Qwen2MoeForCausalLM has the setter (qwen2_moe.py:1418) but no get_embed_and_head (nor
    # get_embed_and_head_for_draft) in its class (:1218) or nn.Module, which the EAGLE worker calls first
    # (speculative/pp_draft_embedding.py:95, from managers/scheduler.py:1137): no other rule says so.
    assert by_rule["EGL012"] == {"Qwen2MoeForCausalLM"}
    gaps = {a for a, v in ctx.verdicts.items() if v.status is Status.WRAPPER_GAP}
    egl002 = [f for f in ctx.findings if f.rule == "EGL002"]
    covered = {a for f in egl002 for a in gaps if a in f.message}
    assert covered == {a for a in gaps if a in {ak[0] for ak in _scoped(ctx)}}
    assert ctx.verdicts["Qwen3VLMoeForConditionalGeneration"].status is Status.SUPPORTED
    kimi = next(f for f in egl002 if "KimiVLForConditionalGeneration" in f.message)
    assert "DeepseekV2ForCausalLM" in kimi.message and kimi.location.path == "sglang/srt/models/kimi_vl.py"


def _scoped(ctx: analysis.Analysis) -> list[tuple[str, object]]:
    from eagle3_lint import semantic

    return list(semantic.scoped_archs(ctx.model))


@pytest.mark.real
def test_cli_json_names_the_engine(sglang_trees, tmp_path: Path) -> None:
    root = sglang_trees.get("0.5.23")
    out = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "eagle3_lint", "check", str(root), "--arch", "KimiVLForConditionalGeneration",
           "--output-format", "json", "-o", str(out), "--no-cache"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stderr
    rep = json.loads(out.read_text())
    assert rep["target"]["engine"] == "sglang" and rep["target"]["engine_version"] == "0.5.23"
    assert "vllm_version" not in rep["target"]
    assert rep["contract"]["check"] == "duck" and rep["contract"]["setter"] == SETTER
    assert rep["runner"]["sites"][0]["checked"] is False
    (f,) = [f for f in rep["findings"] if f["architecture"] == "KimiVLForConditionalGeneration"]
    assert f["rule"] == "EGL002" and f["engine"] == "sglang" and SETTER in f["title"]
    kimi = next(a for a in rep["architectures"] if a["name"] == "KimiVLForConditionalGeneration")
    assert kimi["supports_eagle3"] is False and kimi["status"] == "wrapper-gap"


@pytest.mark.real
def test_egl002_fix_applies_compiles_and_rechecks_clean_0_5_23(sglang_trees, tmp_path: Path) -> None:
    """The EGL002 fixes of 0.5.23 (the release's own delegating setter copied onto each wrapper) apply with
    ``git apply`` on a copy of the tree, compile, make the fixed wrappers pass, and break nothing that passed."""


    root = sglang_trees.get("0.5.23")
    before = _analyze(root)
    gaps = [f for f in before.findings if f.rule == "EGL002"]
    fixed = [(f, f.fix) for f in gaps if f.fix is not None]
    assert len(fixed) >= 15 and all(SETTER in fix.title for _, fix in fixed)
    kimi = next(fix for f, fix in fixed if f.symbol == "KimiVLForConditionalGeneration")
    (edit,) = kimi.edits  # kimi_vl.py imports Optional and List already: the method alone
    assert "def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):" in edit.new_text
    assert 'if hasattr(self.language_model, "set_eagle3_layers_to_capture"):' in edit.new_text
    copy = cihelp.patched_copy(before.source, [f for f, _ in fixed], tmp_path)
    after = _analyze(copy)
    assert not after.errors
    ok_before = {a for a, v in before.verdicts.items() if v.status is Status.SUPPORTED}
    ok_after = {a for a, v in after.verdicts.items() if v.status is Status.SUPPORTED}
    assert ok_before <= ok_after
    assert {"KimiVLForConditionalGeneration", "DeepseekVL2ForCausalLM"} <= ok_after - ok_before
    left = {f.symbol for f in after.findings if f.rule == "EGL002"}
    assert left == {f.symbol for f in gaps if f.fix is None}  # only the wrappers that got no fix remain


@pytest.mark.real
def test_no_fix_when_the_inner_model_is_a_bare_decoder_0_5_10(sglang_trees) -> None:
    """Qwen3-VL-MoE holds Qwen3MoeLLMModel, a decoder without logits: delegating the setter is not enough (the
    wrapper's forward must return the aux states), so no fix is offered."""
    ctx = _analyze(sglang_trees.get("0.5.10"), ("Qwen3VLMoeForConditionalGeneration",))
    (f,) = [f for f in ctx.findings if f.rule == "EGL002" and f.architecture == "Qwen3VLMoeForConditionalGeneration"]
    assert f.fix is None
