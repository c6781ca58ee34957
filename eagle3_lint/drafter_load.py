"""Which checkpoint tensors a release's drafter ``load_weights`` drops without a word (issue 23 item 2).

A drafter checkpoint's tensor reaches a parameter only through the drafter class's own ``load_weights``: its
renames, its stacked-parameter mapping, its prefixes, and what it does with a name that is no parameter. Two
loaders drop tensors silently, each read from the tree, never listed:

- **a lookup that skips** (SGLang's ``llama_eagle3.py``: ``param_name = name if name in params_dict else
  f"model.{name}"`` then ``if param_name in params_dict:`` with no ``else``, 0.5.23 :372-373): a tensor whose name,
  after the loader's renames (``legacy_name_map``'s ``midlayer`` -> ``layers.0``, ``aux_norm_low`` ->
  ``fc_norm.0``, :338-348) and its stacked mapping (``.q_proj`` -> ``.qkv_proj``, :328-361), names no parameter
  of the class as built for this config is skipped: a module the config switches off (``model.input_norm`` is
  None unless ``norm_before_fc``, :173-182), a decoder layer past ``num_hidden_layers``, a head the config ties to
  the embedding, any other naming scheme.
- **substrings mapped to nothing** (vLLM's ``llama_eagle3.py``: ``orig_to_new_substr[...] = None`` passed to
  ``WeightsMapper``, 0.33.0 :457-470): under a test of the drafter model's own attribute (``if not
  self.model.norm_before_fc: orig_to_new_substr["input_norm."] = None``) evaluated for this config, every tensor
  holding the substring is dropped. A name vLLM's ``AutoWeightsLoader`` cannot place raises instead
  (``models/utils.py:443``): not silent, so not this check's. Tests of the loop's own flags
  (``includes_embed_tokens``) drop a substring only when no tensor holds it.

What the class builds is its ``__init__`` evaluated with ``minieval`` for the drafter config (the top-level class
and the model its ``fc`` lives in): ``self.x = Module(...)`` is built, ``= None`` is not, ``= self.model.y`` is
another name of ``y`` (``named_parameters`` lists a shared parameter once). Below the first level (a decoder
layer's own modules) every name is taken as present. A skipped tensor leaves the weight it was trained for at its
initial value, or a trained part unused: the drafter starts and its proposals are rejected.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eagle3_lint.lazyimport import lazy
from eagle3_lint.semantic import Where, fc_init, read_module

if TYPE_CHECKING:
    from eagle3_lint import minieval as me
    from eagle3_lint.graph import ClassKey
    from eagle3_lint.stages import Model
else:
    me = lazy("eagle3_lint.minieval")  # imported on first use (lazyimport.py)

LOADER = "load_weights"
_LAYER = re.compile(r"^layers\.(\d+)(?:\.|$)")


@dataclass(frozen=True)
class Attr:
    kind: str  # "module" (a new object), "none", "alias" (another attribute's object), "value" (a plain value)
    value: Any = None  # the evaluated value of a plain value (``norm_before_fc``)
    text: str = ""
    line: int = 0


@dataclass
class Loader:
    """What one ``load_weights`` does with tensor names."""

    owner: str  # the class that defines it
    where: Where
    renames: list[tuple[str, str]] = field(default_factory=list)  # substring -> substring, in order
    stacked: list[tuple[str, str]] = field(default_factory=list)  # shard substring -> parameter substring
    consumed: list[str] = field(default_factory=list)  # substrings the loader takes itself (``d2t``) or drops
    prefix: str = ""  # tried when the name is no parameter (SGLang), or added (vLLM; see ``prefix_always``)
    prefix_always: bool = False
    prefix_unless: str = ""  # vLLM: ``elif "lm_head" not in name: name = "model." + name``
    # ``if param_name in params_dict:`` with no else: a name with no parameter is skipped silently (the stacked
    # mapping's, then the plain one's).
    skip_lines: list[int] = field(default_factory=list)
    dropped: list[tuple[str, Where]] = field(default_factory=list)  # substrings mapped to None for this config


@dataclass
class Loading:
    """The drafter class's loader and what its ``__init__`` builds for this config."""

    drafter_class: str
    loader: Loader | None
    top: dict[str, Attr] = field(default_factory=dict)
    inner: dict[str, Attr] = field(default_factory=dict)
    inner_attr: str = ""  # where the inner model sits on the top-level class (``model``)
    inner_class: str = ""
    inner_path: str = ""
    layers: int | None = None
    path: str = ""
    note: str = ""


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
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            binds.setdefault(n.targets[0].id, n.value)
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
            # ``if not self.model.norm_before_fc: orig_to_new_substr["input_norm."] = None``
            for st in n.body:
                if isinstance(st, ast.Assign) and isinstance(st.value, ast.Constant) and st.value.value is None \
                        and isinstance(st.targets[0], ast.Subscript) and _const_str(st.targets[0].slice):
                    holds = _guard(n.test, attrs)
                    if holds:
                        out.dropped.append((_const_str(st.targets[0].slice) or "",
                                            Where(path, st.lineno, ast.unparse(n.test))))
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
    view = me.ConfigView(cfg, "draft_hf_config")

    def attr(p: tuple[str, ...]) -> Any:
        return view if p[-1] == "hf_config" else me.NOTHING

    interp = me.Interpreter(me.World(attr=attr), strict=False)
    orig = interp._assign
    out: dict[str, Attr] = {}

    def assign(target: ast.AST, v: Any, frame: Any, value_node: ast.AST) -> None:
        name = ast.unparse(target)
        if name.startswith("self.") and name.count(".") == 1:
            a = name[5:]
            line = getattr(value_node, "lineno", 0)
            if isinstance(value_node, ast.Constant) and value_node.value is None:
                out[a] = Attr("none", None, "None", line)
            elif isinstance(value_node, ast.Attribute) and ast.unparse(value_node).startswith("self."):
                out[a] = Attr("alias", None, ast.unparse(value_node), line)
            elif isinstance(v, (bool, int, str, float)):
                out[a] = Attr("value", v, ast.unparse(value_node)[:80], line)
            elif isinstance(value_node, ast.Call):
                out[a] = Attr("module", None, ast.unparse(value_node.func), line)
        orig(target, v, frame, value_node)

    interp._assign = assign  # type: ignore[method-assign,assignment]  # watch every assignment, this interpreter only
    env = me.ModuleEnv.of(tree, path)
    a = fnode.args
    pos = [me.Record("self")] + [view if p.arg == "config" else me.Opaque((p.arg,)) for p in a.args[1:]]
    kw = {k.arg: view if k.arg == "config" else me.Opaque((k.arg,)) for k in a.kwonlyargs}
    note = ""
    try:
        interp._call_func(me.FuncValue(fnode, env), pos, kw)
    except (me.EvalRaise, me.Unsupported) as exc:
        note = f"{owner.name}.__init__ stops early ({exc})"
    return out, note


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


