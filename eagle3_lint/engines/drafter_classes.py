"""The engine's own drafter classes, run with a drafter config: what their ``__init__`` builds, what their
``load_weights`` does with tensor names (engine-neutral; both engines' drafter steps read it).

The drafter classes (``llama_eagle3.py`` and its kin) are the engine's, not the targets': like
``drafter_keys.py`` (which config keys they read) and ``engines/vllm/drafter.py`` (the speculative config),
this is the engine reading its own code, so it reads syntax, handed to ``minieval`` (never imported). It is
not in the facts pass because the answer is a run of ``__init__`` for the drafter config the user gives (a
``--draft-config`` option, not a property of the tree), for two or three classes of a thousand files.

One run per (``__init__``, config) and analysis (``init_run``), watched once for everything asked of it:

- ``self.fc = Linear(IN, ...)``: fc's in-width (vLLM's drafter-fc step, ``engines/vllm/drafter.fc_input``, and
  the checkpoint check, ``drafter_weights.check``);
- ``self.layers = ModuleList([... for i in range(N)])``: the decoder layers built (``self.midlayer = ...``: one);
- every ``self.x = ...``: built, ``None``, another attribute's object or a plain value (``drafter_load``: the
  tensors a loader drops silently).

``read_loader`` reads a ``load_weights`` body: its renames, stacked mapping, prefixes and silent lookups
(``drafter_load.Loader``).
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eagle3_lint.drafter_load import LOADER, Attr, Loader, Loading
from eagle3_lint.drafter_weights import Built
from eagle3_lint.lazyimport import lazy
from eagle3_lint.semantic import Where
from eagle3_lint.source_ast import fc_init, read_module

if TYPE_CHECKING:
    from eagle3_lint import minieval as me
    from eagle3_lint.graph import ClassKey
    from eagle3_lint.stages import Model
else:
    me = lazy("eagle3_lint.minieval")  # imported on first use (lazyimport.py)


@dataclass
class InitRun:
    """What one ``__init__`` assigned, run for one drafter config."""

    attrs: dict[str, Attr] = field(default_factory=dict)  # ``self.x`` (one level), the last assignment of each
    fc: tuple[Any, str, int] | None = None  # the first ``self.fc = Call(IN, ...)``: IN's value, as written, line
    layers: tuple[Any, str, int] | None = None  # ``self.layers``' range(N): N's value, as written, line
    midlayer: int = 0  # the line of ``self.midlayer = ...`` when it comes before any ``self.layers``
    error: str = ""  # why the run stopped early ("": it ran to the end)


def _range_arg(value: ast.AST) -> ast.expr | None:
    """``N`` of the ``range(N)`` a comprehension in ``value`` iterates over."""
    for n in ast.walk(value):
        if isinstance(n, ast.comprehension) and isinstance(n.iter, ast.Call) and isinstance(n.iter.func, ast.Name) \
                and n.iter.func.id == "range" and len(n.iter.args) == 1:
            return n.iter.args[0]
    return None


def init_run(sm: Model, path: str, tree: ast.Module, fnode: ast.FunctionDef, cfg: dict[str, Any]) -> InitRun:
    """``fnode`` (an ``__init__`` of ``path``) run with ``cfg`` as the drafter's HF config, once per analysis."""
    key = json.dumps(cfg, sort_keys=True, default=repr)
    return sm.memo.get(f"drafter-init-{path}:{fnode.lineno}:{key}", lambda: _run(path, tree, fnode, cfg))


