"""EGL001-EGL003 under SGLang's DFLASH and DSPARK (issue 23 item 3): the interface each method's runner asks for,
read from the tree (``methods.method_interface``, ``SglangEngine.for_method``), is what the findings name and what
their fixes add.

Expectations from SGLang 0.5.23's source: ``configure_aux_hidden_state_capture``
(``model_executor/model_runner_components/attention_backend_setup.py``) calls ``set_eagle3_layers_to_capture``
(:61, after its ``ValueError`` guard at :55-60) for EAGLE3; for the DFLASH family ``set_dspark_layers_to_capture``
when ``is_dspark`` and the class has it (:63-64), else ``set_dflash_layers_to_capture`` if it has it (:65-66), else
``raise ValueError(... implements neither ...)`` (:67-72, the ``raise`` at :68).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from eagle3_lint import analysis
from eagle3_lint.model import Finding, Status
from eagle3_lint.source import DirSource
from tests import cihelp
from tests.conftest import session_cache

SETUP = "sglang/srt/model_executor/model_runner_components/attention_backend_setup.py"
EAGLE3_SETTER = "set_eagle3_layers_to_capture"
DFLASH_SETTER, DSPARK_SETTER = "set_dflash_layers_to_capture", "set_dspark_layers_to_capture"
# ArceeForCausalLM (arcee.py:382) has no setter, while its forward unpacks the aux states and ArceeModel.forward
# collects them (``if i in self.layers_to_capture``, arcee.py:346): EGL003. LlavaLlamaForCausalLM (llava.py:536)
# has no setter and holds ``self.language_model = LlamaForCausalLM(...)`` (:551), which has both EAGLE-3's and
# DFlash's (llama.py:929, :943) but not DSpark's: EGL002. BaichuanForCausalLM (baichuan.py:434) has no setter and
# its BaiChuanModel (:283) collects nothing: EGL001.
ARCHS = ("ArceeForCausalLM", "LlavaLlamaForCausalLM", "BaichuanForCausalLM")
RULES = {"EGL001", "EGL002", "EGL003"}


def _analyze(root: Path, method: str | None) -> analysis.Analysis:
    opts = analysis.Options(targets=ARCHS, method=method, cache_dir=session_cache())
    an = analysis.analyze(DirSource(root, "sglang"), opts, select=lambda r: r in RULES)
    assert not an.errors, [e.message for e in an.errors]
    return an


def _by_arch(an: analysis.Analysis) -> dict[tuple[str, str | None], Finding]:
    return {(f.rule, f.architecture): f for f in an.findings if f.rule in RULES and f.architecture in ARCHS}


def _added(f: Finding) -> str:
    assert f.fix is not None, f.message
    return "".join(e.new_text for e in f.fix.edits)


@pytest.mark.real
def test_real_0_5_23_dflash_findings_and_fixes_name_the_dflash_setter(sglang_trees: Any, tmp_path: Path) -> None:
    root = sglang_trees.get("0.5.23")
    an = _analyze(root, "DFLASH")
    c = an.contract
    assert (c.required, c.setter, c.path, c.line, c.one_of) == ((DFLASH_SETTER,), DFLASH_SETTER, SETUP, 66, False)
    # The runner always hands it ids (spec_aux_hidden_state.py:279-283, tests/sglang/test_methods.py).
    assert (c.method, c.ids_always_given) == ("DFLASH", True)
    got = _by_arch(an)
    assert set(got) == {("EGL003", "ArceeForCausalLM"), ("EGL002", "LlavaLlamaForCausalLM"),
                        ("EGL001", "BaichuanForCausalLM"), ("EGL001", "ArceeForCausalLM")}
    for f in got.values():
        assert DFLASH_SETTER in f.message and EAGLE3_SETTER not in f.message, f.message
    one = got[("EGL001", "BaichuanForCausalLM")]
    assert "implements neither set_dspark_layers_to_capture nor set_dflash_layers_to_capture" in one.message
    assert f"{SETUP}:66" in one.message
    # EGL002's fix copies the release's own delegating DFlash setter; EGL003's writes one on ArceeForCausalLM.
    wrap = _added(got[("EGL002", "LlavaLlamaForCausalLM")])
    assert f"def {DFLASH_SETTER}(" in wrap and f"self.language_model.{DFLASH_SETTER}(" in wrap
    assert EAGLE3_SETTER not in wrap
    plumb = _added(got[("EGL003", "ArceeForCausalLM")])
    assert f"def {DFLASH_SETTER}(" in plumb and "self.model.layers_to_capture = [val + 1 for val in" in plumb
    assert EAGLE3_SETTER not in plumb and "is None" not in plumb  # no default branch: the ids always come
    # The titles name DFLASH's setter, not EAGLE-3's.
    assert got[("EGL003", "ArceeForCausalLM")].title == \
        f"ArceeForCausalLM has the aux-state plumbing but no {DFLASH_SETTER}()"
    assert got[("EGL002", "LlavaLlamaForCausalLM")].title == \
        f"LlavaLlamaForCausalLM fails the runner's {DFLASH_SETTER}() check; its inner model passes"
    # The serving chain's next step: "patch it" where a finding's fix adds the setter, the hint where none does.
    assert "--method DFLASH --fix" in (an.serving["ArceeForCausalLM"].next_step or "")
    assert "--fix" not in (an.serving["BaichuanForCausalLM"].next_step or "")
    # Applied with git apply on a copy, the copy re-checks clean for those rules under DFLASH.
    copy = cihelp.patched_copy(an.source, [f for f in got.values() if f.fix is not None], tmp_path)
    after = _analyze(copy, "DFLASH")
    assert set(_by_arch(after)) == {("EGL001", "BaichuanForCausalLM")}  # it had no fix
    assert [after.verdicts[a].status for a in ARCHS[:2]] == [Status.SUPPORTED] * 2
    # EAGLE-3's check (the default method) names its own setter, as before.
    base = _by_arch(_analyze(root, None))
    assert EAGLE3_SETTER in base[("EGL001", "BaichuanForCausalLM")].message
    # ... with its default branch: EAGLE3's ids are None when the drafter config names none (:192-196).
    eagle = _added(base[("EGL003", "ArceeForCausalLM")])
    assert f"def {EAGLE3_SETTER}(" in eagle and "if layer_ids is None:" in eagle


@pytest.mark.real
def test_real_0_5_23_dspark_takes_either_setter(sglang_trees: Any, tmp_path: Path) -> None:
    root = sglang_trees.get("0.5.23")
    an = _analyze(root, "DSPARK")
    c = an.contract
    # DSpark's setter first (:63-64), DFlash's accepted after it (:65-66): one of them is the check.
    assert (c.required, c.setter, c.line, c.one_of) == ((DSPARK_SETTER, DFLASH_SETTER), DSPARK_SETTER, 64, True)
    # DeepseekV4ForCausalLM (deepseek_v4.py:4633) has set_dspark_layers_to_capture (:4853) and no DFlash setter:
    # it passes for DSPARK, not for DFLASH (:65-68).
    assert an.verdicts["DeepseekV4ForCausalLM"].status is Status.SUPPORTED
    assert _analyze(root, "DFLASH").verdicts["DeepseekV4ForCausalLM"].status is Status.UNSUPPORTED
    got = _by_arch(an)
    # The wrapper's inner LlamaForCausalLM has only DFlash's setter: the delegation hands the ids on through it.
    wrap = _added(got[("EGL002", "LlavaLlamaForCausalLM")])
    assert f"def {DFLASH_SETTER}(" in wrap and DSPARK_SETTER not in wrap
    plumb = _added(got[("EGL003", "ArceeForCausalLM")])
    assert f"def {DSPARK_SETTER}(" in plumb and "is None" not in plumb and c.ids_always_given
    # Either setter will do, so the titles name DSPARK's check (its full name, two setters, is too long).
    assert got[("EGL003", "ArceeForCausalLM")].title == \
        "ArceeForCausalLM has the aux-state plumbing but no DSPARK setter"
    assert got[("EGL002", "LlavaLlamaForCausalLM")].title == \
        "LlavaLlamaForCausalLM fails the DSPARK check; its inner model passes"
    copy = cihelp.patched_copy(an.source, [f for f in got.values() if f.fix is not None], tmp_path)
    after = _analyze(copy, "DSPARK")
    assert set(_by_arch(after)) == {("EGL001", "BaichuanForCausalLM")}
    assert [after.verdicts[a].status for a in ARCHS[:2]] == [Status.SUPPORTED] * 2
