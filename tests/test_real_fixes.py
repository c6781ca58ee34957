"""The interface rules and their fix-its on real releases (issue 3).

The headline: on vLLM 0.16.0, ``check --arch KimiK25ForConditionalGeneration --fix --unsafe-fixes``
emits a patch that ``patch -p1`` and ``git apply`` accept in a copy of the release; on the
patched copy Kimi-K2.5 and DeepSeek-V3 pass the check with no EGL002/EGL004/EGL005 finding, every
patched file compiles, and a second ``--fix`` is empty. The other tests pin findings that were
checked by hand against the source (see the rule sweep in ``scripts/rule_sweep.py``).
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from eagle3_lint import fixes, fixgen
from eagle3_lint.analysis import Analysis, Options, analyze
from eagle3_lint.engines import dir_source
from eagle3_lint.model import Applicability, Finding, Severity, Status
from tests.conftest import session_cache

pytestmark = pytest.mark.real

KIMI = "KimiK25ForConditionalGeneration"
DSV3 = "DeepseekV3ForCausalLM"
MODELS = "vllm/model_executor/models"
_CTX: dict[str, Analysis] = {}


def ctx_for(real_trees: object, version: str) -> Analysis:
    if version not in _CTX:
        root = real_trees.get(version)  # type: ignore[attr-defined]
        _CTX[version] = analyze(dir_source(root), Options(cache_dir=session_cache()))
    return _CTX[version]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "eagle3_lint", *args], capture_output=True, text=True, timeout=900,
                          check=False)


def at(findings: Sequence[Finding], rule: str, path: str) -> list[Finding]:
    return [f for f in findings if f.rule == rule and f.location.path == path]


def patched_files(patch: str) -> list[str]:
    return [ln[len("+++ b/"):] for ln in patch.splitlines() if ln.startswith("+++ b/")]


def section(patch: str, path: str) -> str:
    """The part of a unified diff that changes ``path``."""
    out: list[str] = []
    on = False
    for ln in patch.splitlines():
        if ln.startswith("--- a/"):
            on = ln == f"--- a/{path}"
        if on:
            out.append(ln)
    return "\n".join(out)


def member_key(name: str) -> tuple[int, str]:
    """isort's and ruff's default order of the names in one ``from`` import (``order-by-type``, case-insensitive):
    CONSTANTS, then Classes, then the rest."""
    return (0 if len(name) > 1 and name.isupper() else 1 if name[:1].isupper() else 2), name.lower()


def review(plan: fixes.Plan, limit: int | None = 88) -> list[str]:
    """What a maintainer reviewing the patch would send back (issue 21): a second import line from a module the
    file already imports from, a name imported twice, names of a sorted import no longer sorted (isort/ruff's
    order), an added line with trailing whitespace or longer than the formatter's limit."""
    notes: list[str] = []
    for path, (old, new, _sha) in plan.files.items():
        def froms(text: str) -> list[ast.ImportFrom]:
            return [st for st in ast.parse(text).body if isinstance(st, ast.ImportFrom)]
        before = {("." * st.level + (st.module or "")): st for st in froms(old)}
        count: dict[str, int] = {}
        bound: list[str] = []
        for st in froms(new):
            spec = "." * st.level + (st.module or "")
            count[spec] = count.get(spec, 0) + 1
            bound += [a.asname or a.name for a in st.names]
            names = [a.name for a in st.names]
            was = before.get(spec)
            if was is not None and [a.name for a in was.names] == sorted((a.name for a in was.names), key=member_key) \
                    and names != sorted(names, key=member_key):
                notes.append(f"{path}: from {spec} import {', '.join(names)} is no longer sorted")
        old_count = {k: sum(1 for st in froms(old) if ("." * st.level + (st.module or "")) == k) for k in count}
        notes += [f"{path}: a second 'from {k} import' line" for k, n in count.items() if n > max(old_count[k], 1)]
        notes += [f"{path}: {n} imported twice" for n in sorted({n for n in bound if bound.count(n) > 1})]
        added = [ln for ln in new.splitlines() if ln not in set(old.splitlines())]
        notes += [f"{path}: trailing whitespace: {ln!r}" for ln in added if ln != ln.rstrip()]
        notes += [f"{path}: {len(ln)} columns: {ln.strip()}" for ln in added if limit and len(ln) > limit]
    return notes


