"""What a drafter's ``config.json`` means to the SGLang tree being checked (EGL007's facts, the serving chain's).

Every step is read from the tree, in the order SGLang runs it:

1. **the ids the runner reads.** The runner reads ``eagle_config["eagle_aux_hidden_state_layer_ids"]`` from the
   drafter's HF config inside a ``try`` whose handler falls back to ``None`` (``runner.id_sources`` finds the
   read; ``model_runner.py`` up to 0.5.15, ``spec_aux_hidden_state.py`` from 0.5.19). That ``try`` statement is
   evaluated with ``minieval`` against the drafter config as ``draft_model_config.hf_config``: a config without
   ``eagle_config`` (``None.get`` raises) or without the key gives ``None``. The top-level
   ``eagle_aux_hidden_state_layer_ids`` that vLLM and the speculators format write is not read.
2. **the setter's transform.** The targeted class's ``set_eagle3_layers_to_capture`` (through the MRO) and the
   setters it delegates to (``self.language_model.set_eagle3_layers_to_capture(layer_ids)``), each read by
   ``setter.read_setter``: ``+1``, the ``layer_ids[0] == 1`` and ``max == n`` heuristics, the default list for
   ``None`` (evaluated with ``minieval`` for the target's ``num_hidden_layers``). The result is the list of
   indices ``i`` the decoder is told to capture: the hidden state *entering* layer ``i``.
3. **what the decoder collects.** The forward of the class the setter writes to: ``i in self.layers_to_capture``
   (or a per-layer ``_is_layer_to_capture`` flag) inside the layer loop, at the layer's input, collects indices
   ``0 … n-1``; a test of ``self.end_layer``/``num_layers`` after the loop collects ``n`` (the last layer's
   output). A flag setter that indexes ``self.layers[i]`` raises ``IndexError`` for ``i >= n``.
4. **the layers the drafter was trained on** (``trained``): data with reasons, below.
5. **pipeline parallelism** (``pp.py``): a launch-time refusal, or the last-rank-only setter.

Which engine a drafter was trained for is not written in its config. What the file says:

- ids in ``eagle_config`` are SpecForge's field (SpecForge trains for SGLang); SpecForge numbers a layer's
  output (its default is ``[1, n//2 - 1, n - 4]``: ``specforge/core/eagle3.py``), and SGLang's setters add 1.
  But SpecForge configs also ship ids in the other numbering: ``configs/kimi-k25-eagle3.json`` has
  ``[2, 30, 58]``, SGLang's own default for 61 layers, which SGLang PR #25454 calls the "input to layer X"
  convention (and stopped adding 1 to, for DeepSeek-V2's setter, when the first id is not 1). So: ids equal to
  the model default minus one are output numbering, ids equal to the default are input numbering, other ids in
  ``eagle_config`` are assumed output numbering (SpecForge's) and said to be assumed;
- top-level ids are vLLM's and the speculators format's field: input numbering (a drafter trained for vLLM);
- no ids: the training default, the states entering ``(2, n // 2, n - 3)`` in both training codes;
- ``--drafter-convention vllm|sglang`` states it and overrides all of the above.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eagle3_lint.checkpoint import text_config
from eagle3_lint.drafter import DraftAnalysis, IdIssue, IgnoredKey, PPLayout, Split
from eagle3_lint.drafter_fields import ID_FIELDS, Trained, id_fields, trained
from eagle3_lint.engine import Mechanism
from eagle3_lint.engines import drafter_classes
from eagle3_lint.engines import drafter_keys as dk
from eagle3_lint.engines.sglang import pp as pp_mod
from eagle3_lint.engines.sglang.runner import IDS_KEY, SETTER, IdSource, id_sources
from eagle3_lint.engines.sglang.setter import IdTransform, capture_indices, default_indices, read_setter
from eagle3_lint.facts import head_dotted
from eagle3_lint.graph import ClassKey
from eagle3_lint.lazyimport import lazy
from eagle3_lint.model import Severity
from eagle3_lint.semantic import (
    Where,
    capture_in,
    collection_effect,
    delegate,
    resolve_self_path,
)
from eagle3_lint.source_ast import method_node, read_module

if TYPE_CHECKING:
    from eagle3_lint import minieval as me
    from eagle3_lint.stages import Model
else:
    me = lazy("eagle3_lint.minieval")  # imported on first use (lazyimport.py)

# Where SGLang's drafter code lives, for the table of other releases (scripts/drafter_keys.py): the drafter model
# modules of the aux-state methods (EAGLE-3, DFlash, DSpark). SGLang has no format converter.
DRAFTER_MODULE_GLOBS = ("sglang/srt/models/*eagle*.py", "sglang/srt/models/*dflash*.py",
                        "sglang/srt/models/*dspark*.py")
USE_AUX_KEY = "use_aux_hidden_state"
FLAG = "_is_layer_to_capture"
MAX_LAYERS = 100_000  # as for vLLM: a hostile num_hidden_layers must not make the check walk 2**70 layers


# -- 1. the ids the runner reads -------------------------------------------------------------------------
@dataclass(frozen=True)
class IdRead:
    where: Where | None  # the read (``eagle_config["eagle_aux_hidden_state_layer_ids"]``)
    ids: tuple[Any, ...] | None  # None: the runner hands the setter None (its default)
    use_aux: bool = True  # ``eagle_config.get("use_aux_hidden_state", True)``
    note: str = ""  # why the read could not be evaluated, or how it fell back


class _Interp(me.Interpreter):
    """The whitelisted evaluator, with Python's ``AttributeError`` for an attribute of ``None`` (the runner's
    ``eagle_config.get(...)`` on a config without ``eagle_config``), so the tree's own ``except`` runs."""

    def _getattr(self, obj: Any, name: str, node: ast.AST, default: Any = me.NOTHING) -> Any:
        if obj is None and default is me.NOTHING:
            raise me.EvalRaise("AttributeError", f"'NoneType' object has no attribute {name!r}",
                               getattr(node, "lineno", 0))
        return super()._getattr(obj, name, node, default)


