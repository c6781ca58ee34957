"""The emitters: one registry of output formats, each a function of (the report, its options) that returns text.

The report is data before it is text: ``Report`` holds the analysis (stages.Analysis) and its outcome under the
project's settings (outcome.finalize: the configuration's ignores, the baseline, fingerprints, path mapping).
``EmitOptions`` is everything about how it is printed. A new output format is one function here and one entry in
``EMITTERS``; the command line looks formats up by name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from eagle3_lint.report.textopts import TextOptions

if TYPE_CHECKING:
    from rich.console import Console

    from eagle3_lint.outcome import Outcome
    from eagle3_lint.stages import Analysis


@dataclass(frozen=True)
class Report:
    """What every emitter renders: the analysis and its outcome (the findings a run reports, and why others not)."""

    analysis: Analysis
    outcome: Outcome


@dataclass(frozen=True)
class EmitOptions:
    """How a report is printed: the text options (also what scopes the machine formats: ``show_all``), the console
    the text is rendered on, the command line that made it (for ``next:``), and whether unsafe fixes apply."""

    text: TextOptions = TextOptions()
    console: Console | None = None
    invocation: str = "eagle3-lint check"
    unsafe_fixes: bool = False


def _json(report: Report, options: EmitOptions) -> str:
    from eagle3_lint import outcome as outcome_mod

    # Scoped as the text is: with --arch, what concerns the targets, unless --all.
    out, scope = outcome_mod.scoped(report.analysis, report.outcome, options.text.show_all)
    return outcome_mod.json_text(report.analysis, out, scope) + "\n"  # == json.dumps(..., indent=2)


def _sarif(report: Report, options: EmitOptions) -> str:
    from eagle3_lint import outcome as outcome_mod
    from eagle3_lint.report.jsondump import dumps
    from eagle3_lint.report.sarif import build_sarif

    out, scope = outcome_mod.scoped(report.analysis, report.outcome, options.text.show_all)
    return dumps(build_sarif(report.analysis, out, scope)) + "\n"


def _github(report: Report, options: EmitOptions) -> str:
    from eagle3_lint import outcome as outcome_mod
    from eagle3_lint.report.github import render

    out, _scope = outcome_mod.scoped(report.analysis, report.outcome, options.text.show_all)
    paths = report.outcome.paths
    return render([paths.finding(f) for f in out.findings], report.outcome.stale_baseline_failure())


def _text(report: Report, options: EmitOptions) -> str:
    from eagle3_lint.report.draft import render_text as render_draft
    from eagle3_lint.report.headline import next_step, split, verdict_line
    from eagle3_lint.report.text import render_check

    an, out, text, console = report.analysis, report.outcome, options.text, options.console
    assert console is not None
    findings = out.findings
    targets = an.targeted if not text.show_all else ()
    mine, rest = split(an, findings, targets) if targets else (findings, [])
    view = out.paths.context(an)  # the paths the user's repository uses (--path-prefix, an SGLang checkout)
    shown = [out.paths.finding(f) for f in findings]
    head = tuple((verdict_line(view, a, shown),
                  next_step(an, a, findings, options.invocation, options.unsafe_fixes)) for a in an.targeted)
    opts = dataclasses.replace(text, headline=head, targets=targets)
    with console.capture() as captured:
        render_check(view, console, [out.paths.finding(f) for f in mine], text.show_all, opts,
                     hidden=[out.paths.finding(f) for f in rest])
        if not text.quiet:
            render_draft(an, console)  # --draft-config / --plugin sections, when given
    return captured.get()


# Output formats by name (``--output-format``); "text" is the one the concise, full and grouped layouts share.
EMITTERS: dict[str, Callable[[Report, EmitOptions], str]] = {
    "text": _text, "json": _json, "sarif": _sarif, "github": _github,
}
