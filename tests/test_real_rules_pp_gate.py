"""EGL005 (slice-relative aux index), EGL008 (undefined base) and EGL009 (model_type gate) on real
released vLLM trees. Each release is downloaded once and cached; patched trees are copies.

The default release set keeps CI's downloads small (0.9.2, 0.10.2, 0.16.0, 0.18.1, 0.30.0 and
0.33.0); ``EAGLE3_LINT_ALL_RELEASES=1`` runs the per-release checks over every release from 0.9.2
to 0.33.0 (``scripts/rule_sweep.py`` prints the same sweep as a table).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from eagle3_lint import fixes
from eagle3_lint.analysis import Analysis, Options, analyze, run_rules
from eagle3_lint.engines import dir_source
from eagle3_lint.model import Applicability, Severity
from eagle3_lint.rules import by_id
from tests.conftest import SAMPLES, session_cache

pytestmark = pytest.mark.real

ALL_RELEASES = (
    "0.9.2", "0.10.0", "0.10.1", "0.10.1.1", "0.10.2", "0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.13.0",
    "0.14.0", "0.14.1", "0.15.0", "0.15.1", "0.16.0", "0.17.0", "0.17.1", "0.18.0", "0.18.1", "0.19.0",
    "0.19.1", "0.20.0", "0.20.1", "0.20.2", "0.21.0", "0.22.0", "0.22.1", "0.23.0", "0.24.0", "0.25.0",
    "0.25.1", "0.26.0", "0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0",
)
_ALL = bool(os.environ.get("EAGLE3_LINT_ALL_RELEASES"))
KIMI_CONFIG = SAMPLES / "eagle3-model-type-gate" / "kimi_k25_v016" / "hf" / "config.json"
LLAMA = "vllm/model_executor/models/llama.py"
QWEN2 = "vllm/model_executor/models/qwen2.py"
MOSS_AUDIO = "vllm/model_executor/models/moss_audio.py"
RULES = ("EGL005", "EGL008", "EGL009")


def _v(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version))


def _releases(lo: str, hi: str, default: tuple[str, ...]) -> list[str]:
    if _ALL:
        return [v for v in ALL_RELEASES if _v(lo) <= _v(v) <= _v(hi)]
    return list(default)


_CTX: dict[tuple[str, str], Analysis] = {}


def run(root: Path, *, config: Path | None = None, archs: tuple[str, ...] = ()) -> Analysis:
    opts = Options(targets=archs, target_config=json.loads(config.read_text()) if config else None,
                   target_config_path=str(config) if config else None, cache_dir=session_cache())
    return analyze(dir_source(root), opts, select=lambda r: r in RULES)


def ctx_for(real_trees: object, version: str, mode: str = "plain") -> Analysis:
    """One analysis per release; the Kimi-config variant re-runs EGL009 on it with the config as options."""
    if (version, "plain") not in _CTX:
        _CTX[version, "plain"] = run(real_trees.get(version))  # type: ignore[attr-defined]
    if (version, mode) not in _CTX:
        opts = Options(target_config=json.loads(KIMI_CONFIG.read_text()), target_config_path=str(KIMI_CONFIG))
        plain = _CTX[version, "plain"]
        sm = dataclasses.replace(plain.model, options=opts)
        found, errors = run_rules(sm, [by_id()["EGL009"]])
        _CTX[version, mode] = dataclasses.replace(plain, model=sm, findings=tuple(found), errors=tuple(errors))
    return _CTX[version, mode]


def findings(ctx: Analysis, rule: str, path: str | None = None) -> list:
    return [f for f in ctx.findings if f.rule == rule and (path is None or f.location.path == path)]


def patched(real_trees: object, version: str, tmp_path: Path, ctx: Analysis, rules: set[str]) -> tuple[Path, str]:
    """A copy of the release with the fixes of ``rules`` applied through ``git apply``."""
    root = tmp_path / f"vllm-{version}"
    shutil.copytree(real_trees.get(version), root)  # type: ignore[attr-defined]
    diff = fixes.unified_diff(fixes.plan(dir_source(root), [f for f in ctx.findings if f.rule in rules], True))
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "apply", "--check", "-"], cwd=root, input=diff, text=True, check=True)
    subprocess.run(["git", "apply", "-"], cwd=root, input=diff, text=True, check=True)
    return root, diff


# -- EGL005 --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", _releases("0.10.2", "0.29.0", ("0.10.2", "0.16.0", "0.18.1")))
def test_egl005_llama_flagged_with_one_line_fix(real_trees: object, version: str) -> None:
    ctx = ctx_for(real_trees, version)
    assert not ctx.errors, [e.message for e in ctx.errors]
    got = findings(ctx, "EGL005", LLAMA)
    assert len(got) == 1, [f.message for f in findings(ctx, "EGL005")]
    f = got[0]
    assert "LlamaModel.forward" in f.message
    # No PP verifier before 0.30 and LlamaForCausalLM passes supports_eagle3() with SupportsPP, but these releases
    # give the drafter the target's pipeline_parallel_size (0.16.0 config/speculative.py:645,
    # create_draft_parallel_config) and verify_with_parallel_config (:678) refuses Eagle3LlamaForCausalLM, whose
    # forward takes no intermediate_tensors (llama_eagle3.py): EAGLE-3 never runs with PP, so the bug is latent.
    assert f.severity is Severity.WARNING, f.message
    assert "refuses EAGLE-3 with pipeline parallelism at config time" in f.message
    assert f.fix is not None and f.fix.applicability is Applicability.SAFE
    (edit,) = f.fix.edits
    # 0.10.2 (yapf) has the loop on one line with room for it; from 0.16.0 on (ruff), llama.py has
    # ``for idx, layer in enumerate(`` / ``islice(self.layers, self.start_layer, self.end_layer)`` / ``):``
    # (0.16.0: lines 421-423), where ``, start=self.start_layer`` would make the middle line 89 columns: ruff's
    # form puts it on a line of its own, with the trailing comma.
    one_line = version == "0.10.2"
    assert edit.line == edit.end_line and edit.new_text == (
        ", start=self.start_layer" if one_line else ",\n            start=self.start_layer,")
    assert findings(ctx, "EGL005", QWEN2), "qwen2.py has the same loop until 0.30"


@pytest.mark.parametrize("version", _releases("0.30.0", "0.33.0", ("0.30.0", "0.33.0")))
def test_egl005_silent_where_upstream_fixed_it(real_trees: object, version: str) -> None:
    ctx = ctx_for(real_trees, version)
    assert not findings(ctx, "EGL005", LLAMA) and not findings(ctx, "EGL005", QWEN2)


def test_egl005_v033_relative_loops_are_latent(real_trees: object) -> None:
    """0.33.0: the runner refuses PP for EAGLE-3 unless the decoder sets the relay flag; no relative loop has it."""
    ctx = ctx_for(real_trees, "0.33.0")
    # moss_audio.py's rebased index is the other form of the bug, on a flagged decoder (next test).
    got = [f for f in findings(ctx, "EGL005") if f.location.path != MOSS_AUDIO]
    files = sorted(Path(f.location.path).name for f in got)
    # model.py twice: vllm/models/minimax_m3/amd/model.py has two relative loops in one forward, the prefill one
    # (line 1547) and the decode one over ``layers = self.layers[self.start_layer : self.end_layer]`` (line 1557).
    assert files == ["afmoe.py", "apertus.py", "gemma4.py", "granite.py", "granitemoe.py", "granitemoeshared.py",
                     "mimo_v2.py", "minicpm.py", "minimax_m2.py", "model.py", "model.py", "nemotron_h.py", "plamo3.py",
                     "step1.py"]
    assert all(f.severity is Severity.WARNING and "latent:" in f.message.lower() for f in got)
    assert all("verify_supports_aux_hidden_states_over_pp" in f.message for f in got)
    # qwen3_omni_moe_thinker rebases the index by hand (``layer_idx = layer_idx + self.start_layer``).
    assert not any("qwen3_omni" in f.location.path for f in got)


def test_egl005_v033_moss_audio_rebased_index(real_trees: object, tmp_path: Path) -> None:
    """0.33.0's MossQwen3Model enumerates with start=self.start_layer, then passes
    ``layer_idx - self.start_layer + 1`` to the collector: slice-relative again. It inherits
    Qwen2Model's supports_aux_hidden_states_over_pp = True, so the verifier lets PP through (an error).
    The fix deletes the subtraction, keeping ``+ 1`` (llama.py's ``idx + 1``)."""
    ctx = ctx_for(real_trees, "0.33.0")
    (f,) = findings(ctx, "EGL005", MOSS_AUDIO)
    assert f.symbol == "MossQwen3Model.forward" and f.severity is Severity.ERROR, f.message
    assert "with start=self.start_layer" in f.message and "layer_idx - self.start_layer + 1" in f.message
    assert "slice-relative again" in f.message and "Qwen2Model sets supports_aux_hidden_states_over_pp" in f.message
    assert f.fix is not None and f.fix.applicability is Applicability.SAFE
    (edit,) = f.fix.edits
    text = (real_trees.get("0.33.0") / MOSS_AUDIO).read_text()  # type: ignore[attr-defined]
    line = text.splitlines()[edit.line - 1]
    assert edit.line == edit.end_line and edit.new_text == ""
    assert line[edit.col:edit.end_col] == " - self.start_layer", line
    assert line[:edit.col] + line[edit.end_col:] == "                layer_idx + 1,"
    root, diff = patched(real_trees, "0.33.0", tmp_path, ctx, {"EGL005"})
    assert "+                layer_idx + 1,\n" in diff
    compile((root / MOSS_AUDIO).read_text(), MOSS_AUDIO, "exec")
    again = run(root)
    assert not findings(again, "EGL005", MOSS_AUDIO)


def test_egl005_v0102_fix_applies_and_converges(real_trees: object, tmp_path: Path) -> None:
    ctx = ctx_for(real_trees, "0.10.2")
    root, diff = patched(real_trees, "0.10.2", tmp_path, ctx, {"EGL005"})
    assert "+                islice(self.layers, self.start_layer, self.end_layer), start=self.start_layer):" in diff
    for path in {f.location.path for f in findings(ctx, "EGL005")}:
        compile((root / path).read_text(), path, "exec")
    again = run(root)
    assert not findings(again, "EGL005")
    assert fixes.unified_diff(fixes.plan(again.source, again.findings, True)) == ""


def test_egl005_v092_subscript_form(real_trees: object) -> None:
    ctx = ctx_for(real_trees, "0.9.2")
    (f,) = findings(ctx, "EGL005", LLAMA)
    assert "self.layers[self.start_layer:self.end_layer]" in f.message and f.fix is not None


# -- EGL008 --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", _releases("0.9.2", "0.33.0", ("0.9.2", "0.16.0", "0.33.0")))
def test_egl008_silent_on_releases(real_trees: object, version: str) -> None:
    ctx = ctx_for(real_trees, version)
    assert not findings(ctx, "EGL008"), [f.message for f in findings(ctx, "EGL008")]


def test_egl008_missing_import_in_real_llama(real_trees: object, tmp_path: Path) -> None:
    """Drop SupportsEagle3 from llama.py's import: flagged, and the fix restores a working import."""
    root = tmp_path / "vllm-0.16.0"
    shutil.copytree(real_trees.get("0.16.0"), root)  # type: ignore[attr-defined]
    path = root / LLAMA
    text = path.read_text()
    assert "    SupportsEagle3,\n" in text
    path.write_text(text.replace("    SupportsEagle3,\n", "", 1))
    ctx = run(root)
    (f,) = findings(ctx, "EGL008")
    assert f.location.path == LLAMA and f.symbol == "SupportsEagle3" and f.severity is Severity.ERROR
    assert "LlamaForCausalLM" in f.message
    assert f.fix is not None and f.fix.edits[0].new_text == "from .interfaces import SupportsEagle3\n"
    diff = fixes.unified_diff(fixes.plan(ctx.source, [f], False))
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "apply", "-"], cwd=root, input=diff, text=True, check=True)
    compile(path.read_text(), LLAMA, "exec")
    again = run(root)
    assert not findings(again, "EGL008")
    assert again.verdicts["LlamaForCausalLM"].supports_eagle3 is True