def _enclosing_try(tree: ast.Module, line: int) -> ast.Try | None:
    best: ast.Try | None = None
    for n in ast.walk(tree):
        if isinstance(n, ast.Try) and n.lineno <= line <= (n.end_lineno or n.lineno) \
                and any(st.lineno <= line <= (st.end_lineno or st.lineno) for st in n.body) \
                and (best is None or n.lineno > best.lineno):
            best = n
    return best


def _target_of(body: list[ast.stmt], needle: str) -> str | None:
    """The target text of the first assignment in ``body`` whose value mentions ``needle``."""
    for st in body:
        for n in ast.walk(st):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and needle in ast.unparse(n.value):
                return ast.unparse(n.targets[0])
    return None


def read_ids(sm: Model, cfg: dict[str, Any]) -> IdRead:
    """The ids SGLang's runner hands the setter for drafter config ``cfg``, by the tree's own read."""
    srcs: tuple[IdSource, ...] = sm.memo.get("sglang:id-sources", lambda: id_sources(sm.source))
    if not srcs:
        return IdRead(None, None, True, f"this SGLang never reads {IDS_KEY} from the drafter config: every setter "
                                        "gets None and uses its default layers")
    src = srcs[0]
    where = Where(src.path, src.line, src.text)
    tree = read_module(sm, src.path)
    tr = _enclosing_try(tree, src.line) if tree is not None else None
    if tree is None or tr is None:
        return IdRead(where, None, True, f"the read at {src.path}:{src.line} is not in a try the tool can evaluate")
    ids_target = _target_of(tr.body, IDS_KEY)
    use_target = _target_of(tr.body, USE_AUX_KEY)
    if ids_target is None:
        return IdRead(where, None, True, f"the read at {src.path}:{src.line} is not assigned")
    assigned = {n.id for n in ast.walk(tr) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    free = sorted({n.id for n in ast.walk(tr) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - assigned
                  - {"getattr", "hasattr", "isinstance", "len", "list", "None", "True", "False"})
    roots = sorted({t.split(".")[0] for t in (ids_target, use_target) if t} - assigned)
    view = me.ConfigView(cfg, "draft_hf_config")

    def fallback(owner: str) -> Any:
        return lambda attr: view if attr == "hf_config" else me.Opaque((owner, attr))

    ret = ast.Tuple([ast.parse(ids_target, mode="eval").body,
                     ast.parse(use_target, mode="eval").body if use_target else ast.Constant(True)], ast.Load())
    params = list(dict.fromkeys([*free, *roots]))
    fn = ast.FunctionDef(  # type: ignore[call-arg]  # type_params: a field of 3.12+ ast only
        name="_read", args=ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in params], kwonlyargs=[],
                                         kw_defaults=[], defaults=[]),
        body=[*(ast.Assign([ast.parse(t, mode="eval").body], ast.Constant(None)) for t in (ids_target,)
                if "." not in t), tr, ast.Return(ret)], decorator_list=[], returns=None, type_params=[])
    ast.fix_missing_locations(ast.copy_location(fn, tr))
    args = [me.Record(p, fallback(p)) for p in params]
    try:
        ids, use = _Interp(strict=True).call(me.FuncValue(fn, me.ModuleEnv.of(tree, src.path)), args)
    except me.EvalRaise as exc:
        return IdRead(where, None, True, f"the read at {src.path}:{src.line} raises {exc.kind}: {exc.message}")
    except me.Unsupported as exc:
        return IdRead(where, None, True, f"the read at {src.path}:{src.line} could not be evaluated ({exc})")
    if isinstance(ids, (list, tuple)):
        return IdRead(where, tuple(ids), use is not False)
    return IdRead(where, None, use is not False,
                  "" if ids is None else f"the read at {src.path}:{src.line} gives {ids!r}, not a list")


