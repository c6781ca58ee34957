"""Walks that stopped short on SGLang 0.5.23 (issue 22), each found on a one-edit mutation of the real release.

One copy of the cached tree carries three mutations (tests/mutate.py), each in its own file and about its own
architecture, and is analysed once for the module (a cold SGLang check is the cost here):

* ``Llama4ForConditionalGeneration`` loses its own ``set_eagle3_layers_to_capture`` while its inner language model
  keeps one. Its ``__init__`` imports that model itself, so the name is bound nowhere at module level: the wrapper
  gap used to be read as "missing" (EGL001), with no fix.
* ``LlamaModel.forward`` rebases its absolute ``range(self.start_layer, self.end_layer)`` index where it meets the
  ids (``i - self.start_layer in self.layers_to_capture``): EGL005 did not look at range loops.
* ``Gemma3ForConditionalGeneration``'s setter stops delegating to its inner language model, which its ``forward``
  hands to ``general_mm_embed_routine``: nothing reported it.

The unmutated files of the copy show the same walks on the release as shipped (LLaVA-Mistral's local import, the
``self.llm`` of NVILA handed to the same helper).
"""

from __future__ import annotations

import ast
import random
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from eagle3_lint import fixes
from eagle3_lint.analysis import Analysis, Options, analyze
from eagle3_lint.engines import dir_source
from eagle3_lint.model import Finding, Severity, Status
from tests import mutate
from tests.sglang.conftest import SglangTrees

pytestmark = pytest.mark.real

MODELS = "sglang/srt/models"
LLAMA4 = "Llama4ForConditionalGeneration"
LLAMA = "LlamaForCausalLM"
GEMMA3 = "Gemma3ForConditionalGeneration"
NVILA = "NVILAForConditionalGeneration"
SETTER = "set_eagle3_layers_to_capture"


@dataclass
class Mutated:
    tree: Path
    cache: Path
    ctx: Analysis
    details: dict[str, str]


def _edit(tree: Path, rel: str, edit: mutate.Edit | None) -> str:
    assert edit is not None, rel
    (tree / rel).write_text(edit.text, encoding="utf-8")
    return edit.detail


@pytest.fixture(scope="module")
def mutated(tmp_path_factory: pytest.TempPathFactory) -> Mutated:
    root = SglangTrees().get("0.5.23")
    base = tmp_path_factory.mktemp("walks")
    tree = base / "sglang-0.5.23"
    shutil.copytree(root, tree)
    details: dict[str, str] = {}
    for rel, make in (
        (f"{MODELS}/mllama4.py", lambda t: mutate.remove_method(t, ast.parse(t), LLAMA4, SETTER)),
        (f"{MODELS}/llama.py", lambda t: mutate.rebase_index(t, ast.parse(t), random.Random(0))),
        (f"{MODELS}/gemma3_mm.py", lambda t: mutate.stop_delegating(t, ast.parse(t), GEMMA3, SETTER)),
    ):
        details[rel] = _edit(tree, rel, make((tree / rel).read_text(encoding="utf-8")))
    ctx = analyze(dir_source(tree), Options(targets=(LLAMA4, LLAMA, GEMMA3, NVILA), cache_dir=base / "cache"))
    assert not ctx.errors, [e.message for e in ctx.errors]
    return Mutated(tree, base / "cache", ctx, details)


def _of(ctx: Analysis, rule: str, arch: str) -> list[Finding]:
    return [f for f in ctx.findings if f.rule == rule and arch in (f.architecture, *f.architectures)]


