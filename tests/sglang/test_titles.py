"""SGLang's titles are whole sentences that say what the rule found (see tests/test_titles.py for why)."""

from __future__ import annotations

import pytest

from eagle3_lint.analysis import Options, analyze
from eagle3_lint.report.title import title
from eagle3_lint.source import DirSource


@pytest.mark.real
def test_no_sglang_title_is_clipped(sglang_trees: object) -> None:
    ctx = analyze(DirSource(sglang_trees.get("0.5.23"), "sglang"), Options())  # type: ignore[attr-defined]
    titles = {f.symbol: title(f) for f in ctx.findings}
    assert titles and not [t for t in titles.values() if t.endswith("...")], titles
    assert any("fails the runner's set_eagle3_layers_to_capture() check" in t for t in titles.values())
    # qwen4_exp.py (0.5.23): Qwen4ExpVLModel.forward calls the base's forward, which collects, and drops the aux
    # states (EGL004's no-return kind): the title says so, not "never collects".
    assert titles["Qwen4ExpVLModel.forward"] == ("Qwen4ExpForConditionalGeneration: Qwen4ExpVLModel.forward collects "
                                                 "the aux hidden states but never returns them")