# -- 2. the setter's transform ----------------------------------------------------------------------------
@dataclass(frozen=True)
class SetterHop:
    """One setter on the way from the top-level object to the decoder: ``holder`` is the object's class."""

    holder: ClassKey
    owner: ClassKey  # the class that defines the setter (``holder`` or a base)
    path: str
    transform: IdTransform
    setter: str = SETTER  # its name (DFLASH's and DSPARK's setters are followed the same way, methods.py)


def setter_chain(sm: Model, key: ClassKey, depth: int = 0, setter: str = SETTER) -> list[SetterHop]:
    """The setter ``key`` runs, then the ones it delegates to (``self.model``/``self.language_model``)."""
    if depth > 4:
        return []
    hit = sm.graph.member_origin(key, setter)
    if hit is None:
        return []
    owner, member = hit
    path = sm.graph.path_of(owner)
    t = read_setter(sm.source, path, member.line, getattr(member, "end_line", member.line), setter)
    if t is None:
        return []
    hops = [SetterHop(key, owner, path, t, setter)]
    for recv in t.delegates_to:
        parts = recv.split(".")
        inner = delegate(sm, key, parts[1]) if len(parts) == 2 and parts[0] == "self" else None
        if inner is not None and inner != key:
            hops.extend(setter_chain(sm, inner, depth + 1, setter))
            break
    return hops


def stored_indices(hops: list[SetterHop], ids: tuple[Any, ...] | None, n: int | None
                   ) -> tuple[tuple[int, ...] | None, bool, str]:
    """The indices the last setter stores for the runner's ``ids`` (None: the defaults), whether they are the
    setter's default, and why they are unknown when they are."""
    if ids is not None and not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        return None, False, f"the ids {list(ids)!r} are not all integers"
    cur: list[int] | None = None if ids is None else list(ids)
    is_default = False
    for h in hops:
        t = h.transform
        where = f"{h.owner.name}.{h.setter} ({h.path}:{t.line})"
        if cur is None:
            if t.default is not None:
                if n is None:
                    return None, True, f"{where} uses its default {t.default}: needs the target's num_hidden_layers"
                cur = default_indices(t, n)
                is_default = True
                if cur is None:
                    return None, True, f"{where}: the default {t.default} cannot be evaluated"
                if not t.delegates_to:
                    break
                continue
            if t.delegates_to:
                continue
            return None, True, f"{where} has no default for None"
        if t.delegates_to and t.offset == 0 and not t.conditional:
            continue  # hands the ids on unchanged
        if t.conditional and any(hh is not None and hh.value.startswith("max") for hh in [
                b[0] for b in t.branches]) and n is None:
            return None, is_default, f"{where} tests max(ids) against num_layers: needs the target's num_hidden_layers"
        got = capture_indices(t, cur, n if n is not None else -1)
        if got is None:
            return None, is_default, f"{where}: the transform of the ids is not one the tool can follow"
        cur = got
    return (None, is_default, "no setter found") if cur is None else (tuple(cur), is_default, "")


# -- 3. what the decoder collects ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Collection:
    decoder: ClassKey | None
    path: str = ""
    line: int = 0  # the forward
    site_line: int = 0  # the first in-loop capture test
    in_loop: bool = False  # indices 0 … n-1 (the state entering layer i)
    shift: int = 0  # 1 where the test sits after the layer call (the state leaving layer i)
    final_line: int = 0  # a test after the loop: index n, the last layer's output
    flags_index_error: bool = False  # the setter marks ``self.layers[i]``: IndexError for i >= n
    flags_line: int = 0
    note: str = ""

    def collects(self, n: int) -> set[int]:
        """The stored indices the forward tests (``i`` of ``range(n)``; the state each gives is ``i + shift``)."""
        out = set(range(n)) if self.in_loop else set()
        if self.final_line:
            out.add(n)
        return {i for i in out if 0 <= i <= n}