def _run(path: str, tree: ast.Module, fnode: ast.FunctionDef, cfg: dict[str, Any]) -> InitRun:
    out = InitRun()
    view = me.ConfigView(cfg, "draft_hf_config")

    def attr(p: tuple[str, ...]) -> Any:
        return view if p[-1] == "hf_config" else me.NOTHING

    interp = me.Interpreter(me.World(attr=attr), strict=False)
    orig = interp._assign

    def value_of(node: ast.AST, frame: Any) -> Any:
        try:
            return interp._eval(node, frame)
        except (me.Unsupported, me.EvalRaise):
            return me.UNKNOWN

    def assign(target: ast.AST, v: Any, frame: Any, value_node: ast.AST) -> None:
        name = ast.unparse(target)
        line = getattr(value_node, "lineno", 0)
        if name == "self.fc" and isinstance(value_node, ast.Call) and out.fc is None:
            arg = value_node.args[0] if value_node.args else next(
                (k.value for k in value_node.keywords if k.arg in ("input_size", "in_features")), None)
            if arg is not None:
                out.fc = (value_of(arg, frame), ast.unparse(arg), value_node.lineno)
        elif name == "self.layers" and out.layers is None and not out.midlayer:
            n = _range_arg(value_node)
            if n is not None:
                out.layers = (value_of(n, frame), ast.unparse(n), line)
        elif name == "self.midlayer" and out.layers is None and not out.midlayer:
            out.midlayer = line
        if name.startswith("self.") and name.count(".") == 1:
            a = name[5:]
            if isinstance(value_node, ast.Constant) and value_node.value is None:
                out.attrs[a] = Attr("none", None, "None", line)
            elif isinstance(value_node, ast.Attribute) and ast.unparse(value_node).startswith("self."):
                out.attrs[a] = Attr("alias", None, ast.unparse(value_node), line)
            elif isinstance(v, (bool, int, str, float)):
                out.attrs[a] = Attr("value", v, ast.unparse(value_node)[:80], line)
            elif isinstance(value_node, ast.Call):
                out.attrs[a] = Attr("module", None, ast.unparse(value_node.func), line)
        orig(target, v, frame, value_node)

    # An instance attribute shadows the method for this interpreter only: every assignment is watched.
    interp._assign = assign  # type: ignore[method-assign,assignment]  # a bound hook replacing a method
    env = me.ModuleEnv.of(tree, path)
    a = fnode.args
    # A ``config`` parameter is the drafter's HF config (SGLang passes it in); the rest are opaque.
    pos = [me.Record("self")] + [view if p.arg == "config" else me.Opaque((p.arg,)) for p in a.args[1:]]
    kw = {k.arg: view if k.arg == "config" else me.Opaque((k.arg,)) for k in a.kwonlyargs}
    try:
        interp._call_func(me.FuncValue(fnode, env), pos, kw)
    except (me.EvalRaise, me.Unsupported) as exc:
        out.error = str(exc)
    return out


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


# -- what the drafter class builds (drafter_weights.Built) ------------------------------------------------
def built(sm: Model, arch: str, hf_config: dict[str, Any]) -> Built:
    """What the class registered as ``arch`` builds for ``hf_config`` (the drafter's, after the engine's renaming)."""
    out = Built(drafter_class=arch)
    key = sm.keys.get(arch)
    if key is None:
        out.note = f"{arch} does not resolve to a class in this tree"
        return out
    out.drafter_class = key.name
    out.loading = loading(sm, arch, hf_config)
    fi = fc_init(sm, key)
    if fi is None:
        out.note = f"{key.name} builds no self.fc"
        return out
    owner, line, path, tree, fnode = fi.owner, fi.line, fi.path, fi.tree, fi.fnode
    if tree is None or fnode is None:
        out.note = f"cannot read {owner.name}.__init__"
        return out
    run = init_run(sm, path, tree, fnode, hf_config)
    if run.fc is not None:
        value, text, fc_line = run.fc
        out.fc_in = _int(value)
        out.fc_where = Where(path, fc_line, text)
    if run.layers is not None:
        value, text, at = run.layers
        out.layers, out.layers_text = _int(value), text
        out.layers_where = Where(path, at or line, f"{owner.name}.__init__")
    elif run.midlayer:
        out.layers, out.layers_text = 1, "one midlayer"
        out.layers_where = Where(path, run.midlayer, f"{owner.name}.__init__")
    if run.error:
        out.note = f"{owner.name}.__init__ stops early ({run.error})"
    if out.fc_where is None and not out.note:
        out.note = f"{owner.name}.__init__ ({path}:{line}) does not reach self.fc for this config"
    return out


# -- the loader (drafter_load.Loading) --------------------------------------------------------------------
def _const_str(e: ast.AST) -> str | None:
    return e.value if isinstance(e, ast.Constant) and isinstance(e.value, str) else None


def _replace_args(call: ast.AST) -> tuple[ast.expr, ast.expr] | None:
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "replace" \
            and len(call.args) == 2:
        return call.args[0], call.args[1]
    return None


