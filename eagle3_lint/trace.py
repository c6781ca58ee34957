"""``trace``: the path the runner takes for one architecture, as data the semantic model builds.

``build(an, arch)`` returns a tree of ``TraceNode``: the serving verdict's chain of gates (when the
context has one), the config-time gates, the runner call sites, the registry entry, the interrogated
class with its MRO, contract members and delegations to inner models, the fallback getter, and the
aux-state path (the layer owner and how its ``forward`` collects). Every fact is a query of
``semantic.py``, ``verdict.py`` or ``serving.py``: the trace never walks the code itself, so it cannot
disagree with the rules. Renderers (``report/text.py`` for the terminal, ``to_json``, ``to_dot``,
``to_mermaid`` here) only draw the tree.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from eagle3_lint import semantic as sem
from eagle3_lint.graph import ClassKey, Resolved
from eagle3_lint.model import Location
from eagle3_lint.runner import MODEL_CLASS
from eagle3_lint.safe_text import printable
from eagle3_lint.serving import PLATFORM_LABEL

if TYPE_CHECKING:
    from eagle3_lint.stages import Analysis, Model

# Inner models are expanded this deep (wrapper -> language model -> decoder); the semantic model's own
# walks go up to ``semantic.MAX_HOPS``.
_CLASS_DEPTH = 2


class NodeKind(str, Enum):
    ARCHITECTURE = "architecture"
    SERVING = "serving"
    STEP = "step"
    GATES = "gates"
    GATE = "gate"
    RUNNER = "runner"
    SITE = "site"
    REGISTRY = "registry"
    CLASS = "class"
    MRO = "mro"
    MEMBER = "member"
    DELEGATION = "delegation"
    FALLBACK = "fallback"
    LAYERS = "layers"
    LOOP = "loop"
    COLLECTION = "collection"
    NOTE = "note"


class Tone(str, Enum):
    """How a node reads: renderers map it to colours."""

    PLAIN = "plain"
    GOOD = "good"
    BAD = "bad"
    WARN = "warn"
    DIM = "dim"


@dataclass(frozen=True)
class TraceNode:
    kind: NodeKind
    label: str
    location: Location | None = None
    tone: Tone = Tone.PLAIN
    ref: str | None = None  # the class a CLASS/LAYERS node is about, as ``module.Qualname``
    children: tuple[TraceNode, ...] = ()

    def walk(self) -> Iterator[TraceNode]:
        yield self
        for c in self.children:
            yield from c.walk()


def _node(kind: NodeKind, label: str, loc: Location | None = None, tone: Tone = Tone.PLAIN,
          children: list[TraceNode] | tuple[TraceNode, ...] = (), ref: str | None = None) -> TraceNode:
    return TraceNode(kind, label, loc, tone, ref, tuple(children))


def _loc(path: str | None, line: int | None) -> Location | None:
    return Location(path, line or 1) if path else None


def build(an: Analysis, arch: str) -> TraceNode:
    v = an.verdicts[arch]
    key = an.keys.get(arch)
    c, r = an.contract, an.runner
    tone = Tone.GOOD if v.supports_eagle3 else Tone.BAD if v.supports_eagle3 is False else Tone.DIM
    top: list[TraceNode] = []
    sv = an.serving.get(arch)
    if sv is not None:
        steps = [_node(NodeKind.STEP, f"{s.gate.value}: {s.result.value}: {s.message}", s.location,
                       {"pass": Tone.GOOD, "fail": Tone.BAD, "unknown": Tone.WARN}.get(s.result.value, Tone.DIM))
                 for s in sv.steps]
        head = f"serving: {sv.outcome.value}" + (f" at {sv.stage.value}" if sv.stage else "") + \
            f" on {PLATFORM_LABEL.get(sv.platform, sv.platform)}" + \
            (f", the {sv.runner.value.upper()} runner ({sv.runner_reason})" if sv.runner else "")
        if sv.next_step:
            steps.append(_node(NodeKind.NOTE, f"next: {sv.next_step}"))
        top.append(
            _node(NodeKind.SERVING, head, None, Tone.GOOD if sv.outcome.value == "servable" else Tone.BAD, steps)
        )
    gates = [_node(NodeKind.GATE, f"{'/'.join(g.methods)} needs {g.config_attr}.model_type to contain one of "
                   f"{list(g.allow_list)} (list at line {g.list_line}); else {g.error}", _loc(g.path, g.line))
             for g in r.gates]
    top.append(_node(NodeKind.GATES, "config-time gates", None, Tone.PLAIN,
                     gates or [_node(NodeKind.NOTE, "none in this tree", tone=Tone.DIM)]))
    sites: list[TraceNode] = []
    for s in r.sites:
        what = ((f"if not {c.check_function}({s.interrogated}): {s.error} (line {s.error_line})" if s.negated
                 else f"if {c.check_function}({s.interrogated}): set the layers, else silently skip them")
                if s.checked else f"calls {s.interrogated}.{s.setter}() with no check")
        kids: list[TraceNode] = []
        if s.config_function:
            kids.append(_node(NodeKind.NOTE, f"aux layers from config: {s.config_function}() reads {r.config_key!r}",
                              _loc(s.path, s.config_line)))
        if s.fallback:
            kids.append(_node(NodeKind.NOTE, f"else model default: {s.fallback}()", _loc(s.path, s.fallback_line)))
        if s.setter and (s.checked or s.setter_line != s.line):  # an unchecked site's call is the setter call
            kids.append(
                _node(NodeKind.NOTE, f"then {s.setter}(aux_layers) on the same object", _loc(s.path, s.setter_line))
            )
        if not s.checked and s.error:
            error = s.error.replace(MODEL_CLASS, key.name if key is not None else arch)
            kids.append(_node(NodeKind.NOTE, f"a model without it: {error}", _loc(s.path, s.error_line)))
        sites.append(_node(NodeKind.SITE, f"in {s.function}(): {what}", _loc(s.path, s.line), children=kids))
    if r.pp_verifier:
        sites.append(_node(NodeKind.NOTE, f"{r.pp_verifier}() refuses pipeline parallelism unless the inner decoder "
                           f"sets {r.pp_flag}", _loc(r.pp_verifier_path, r.pp_verifier_line)))
    top.append(_node(NodeKind.RUNNER, "runner", None, Tone.PLAIN, sites))
    for step in v.evidence:
        if step.kind == "registry":
            top.append(_node(NodeKind.REGISTRY, f"registry: {step.text}", step.location))
    if key is None:
        top.append(_node(NodeKind.NOTE, v.reason, tone=Tone.BAD))
    else:
        top.append(_class_node(an.model, key, "interrogated top-level class", 0))
        top.append(_fallback(an.model, key))
        top.append(_layers(an.model, key))
    return _node(NodeKind.ARCHITECTURE, f"{arch}  {v.status.value}  supports_eagle3={v.supports_eagle3}", v.location,
                 tone, top, str(key) if key else None)


def _class_node(sm: Model, key: ClassKey, label: str, depth: int) -> TraceNode:
    cf = sm.graph.class_facts(key)
    chk = sm.judge.check_class(key)
    mro = sm.graph.mro(key)
    entries = []
    for e in mro.entries:
        if isinstance(e, ClassKey):
            ecf = sm.graph.class_facts(e)
            entries.append(_node(NodeKind.CLASS, e.name, _loc(sm.graph.path_of(e), ecf.line if ecf else None),
                                 ref=str(e)))
        elif isinstance(e, Resolved):
            entries.append(_node(NodeKind.NOTE, f"{e.name} ({e.kind})", tone=Tone.DIM))
    present = {n: (o, ln) for n, o, ln in chk.present}
    members = []
    for cm in sm.contract.members:
        if cm.name in present:
            o, ln = present[cm.name]
            members.append(_node(NodeKind.MEMBER, f"{cm.name}: from {o.name}", _loc(sm.graph.path_of(o), ln)))
        else:
            members.append(_node(NodeKind.MEMBER, f"{cm.name}: missing", tone=Tone.BAD))
    kids = [_node(NodeKind.MRO, "MRO" + (f" ({mro.error})" if mro.error else ""), None,
                  Tone.BAD if mro.error else Tone.PLAIN, entries),
            _node(NodeKind.MEMBER, "contract members", None, Tone.PLAIN, members)]
    if depth < _CLASS_DEPTH:
        for d in sm.judge.model_delegations(key):
            sub = [_class_node(sm, d.target, "inner model", depth + 1)] if d.target is not None else []
            kids.append(_node(NodeKind.DELEGATION, f"delegates self.{d.attr} ({d.how.value}): {d.detail}",
                              _loc(d.path, d.line), children=sub))
    tone = Tone.GOOD if chk.supports else Tone.BAD if chk.supports is False else Tone.DIM
    return _node(NodeKind.CLASS, f"{label}: {key.name} supports_eagle3={chk.supports}",
                 _loc(sm.graph.path_of(key), cf.line if cf else None), tone, kids, str(key))


def _fallback(sm: Model, key: ClassKey) -> TraceNode:
    kids = []
    for name in sm.runner.fallback_names:
        hit = sm.graph.member_origin(key, name)
        cm = sm.contract.member(name)
        if hit is None:
            kids.append(_node(NodeKind.MEMBER, f"{name}(): missing from {key.name}'s MRO", tone=Tone.BAD))
            continue
        extra = (" stub body: returns None" if hit[1].stub else "") + (
            " (contract default body)" if cm and cm.has_default and sm.judge.is_protocol_class(hit[0]) else "")
        kids.append(_node(NodeKind.MEMBER, f"{name}(): from {hit[0].name}{extra}",
                          _loc(sm.graph.path_of(hit[0]), hit[1].line), Tone.WARN if hit[1].stub else Tone.PLAIN))
    if not sm.runner.fallback_names:
        kids.append(_node(NodeKind.NOTE, "none: the runner of this tree never asks the model for default layers"))
    return _node(NodeKind.FALLBACK, "fallback the runner would call", children=kids)


def _layers(sm: Model, key: ClassKey) -> TraceNode:
    own = sem.owner(sm, key)
    if own is None:
        return _node(NodeKind.LAYERS, "aux hidden states", children=[
            _node(NodeKind.NOTE, "no class reachable from this one assigns self.layers", tone=Tone.BAD)])
    hops = ".".join(own.path) or "(itself)"
    kids = [_node(NodeKind.LAYERS, f"layers owned by {own.key.name} via self.{hops}"
                  + (f" (assigned in {own.where.name})" if own.where != own.key else ""), own.location(sm),
                  ref=str(own.key))]
    fwd = sem.forward_of(sm, own.key)
    cap = sem.capture(sm, key)
    if fwd is None:
        kids.append(_node(NodeKind.NOTE, "no forward() found", tone=Tone.BAD))
    else:
        path = sm.graph.path_of(fwd.owner)
        for header, rel, line in sem.enumerate_headers(fwd.method):
            kids.append(_node(NodeKind.LOOP, header + (" (slice-relative index)" if rel else ""), _loc(path, line),
                              Tone.WARN if rel else Tone.PLAIN, ref=str(fwd.owner)))
        attrs = ", ".join(f"self.{a}" for a in sorted(fwd.attrs_read))
        idiom = cap.idiom if cap is not None else "none"
        kids.append(
            _node(
                NodeKind.COLLECTION,
                f"collection idiom: {idiom}"
                + (f", compares with {attrs}" if attrs else "")
                + f"; returns aux: {fwd.returns_aux}",
                _loc(path, fwd.line),
                Tone.GOOD if fwd.collects and fwd.returns_aux else Tone.BAD,
                ref=str(fwd.owner),
            )
        )
    return _node(NodeKind.LAYERS, "aux hidden states", children=kids, ref=str(own.key))


# -- renderers -------------------------------------------------------------------------------------------------
def to_json(node: TraceNode) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": node.kind.value, "label": node.label,
                           "path": node.location.path if node.location else None,
                           "line": node.location.line if node.location else None, "tone": node.tone.value}
    if node.ref:
        out["class"] = node.ref
    if node.children:
        out["children"] = [to_json(c) for c in node.children]
    return out


def _numbered(node: TraceNode) -> list[tuple[int, int | None, TraceNode]]:
    """(id, parent id, node) in depth-first order."""
    out: list[tuple[int, int | None, TraceNode]] = []

    def go(n: TraceNode, parent: int | None) -> None:
        me = len(out)
        out.append((me, parent, n))
        for c in n.children:
            go(c, me)

    go(node, None)
    return out


def _label(n: TraceNode) -> str:
    # Labels carry tree text (registry keys, messages): control sequences are shown escaped.
    return printable(n.label) + (f"\n{printable(str(n.location))}" if n.location else "")


_DOT_COLOR = {
    Tone.GOOD: "darkgreen",
    Tone.BAD: "red3",
    Tone.WARN: "darkorange",
    Tone.DIM: "gray50",
    Tone.PLAIN: "black",
}


def to_dot(node: TraceNode) -> str:
    lines = ["digraph trace {", "  rankdir=LR;", '  node [shape=box, fontname="monospace", fontsize=10];']
    for i, parent, n in _numbered(node):
        lines.append(f"  n{i} [label={json.dumps(_label(n))}, color={_DOT_COLOR[n.tone]}];")
        if parent is not None:
            lines.append(f"  n{parent} -> n{i};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _mermaid_text(s: str) -> str:
    # Mermaid labels are quoted; a quote or markup character inside is written as sm entity.
    return (s.replace("&", "#amp;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")
            .replace("\n", "<br/>"))


def to_mermaid(node: TraceNode) -> str:
    lines = ["flowchart LR"]
    for i, parent, n in _numbered(node):
        lines.append(f'  n{i}["{_mermaid_text(_label(n))}"]')
        if parent is not None:
            lines.append(f"  n{parent} --> n{i}")
    styled = {Tone.GOOD: "good", Tone.BAD: "bad", Tone.WARN: "warn"}
    for i, _p, n in _numbered(node):
        if n.tone in styled:
            lines.append(f"  class n{i} {styled[n.tone]}")
    lines += ["  classDef good stroke:#2a2;", "  classDef bad stroke:#d22;", "  classDef warn stroke:#d80;"]
    return "\n".join(lines) + "\n"