def _rename(ld: Loader, name: str) -> tuple[str, bool]:
    """The name after the loader's renames, and whether its stacked mapping took it."""
    for old, new in ld.renames:
        if old in name:
            name = name.replace(old, new)
    for shard, param in ld.stacked:
        if shard in name:
            return name.replace(shard, param), True
    return name, False


def _resolves(lg: Loading, name: str) -> tuple[bool, str]:
    """Whether parameter name ``name`` lies in something the class builds; else why not."""
    head, _, rest = name.partition(".")
    a = lg.top.get(head)
    if a is None or a.kind == "none":
        return False, f"{lg.drafter_class} has no {head}" if a is None else \
            f"{lg.drafter_class}.{head} is None for this config ({lg.path}:{a.line})"
    if a.kind == "alias":
        return False, f"{lg.drafter_class}.{head} is {a.text} ({lg.path}:{a.line}), whose parameter is listed under " \
                      "that name"
    if head != lg.inner_attr or not lg.inner:
        return True, ""
    sub, _, _ = rest.partition(".")
    b = lg.inner.get(sub)
    if b is None or b.kind == "none":
        return False, f"{lg.inner_class} has no {sub}" if b is None else \
            f"{lg.inner_class}.{sub} is None for this config ({lg.inner_path}:{b.line})"
    m = _LAYER.match(rest)
    if m and lg.layers is not None and int(m.group(1)) >= lg.layers:
        return False, f"{lg.inner_class} builds {lg.layers} decoder layer(s) (num_hidden_layers)"
    return True, ""


@dataclass(frozen=True)
class Skipped:
    tensor: str
    why: str  # names what the loader looked up, after its renames


def skipped(lg: Loading, tensors: list[str]) -> list[Skipped]:
    """The checkpoint tensors this loader drops silently, in checkpoint order."""
    ld = lg.loader
    if ld is None:
        return []
    out: list[Skipped] = []
    for t in tensors:
        if any(c in t for c in ld.consumed):
            continue
        name, stacked = _rename(ld, t)
        if ld.prefix_always and ld.prefix_unless not in name:
            name = ld.prefix + name
        drop = next(((s, w) for s, w in ld.dropped if s in name), None)
        if drop is not None:
            s, w = drop
            out.append(Skipped(t, f"{ld.owner}.{LOADER} maps {s!r} to nothing when {w.text} "
                                        f"({w.path}:{w.line}), as it is for this config"))
            continue
        if not ld.skip_lines:
            continue
        ok, why = _resolves(lg, name)
        if not ok and ld.prefix and not ld.prefix_always and name.partition(".")[0] not in lg.top:
            # ``name if name in params_dict else f"model.{name}"``: the inner model's parameter.
            name = ld.prefix + name
            ok, why = _resolves(lg, name)
        if not ok:
            line = ld.skip_lines[0] if stacked or len(ld.skip_lines) == 1 else ld.skip_lines[-1]
            out.append(Skipped(t, f"{ld.owner}.{LOADER} looks up {name} ({ld.where.path}:{line}) and skips "
                                        f"it without a word: {why}"))
    return out