def collection(sm: Model, hops: list[SetterHop]) -> Collection:
    if not hops:
        return Collection(None, note="no setter")
    last = hops[-1]
    # What the last setter feeds, and on which object, is the semantic model's (semantic.collection_effect: list
    # writes and per-layer flag sets through every method it calls), as EGL004 reads it.
    eff = collection_effect(sm, last.holder, last.setter)
    fed = next((f for f in eff.feeds if f[0] is Mechanism.LIST), eff.feeds[0] if eff.feeds else None)
    if fed is None:
        # Not EAGLE-3's list: the attribute the setter itself writes its ids to (DSPARK's ``dspark_layers_to_capture``).
        return written_list(sm, last) or Collection(
            None, note=f"{last.owner.name}.{last.setter} stores the ids in no list or flag the tool knows")
    flags = any(m is Mechanism.FLAG for m, _p in eff.feeds)
    idiom = sm.engine.collection
    attr = idiom.list_attrs[0] if idiom is not None else ""
    head = ".".join(("self", *fed[1]))
    res = resolve_self_path(sm, last.holder, head)
    dec: ClassKey | None = last.holder if not fed[1] else (res[0][-1].key if res and res[0] and not res[1] else None)
    if dec is None:
        return Collection(None, note=f"{head} of {last.holder.name} cannot be followed to a class")
    # The decoder's capture points, read once by the semantic model (semantic.capture_in); here only those that
    # read what this setter feeds: membership in the list it writes, or the per-layer flags it sets.
    cap = capture_in(sm, last.holder, dec)
    if cap.forward_line == 0 and cap.note:
        return Collection(dec, note=cap.note)
    path, fline = cap.path, cap.forward_line
    loop_sites = [(pos, off, line) for pos, off, line in cap.sites if pos in ("before", "after")]
    if flags:
        loop_sites += [(pos, off, line) for pos, off, line in cap.flag_sites]
    in_loop = bool(loop_sites)
    site_line = min((line for _p, _o, line in loop_sites), default=0)
    # ``cap.shift``: id k -> the state entering layer k + shift; a test after the layer call is the state leaving
    # layer i, which is what the list's index i then holds.
    shift = 1 if any(pos == "after" for pos, _o, _l in loop_sites) else 0
    final_line = next((line for pos, _o, line in cap.sites if pos == "post-loop"), 0)
    index_error = False
    flags_line = 0
    if flags:
        setter_tree = read_module(sm, last.path)
        sfn = me.function_at(setter_tree, last.transform.line) if setter_tree is not None else None
        for x in ast.walk(sfn) if sfn is not None else ():
            if isinstance(x, ast.Subscript) and head_dotted(x.value) == "self.layers":
                index_error, flags_line = True, x.lineno
                break
    note = "" if in_loop or final_line else f"{dec.name}.forward tests neither self.{attr} nor a {FLAG} flag"
    return Collection(dec, path, fline, site_line, in_loop, shift, final_line, index_error, flags_line, note)


def written_list(sm: Model, hop: SetterHop) -> Collection | None:
    """What the decoder collects through the list a method's setter writes its ids to, derived from the tree rather
    than from the engine's EAGLE-3 idiom: the attribute the setter assigns from its ids parameter
    (``self.model.dspark_layers_to_capture = list(layer_ids)``, 0.5.23 deepseek_v4.py:4861, kimi_linear.py:809),
    followed to its class, and the membership tests of that attribute in the loops over the layers of its forward
    and of the methods the forward calls on ``self`` (a local alias of it too, ``captures = self.<attr> or ()``).
    A test after the layer's call reads the state leaving layer ``i`` (shift 1), one before it or in its arguments
    the state entering it; ``i - 1 in ...`` moves that by one. None: the setter writes no such attribute."""
    hit = method_node(sm, hop.holder, hop.setter)
    if hit is None:
        return None
    _owner, fn = hit
    params = [a.arg for a in fn.args.args[1:]]
    if not params:
        return None
    write = next(((head_dotted(t.value), t.attr) for n in ast.walk(fn) if isinstance(n, ast.Assign)
                  for t in n.targets if isinstance(t, ast.Attribute) and head_dotted(t.value).startswith("self")
                  and any(isinstance(x, ast.Name) and x.id == params[0] for x in ast.walk(n.value))), None)
    if write is None:
        return None
    head, attr = write
    res = resolve_self_path(sm, hop.holder, head)
    if res is None or res[1]:
        return Collection(None, note=f"{head} of {hop.holder.name} cannot be followed to a class")
    dec = res[0][-1].key if res[0] else hop.holder
    found = method_node(sm, dec, "forward")
    if found is None:
        return Collection(dec, note=f"{dec.name} has no forward the tool can read")
    path = sm.graph.path_of(found[0])
    sites: list[tuple[int, int]] = []  # (line, shift)
    seen: set[str] = set()
    todo: list[ast.FunctionDef] = [found[1]]
    while todo and len(seen) < 8:
        f = todo.pop(0)
        if f.name in seen:
            continue
        seen.add(f.name)
        sites += _list_tests(f, attr)
        for c in ast.walk(f):
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and head_dotted(c.func.value) == "self":
                m = method_node(sm, dec, c.func.attr)
                if m is not None and sm.graph.path_of(m[0]) == path and m[1].name not in seen:
                    todo.append(m[1])
    what = f"{dec.name}.forward ({path}:{found[1].lineno})"
    if not sites:
        return Collection(dec, path, found[1].lineno, note=f"{what} tests self.{attr} in no loop over its layers")
    shifts = sorted({sh for _l, sh in sites})
    if len(shifts) > 1:
        said = "; ".join(f"line {ln}: the state {'leaving' if sh else 'entering'} layer i" if sh in (0, 1)
                         else f"line {ln}: shift {sh}" for ln, sh in sorted(sites))
        return Collection(dec, path, found[1].lineno, note=f"{what} collects self.{attr} at points that differ by "
                                                           f"path ({said}); which path runs is not known")
    return Collection(dec, path, found[1].lineno, min(ln for ln, _s in sites), True, shifts[0])


