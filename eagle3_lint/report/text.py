"""Human output with rich: a summary, the architecture table, findings, and the ``trace`` tree."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from eagle3_lint import semantic as sem
from eagle3_lint.graph import ClassKey, Resolved
from eagle3_lint.guard import printable
from eagle3_lint.model import Finding, Location, Severity, Status
from eagle3_lint.report import sorted_verdicts

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
    own = sem.owner(ctx, key)
    lay = root.add("aux hidden states")
    if own is None:
        lay.add("no class reachable from this one assigns self.layers")
    else:
        hops = ".".join(own.path) or "(itself)"
        lay.add(f"layers owned by {_s(own.key.name)} via self.{_s(hops)} ({_s(ctx.graph.path_of(own.key))}:{own.line})")
        fwd = sem.forward_of(ctx, own.key)
        cap = sem.capture(ctx, key)
        if fwd is None:
            lay.add("no forward() found")
        else:
            p = _s(ctx.graph.path_of(fwd.owner))
            for lp in fwd.method.loops:
                if "layers" not in lp.iter_text:
                    continue
                lay.add(f"{p}:{lp.line}: for {_s(lp.index_var)}, ... in enumerate({_s(lp.iter_text)}"
                        + (f", start={_s(lp.start_text)})" if lp.start_text else ")")
                        + (" [yellow](slice-relative index)[/]" if lp.sliced and not lp.start_text else ""))
            idiom = cap.idiom if cap is not None else "none"
            attrs = ", ".join(f"self.{a}" for a in sorted(fwd.attrs_read))
            lay.add(f"collection idiom: {_s(idiom)}" + (f", compares with {_s(attrs)}" if attrs else "")
                    + f"; returns aux: {fwd.returns_aux}")
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