def test_wrapper_that_lost_its_setter_is_a_wrapper_gap_with_a_delegating_fix(mutated: Mutated) -> None:
    """mllama4.py:443 ``Llama4ForConditionalGeneration`` builds ``self.language_model = Llama4ForCausalLM(...)``
    (mllama4.py:496) after ``from sglang.srt.models.llama4 import Llama4ForCausalLM`` inside ``__init__``
    (mllama4.py:494); ``Llama4ForCausalLM(LlamaForCausalLM)`` (llama4.py:546) inherits the setter of
    llama.py:929. Without the wrapper's own setter (mllama4.py:971-973, deleted), the runner's ``hasattr(model,
    "set_eagle3_layers_to_capture")`` on the top-level model fails and it raises ValueError
    (attention_backend_setup.py:55-61): the wrapper gap of EGL002, whose fix delegates to ``self.language_model``."""
    ctx = mutated.ctx
    assert mutated.details[f"{MODELS}/mllama4.py"] == f"{LLAMA4}.{SETTER} deleted"
    v = ctx.verdicts[LLAMA4]
    assert v.status is Status.WRAPPER_GAP, v.reason
    assert _of(ctx, "EGL001", LLAMA4) == []
    gaps = _of(ctx, "EGL002", LLAMA4)
    assert len(gaps) == 1, [(f.rule, f.message) for f in ctx.findings if f.architecture == LLAMA4]
    f = gaps[0]
    assert (f.location.path, f.location.line, f.severity) == (f"{MODELS}/mllama4.py", 443, Severity.ERROR)
    assert "(self.language_model -> Llama4ForCausalLM)" in f.message, f.message
    assert f.fix is not None and f.fix.edits
    patch = fixes.unified_diff(fixes.plan(ctx.source, gaps, unsafe=True))
    assert f"+    def {SETTER}(self, layer_ids: Optional[List[int]] = None):" in patch, patch
    # The body is the tree's own delegating idiom (fixgen.setter_idioms), copied from another wrapper.
    added = [ln[1:].strip() for ln in patch.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert f"self.language_model.{SETTER}(layer_ids)" in added, patch

    subprocess.run(["git", "init", "-q"], cwd=mutated.tree, check=True)
    subprocess.run(["git", "apply", "--check", "-"], cwd=mutated.tree, input=patch, text=True, check=True)
    subprocess.run(["git", "apply", "-"], cwd=mutated.tree, input=patch, text=True, check=True)
    again = analyze(dir_source(mutated.tree), Options(targets=(LLAMA4,), cache_dir=mutated.cache),
                    lambda rid: rid in ("EGL001", "EGL002"))
    assert again.verdicts[LLAMA4].status is Status.SUPPORTED, again.verdicts[LLAMA4].reason
    left = [x for x in again.findings if x.architecture == LLAMA4 or x.location.path == f"{MODELS}/mllama4.py"]
    assert left == [], [(x.rule, x.message) for x in left]
    assert fixes.unified_diff(fixes.plan(again.source, again.findings, unsafe=True)) == ""


def test_release_wrapper_importing_its_inner_model_in_init_is_a_wrapper_gap(mutated: Mutated) -> None:
    """As shipped (llava.py is not mutated): ``LlavaMistralForCausalLM`` (llava.py:599) imports
    ``MistralForCausalLM`` inside ``__init__`` (llava.py:607) and holds it as ``self.language_model`` (llava.py:628);
    the wrapper has no setter and ``MistralForCausalLM`` inherits Llama's: a wrapper gap, not "unsupported"."""
    v = mutated.ctx.verdicts["LlavaMistralForCausalLM"]
    assert v.status is Status.WRAPPER_GAP, v.reason
    assert "MistralForCausalLM" in v.reason


def test_rebased_range_index_is_egl005(mutated: Mutated) -> None:
    """``LlamaModel.forward`` loops ``for i in range(self.start_layer, self.end_layer)`` (llama.py:486): ``i`` is the
    absolute layer id, and so are the ids it is tested against. The runner hands the drafter config's
    ``eagle_aux_hidden_state_layer_ids`` (spec_aux_hidden_state.py:192-193) to ``model.set_eagle3_layers_to_capture``
    (attention_backend_setup.py:61), which stores ``[val + 1 for val in layer_ids]``, or ``[2, n // 2, n - 3]`` for
    None, as absolute layer ids (llama.py:933-941). ``i - self.start_layer in self.layers_to_capture`` (llama.py:492,
    the mutation) compares a rank-relative index with them: right only while start_layer is 0. 0.5.23 refuses
    EAGLE-3 with pipeline parallelism at launch (arg_groups/validation_hook.py:132-138 accepts only EAGLE), so the
    defect is latent: a warning, whose fix drops the subtraction."""
    ctx = mutated.ctx
    assert mutated.details[f"{MODELS}/llama.py"] == \
        "line 492: i in self.layers_to_capture -> i - self.start_layer in ..."
    hits = [f for f in ctx.findings if f.rule == "EGL005" and f.location.path == f"{MODELS}/llama.py"]
    assert len(hits) == 1, [(f.location, f.message) for f in hits]
    f = hits[0]
    assert (f.location.line, f.symbol, f.severity) == (486, "LlamaModel.forward", Severity.WARNING)
    assert "range(self.start_layer, self.end_layer)" in f.message
    assert "i - self.start_layer in self.layers_to_capture (line 492)" in f.message, f.message
    assert "arg_groups/validation_hook.py:132" in f.message, f.message
    assert f.fix is not None
    patch = fixes.unified_diff(fixes.plan(ctx.source, [f], unsafe=False))
    assert "-                if i - self.start_layer in self.layers_to_capture\n" \
           "+                if i in self.layers_to_capture\n" in patch, patch


def test_setter_that_stopped_delegating_is_seen_through_the_helper(mutated: Mutated) -> None:
    """``Gemma3ForConditionalGeneration.forward`` hands ``self.language_model`` (a ``Gemma3ForCausalLM``,
    gemma3_mm.py:195) to ``general_mm_embed_routine(language_model=...)`` (gemma3_mm.py:454-460), which calls it
    (mm_utils.py:885). That model returns aux hidden states only once its own setter set ``capture_aux_hidden_states``
    (gemma3_causal.py:784, 917-923). With the wrapper's setter (gemma3_mm.py:543) reduced to ``pass``, the runner's
    call (attention_backend_setup.py:61) succeeds and configures nothing: EGL002, on the wrapper."""
    ctx = mutated.ctx
    assert mutated.details[f"{MODELS}/gemma3_mm.py"] == \
        f"{GEMMA3}.{SETTER}: line 544 removed: self.language_model.{SETTER}(layer_ids)"
    assert ctx.verdicts[GEMMA3].status is Status.SUPPORTED  # the method is there: the runner's check passes
    hits = _of(ctx, "EGL002", GEMMA3)
    assert len(hits) == 1, [(f.rule, f.message) for f in ctx.findings if f.architecture == GEMMA3]
    f = hits[0]
    assert (f.location.path, f.location.line, f.severity) == (f"{MODELS}/gemma3_mm.py", 115, Severity.ERROR)
    assert "does not delegate to the inner model (self.language_model -> Gemma3ForCausalLM)" in f.message, f.message
    assert f"its {SETTER}() ({MODELS}/gemma3_mm.py:543) does nothing" in f.message, f.message
    assert "hands self.language_model to general_mm_embed_routine(language_model=...)" in f.message, f.message
    assert any(s.location is not None and (s.location.path, s.location.line) == (f"{MODELS}/gemma3_mm.py", 454)
               for s in f.related), f.related


def test_release_wrapper_handing_self_llm_to_the_helper_names_its_inner_model(mutated: Mutated) -> None:
    """As shipped (nvila.py is not mutated): ``NVILAForConditionalGeneration`` holds ``self.llm =
    Qwen2ForCausalLM(...)`` (nvila.py:117), hands it to ``general_mm_embed_routine(language_model=self.llm)``
    (nvila.py:130-133) and has no setter, while ``Qwen2ForCausalLM`` (qwen2.py:500) has one (qwen2.py:781). EGL002
    used to name "an inner model" and attach no fix; it names ``self.llm`` and delegates to it."""
    hits = _of(mutated.ctx, "EGL002", NVILA)
    assert len(hits) == 1
    assert "(self.llm -> Qwen2ForCausalLM)" in hits[0].message, hits[0].message
    assert hits[0].fix is not None
    assert any(e.new_text.find(f"self.llm.{SETTER}(layer_ids)") >= 0 for e in hits[0].fix.edits), hits[0].fix
