"""EGL005, EGL008 and EGL009 on their sample trees: what the generic sample-tree test cannot see
(severity derived from the tree, messages, the text-config derivation, the patched gate's shape)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from eagle3_lint import fixes
from eagle3_lint._compat import tomllib
from eagle3_lint.analysis import Analysis
from eagle3_lint.engines.vllm import hfconfig
from eagle3_lint.model import Finding, Severity
from tests.conftest import SAMPLES, materialize
from tests.test_sample_trees import run


def case_ctx(group: str, name: str, tmp_path: Path) -> tuple[Path, Analysis, dict]:
    case = SAMPLES / group / name
    meta = tomllib.loads((case / "case.toml").read_text())
    root = materialize(case, tmp_path / name)
    ctx = run(root, meta)
    assert not ctx.errors, [e.message for e in ctx.errors]
    return root, ctx, meta


def by_file(ctx: Analysis, rule: str) -> dict[str, Finding]:
    return {Path(f.location.path).name: f for f in ctx.findings if f.rule == rule}


# -- EGL005 --------------------------------------------------------------------------------------------
def test_egl005_severity_without_pp_verifier(tmp_path: Path) -> None:
    _root, ctx, _ = case_ctx("slice-relative-aux-index", "v016_islice", tmp_path)
    got = by_file(ctx, "EGL005")
    assert got["llama.py"].severity is Severity.ERROR
    assert "LlamaForCausalLM passes supports_eagle3()" in got["llama.py"].message
    assert got["step.py"].severity is Severity.WARNING
    assert "no registered architecture that passes supports_eagle3()" in got["step.py"].message
    assert got["nopp.py"].severity is Severity.WARNING
    assert "does not implement SupportsPP" in got["nopp.py"].message


def test_egl005_severity_with_pp_verifier(tmp_path: Path) -> None:
    _root, ctx, _ = case_ctx("slice-relative-aux-index", "v033_mixin", tmp_path)
    got = by_file(ctx, "EGL005")
    granite, relay = got["granite.py"], got["relay.py"]
    assert granite.severity is Severity.WARNING
    assert "latent:" in granite.message.lower() and "verify_supports_aux_hidden_states_over_pp" in granite.message
    assert relay.severity is Severity.ERROR
    assert "RelayModel sets supports_aux_hidden_states_over_pp = True" in relay.message
    assert "idx + 1" in relay.message


def test_egl005_fix_uses_the_slice_start_text(tmp_path: Path) -> None:
    _root, ctx, _ = case_ctx("slice-relative-aux-index", "v011_subscript", tmp_path)
    (f,) = [f for f in ctx.findings if f.rule == "EGL005"]
    assert f.fix is not None and [e.new_text for e in f.fix.edits] == [", start=self.start_layer"]


# -- EGL008 --------------------------------------------------------------------------------------------
def test_egl008_messages_and_fixes(tmp_path: Path) -> None:
    _root, ctx, _ = case_ctx("undefined-base", "no_fix", tmp_path)
    got = by_file(ctx, "EGL008")
    assert "bound only at line 8, after the class statement at line 4" in got["early.py"].message
    assert got["early.py"].fix is None and got["ambiguous.py"].fix is None
    assert "EarlyForCausalLM cannot load" in got["early.py"].message
    _root, ctx, _ = case_ctx("undefined-base", "missing_import", tmp_path)
    (f,) = [f for f in ctx.findings if f.rule == "EGL008"]
    assert f.symbol == "SupportsEagle3" and f.fix is not None
    assert f.fix.edits[0].new_text == "from .interfaces import SupportsEagle3\n"


# -- EGL009 --------------------------------------------------------------------------------------------
def test_text_model_type_derivation(tmp_path: Path) -> None:
    _root, ctx, meta = case_ctx("eagle3-model-type-gate", "kimi_k25_v016", tmp_path)
    cfg = json.loads((SAMPLES / "eagle3-model-type-gate" / "kimi_k25_v016" / meta["target_config"]).read_text())
    res = hfconfig.text_model_type(ctx.graph, ctx.source, cfg, "hf_text_config")
    assert (res.model_type, res.top, res.exact) == ("kimi_k2", "kimi_k25", True)
    text = " ".join(res.steps)
    assert "KimiK25Config" in text and "DeepseekV3Config (from transformers, outside this tree)" in text
    # The gate reads the checkpoint's own model_type where it does not use hf_text_config.
    assert hfconfig.text_model_type(ctx.graph, ctx.source, cfg, "hf_config").model_type == "kimi_k25"
    del cfg["text_config"]["model_type"]
    unknown = hfconfig.text_model_type(ctx.graph, ctx.source, cfg, "hf_text_config")
    assert unknown.model_type is None and not unknown.exact


def test_egl009_note_only_for_targeted(tmp_path: Path) -> None:
    _root, ctx, _ = case_ctx("eagle3-model-type-gate", "note_without_config_v016", tmp_path)
    got = [f for f in ctx.findings if f.rule == "EGL009"]
    assert [(f.architecture, f.severity) for f in got] == [("LlamaForCausalLM", Severity.NOTE)]
    assert "vllm/config/speculative.py:3" in got[0].message


def test_egl009_literal_fix_keeps_a_recognisable_gate(tmp_path: Path) -> None:
    root, ctx, meta = case_ctx("eagle3-model-type-gate", "literal_v011", tmp_path)
    (f,) = [f for f in ctx.findings if f.rule == "EGL009"]
    assert f.symbol == "qwen2" and "the literal 'llama'" in f.message
    diff = fixes.unified_diff(fixes.plan(ctx.source, [f], True))
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "apply", "-"], cwd=root, input=diff, text=True, check=True)
    again = run(root, meta)
    assert [g.allow_list for g in again.runner.gates] == [("llama", "qwen2")]
    assert not [x for x in again.findings if x.rule == "EGL009"]


def test_egl005_under_arch_only_the_targets_loop_is_fixed(tmp_path: Path) -> None:
    case = SAMPLES / "slice-relative-aux-index" / "v016_islice"
    meta = {**tomllib.loads((case / "case.toml").read_text()), "archs": ["NoPPForCausalLM"]}
    ctx = run(materialize(case, tmp_path / "t"), meta)
    got = by_file(ctx, "EGL005")
    assert got["nopp.py"].fix is not None
    # LlamaModel's loop is an error without --arch; no target runs it, so a warning without a fix.
    assert got["llama.py"].severity is Severity.WARNING and got["llama.py"].fix is None
    assert "no architecture named with --arch runs this forward" in got["llama.py"].message
    assert got["step.py"].fix is None