def _list_tests(fn: ast.FunctionDef, attr: str) -> list[tuple[int, int]]:
    """``(line, shift)`` of each ``i [+- c] in self.<attr>`` test (or of a local alias of it) that guards a write of
    aux state (the ``if``'s body, or the conditional expression's value, names something ``aux``), in a loop of
    ``fn`` whose body calls a layer (``self.layers[i](...)``, or a name bound to ``self.layers[i]``)."""
    aliases = {t.id for n in ast.walk(fn) if isinstance(n, ast.Assign) for t in n.targets
               if isinstance(t, ast.Name) and any(isinstance(x, ast.Attribute) and x.attr == attr
                                                  and head_dotted(x.value) == "self" for x in ast.walk(n.value))}
    out: list[tuple[int, int]] = []
    for loop in (n for n in ast.walk(fn) if isinstance(n, ast.For)):
        tgt = loop.target.elts[0] if isinstance(loop.target, ast.Tuple) and loop.target.elts else loop.target
        if not isinstance(tgt, ast.Name):
            continue
        bound = {t.id for n in ast.walk(loop) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Subscript)
                 and head_dotted(n.value.value) == "self.layers" for t in n.targets if isinstance(t, ast.Name)}
        if isinstance(loop.target, ast.Tuple) and len(loop.target.elts) > 1 \
                and isinstance(loop.target.elts[1], ast.Name):
            bound.add(loop.target.elts[1].id)
        calls = [k for k, st in enumerate(loop.body) if _calls_layer(st, bound)]
        if not calls:
            continue
        for k, st in enumerate(loop.body):
            for g in ast.walk(st):
                if not isinstance(g, (ast.If, ast.IfExp)):
                    continue
                body = g.body if isinstance(g.body, list) else [g.body]
                if not any(isinstance(x, ast.Name) and "aux" in x.id or isinstance(x, ast.Attribute) and "aux" in x.attr
                           for b in body for x in ast.walk(b)):
                    continue
                for t in ast.walk(g.test):
                    if not (isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.In)):
                        continue
                    right = t.comparators[0]
                    if not ((isinstance(right, ast.Attribute) and right.attr == attr
                             and head_dotted(right.value) == "self")
                            or (isinstance(right, ast.Name) and right.id in aliases)):
                        continue
                    off = _offset(t.left, tgt.id)
                    if off is not None:
                        after = k > calls[0] and not _calls_layer(st, bound)
                        out.append((t.lineno, (1 if after else 0) - off))
    return out


def _calls_layer(st: ast.AST, bound: set[str]) -> bool:
    return any(isinstance(c, ast.Call) and (
        (isinstance(c.func, ast.Subscript) and head_dotted(c.func.value) == "self.layers")
        or (isinstance(c.func, ast.Name) and c.func.id in bound)) for c in ast.walk(st))


def _offset(e: ast.AST, i: str) -> int | None:
    """``c`` of ``i + c`` (``i``: 0, ``i - 1``: -1), None for anything else."""
    if isinstance(e, ast.Name) and e.id == i:
        return 0
    if isinstance(e, ast.BinOp) and isinstance(e.left, ast.Name) and e.left.id == i \
            and isinstance(e.right, ast.Constant) and isinstance(e.right.value, int) \
            and isinstance(e.op, (ast.Add, ast.Sub)):
        return e.right.value if isinstance(e.op, ast.Add) else -e.right.value
    return None


# -- the whole picture ------------------------------------------------------------------------------------
@dataclass
class SglDraft:
    """Everything the rule and the serving chain need, computed once per architecture."""

    da: DraftAnalysis
    read: IdRead
    hops: list[SetterHop]
    stored: tuple[int, ...] | None
    stored_default: bool
    stored_note: str
    coll: Collection | None
    trained: Trained
    pp_size: int = 1
    split: Split | None = None
    pp_refusal: pp_mod.Refusal | None = None
    lost_pp: tuple[int, ...] = ()  # stored indices on ranks before the last (never captured)
    notes: list[str] = field(default_factory=list)
    # eagle_config ids this release's setter turns into the trained layers, when the layers are wrong and such
    # ids exist: the next step names them.
    want_ids: tuple[int, ...] | None = None


def _ids(ids: Any) -> str:
    return "[" + ", ".join(str(i) for i in (ids or ())) + "]"


def analyze(sm: Model, arch: str | None = None) -> SglDraft | None:
    raw = sm.options.draft_config
    if raw is None:
        return None
    if arch is None:
        arch = sm.targeted[0] if sm.targeted else None
    return sm.memo.get(f"sglang:draft:{arch}", lambda: _analyze(sm, raw, arch))