def read_loader(fn: ast.FunctionDef, owner: str, path: str, attrs: dict[str, Attr]) -> Loader:
    """The renames, mappings and silent skips of ``load_weights`` ``fn``; ``attrs``: the inner model's attributes,
    for the tests that decide what vLLM's mapper drops."""
    out = Loader(owner, Where(path, fn.lineno, f"{owner}.{LOADER}"))
    binds: dict[str, ast.expr] = {}
    skips: set[str] = set()  # lists handed to ``AutoWeightsLoader(..., skip_substrs=X)`` (vLLM 0.18.0 :419-423)
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            binds.setdefault(n.targets[0].id, n.value)
        elif isinstance(n, ast.Call):
            skips.update(k.value.id for k in n.keywords if k.arg == "skip_substrs" and isinstance(k.value, ast.Name))
    for n in ast.walk(fn):
        if isinstance(n, ast.For) and isinstance(n.target, ast.Tuple) and len(n.target.elts) >= 2 \
                and all(isinstance(x, ast.Name) for x in n.target.elts):
            names = [x.id for x in n.target.elts if isinstance(x, ast.Name)]
            it = n.iter
            src = it.func.value if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) \
                and it.func.attr == "items" else it
            lit = binds.get(src.id) if isinstance(src, ast.Name) else None
            for c in ast.walk(n):
                ra = _replace_args(c)
                if ra is None or not all(isinstance(a, ast.Name) and a.id in names for a in ra):
                    continue
                old, new = (names.index(a.id) for a in ra if isinstance(a, ast.Name))
                if isinstance(lit, ast.Dict):  # ``for legacy, new in legacy_name_map.items()``
                    out.renames.extend((k, v) for k, v in ((_const_str(a), _const_str(b)) for a, b in
                                                            zip(lit.keys, lit.values, strict=True) if a is not None)
                                       if k is not None and v is not None)
                elif isinstance(lit, (ast.List, ast.Tuple)):  # ``for param_name, weight_name, shard_id in ...``
                    for t in lit.elts:
                        if isinstance(t, ast.Tuple) and len(t.elts) > max(old, new):
                            a, b = _const_str(t.elts[old]), _const_str(t.elts[new])
                            if a is not None and b is not None:
                                out.stacked.append((a, b))
                break
        elif isinstance(n, ast.If):
            sub = _in_name(n.test)
            if sub is not None and n.body and isinstance(n.body[-1], ast.Continue):
                out.consumed.append(sub)
            elif sub is not None:
                for st in n.body:
                    if isinstance(st, ast.Assign):
                        ra = _replace_args(st.value)
                        if ra is not None and _const_str(ra[0]) and _const_str(ra[1]) is not None:
                            out.renames.append((_const_str(ra[0]) or "", _const_str(ra[1]) or ""))
            neg = _not_in_name(n.test)
            for st in n.body:
                if neg is not None and isinstance(st, ast.Assign) and isinstance(st.value, ast.BinOp) \
                        and isinstance(st.value.op, ast.Add) and _const_str(st.value.left):
                    out.prefix, out.prefix_always, out.prefix_unless = _const_str(st.value.left) or "", True, neg
            # ``if param_name in params_dict:`` with nothing else: a name without a parameter is dropped.
            t = n.test
            if isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.In) \
                    and isinstance(t.comparators[0], ast.Name) and not n.orelse \
                    and isinstance(binds.get(t.comparators[0].id), ast.Call) \
                    and "named_parameters" in ast.unparse(binds[t.comparators[0].id]):
                out.skip_lines.append(n.lineno)
            # ``if not self.model.norm_before_fc: orig_to_new_substr["input_norm."] = None`` (0.33.0 :464-465), or
            # ``skip_substrs.append("input_norm.")`` (0.18.0 :417-418; AutoWeightsLoader skips a name holding one of
            # its skip_substrs without a word, models/utils.py:189-192)
            for st in n.body:
                sub, how = None, "maps {s!r} to nothing"
                if isinstance(st, ast.Assign) and isinstance(st.value, ast.Constant) and st.value.value is None \
                        and isinstance(st.targets[0], ast.Subscript):
                    sub = _const_str(st.targets[0].slice)
                elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) \
                        and isinstance(st.value.func, ast.Attribute) and st.value.func.attr == "append" \
                        and isinstance(st.value.func.value, ast.Name) and st.value.func.value.id in skips \
                        and len(st.value.args) == 1:
                    sub, how = _const_str(st.value.args[0]), "skips every name holding {s!r}"
                if sub and _guard(n.test, attrs):
                    out.dropped.append((sub, Where(path, st.lineno, ast.unparse(n.test)), how))
        elif isinstance(n, ast.JoinedStr) and len(n.values) == 2 and _const_str(n.values[0]) \
                and isinstance(n.values[1], ast.FormattedValue) and not out.prefix:
            out.prefix = _const_str(n.values[0]) or ""  # ``f"model.{name}"``
    # Substrings mapped to None with no test drop every tensor holding them (vLLM's ``{"mask_hidden": None}``,
    # which the loop loaded already: consumed).
    return out


