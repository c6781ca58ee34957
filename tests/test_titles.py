"""Titles (the concise line's sentence, JSON ``title``) are whole sentences on real trees (issue 13).

A title longer than ``MAX_TITLE`` used to be cut mid-word ("... never collects or returns the aux hidd...",
vLLM 0.16.0's Qwen3-Omni; SGLang's EGL002 titles, whose check name is longer). Each rule now has shorter
forms for long class names; clipping is left for a name that alone is too long.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle3_lint.analysis import Options, analyze
from eagle3_lint.app import CheckRequest, run_check
from eagle3_lint.report.headline import verdict_line
from eagle3_lint.report.title import MAX_TITLE, title
from eagle3_lint.source import DirSource
from tests.conftest import SAMPLES, materialize


@pytest.mark.real
@pytest.mark.parametrize("version", ["0.16.0", "0.33.0"])
def test_no_vllm_title_is_clipped(real_trees: object, version: str) -> None:
    ctx = analyze(DirSource(real_trees.get(version)), Options())  # type: ignore[attr-defined]  # conftest accessor
    titles = [title(f) for f in ctx.findings]
    assert titles and all(len(t) <= MAX_TITLE for t in titles)
    assert not [t for t in titles if t.endswith("...")]



def test_titles_say_what_the_finding_found(tmp_path: Path) -> None:
    """The rule chooses its title when it makes the finding, from what it found rather than from the
    message's wording. stub_setter_v016: the wrapper *passes* the check through the Protocol's stub setter, which
    never reaches the inner model (EGL002's no-reach kind, once titled "fails supports_eagle3()"), and its
    stub getter gives no default (EGL006, once clipped mid-phrase). The verdict line does not say "no blocker
    found" next to the two blockers the rules found where the chain could not look."""
    root = materialize(SAMPLES / "wrapper-not-delegating" / "stub_setter_v016", tmp_path / "t")
    ctx = run_check(CheckRequest(str(root), ("WrapForConditionalGeneration",), no_cache=True))
    got = {f.rule: title(f) for f in ctx.findings}
    assert got["EGL002"] == ("WrapForConditionalGeneration passes supports_eagle3() but never hands the aux layers "
                             "to its inner model")
    assert not got["EGL006"].endswith("...") and "stub" in got["EGL006"]
    line = verdict_line(ctx, "WrapForConditionalGeneration")
    assert "no blocker found" not in line and line.endswith("-- 2 blockers the rules found (EGL002, EGL006)")
