"""The verdict line when the findings that report a blocker are not shown (regression, issue 13).

``check vllm==0.16.0 --arch KimiK25ForConditionalGeneration --ignore EGL001,EGL009`` used to print
"refused at load (...) -- no blocker found": the serving chain still fails at the runner's interface
check (vllm/v1/worker/gpu_model_runner.py:4190 in 0.16.0 raises when ``supports_eagle3`` is False),
only the rule that reports it was switched off. The line must not claim there is no blocker.
"""

from __future__ import annotations

import pytest

from eagle3_lint.app import CheckRequest, run_check
from eagle3_lint.report.headline import verdict_line

KIMI = "KimiK25ForConditionalGeneration"


@pytest.mark.real
def test_ignored_blocker_is_not_called_no_blocker(real_trees: object) -> None:
    root = str(real_trees.get("0.16.0"))  # type: ignore[attr-defined]  # the conftest fixture's accessor
    # EGL012 reports a failing step no rule that ran reports (here the ignored EGL001's): ignored too, to see the line.
    ignored = run_check(CheckRequest(root, (KIMI,), no_cache=True,
                                     select=lambda rid: rid not in ("EGL001", "EGL009", "EGL012")))
    line = verdict_line(ignored, KIMI)
    assert "refused at load (vllm/v1/worker/gpu_model_runner.py:4190)" in line, line
    assert "no blocker found" not in line, line
    assert line.endswith("-- 1 blocker no finding reports (a rule ignored, suppressed or in the baseline, or a step "
                         "no rule covers)"), line
    shown = run_check(CheckRequest(root, (KIMI,), no_cache=True))
    assert verdict_line(shown, KIMI).endswith("-- 1 blocker")
    # With EGL012 running, the ignored rule's blocker is still a finding, at the runner's raise: no silent pass.
    net = run_check(CheckRequest(root, (KIMI,), no_cache=True, select=lambda rid: rid not in ("EGL001", "EGL009")))
    assert [(f.rule, f.location.path, f.location.line) for f in net.findings if f.architecture == KIMI
            and f.severity.value == "error"] == [("EGL012", "vllm/v1/worker/gpu_model_runner.py", 4190)]
