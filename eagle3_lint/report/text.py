"""Human output with rich: a summary, the architecture table, findings, and the ``trace`` tree."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from eagle3_lint.aux import forward_collection, layer_owner
from eagle3_lint.graph import ClassKey, Resolved
from eagle3_lint.model import Finding, Location, Severity, Status
from eagle3_lint.report import sorted_verdicts

if TYPE_CHECKING:
    from eagle3_lint.analysis import Context

_STATUS_STYLE = {
    Status.SUPPORTED: "green", Status.UNSUPPORTED: "red", Status.WRAPPER_GAP: "magenta",
    Status.PARTIAL: "yellow", Status.UNKNOWN: "dim",
}
_SEV_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.NOTE: "cyan"}


def _loc(loc: Location | None) -> str:
    return f"{loc.path}:{loc.line}" if loc else ""


def render_check(ctx: Context, console: Console, findings: list[Finding], show_all: bool) -> None:
    c, r = ctx.contract, ctx.runner
    console.print(Text.assemble(("eagle3-lint", "bold"), f"  {ctx.source.root_label}  vLLM {ctx.version}"))
    if c.found:
        kinds = ", ".join(f"{m.name}{'' if m.kind != 'method' else '()'}{'*' if m.has_default and m.kind == 'method' else ''}"
                          for m in c.members)
        console.print(f"contract: {c.protocol} at {c.path}:{c.line} ({c.check} check via {c.check_text or c.check_function}); "
                      f"members: {kinds}" + ("  (* has a default body)" if c.methods_have_defaults else "")
                      + (f"; mixin {c.mixin}" if c.mixin else ""))
    else:
        console.print(f"contract: no {c.protocol} Protocol; {'; '.join(c.notes)}")
    site = r.primary
    if site is not None:
        console.print(f"runner: {site.path}:{site.line} checks {c.check_function}({site.interrogated}); "
                      f"config key {r.config_key or '-'}; fallback {site.fallback or '-'}(); setter {site.setter or '-'}()")
    else:
        console.print("runner: no call site found")
    for g in r.gates:
        console.print(f"gate: {g.path}:{g.line} refuses {'/'.join(g.methods)} unless {g.config_attr}.model_type contains one of "
                      f"{list(g.allow_list)}")
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
            t.add_row(v.architecture, Text(v.status.value, style=_STATUS_STYLE[v.status]),
                      _loc(v.location) or v.module, v.reason)
        console.print(t)
    for f in findings:
        console.print(Text.assemble((f"{f.location.path}:{f.location.line}:{f.location.col + 1}: ", "bold"),
                                    (f"{f.rule} ", _SEV_STYLE[f.severity]), (f"[{f.name}] ", "dim"), f.message,
                                    (" [fixable]" if f.fix else "", "green")))
    for e in ctx.errors:
        console.print(f"[red]internal error[/] in {e.where}: {e.message}")
    n = {s: sum(1 for f in findings if f.severity is s) for s in Severity}
    console.print(f"{len(findings)} finding(s): {n[Severity.ERROR]} error, {n[Severity.WARNING]} warning, {n[Severity.NOTE]} note")


def trace_tree(ctx: Context, arch: str) -> Tree:
    v = ctx.verdicts[arch]
    key = ctx.keys.get(arch)
    c, r = ctx.contract, ctx.runner
    root = Tree(Text.assemble((arch, "bold"), "  ", (v.status.value, _STATUS_STYLE[v.status]),
                              f"  supports_eagle3={v.supports_eagle3}"))
    gates = root.add("config-time gates")
    if not r.gates:
        gates.add("none in this tree")
    for g in r.gates:
        gates.add(f"{g.path}:{g.line}: {'/'.join(g.methods)} needs {g.config_attr}.model_type to contain one of "
                  f"{list(g.allow_list)} (list at line {g.list_line}); else {g.error}")
    runner = root.add("runner")
    for s in r.sites:
        n = runner.add(f"{s.path}:{s.line} in {s.function}(): "
                       + ((f"if not {c.check_function}({s.interrogated}): {s.error} (line {s.error_line})" if s.negated
                           else f"if {c.check_function}({s.interrogated}): set the layers, else silently skip them")
                          if s.checked
                          else f"calls {s.interrogated}.{s.setter}() with no check"))
        if s.config_function:
            n.add(f"{s.path}:{s.config_line}: aux layers from config: {s.config_function}() reads {r.config_key!r}")
        if s.fallback:
            n.add(f"{s.path}:{s.fallback_line}: else model default: {s.fallback}()")
        if s.setter:
            n.add(f"{s.path}:{s.setter_line}: then {s.setter}(aux_layers) on the same object")
    if r.pp_verifier:
        runner.add(f"{r.pp_verifier_path}:{r.pp_verifier_line}: {r.pp_verifier}() refuses pipeline parallelism unless "
                   f"the inner decoder sets {r.pp_flag}")
    for step in v.evidence:
        if step.kind == "registry":
            root.add(f"registry: {step.text} ({_loc(step.location)})")
    if key is None:
        root.add(f"[red]{v.reason}[/]")
        return root
    _class_node(ctx, root, key, "interrogated top-level class", depth=0)
    fb = root.add("fallback the runner would call")
    for name in r.fallback_names:
        hit = ctx.graph.member_origin(key, name)
        cm = c.member(name)
        if hit is None:
            fb.add(f"{name}(): [red]missing[/] from {key.name}'s MRO")
        else:
            stub = hit[1].stub
            fb.add(f"{name}(): from {hit[0].name} ({ctx.graph.path_of(hit[0])}:{hit[1].line})"
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
        lay.add(f"layers owned by {own.key.name} via self.{hops} ({ctx.graph.path_of(own.key)}:{own.layers_line})")
        col = forward_collection(ctx.graph, own.key, tuple(n for n in (c.mixin_collector,) if n))
        if col is None:
            lay.add("no forward() found")
        else:
            p = ctx.graph.path_of(col.method_owner)
            if col.loop is not None:
                lp = col.loop
                lay.add(f"{p}:{lp.line}: for {lp.index_var}, ... in enumerate({lp.iter_text}"
                        + (f", start={lp.start_text})" if lp.start_text else ")")
                        + (" [yellow](slice-relative index)[/]" if lp.sliced and not lp.start_text else ""))
            lay.add(f"collection idiom: {col.idiom}" + (f", compares with self.{col.attr}" if col.attr else "")
                    + f"; returns aux: {col.returns_aux}")
        del cf
    return root


def _class_node(ctx: Context, parent: Tree, key: ClassKey, label: str, depth: int) -> None:
    cf = ctx.graph.class_facts(key)
    chk = ctx.judge.check_class(key)
    style = "green" if chk.supports else "red" if chk.supports is False else "dim"
    node = parent.add(Text.assemble(f"{label}: ", (key.name, "bold"),
                                    f" ({ctx.graph.path_of(key)}:{cf.line if cf else '?'}) ",
                                    (f"supports_eagle3={chk.supports}", style)))
    mro = ctx.graph.mro(key)
    m = node.add("MRO" + (f" [red]({mro.error})[/]" if mro.error else ""))
    for e in mro.entries:
        if isinstance(e, ClassKey):
            ecf = ctx.graph.class_facts(e)
            m.add(f"{e.name}  {ctx.graph.path_of(e)}:{ecf.line if ecf else '?'}")
        elif isinstance(e, Resolved):
            m.add(f"[dim]{e.name} ({e.kind})[/]")
    mem = node.add("contract members")
    present = {n: (o, ln) for n, o, ln in chk.present}
    for cm in ctx.contract.members:
        if cm.name in present:
            o, ln = present[cm.name]
            mem.add(f"{cm.name}: from {o.name} ({ctx.graph.path_of(o)}:{ln})")
        else:
            mem.add(f"{cm.name}: [red]missing[/]")
    if depth >= 2:
        return
    for d in ctx.judge.model_delegations(key):
        dn = node.add(f"delegates self.{d.attr} ({d.how}) at {d.path}:{d.line}: {d.detail}")
        if d.target is not None:
            _class_node(ctx, dn, d.target, "inner model", depth + 1)