def _analyze(sm: Model, raw: dict[str, Any], arch: str | None) -> SglDraft:
    path = sm.options.draft_config_path or "<draft config>"
    da = DraftAnalysis(path, arch, issues=[])
    ttext = text_config(sm.options.target_config)
    n: int | None = None
    if ttext:
        v = ttext.get("num_hidden_layers")
        n = v if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= MAX_LAYERS else None
        h = ttext.get("hidden_size")
        da.target_hidden = h if isinstance(h, int) else None
    da.num_layers = n
    da.converted = raw
    da.fields = id_fields(raw, path)
    read = read_ids(sm, raw)
    da.runner_reads = read.where is not None
    da.runner_ids, da.runner_note = read.ids, read.note
    da.runner_where = read.where
    da.used_field = next((f for f in da.fields if f.path == ("eagle_config", IDS_KEY)), None) \
        if read.ids is not None else None
    da.transform = None
    key = sm.keys.get(arch) if arch else None
    hops = setter_chain(sm, key) if key is not None else []
    stored, is_default, why = stored_indices(hops, read.ids, n) if hops else (None, False, "no setter")
    if hops:
        # Where the default list is written (the first setter on the chain that has one), and what it stores.
        dh = next((h for h in hops if h.transform.default is not None), hops[0])
        da.default_where = Where(dh.path, dh.transform.line, f"{dh.owner.name}.{SETTER}")
        da.default_ids = stored_indices(hops, None, n)[0] if n is not None else None
    da.effective_ids = stored
    da.effective_from = "" if stored is None else ("default" if is_default else "config")
    if stored is None and why:
        da.default_note = why
    coll = collection(sm, hops) if hops else None
    da.ignored_keys = ignored_keys(sm, raw, path)
    tr = trained(da.fields, sm.options.drafter_convention, n)
    sd = SglDraft(da, read, hops, stored, is_default, why, coll, tr)
    pp = sm.options.pipeline_parallel or 1
    sd.pp_size = pp
    if pp > 1:
        sd.pp_refusal = pp_mod.refusal(sm)
        if n is not None:
            sd.split = pp_mod.split(sm.source, n, pp, sm.options.pp_partition)
    _judge(sm, sd)
    return sd


# The aux-id fields have their own rule (EGL007) and step (aux-ids): the runner, not the drafter class, reads them.
_ID_KEYS = frozenset(".".join(p) for p, *_ in ID_FIELDS)


def drafter_class(sm: Model, raw: dict[str, Any]) -> str | None:
    """The drafter architecture SGLang builds: the first of the config's ``architectures`` its registry has."""
    archs = raw.get("architectures")
    names = [a for a in archs if isinstance(a, str)] if isinstance(archs, list) else []
    return next((a for a in names if a in sm.registry.entries), None)


def ignored_keys(sm: Model, raw: dict[str, Any], path: str) -> list[IgnoredKey] | None:
    """The keys ``raw`` sets that the drafter class SGLang builds (its module and its bases' modules) never reads,
    while another examined release's drafter module does (EGL011). None when the drafter class is not known."""
    arch = drafter_class(sm, raw)
    key = sm.keys.get(arch) if arch else None
    if arch is None or key is None:
        return None
    reads = dk.chain_reads(sm, key.module)
    # The fc the class builds for this config (its __init__ run, engines/drafter_classes.py), only when the config
    # sets a count of the fc's states (dk.fc_states) this release may ignore: ignoring one that gives the same fc
    # builds the same drafter.
    counts = dk.fc_states(sm.engine.name)
    fc_in = drafter_classes.built(sm, arch, raw).fc_in if any(
        k.rsplit(".", 1)[-1] in counts and k not in reads for k in dk.set_keys(raw)) else None
    return dk.ignored(sm.engine.name, sm.version, raw, path, reads, (sm.graph.path_of(key),), arch, _ID_KEYS,
                      fc_in)


