"""Human output with rich: a summary, the architecture table, findings, and the ``trace`` tree."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from eagle3_lint.guard import printable
from eagle3_lint.model import Finding, Location, Severity, Status
from eagle3_lint.report import sorted_verdicts
from eagle3_lint.trace import NodeKind, Tone, TraceNode

if TYPE_CHECKING:
    from eagle3_lint.analysis import Context

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


def render_check(ctx: Context, console: Console, findings: list[Finding], show_all: bool) -> None:
    c, r = ctx.contract, ctx.runner
    console.print(Text.assemble(("eagle3-lint", "bold"), f"  {_p(ctx.source.root_label)}  vLLM {_p(ctx.version)}"))
    if c.found:
        kinds = ", ".join(f"{_s(m.name)}{'' if m.kind != 'method' else '()'}{'*' if m.has_default and m.kind == 'method' else ''}"
                          for m in c.members)
        console.print(f"contract: {_s(c.protocol)} at {_s(c.path)}:{c.line} ({c.check} check via "
                      f"{_s(c.check_text or c.check_function)}); members: {kinds}"
                      + ("  (* has a default body)" if c.methods_have_defaults else "")
                      + (f"; mixin {_s(c.mixin)}" if c.mixin else ""))
    else:
        console.print(f"contract: no {_s(c.protocol)} Protocol; {_s('; '.join(c.notes))}")
    site = r.primary
    if site is not None:
        console.print(f"runner: {_s(site.path)}:{site.line} checks {_s(c.check_function)}({_s(site.interrogated)}); "
                      f"config key {_s(r.config_key or '-')}; fallback {_s(site.fallback or '-')}(); "
                      f"setter {_s(site.setter or '-')}()")
    else:
        console.print("runner: no call site found")
    for g in r.gates:
        console.print(f"gate: {_s(g.path)}:{g.line} refuses {_s('/'.join(g.methods))} unless {_s(g.config_attr)}.model_type "
                      f"contains one of {_s(list(g.allow_list))}")
    counts = {s: 0 for s in Status}
    for v in ctx.verdicts.values():
        counts[v.status] += 1
    console.print("architectures: " + ", ".join(f"[{_STATUS_STYLE[s]}]{counts[s]} {s.value}[/]" for s in Status) +
                  f" of {len(ctx.verdicts)}")
    only = ctx.targeted if ctx.targeted and not show_all else ()
    vs = sorted_verdicts(ctx, only)
    if vs:
        t = Table(show_lines=False, header_style="bold")
        t.add_column("architecture")
        t.add_column("status")
        t.add_column("class")
        t.add_column("why")
        for v in vs:
            t.add_row(Text(_p(v.architecture)), Text(v.status.value, style=_STATUS_STYLE[v.status]),
                      Text(_p(f"{v.location.path}:{v.location.line}" if v.location else v.module)), Text(_p(v.reason)))
        console.print(t)
    shown = findings
    if ctx.targeted and not show_all:
        # With --arch the reader asked about those architectures: hide findings that belong to other
        # architectures (never errors, which set the exit code; never file-level findings such as
        # parse errors or unused suppressions) and count them instead of burying the answer.
        shown = [f for f in findings if f.severity is Severity.ERROR or f.architecture is None
                 or f.architecture in ctx.targeted or any(t in f.message for t in ctx.targeted)]
    for f in shown:
        console.print(Text.assemble((f"{_p(f.location.path)}:{f.location.line}:{f.location.col + 1}: ", "bold"),
                                    (f"{f.rule} ", _SEV_STYLE[f.severity]), (f"[{f.name}] ", "dim"), _p(f.message),
                                    (" [fixable]" if f.fix else "", "green")))
    for e in ctx.errors:
        console.print(f"[red]internal error[/] in {_s(e.where)}: {_s(e.message)}")
    n = {s: sum(1 for f in findings if f.severity is s) for s in Severity}
    console.print(f"{len(findings)} finding(s): {n[Severity.ERROR]} error, {n[Severity.WARNING]} warning, {n[Severity.NOTE]} note")
    if len(shown) < len(findings):
        console.print(f"{len(findings) - len(shown)} of them concern other architectures and are not shown "
                      "(--all shows them; JSON and SARIF always carry every finding)")


_TONE_STYLE = {Tone.GOOD: "green", Tone.BAD: "red", Tone.WARN: "yellow", Tone.DIM: "dim", Tone.PLAIN: ""}


def trace_tree(node: TraceNode) -> Tree:
    """The terminal drawing of a trace (trace.py builds it)."""
    def text(n: TraceNode) -> Text:
        loc = f" ({n.location})" if n.location is not None else ""
        style = _TONE_STYLE[n.tone]
        return Text.assemble((_p(n.label), style + (" bold" if n.kind is NodeKind.ARCHITECTURE else "")), (_p(loc), "dim"))

    def add(parent: Tree, n: TraceNode) -> None:
        t = parent.add(text(n))
        for c in n.children:
            add(t, c)

    root = Tree(text(node))
    for c in node.children:
        add(root, c)
    return root
