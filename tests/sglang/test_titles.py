"""SGLang's EGL001/EGL002 titles are whole sentences (see tests/test_titles.py for why)."""

from __future__ import annotations

import pytest

from eagle3_lint.analysis import Options, analyze
from eagle3_lint.report.title import title
from eagle3_lint.source import DirSource


@pytest.mark.real
def test_no_sglang_title_is_clipped(sglang_trees: object) -> None:
    ctx = analyze(DirSource(sglang_trees.get("0.5.23"), "sglang"), Options())  # type: ignore[attr-defined]
    titles = [title(f) for f in ctx.findings if f.rule in ("EGL001", "EGL002")]
    assert titles and not [t for t in titles if t.endswith("...")], titles
    assert any("fails the runner's set_eagle3_layers_to_capture() check" in t for t in titles)