def test_v016_kimi_patch_applies_converges_and_is_accepted(real_trees: object, tmp_path: Path) -> None:
    root = real_trees.get("0.16.0")  # type: ignore[attr-defined]
    p = cli("check", str(root), "--arch", KIMI, "--fix", "--unsafe-fixes")
    assert p.returncode == 1, p.stderr
    patch = p.stdout
    files = patched_files(patch)
    assert f"{MODELS}/kimi_k25.py" in files and f"{MODELS}/deepseek_v2.py" in files
    # With --arch, the interface rules fix only what the target needs (other wrappers stay as they are).
    assert f"{MODELS}/qwen2_vl.py" not in files and f"{MODELS}/mimo.py" not in files

    kimi = section(patch, f"{MODELS}/kimi_k25.py")
    # At its sorted place in kimi_k25.py's parenthesised import (lines 27-31: SupportsMultiModal, SupportsPP,
    # SupportsQuant), as isort would put it.
    assert "\n+    SupportsEagle3,\n     SupportsMultiModal,\n" in kimi
    assert "+    nn.Module, SupportsMultiModal, SupportsPP, SupportsQuant, SupportsEagle3" in kimi
    assert "+        self.language_model.set_aux_hidden_state_layers(layers)" in kimi
    # The 0.16 runner's fallback name, not the 0.18 one.
    assert "+    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:" in kimi
    assert "get_eagle3_default_aux_hidden_state_layers" not in patch
    ds = section(patch, f"{MODELS}/deepseek_v2.py")
    # deepseek_v2.py:83 imports four names from .interfaces on one 80-column line; with SupportsEagle3 it would be
    # 96, so ruff's parenthesised form, sorted, and no second ``from .interfaces import`` line.
    assert "-from .interfaces import MixtureOfExperts, SupportsEagle, SupportsLoRA, SupportsPP\n" \
           "+from .interfaces import (\n+    MixtureOfExperts,\n+    SupportsEagle,\n+    SupportsEagle3,\n" \
           "+    SupportsLoRA,\n+    SupportsPP,\n+)\n" in ds
    assert ds.count("import SupportsEagle3") == 0 and ds.count("SupportsEagle3,") == 2  # the import, the base
    # The bases (deepseek_v2.py:1173-1175) do not fit one line with it either: one a line, trailing comma.
    assert "+    SupportsEagle,\n+    SupportsEagle3,\n ):" in ds
    # 0.16.0's own decoders start the attribute as tuple[int, ...]() (llama.py:392, qwen2.py:413, ...): its idiom.
    assert "+        self.model.aux_hidden_state_layers = layers" in ds
    assert "+        self.aux_hidden_state_layers = tuple[int, ...]()" in ds
    assert "+            start=self.start_layer," in ds  # absolute layer indices
    assert "+            return hidden_states, aux_hidden_states" in ds

    tree = tmp_path / "vllm-0.16.0"
    shutil.copytree(root, tree)
    if shutil.which("patch"):
        subprocess.run(["patch", "-p1", "--dry-run", "-s"], cwd=tree, input=patch, text=True, check=True)
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    subprocess.run(["git", "apply", "--check", "-"], cwd=tree, input=patch, text=True, check=True)
    subprocess.run(["git", "apply", "-"], cwd=tree, input=patch, text=True, check=True)
    for rel in files:
        compile((tree / rel).read_text(encoding="utf-8"), rel, "exec")
    before = analyze(dir_source(root), Options(targets=(KIMI,)))
    assert review(fixes.plan(before.source, before.findings, unsafe=True)) == []

    ctx = analyze(dir_source(tree), Options(targets=(KIMI, DSV3), cache_dir=tmp_path / "cache"))
    assert not ctx.errors, [e.message for e in ctx.errors]
    for arch in (KIMI, DSV3, "DeepseekV2ForCausalLM"):
        v = ctx.verdicts[arch]
        assert v.supports_eagle3 is True and v.status is Status.SUPPORTED, (arch, v.reason)
    touched = {f"{MODELS}/kimi_k25.py", f"{MODELS}/deepseek_v2.py"}
    bad = [f for f in ctx.findings if f.rule in ("EGL001", "EGL002", "EGL004", "EGL005")
           and (f.architecture in (KIMI, DSV3) or f.location.path in touched)]
    assert not bad, [(f.rule, f.location.path, f.location.line, f.message) for f in bad]
    again = fixes.unified_diff(fixes.plan(ctx.source, ctx.findings, unsafe=True))
    assert again == "", again[:2000]


