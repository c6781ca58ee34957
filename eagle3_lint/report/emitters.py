"""The output formats of ``check``: one registry of emitters (``EMITTERS``), each the report of a finished check in
one format.

An emitter takes a ``Job`` (the analysis, its finalized outcome and how the user asked for the report) and returns
the report's text. Machine formats (json, sarif, github) are scoped as the text is (``outcome.scoped``: with
``--arch``, what concerns the targets unless ``--all``) and refuse the text-only options; the text formats
(concise, full, grouped) render into the console the command line made. A new format is one emitter here and its
renderer; the command line's ``--output-format`` choices are this registry's names. Renderers are imported when
they run: a replayed check (reportcache.py) imports this module and none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from eagle3_lint.analysis import Context
    from eagle3_lint.config import Settings
    from eagle3_lint.outcome import Outcome
    from eagle3_lint.report.textopts import TextOptions


@dataclass(frozen=True)
class Job:
    ctx: Context
    out: Outcome
    settings: Settings
    text: TextOptions
    console: Console | None  # the text formats' console (None for machine formats)
    invocation: str  # the command as the user ran it (``next:`` repeats it)


@dataclass(frozen=True)
class Emitter:
    name: str
    machine: bool  # a document for tools: scoped like the text, no progress, no text-only options
    render: Callable[[Job], str]


def _json(job: Job) -> str:
    from eagle3_lint import outcome as outcome_mod

    scoped, scope = outcome_mod.scoped(job.ctx, job.out, job.text.show_all)
    return outcome_mod.json_text(job.ctx, scoped, scope) + "\n"  # == json.dumps(..., indent=2)


def _sarif(job: Job) -> str:
    from eagle3_lint import outcome as outcome_mod
    from eagle3_lint.report.jsondump import dumps
    from eagle3_lint.report.sarif import build_sarif

    scoped, scope = outcome_mod.scoped(job.ctx, job.out, job.text.show_all)
    return dumps(build_sarif(job.ctx, scoped, scope)) + "\n"


def _github(job: Job) -> str:
    from eagle3_lint import outcome as outcome_mod
    from eagle3_lint.report.github import render as render_github

    scoped, _scope = outcome_mod.scoped(job.ctx, job.out, job.text.show_all)
    return render_github([job.out.paths.finding(f) for f in scoped.findings], job.out.stale_baseline_failure())


def _text(job: Job) -> str:
    """The text report in ``job.text.fmt`` (concise, full or grouped), captured from the console."""
    import dataclasses

    from eagle3_lint.report.draft import render_text as render_draft
    from eagle3_lint.report.headline import next_step, split, verdict_line
    from eagle3_lint.report.text import render_check

    ctx, out, text, console = job.ctx, job.out, job.text, job.console
    assert console is not None
    findings = out.findings
    targets = ctx.targeted if not text.show_all else ()
    mine, rest = split(ctx, findings, targets) if targets else (findings, [])
    view = out.paths.context(ctx)  # the paths the user's repository uses (--path-prefix, an SGLang checkout)
    shown = [out.paths.finding(f) for f in findings]
    head = tuple((verdict_line(view, a, shown),
                  next_step(ctx, a, findings, job.invocation, job.settings.unsafe_fixes)) for a in ctx.targeted)
    opts = dataclasses.replace(text, headline=head, targets=targets)
    with console.capture() as captured:
        render_check(view, console, [out.paths.finding(f) for f in mine], text.show_all, opts,
                     hidden=[out.paths.finding(f) for f in rest])
        if not text.quiet:
            render_draft(ctx, console)  # --draft-config / --plugin sections, when given
    return captured.get()


# In ``--output-format``'s order; "text" is concise's old name.
EMITTERS: dict[str, Emitter] = {e.name: e for e in (
    Emitter("concise", False, _text), Emitter("full", False, _text), Emitter("grouped", False, _text),
    Emitter("json", True, _json), Emitter("sarif", True, _sarif), Emitter("github", True, _github),
    Emitter("text", False, _text),
)}
MACHINE = tuple(n for n, e in EMITTERS.items() if e.machine)