def _in_name(t: ast.AST) -> str | None:
    """``"<s>" in name`` -> s."""
    if isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.In) and _const_str(t.left) \
            and isinstance(t.comparators[0], ast.Name):
        return _const_str(t.left)
    return None


def _not_in_name(t: ast.AST) -> str | None:
    if isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.NotIn) and _const_str(t.left) \
            and isinstance(t.comparators[0], ast.Name):
        return _const_str(t.left)
    return None


def _guard(t: ast.AST, attrs: dict[str, Attr]) -> bool:
    """Whether a test on the drafter model's attributes holds for this config (``not self.model.norm_before_fc``);
    False for anything else (a flag of the loop: the substring is then dropped only when no tensor holds it)."""
    neg = isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not)
    e = t.operand if isinstance(t, ast.UnaryOp) else t
    if not (isinstance(e, ast.Attribute) and isinstance(e.value, ast.Attribute)
            and isinstance(e.value.value, ast.Name) and e.value.value.id == "self"):
        return False
    a = attrs.get(e.attr)
    if a is None or a.kind != "value" or not isinstance(a.value, bool):
        return False
    return (not a.value) if neg else a.value


def _init_attrs(sm: Model, key: ClassKey, cfg: dict[str, Any]) -> tuple[dict[str, Attr], str]:
    """``self.x`` as ``key``'s ``__init__`` assigns it for drafter config ``cfg`` (the branches it takes)."""
    hit = sm.graph.method(key, "__init__")
    if hit is None:
        return {}, f"{key.name} has no __init__ the tool can read"
    owner, md = hit
    path = sm.graph.path_of(owner)
    tree = read_module(sm, path)
    fnode = me.function_at(tree, getattr(md, "line", 0)) if tree is not None else None
    if tree is None or fnode is None:
        return {}, f"cannot read {owner.name}.__init__"
    run = init_run(sm, path, tree, fnode, cfg)
    return run.attrs, f"{owner.name}.__init__ stops early ({run.error})" if run.error else ""


def loading(sm: Model, arch: str, cfg: dict[str, Any]) -> Loading | None:
    """The loader of the drafter class registered as ``arch`` and what it builds for ``cfg``; None when the class
    or its ``load_weights`` cannot be read."""
    key = sm.keys.get(arch)
    if key is None:
        return None
    hit = sm.graph.member_origin(key, LOADER)  # the facts keep only some methods' details: its span will do
    if hit is None:
        return None
    owner, md = hit
    path = sm.graph.path_of(owner)
    tree = read_module(sm, path)
    fnode = me.function_at(tree, getattr(md, "line", 0)) if tree is not None else None
    if fnode is None or not isinstance(fnode, ast.FunctionDef):
        return None
    out = Loading(key.name, None, path=path)
    out.top, out.note = _init_attrs(sm, key, cfg)
    fi = fc_init(sm, key)
    if fi is not None and fi.owner != key:
        out.inner_class, out.inner_path = fi.owner.name, fi.path
        out.inner_attr = next((d.attr for d in sm.graph.delegations(key) if d.target == fi.owner), "")
        out.inner, note = _init_attrs(sm, fi.owner, cfg)
        out.note = out.note or note
    n = cfg.get("num_hidden_layers")
    out.layers = n if isinstance(n, int) and not isinstance(n, bool) else None
    out.loader = read_loader(fnode, owner.name, path, out.inner or out.top)
    return out