def test_v016_interface_findings(real_trees: object) -> None:
    ctx = ctx_for(real_trees, "0.16.0")
    fs = ctx.findings
    # Methods without the marker: one finding per defining class.
    for rel, cls in (("apertus.py", "ApertusForCausalLM"), ("mimo_v2_flash.py", "MiMoV2FlashForCausalLM")):
        hits = at(fs, "EGL003", f"{MODELS}/{rel}")
        assert len(hits) == 1 and hits[0].symbol == cls, hits
        assert hits[0].fix is not None and hits[0].fix.applicability is Applicability.SAFE
    # MiMo inherits Qwen2ForCausalLM's EAGLE-3 claim, but MiMoModel.forward never collects.
    mimo = at(fs, "EGL004", f"{MODELS}/mimo.py")
    assert len(mimo) == 1 and mimo[0].symbol == "MiMoModel.forward" and mimo[0].fix is not None
    # Wrapper gaps are warnings unless targeted; the fix delegates to the inner language model.
    q2vl = at(fs, "EGL002", f"{MODELS}/qwen2_vl.py")
    assert any(f.symbol == "Qwen2VLForConditionalGeneration" for f in q2vl)
    assert all(f.severity is Severity.WARNING for f in fs if f.rule == "EGL002")
    fx = next(f for f in q2vl if f.symbol == "Qwen2VLForConditionalGeneration").fix
    delegation = "self.language_model.set_aux_hidden_state_layers(layers)"
    assert fx is not None and any(delegation in e.new_text for e in fx.edits)
    # No class of 0.16.0 defines a stale getter name.
    assert not [f for f in fs if f.rule == "EGL006"]


def test_v0181_upstream_fix_is_clean_but_keeps_a_stale_getter(real_trees: object) -> None:
    ctx = ctx_for(real_trees, "0.18.1")
    for arch in (KIMI, DSV3):
        assert ctx.verdicts[arch].supports_eagle3 is True
    mine = [f for f in ctx.findings if f.rule in ("EGL002", "EGL003", "EGL004")
            and f.location.path in (f"{MODELS}/kimi_k25.py", f"{MODELS}/deepseek_v2.py")]
    assert not mine, [(f.rule, f.message) for f in mine]
    # Upstream's 0.18 fix named the getter get_eagle3_aux_hidden_state_layers, which the 0.18
    # runner never calls (it calls get_eagle3_default_aux_hidden_state_layers): dead overrides.
    stale = [f for f in ctx.findings if f.rule == "EGL006"]
    paths = {f.location.path for f in stale}
    assert {f"{MODELS}/kimi_k25.py", f"{MODELS}/deepseek_v2.py"} <= paths
    # Both return what the runner's getter returns anyway: deepseek_v2.py:1385 computes (2, n // 2, n - 3), the
    # Protocol's default body too, and kimi_k25.py:493 delegates to it. Dead code, nothing lost: notes.
    assert all(f.severity is Severity.NOTE and "dead override" in f.message and "returns the same ids" in f.message
               for f in stale)


