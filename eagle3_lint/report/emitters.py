"""The output formats of ``check``: one registry of emitters (``EMITTERS``), each a function of (the report, its
options) that returns the report's text.

The report is data before it is text: ``Report`` holds the analysis (stages.Analysis) and its outcome under the
project's settings (outcome.finalize: the configuration's ignores, the baseline, fingerprints, path mapping).
``EmitOptions`` is everything about how it is printed. Machine formats (json, sarif, github) are scoped as the text
is (``outcome.scoped``: with ``--arch``, what concerns the targets unless ``--all``) and refuse the text-only options;
the text formats (concise, full, grouped) render into the console the command line made. A new format is one
emitter here and its renderer; the command line's ``--output-format`` choices are this registry's names. Renderers
are imported when they run: a replayed check (reportcache.py) imports this module and none of them.
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


@dataclass(frozen=True)
class Emitter:
    name: str
    machine: bool  # a document for tools: scoped like the text, no progress, no text-only options
    render: Callable[[Report, EmitOptions], str]


# In ``--output-format``'s order; "text" is concise's old name.
EMITTERS: dict[str, Emitter] = {e.name: e for e in (
    Emitter("concise", False, _text), Emitter("full", False, _text), Emitter("grouped", False, _text),
    Emitter("json", True, _json), Emitter("sarif", True, _sarif), Emitter("github", True, _github),
    Emitter("text", False, _text),
)}
MACHINE = tuple(n for n, e in EMITTERS.items() if e.machine)