# -- EGL009 --------------------------------------------------------------------------------------------
def test_egl009_kimi_k25_refused_on_v016_and_fix_applies(real_trees: object, tmp_path: Path) -> None:
    ctx = ctx_for(real_trees, "0.16.0", "kimi")
    (f,) = findings(ctx, "EGL009")
    assert f.severity is Severity.ERROR and f.architecture == "KimiK25ForConditionalGeneration"
    # Derived from the tree: the registry's KimiK25Config keeps a Transformers DeepseekV3Config as text_config.
    assert "KimiK25Config" in f.message and "DeepseekV3Config" in f.message and "kimi_k2" in f.message
    assert f.fix is not None and f.fix.applicability is Applicability.UNSAFE
    root, diff = patched(real_trees, "0.16.0", tmp_path, ctx, {"EGL009"})
    added = [ln for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert added == ['+            "kimi_k2",'], diff
    again = run(root, config=KIMI_CONFIG)
    assert not findings(again, "EGL009")
    (gate,) = [g for g in again.runner.gates if "eagle3" in g.methods]
    assert "kimi_k2" in gate.allow_list


def test_egl009_silent_on_v0181_for_the_same_config(real_trees: object) -> None:
    ctx = ctx_for(real_trees, "0.18.1", "kimi")
    assert any("kimi_k2" in g.allow_list for g in ctx.runner.gates), "0.18.1 still has the gate, with upstream's fix"
    assert not findings(ctx, "EGL009")


def test_egl009_no_gate_on_v033(real_trees: object) -> None:
    assert not findings(ctx_for(real_trees, "0.33.0", "kimi"), "EGL009")


def test_egl009_v092_literal_gate(real_trees: object, tmp_path: Path) -> None:
    ctx = ctx_for(real_trees, "0.9.2", "kimi")
    (f,) = findings(ctx, "EGL009")
    assert "the literal 'llama'" in f.message
    root, _diff = patched(real_trees, "0.9.2", tmp_path, ctx, {"EGL009"})
    again = run(root, config=KIMI_CONFIG)
    assert not findings(again, "EGL009")
    assert [set(g.allow_list) for g in again.runner.gates] == [{"llama", "kimi_k2"}]


def test_egl009_note_without_config(real_trees: object) -> None:
    root = real_trees.get("0.16.0")  # type: ignore[attr-defined]
    ctx = run(root, archs=("KimiK25ForConditionalGeneration",))
    (f,) = findings(ctx, "EGL009")
    assert f.severity is Severity.NOTE and f.fix is None
    assert "eagle3_target_supported" in f.message and "vllm/config/speculative.py:689" in f.message
    assert f.location.path == "vllm/model_executor/models/kimi_k25.py"
    assert not findings(ctx_for(real_trees, "0.16.0"), "EGL009"), "nothing for untargeted architectures"