def test_v033_interface_findings(real_trees: object) -> None:
    ctx = ctx_for(real_trees, "0.33.0")
    fs = ctx.findings
    stale = {f.location.path: f for f in fs if f.rule == "EGL006"}
    assert set(stale) == {f"{MODELS}/{n}.py" for n in ("deepseek_v2", "kimi_k25", "pixtral", "qwen3_5")}
    kimi = stale[f"{MODELS}/kimi_k25.py"]
    assert kimi.fix is not None
    # The wrapper's rename also renames its delegating call, whose receiver has the runner's name.
    assert [e.new_text for e in kimi.fix.edits] == ["get_eagle3_default_aux_hidden_state_layers"] * 2
    # The contract's default setter asserts an EagleModelMixin holder these decoders are not.
    not_mixin = {f.symbol for f in fs if f.rule == "EGL004" and "not an EagleModelMixin" in f.message}
    assert {"CohereCompassTextModel", "Exaone4Model", "Qwen4ExpModel"} <= not_mixin
    assert any(f.rule == "EGL004" and f.symbol == "MiMoModel.forward" for f in fs)
    # Hand-checked non-defects: Plamo3's layers live one module down (self.layers.layers), and
    # DeepseekV4Model collects through a helper; neither is reported.
    hand_checked = ("plamo3", "deepseek_v41")
    assert not [f for f in fs if f.rule == "EGL004" and any(m in f.location.path for m in hand_checked)]
    assert not [f for f in fs if f.rule == "EGL003"]


@pytest.mark.parametrize("version", ["0.16.0", "0.33.0"])
def test_every_interface_fix_applies_and_converges(real_trees: object, tmp_path: Path, version: str) -> None:
    """Without --arch, every EGL001-EGL006 fix at once: the patch applies, compiles, and leaves nothing."""
    root = real_trees.get(version)  # type: ignore[attr-defined]
    tree = tmp_path / "tree"
    shutil.copytree(root, tree)
    mine = {"EGL001", "EGL002", "EGL003", "EGL006"}
    ctx = analyze(dir_source(tree), Options(cache_dir=tmp_path / "cache"), lambda rid: rid in mine)
    assert ctx.findings and all(f.fix is not None for f in ctx.findings)
    plan = fixes.plan(ctx.source, ctx.findings, unsafe=True)
    assert plan.overlaps == []
    assert review(plan) == []
    patch = fixes.unified_diff(plan)
    if version == "0.16.0":
        # glmasr.py:934-936's bases, five on one line, do not fit with a sixth: one a line (ruff's form).
        glm = section(patch, f"{MODELS}/glmasr.py")
        assert "+    SupportsTranscription,\n+    SupportsEagle3,\n ):" in glm
        # qwen2_5_omni_thinker.py:955-962 has one base a line with a trailing comma: the new one gets its own line.
        omni = section(patch, f"{MODELS}/qwen2_5_omni_thinker.py")
        assert "     Qwen2_5OmniConditionalGenerationMixin,\n+    SupportsEagle3,\n ):" in omni
        # dots_ocr.py:619 fits the class line no more: the bases move under ``class X(`` with ``):`` below.
        dots = section(patch, f"{MODELS}/dots_ocr.py")
        assert "+class DotsOCRForCausalLM(\n+    nn.Module, SupportsMultiModal, SupportsPP, SupportsLoRA, " \
               "SupportsEagle3\n+):" in dots
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    subprocess.run(["git", "apply", "-"], cwd=tree, input=patch, text=True, check=True)
    for rel in plan.files:
        compile((tree / rel).read_text(encoding="utf-8"), rel, "exec")
    after = analyze(dir_source(tree), Options(cache_dir=tmp_path / "cache"), lambda rid: rid in mine)
    assert not after.findings, [(f.rule, f.location.path, f.location.line, f.message) for f in after.findings]


@pytest.mark.parametrize(("version", "idiom"), [
    # 0.16.0: llama.py:392, qwen2.py:413, gpt_oss.py:271, hunyuan_v1.py:633, afmoe.py:424, minicpm.py:416 and
    # apertus.py:360 write ``self.aux_hidden_state_layers = tuple[int, ...]()``; qwen3_moe.py:466 and arcee.py:223
    # are one-offs.
    ("0.16.0", " = tuple[int, ...]()"),
    # 0.33.0: interns2_mobius.py:336, mistral_large_3_eagle.py:97, qwen3_5.py:280 and qwen3_next.py:689 write
    # ``: tuple[int, ...] = ()``, deepseek_v2.py:1493 and the three decoders under vllm/models/ (deepseek_v32/
    # amd/model.py:189, deepseek_v32/nvidia/model.py:235, dots3_note/nvidia/model.py:617)
    # ``tuple[int, ...]()``: a tie, which the contract's own default breaks (interfaces.py:1610,
    # EagleModelMixin: ``aux_hidden_state_layers: tuple[int, ...] = ()``).
    ("0.33.0", ": tuple[int, ...] = ()"),
])
def test_empty_aux_layers_follow_the_release(real_trees: object, version: str, idiom: str) -> None:
    ctx = ctx_for(real_trees, version)
    assert fixgen.init_idiom(ctx.model, "aux_hidden_state_layers") == idiom


