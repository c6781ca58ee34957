"""Titles (the concise line's sentence, JSON ``title``) are whole sentences on real trees (issue 13).

A title longer than ``MAX_TITLE`` used to be cut mid-word ("... never collects or returns the aux hidd...",
vLLM 0.16.0's Qwen3-Omni; SGLang's EGL002 titles, whose check name is longer). Each rule now has shorter
forms for long class names; clipping is left for a name that alone is too long.
"""

from __future__ import annotations

import pytest

from eagle3_lint.analysis import Options, analyze
from eagle3_lint.report.title import MAX_TITLE, title
from eagle3_lint.source import DirSource


@pytest.mark.real
@pytest.mark.parametrize("version", ["0.16.0", "0.33.0"])
def test_no_vllm_title_is_clipped(real_trees: object, version: str) -> None:
    ctx = analyze(DirSource(real_trees.get(version)), Options())  # type: ignore[attr-defined]  # conftest accessor
    titles = [title(f) for f in ctx.findings]
    assert titles and all(len(t) <= MAX_TITLE for t in titles)
    assert not [t for t in titles if t.endswith("...")]