def _judge(sm: Model, sd: SglDraft) -> None:
    """EGL007's findings on SGLang, as data (``DraftAnalysis.issues``), and the PP layout."""
    da = sd.da
    issues = da.issues
    assert issues is not None
    n = da.num_layers
    cfg_where = Where(da.draft_path, 1)
    read = sd.read
    # Ids the runner never reads (vLLM's top-level field): harmless when the setter's default is what the drafter
    # was trained on (checked with the trained layers below), a finding of its own when that is not known.
    top = next((f for f in da.fields if f.path == (IDS_KEY,)), None)
    ignored = ""
    if top is not None and read.ids is None:
        rw = f" ({read.where.path}:{read.where.line})" if read.where else ""
        ignored = (f"; {top.name} {_ids(top.ids)} ({top.origin}'s field) is not read: this SGLang reads only "
                   f"eagle_config.{IDS_KEY}{rw}")
        if sd.trained.layers is None:
            issues.append(IdIssue(
                f"{top.name} {_ids(top.ids)} ({top.origin}'s field) is ignored: this SGLang reads only "
                f"eagle_config.{IDS_KEY}{rw}, so the setter's default {_ids(da.default_ids)} is captured instead "
                f"({sd.trained.why})", Where(da.draft_path, top.line), Severity.WARNING, top.name,
                f"{top.name} is ignored: this SGLang reads only eagle_config.{IDS_KEY}"))
    if not read.use_aux:
        # The runner then never calls the setter (0.5.10 model_runner.py:667-668): a drafter trained without aux
        # states, not a fault.
        issues.append(IdIssue(f"eagle_config.{USE_AUX_KEY} is false: SGLang asks the target for no aux hidden states "
                              "and the ids are not used", Where(da.draft_path, da.json_line(USE_AUX_KEY)),
                              Severity.NOTE, USE_AUX_KEY, f"eagle_config.{USE_AUX_KEY} is false: the ids are not used"))
        return
    stored = sd.stored
    coll = sd.coll
    if read.ids is not None and not all(isinstance(i, int) and not isinstance(i, bool) for i in read.ids):
        f = da.used_field
        issues.append(IdIssue(f"eagle_config.{IDS_KEY} {_ids(read.ids)}: aux layer ids must be integers (the setter "
                              "shifts and compares them with layer indices)",
                              Where(da.draft_path, f.line if f is not None else 1), Severity.ERROR, IDS_KEY,
                              "aux layer ids must be integers"))
    if stored is None:
        return
    where_ids = _ids_where(sd)
    what = (f"the setter's default {_ids(stored)}" if sd.stored_default
            else f"eagle_config.{IDS_KEY} {_ids(read.ids)}, stored by the setter as {_ids(stored)}")
    # Range and collection.
    if n is not None and coll is not None and coll.decoder is not None and not coll.note:
        ok = coll.collects(n)
        bad = [i for i in stored if i not in ok]
        if coll.flags_index_error and any(i >= n for i in stored):
            big = [i for i in stored if i >= n]
            issues.append(IdIssue(
                f"{what}: {_ids(big)} is past the last layer ({n} layers): the setter marks self.layers[i] "
                f"({sd.hops[-1].path}:{coll.flags_line}) and raises IndexError at start-up, after the weights load",
                where_ids, Severity.ERROR, "layers",
                f"ids {_ids(big)} are past the last layer: the setter raises IndexError at start-up"))
        elif bad:
            past = [i for i in bad if i == n]
            why = (f"index {n} is the last layer's output, which {coll.decoder.name}.forward ({coll.path}:{coll.line}) "
                   "never collects (it collects the state entering layers 0 … "
                   f"{n - 1})") if past else (f"{coll.decoder.name}.forward ({coll.path}:{coll.line}) collects "
                                              f"indices {min(ok) if ok else 0} … {max(ok) if ok else 0}")
            carried = ""
            if past and read.ids is not None and (n - 1) in read.ids:
                carried = f"; drafter id {n - 1} (the last layer's output) becomes {n} after the setter's +1"
            issues.append(IdIssue(
                f"{what}: {_ids(bad)} never captured: {why}{carried}; the drafter receives "
                f"{len(set(stored) - set(bad))} hidden states instead of {len(stored)} and its fc fails on the shape",
                where_ids, Severity.ERROR, IDS_KEY,
                f"ids {_ids(bad)} are never captured: the drafter gets fewer hidden states than it expects"))
    dups = sorted({i for i in stored if stored.count(i) > 1})
    if dups:
        issues.append(IdIssue(f"{what} lists {_ids(dups)} more than once; the decoder tests membership once per "
                              f"layer, so it collects {len(set(stored))} hidden states, not {len(stored)}",
                              where_ids, Severity.ERROR, IDS_KEY,
                              f"ids {_ids(dups)} listed more than once: fewer hidden states are collected"))
    # The trained layers.
    tr = sd.trained
    captured = tuple(i + (coll.shift if coll is not None else 0) for i in stored)
    if tr.layers is not None and sorted(set(captured)) != sorted(set(tr.layers)):
        off = {c - t for c, t in zip(captured, tr.layers, strict=False)} if len(captured) == len(tr.layers) else set()
        by = (f": {'one layer late' if off == {1} else 'one layer early'}" if off in ({1}, {-1}) else "")
        h = next((h for h in sd.hops if h.transform.offset or h.transform.conditional), sd.hops[0])
        how = f"{h.owner.name}.{SETTER} ({h.path}:{h.transform.line}) stores {_ids(stored)}"
        how += f" for eagle_config ids {_ids(read.ids)}" if read.ids is not None else " (its default)"
        want = ids_for(sd.hops, tr.layers, n, coll.shift if coll is not None else 0)
        sd.want_ids = want
        fix = f"; eagle_config.{IDS_KEY} = {_ids(want)} would capture them here" if want is not None else ""
        issues.append(IdIssue(
            f"SGLang captures the states entering layers {_ids(captured)}, but the drafter was trained on "
            f"{_ids(tr.layers)} ({tr.why}){by}: {how}{ignored}; it runs and accepts fewer tokens{fix}",
            Where(da.draft_path, da.fields[0].line) if da.fields else cfg_where,
            Severity.ERROR, da.fields[0].name if da.fields else "layers",
            f"captures layers {_ids(captured)}, but the drafter was trained on {_ids(tr.layers)}"))
    # Pipeline parallelism.
    if sd.pp_size > 1:
        _pp(sm, sd)