def test_v011_interface_fixes_keep_yapfs_layout(real_trees: object, tmp_path: Path) -> None:
    """0.11.0 was formatted by yapf (continuation lines under the opening parenthesis): its imports and bases are
    extended in that form, sorted, never with a second import line, and the patch applies and compiles."""
    root = real_trees.get("0.11.0")  # type: ignore[attr-defined]
    tree = tmp_path / "tree"
    shutil.copytree(root, tree)
    mine = {"EGL001", "EGL002", "EGL003", "EGL006"}
    ctx = analyze(dir_source(tree), Options(cache_dir=tmp_path / "cache"), lambda rid: rid in mine)
    plan = fixes.plan(ctx.source, ctx.findings, unsafe=True)
    assert plan.files and plan.overlaps == []
    assert review(plan, limit=80) == []
    patch = fixes.unified_diff(plan)
    # Qwen3VLMoeForConditionalGeneration (qwen3_vl_moe.py:310) inherits the Qwen3VL wrapper that the EGL002 fix
    # gives SupportsEagle3 and methods delegating to self.language_model, but builds that as a
    # Qwen3MoeLLMForCausalLM (:334; its base Qwen3MoeForCausalLM, qwen3_moe.py:571, has no SupportsEagle3 and no
    # setter), over Qwen3MoeLLMModel, whose forward (:82-121) collects nothing: the same fix writes both.
    moe = section(patch, f"{MODELS}/qwen3_vl_moe.py")
    assert "+class Qwen3MoeLLMForCausalLM(Qwen3MoeForCausalLM, SupportsEagle3):" in moe
    assert "+        self.model.aux_hidden_state_layers = layers" in moe
    # Its loop makes the slice-relative index absolute itself (:100-101, ``layer_idx = layer_idx +
    # self.start_layer``): the test goes after that line, and no ``start=`` offsets the index a second time.
    assert "             layer_idx = layer_idx + self.start_layer\n \n+            if layer_idx in " \
           "self.aux_hidden_state_layers:\n" in moe
    assert "start=" not in moe and "start=" not in section(patch, f"{MODELS}/qwen3_vl.py")
    # The subclass is not given a second copy of what it inherits.
    assert "+class Qwen3VLMoeForConditionalGeneration" not in moe
    # midashenglm.py:54 imports three names on one line; with SupportsEagle3 it would be 92 columns.
    assert "-from .interfaces import MultiModalEmbeddings, SupportsMultiModal, SupportsPP\n" \
           "+from .interfaces import (MultiModalEmbeddings, SupportsEagle3,\n" \
           "+                         SupportsMultiModal, SupportsPP)\n" in section(patch, f"{MODELS}/midashenglm.py")
    # qwen2_vl.py's bases continue under the first one (yapf): so does the new one.
    assert "+                                      SupportsEagle3):" in section(patch, f"{MODELS}/qwen2_vl.py")
    assert "\n+    SupportsEagle3" not in patch  # nothing in ruff's layout
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    subprocess.run(["git", "apply", "-"], cwd=tree, input=patch, text=True, check=True)
    for rel in plan.files:
        compile((tree / rel).read_text(encoding="utf-8"), rel, "exec")
    after = analyze(dir_source(tree), Options(cache_dir=tmp_path / "cache"), lambda rid: rid in mine)
    again = fixes.plan(after.source, after.findings, unsafe=True)
    assert not again.files, sorted(again.files)
