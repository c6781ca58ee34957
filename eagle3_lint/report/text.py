"""Human output with rich: a summary, the architecture table, findings, and the ``trace`` tree."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from eagle3_lint.aux import forward_collection, layer_owner
from eagle3_lint.graph import ClassKey, Resolved
from eagle3_lint.guard import printable
from eagle3_lint.model import Applicability, Finding, Location, Severity, Status
from eagle3_lint.report import sorted_verdicts
from eagle3_lint.report.headline import fixable, most_severe_first, split
from eagle3_lint.report.textopts import OutputFormat, TextOptions
from eagle3_lint.report.title import title

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


def _mark(f: Finding, unsafe: bool) -> str:
    """``[*]`` when ``--fix`` with these settings fixes it (ruff's mark)."""
    if f.fix is None:
        return ""
    return "[*] " if f.fix.applicability is Applicability.SAFE or unsafe else ""


def _finding_line(f: Finding, o: TextOptions, with_path: bool = True) -> Text:
    where = f"{_p(f.location.path)}:{f.location.line}:{f.location.col + 1}: " if with_path else \
        f"  {f.location.line}:{f.location.col + 1}: "
    if o.fmt is OutputFormat.FULL:
        fix = "" if f.fix is None else (" [*]" if _mark(f, o.unsafe_fixes) else " [unsafe fix]")
        return Text.assemble((where, "bold"), (f"{f.rule} ", _SEV_STYLE[f.severity]), (f"[{f.name}] ", "dim"),
                             _p(f.message), (fix, "green"))
    return Text.assemble((where, "bold"), (f"{f.rule} ", _SEV_STYLE[f.severity]), (_mark(f, o.unsafe_fixes), "green"),
                         title(f))


def _context(ctx: Context, console: Console, o: TextOptions) -> None:
    """The derivation the verdicts rest on: contract, runner call site, gates, status counts, table."""
    c, r = ctx.contract, ctx.runner

    def say(x: object) -> None:
        console.print(x, soft_wrap=not o.wrap)  # hard-wrapped on a terminal only

    say(Text.assemble(("eagle3-lint", "bold"), f"  {_p(ctx.source.root_label)}  vLLM {_p(ctx.version)}"))
    if c.found:
        kinds = ", ".join(f"{_s(m.name)}{'' if m.kind != 'method' else '()'}{'*' if m.has_default and m.kind == 'method' else ''}"
                          for m in c.members)
        say(f"contract: {_s(c.protocol)} at {_s(c.path)}:{c.line} ({c.check} check via "
            f"{_s(c.check_text or c.check_function)}); members: {kinds}"
            + ("  (* has a default body)" if c.methods_have_defaults else "")
            + (f"; mixin {_s(c.mixin)}" if c.mixin else ""))
    else:
        say(f"contract: no {_s(c.protocol)} Protocol; {_s('; '.join(c.notes))}")
    site = r.primary
    if site is not None:
        say(f"runner: {_s(site.path)}:{site.line} checks {_s(c.check_function)}({_s(site.interrogated)}); "
            f"config key {_s(r.config_key or '-')}; fallback {_s(site.fallback or '-')}(); "
            f"setter {_s(site.setter or '-')}()")
    else:
        say("runner: no call site found")
    for g in r.gates:
        say(f"gate: {_s(g.path)}:{g.line} refuses {_s('/'.join(g.methods))} unless {_s(g.config_attr)}.model_type "
            f"contains one of {_s(list(g.allow_list))}")


def _status_counts(ctx: Context, console: Console, soft: bool = False) -> None:
    counts = {s: 0 for s in Status}
    for v in ctx.verdicts.values():
        counts[v.status] += 1
    console.print(f"vLLM {_s(ctx.version)} ({_s(ctx.source.root_label)}): "
                  + ", ".join(f"[{_STATUS_STYLE[s]}]{counts[s]} {s.value}[/]" for s in Status)
                  + f" of {len(ctx.verdicts)} architectures", soft_wrap=soft)


def _table(ctx: Context, console: Console, only: tuple[str, ...]) -> None:
    vs = sorted_verdicts(ctx, only)
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
        console.print(Text.assemble(f"{len(fs):5d}  ", (rule, _SEV_STYLE[worst]), f"  {fix}  {fs[0].name}"),
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


def render_check(ctx: Context, console: Console, findings: list[Finding], show_all: bool,
                 opts: TextOptions | None = None, hidden: list[Finding] | None = None) -> None:
    """The text report. ``findings`` are the ones to show; ``hidden`` the ones that concern no target
    (counted only). Without ``hidden``, targets (``ctx.targeted``) split the findings here."""
    o = opts or TextOptions(show_all=show_all, show_context=True)
    soft = not o.wrap
    targets = o.targets or (ctx.targeted if not o.show_all else ())
    if hidden is None:
        if targets and not o.show_all:
            shown, hidden = split(ctx, findings, targets)
        else:
            shown, hidden = list(findings), []
    else:
        shown = list(findings)
    if targets:
        shown = most_severe_first(shown)
    if o.quiet or o.statistics:
        _findings(console, shown, o)
        for e in ctx.errors:
            console.print(f"[red]internal error[/] in {_s(e.where)}: {_s(e.message)}", soft_wrap=soft)
        return
    for line, nxt in o.headline:
        console.print(Text(_p(line), style="bold"), soft_wrap=soft)
        if nxt:
            console.print(Text.assemble("  next: ", (_p(nxt), "cyan")), soft_wrap=soft)
    if o.show_context or o.show_all:
        _context(ctx, console, o)
    if o.show_context or o.show_all or not targets:
        _status_counts(ctx, console, soft)
        _table(ctx, console, targets if targets and not o.show_all else ())
    _findings(console, shown, o)
    for e in ctx.errors:
        console.print(f"[red]internal error[/] in {_s(e.where)}: {_s(e.message)}", soft_wrap=soft)
    whom = f" for {', '.join(targets)}" if targets and not o.show_all else ""
    line = summary_line(shown, o.unsafe_fixes, whom)
    if hidden:
        # Counted, not shown: they are about architectures the reader did not ask about.
        line = line[:-1] + f"; {len(hidden)} more about other architectures (--all shows them)."
    console.print(Text(line), soft_wrap=soft)


def trace_tree(ctx: Context, arch: str) -> Tree:
    v = ctx.verdicts[arch]
    key = ctx.keys.get(arch)
    c, r = ctx.contract, ctx.runner
    root = Tree(Text.assemble((_p(arch), "bold"), "  ", (v.status.value, _STATUS_STYLE[v.status]),
                              f"  supports_eagle3={v.supports_eagle3}"))
    gates = root.add("config-time gates")
    if not r.gates:
        gates.add("none in this tree")
    for g in r.gates:
        gates.add(f"{_s(g.path)}:{g.line}: {_s('/'.join(g.methods))} needs {_s(g.config_attr)}.model_type to contain "
                  f"one of {_s(list(g.allow_list))} (list at line {g.list_line}); else {_s(g.error)}")
    runner = root.add("runner")
    for s in r.sites:
        n = runner.add(f"{_s(s.path)}:{s.line} in {_s(s.function)}(): "
                       + ((f"if not {_s(c.check_function)}({_s(s.interrogated)}): {_s(s.error)} (line {s.error_line})"
                           if s.negated
                           else f"if {_s(c.check_function)}({_s(s.interrogated)}): set the layers, else silently skip them")
                          if s.checked
                          else f"calls {_s(s.interrogated)}.{_s(s.setter)}() with no check"))
        if s.config_function:
            n.add(f"{_s(s.path)}:{s.config_line}: aux layers from config: {_s(s.config_function)}() reads "
                  f"{_s(repr(r.config_key))}")
        if s.fallback:
            n.add(f"{_s(s.path)}:{s.fallback_line}: else model default: {_s(s.fallback)}()")
        if s.setter:
            n.add(f"{_s(s.path)}:{s.setter_line}: then {_s(s.setter)}(aux_layers) on the same object")
    if r.pp_verifier:
        runner.add(f"{_s(r.pp_verifier_path)}:{r.pp_verifier_line}: {_s(r.pp_verifier)}() refuses pipeline parallelism "
                   f"unless the inner decoder sets {_s(r.pp_flag)}")
    for step in v.evidence:
        if step.kind == "registry":
            root.add(f"registry: {_s(step.text)} ({_loc(step.location)})")
    if key is None:
        root.add(f"[red]{_s(v.reason)}[/]")
        return root
    _class_node(ctx, root, key, "interrogated top-level class", depth=0)
    fb = root.add("fallback the runner would call")
    for name in r.fallback_names:
        hit = ctx.graph.member_origin(key, name)
        cm = c.member(name)
        if hit is None:
            fb.add(f"{_s(name)}(): [red]missing[/] from {_s(key.name)}'s MRO")
        else:
            stub = hit[1].stub
            fb.add(f"{_s(name)}(): from {_s(hit[0].name)} ({_s(ctx.graph.path_of(hit[0]))}:{hit[1].line})"
                   + (" [yellow]stub body: returns None[/]" if stub else "")
                   + (" (contract default body)" if cm and cm.has_default and ctx.judge.is_protocol_class(hit[0]) else ""))
    if not r.fallback_names:
        fb.add("none: the runner of this tree never asks the model for default layers")
    own = layer_owner(ctx.graph, key)
    lay = root.add("aux hidden states")
    if own is None:
        lay.add("no class reachable from this one assigns self.layers")
    else:
        cf = ctx.graph.class_facts(own.key)
        hops = ".".join(own.path) or "(itself)"
        lay.add(f"layers owned by {_s(own.key.name)} via self.{_s(hops)} ({_s(ctx.graph.path_of(own.key))}:{own.layers_line})")
        col = forward_collection(ctx.graph, own.key, tuple(n for n in (c.mixin_collector,) if n))
        if col is None:
            lay.add("no forward() found")
        else:
            p = _s(ctx.graph.path_of(col.method_owner))
            if col.loop is not None:
                lp = col.loop
                lay.add(f"{p}:{lp.line}: for {_s(lp.index_var)}, ... in enumerate({_s(lp.iter_text)}"
                        + (f", start={_s(lp.start_text)})" if lp.start_text else ")")
                        + (" [yellow](slice-relative index)[/]" if lp.sliced and not lp.start_text else ""))
            lay.add(f"collection idiom: {_s(col.idiom)}" + (f", compares with self.{_s(col.attr)}" if col.attr else "")
                    + f"; returns aux: {col.returns_aux}")
        del cf
    return root


def _class_node(ctx: Context, parent: Tree, key: ClassKey, label: str, depth: int) -> None:
    cf = ctx.graph.class_facts(key)
    chk = ctx.judge.check_class(key)
    style = "green" if chk.supports else "red" if chk.supports is False else "dim"
    node = parent.add(Text.assemble(f"{label}: ", (_p(key.name), "bold"),
                                    f" ({_p(ctx.graph.path_of(key))}:{cf.line if cf else '?'}) ",
                                    (f"supports_eagle3={chk.supports}", style)))
    mro = ctx.graph.mro(key)
    m = node.add("MRO" + (f" [red]({_s(mro.error)})[/]" if mro.error else ""))
    for e in mro.entries:
        if isinstance(e, ClassKey):
            ecf = ctx.graph.class_facts(e)
            m.add(f"{_s(e.name)}  {_s(ctx.graph.path_of(e))}:{ecf.line if ecf else '?'}")
        elif isinstance(e, Resolved):
            m.add(f"[dim]{_s(e.name)} ({e.kind})[/]")
    mem = node.add("contract members")
    present = {n: (o, ln) for n, o, ln in chk.present}
    for cm in ctx.contract.members:
        if cm.name in present:
            o, ln = present[cm.name]
            mem.add(f"{_s(cm.name)}: from {_s(o.name)} ({_s(ctx.graph.path_of(o))}:{ln})")
        else:
            mem.add(f"{_s(cm.name)}: [red]missing[/]")
    if depth >= 2:
        return
    for d in ctx.judge.model_delegations(key):
        dn = node.add(f"delegates self.{_s(d.attr)} ({_s(d.how)}) at {_s(d.path)}:{d.line}: {_s(d.detail)}")
        if d.target is not None:
            _class_node(ctx, dn, d.target, "inner model", depth + 1)
