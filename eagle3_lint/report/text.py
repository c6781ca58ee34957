"""Human output with rich: a summary, the architecture table, findings, and the ``trace`` tree."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from eagle3_lint.model import Applicability, Finding, Location, Severity, Status
from eagle3_lint.report import sorted_verdicts
from eagle3_lint.report.headline import fixable, most_severe_first, split
from eagle3_lint.report.textopts import OutputFormat, TextOptions
from eagle3_lint.report.title import title
from eagle3_lint.safe_text import printable
from eagle3_lint.trace import NodeKind, Tone, TraceNode

if TYPE_CHECKING:
    from eagle3_lint.stages import Analysis

_STATUS_STYLE = {
    Status.SUPPORTED: "green", Status.UNSUPPORTED: "red", Status.WRAPPER_GAP: "magenta",
    Status.PARTIAL: "yellow", Status.UNKNOWN: "dim",
}
_SEV_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.NOTE: "cyan"}


def _s(x: object) -> str:
    """Tree-derived text inside a markup string: no markup, no control sequences. Paths, registry
    keys, error messages and allow-lists come from the analyzed tree, which may be hostile."""
    return escape(printable(str(x)))


def _p(x: object) -> str:
    """Tree-derived text for a plain ``Text`` piece (no markup parsing): no control sequences."""
    return printable(str(x))


def _loc(loc: Location | None) -> str:
    return f"{_s(loc.path)}:{loc.line}" if loc else ""


def _mark(f: Finding, unsafe: bool) -> str:
    """``[*]`` when ``--fix`` with these settings fixes it (ruff's mark)."""
    if f.fix is None:
        return ""
    return "[*] " if f.fix.applicability is Applicability.SAFE or unsafe else ""


def _finding_line(f: Finding, o: TextOptions, with_path: bool = True) -> Text:
    where = f"{_p(f.location.path)}:{f.location.line}:{f.location.col + 1}: " if with_path else \
        f"  {f.location.line}:{f.location.col + 1}: "
    # mypy's and the compilers' ``path:line:col: error: ...``: the severity is a word on the line, so it survives
    # a pipe, a CI log and NO_COLOR, and editors' error parsers (errorformat, problem matchers) read it.
    sev = (f"{f.severity.value}: ", _SEV_STYLE[f.severity])
    if o.fmt is OutputFormat.FULL:
        fix = "" if f.fix is None else (" [*]" if _mark(f, o.unsafe_fixes) else " [unsafe fix]")
        return Text.assemble((where, "bold"), sev, (f"{f.rule} ", _SEV_STYLE[f.severity]), (f"[{f.name}] ", "dim"),
                             _p(f.message), (fix, "green"))
    return Text.assemble((where, "bold"), sev, (f"{f.rule} ", _SEV_STYLE[f.severity]),
                         (_mark(f, o.unsafe_fixes), "green"), title(f))


def _context(an: Analysis, console: Console, o: TextOptions) -> None:
    """The derivation the verdicts rest on: contract, runner call site, gates, status counts, table."""
    c, r = an.contract, an.runner

    def say(x: object) -> None:
        console.print(x, soft_wrap=not o.wrap)  # hard-wrapped on a terminal only

    say(Text.assemble(("eagle3-lint", "bold"),
                      f"  {_p(an.source.root_label)}  {an.engine.display} {_p(an.version)}"))
    if c.found:
        kinds = ", ".join(
            f"{_s(m.name)}{'' if m.kind != 'method' else '()'}{'*' if m.has_default and m.kind == 'method' else ''}"
            for m in c.members
        )
        say(f"contract: {_s(c.protocol)} at {_s(c.path)}:{c.line} ({c.check.value} check via "
            f"{_s(c.check_text or c.check_function)}); members: {kinds}"
            + ("  (* has a default body)" if c.methods_have_defaults else "")
            + (f"; mixin {_s(c.mixin)}" if c.mixin else ""))
    else:
        say(f"contract: no {_s(c.protocol)} Protocol; {_s('; '.join(c.notes))}" if c.protocol
            else f"contract: {c.check.value} check on {_s(', '.join(c.required))}; {_s('; '.join(c.notes))}")
    site = r.primary
    if site is not None:
        say(f"runner: {_s(site.path)}:{site.line} checks {_s(c.check_of(site.interrogated))}; "
            f"config key {_s(r.config_key or '-')}; fallback {_s(site.fallback or '-')}(); "
            f"setter {_s(site.setter or '-')}()")
    else:
        say("runner: no call site found")
    for g in r.gates:
        say(f"gate: {_s(g.path)}:{g.line} refuses {_s('/'.join(g.methods))} unless {_s(g.config_attr)}.model_type "
            f"contains one of {_s(list(g.allow_list))}")


def _status_counts(an: Analysis, console: Console, soft: bool = False, hint: str = "") -> None:
    counts = {s: 0 for s in Status}
    for v in an.verdicts.values():
        counts[v.status] += 1
    console.print(f"{an.engine.display} {_s(an.version)} ({_s(an.source.root_label)}): "
                  + ", ".join(f"[{_STATUS_STYLE[s]}]{counts[s]} {s.value}[/]" for s in Status)
                  + f" of {len(an.verdicts)} architectures" + hint, soft_wrap=soft)


def _table(an: Analysis, console: Console, only: tuple[str, ...]) -> None:
    vs = sorted_verdicts(an, only)
    if not vs:
        return
    t = Table(show_lines=False, header_style="bold")
    t.add_column("architecture")
    t.add_column("status")
    t.add_column("class")
    t.add_column("why")
    for v in vs:
        t.add_row(Text(_p(v.architecture)), Text(v.status.value, style=_STATUS_STYLE[v.status]),
                  Text(_p(f"{v.location.path}:{v.location.line}" if v.location else v.module)), Text(_p(v.reason)))
    console.print(t)


def _statistics(console: Console, findings: list[Finding], o: TextOptions) -> None:
    rows: dict[str, list[Finding]] = {}
    for f in findings:
        rows.setdefault(f.rule, []).append(f)
    for rule, fs in sorted(rows.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        fix = "[*]" if any(_mark(f, o.unsafe_fixes) for f in fs) else "   "
        worst = max(fs, key=lambda f: f.severity.rank).severity
        console.print(Text.assemble(f"{len(fs):5d}  ", (rule, _SEV_STYLE[worst]), "  ",
                                    (f"{worst.value:<7}", _SEV_STYLE[worst]), f"  {fix}  {fs[0].name}"),
                      soft_wrap=not o.wrap)


def _findings(console: Console, findings: list[Finding], o: TextOptions) -> None:
    soft = not o.wrap
    if o.statistics:
        _statistics(console, findings, o)
        return
    if o.fmt is OutputFormat.GROUPED:
        by_file: dict[str, list[Finding]] = {}
        for f in findings:
            by_file.setdefault(f.location.path, []).append(f)
        for path in sorted(by_file):
            console.print(Text(_p(path) + ":", style="bold underline"), soft_wrap=soft)
            for f in sorted(by_file[path], key=Finding.sort_key):
                console.print(_finding_line(f, o, with_path=False), soft_wrap=soft)
                _fix_detail(console, f, o)
            console.print()
        return
    for f in findings:
        console.print(_finding_line(f, o), soft_wrap=soft)
        _fix_detail(console, f, o)


def _fix_detail(console: Console, f: Finding, o: TextOptions) -> None:
    if o.show_fixes and f.fix is not None:
        console.print(Text.assemble("    fix ", (f"({f.fix.applicability.value})", "green"), f": {_p(f.fix.title)}"),
                      soft_wrap=not o.wrap)


def summary_line(findings: list[Finding], unsafe: bool, whom: str = "") -> str:
    """ruff's ``Found 2 errors (1 fixable with --fix).``, with the unsafe fixes --fix holds back."""
    n = {s: sum(1 for f in findings if f.severity is s) for s in Severity}
    parts = [f"{n[s]} {s.value}{'' if n[s] == 1 else 's'}" for s in Severity if n[s]]
    if not parts:
        return f"No findings{whom}." if whom else "All checks passed!"
    now, later = fixable(findings, unsafe)
    fx = []
    if now:
        fx.append(f"{now} fixable with --fix")
    if later:
        fx.append(f"{later} unsafe fix{'' if later == 1 else 'es'} available with --unsafe-fixes")
    head = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
    return f"Found {head}{whom}" + (f" ({'; '.join(fx)})" if fx else "") + "."


def render_check(an: Analysis, console: Console, findings: list[Finding], show_all: bool,
                 opts: TextOptions | None = None, hidden: list[Finding] | None = None) -> None:
    """The text report. ``findings`` are the ones to show; ``hidden`` the ones that concern no target
    (counted only). Without ``hidden``, targets (``an.targeted``) split the findings here."""
    o = opts or TextOptions(show_all=show_all, show_context=True)
    soft = not o.wrap
    targets = o.targets or (an.targeted if not o.show_all else ())
    if hidden is None:
        if targets and not o.show_all:
            shown, hidden = split(an, findings, targets)
        else:
            shown, hidden = list(findings), []
    else:
        shown = list(findings)
    if targets:
        shown = most_severe_first(shown)
    if o.quiet or o.statistics:
        _findings(console, shown, o)
        for e in an.errors:
            console.print(f"[red]internal error[/] in {_s(e.where)}: {_s(e.message)}", soft_wrap=soft)
        return
    for line, nxt in o.headline:
        console.print(Text(_p(line), style="bold"), soft_wrap=soft)
        if nxt:
            console.print(Text.assemble("  next: ", (_p(nxt), "cyan")), soft_wrap=soft)
    if o.show_context or o.show_all:
        _context(an, console, o)
    if o.show_context or o.show_all:
        _status_counts(an, console, soft)
        _table(an, console, targets if targets and not o.show_all else ())
    elif not targets:
        # Without targets the counts answer "what supports EAGLE-3 here"; the one-row-per-architecture table
        # (hundreds of rows) is there when asked, so a hook or a pipe shows the findings, as ruff would.
        _status_counts(an, console, soft, " (-v lists each)")
    _findings(console, shown, o)
    for e in an.errors:
        console.print(f"[red]internal error[/] in {_s(e.where)}: {_s(e.message)}", soft_wrap=soft)
    whom = f" for {', '.join(targets)}" if targets and not o.show_all else ""
    line = summary_line(shown, o.unsafe_fixes, whom)
    if hidden:
        # Counted, not shown: they are about architectures the reader did not ask about.
        line = line[:-1] + f"; {len(hidden)} more about other architectures (--all shows them)."
    console.print(Text(line), soft_wrap=soft)


_TONE_STYLE = {Tone.GOOD: "green", Tone.BAD: "red", Tone.WARN: "yellow", Tone.DIM: "dim", Tone.PLAIN: ""}


def trace_tree(node: TraceNode) -> Tree:
    """The terminal drawing of a trace (trace.py builds it)."""
    def text(n: TraceNode) -> Text:
        loc = f" ({n.location})" if n.location is not None else ""
        style = _TONE_STYLE[n.tone]
        return Text.assemble(
            (_p(n.label), style + (" bold" if n.kind is NodeKind.ARCHITECTURE else "")), (_p(loc), "dim")
        )

    def add(parent: Tree, n: TraceNode) -> None:
        t = parent.add(text(n))
        for c in n.children:
            add(t, c)

    root = Tree(text(node))
    for c in node.children:
        add(root, c)
    return root