def ids_for(hops: list[SetterHop], layers: tuple[int, ...], n: int | None, shift: int) -> tuple[int, ...] | None:
    """Drafter ids this release's setters turn into ``layers`` (the states entering them), trying the two
    numberings; None when neither does."""
    for k in (0, 1):
        cand = tuple(i - shift - k for i in layers)
        got = stored_indices(hops, cand, n)[0]
        if got is not None and tuple(i + shift for i in got) == tuple(layers):
            return cand
    return None


def _ids_where(sd: SglDraft) -> Where:
    da = sd.da
    if not sd.stored_default and da.used_field is not None:
        return Where(da.draft_path, da.used_field.line)
    if da.default_where is not None:
        return da.default_where
    return Where(da.draft_path, 1)


def _pp(sm: Model, sd: SglDraft) -> None:
    da = sd.da
    assert da.issues is not None
    ref = sd.pp_refusal
    if ref is not None:
        da.issues.append(IdIssue(
            f"--pipeline-parallel {sd.pp_size}: this SGLang refuses EAGLE-3 with pipeline parallelism at launch "
            f"({ref.path}:{ref.line}{', in ' + ref.via + '()' if ref.via else ''}: {ref.text}), before any weight "
            "loads", Where(ref.path, ref.line),
            Severity.ERROR, "pp_size",
            f"--pipeline-parallel {sd.pp_size}: this SGLang refuses EAGLE-3 with pipeline parallelism at launch"))
        return
    sp = sd.split
    if sp is None or not sp.ranges or sd.stored is None:
        if sp is not None and sp.note:
            da.issues.append(IdIssue(f"--pipeline-parallel {sd.pp_size}: {sp.note}",
                                     Where(sp.path or da.draft_path, sp.line or 1), Severity.NOTE))
        elif sp is None:
            da.notes.append("--pipeline-parallel needs --target-config (num_hidden_layers) to split the layers")
        return
    last = len(sp.ranges) - 1
    s_last, e_last = sp.ranges[last]
    stored = list(sd.stored)
    ranks = "; ".join(f"rank {r}: layers {s} … {e - 1}" if e > s else f"rank {r}: no layers"
                      for r, (s, e) in enumerate(sp.ranges))
    src = f"get_pp_indices at {sp.path}:{sp.line}" if sp.path else "the reference arithmetic"
    rank_of = {i: next((r for r, (s, e) in enumerate(sp.ranges) if s <= i < e), None) for i in stored}
    caps = {r: [(i, i) for i in stored if rank_of[i] == r] for r in range(len(sp.ranges))}
    da.pp = PPLayout(sp, rank_of, {r: v for r, v in caps.items() if v})
    hops = sd.hops
    last_only = [h for h in hops if h.transform.pp_last_rank_only]
    loc = Where(sp.path, sp.line) if sp.path else Where(da.draft_path, 1)
    da.issues.append(IdIssue(f"--pipeline-parallel {sd.pp_size} over {sp.num_layers} layers ({src}): {ranks}. "
                             f"Stored indices {_ids(stored)} fall on ranks "
                             f"{_ids([rank_of[i] for i in stored])}" + (f"; {sp.note}" if sp.note else ""),
                             loc, Severity.NOTE, "",
                             f"--pipeline-parallel {sd.pp_size}: the stored indices fall on ranks "
                             f"{_ids([rank_of[i] for i in stored])}"))
    early = [i for i in stored if rank_of[i] is not None and rank_of[i] != last]
    if last_only and early:
        h = last_only[0]
        sd.lost_pp = tuple(early)
        da.issues.append(IdIssue(
            f"with --pipeline-parallel {sd.pp_size}, indices {_ids(early)} sit on ranks before the last, but "
            f"{h.owner.name}.{h.setter} ({h.path}:{h.transform.line}) returns unless on the last pipeline rank, and "
            f"the last rank's forward runs only layers {s_last} … {e_last - 1}: those states are never captured and "
            f"the drafter receives {len(stored) - len(early)} of {len(stored)}", Where(h.path, h.transform.line),
            Severity.ERROR, h.setter,
            f"with --pipeline-parallel {sd.pp_size}, indices {_ids(early)} on earlier ranks are never captured"))
    elif early:
        sd.notes.append(f"indices {_ids(early)} sit on ranks before the last; whether this setter's states reach the "
                        "drafter there is not modelled")

