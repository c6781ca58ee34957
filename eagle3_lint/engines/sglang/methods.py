"""SGLang's other aux-state methods, ``DFLASH`` and ``DSPARK``, on EAGLE-3's gates (issue 23 item 3), from the tree.

Three facts per method, each read from the release being checked, never listed:

- **whether the release has the method**: the members of its ``SpeculativeAlgorithm`` enum
  (``speculative/spec_info.py``; ``from_string`` looks the ``--speculative-algorithm`` name up there and raises
  ``ValueError: Unknown speculative algorithm name`` for any other). A method the release lacks is a usage error
  (exit 2) naming the ones it has, since SGLang refuses it before anything loads.
- **which setter the runner calls** (``route``): every call of a ``set_<x>_layers_to_capture`` method outside
  ``models/``, with the ``if`` tests around it and the ``if not hasattr(...): raise`` guards before it, evaluated
  for the method and the target class (which of the setters it has through its MRO). The tests are three-valued:
  ``spec_algorithm.is_dspark()`` is ``SpeculativeAlgorithm.is_dspark``'s own ``return`` (``self ==
  SpeculativeAlgorithm.DSPARK``, ``self.is_dflash() or self.is_dspark()``) for the method; a flag
  (``dflash_use_aux_hidden_state``, ``is_dspark``) holds when some assignment of it in the runner's files that the
  method reaches (its ``if`` tests and the early ``if ...: return`` before it, evaluated the same way) sets it from
  ``True`` or a predicate that holds; ``hasattr(model, "set_x_layers_to_capture")`` is whether the target class has
  it. The runner judged is the target's, so ``is_draft_worker`` is false. A ``raise`` the method and class reach
  under such a ``hasattr`` test is the runner's refusal of the class (0.5.23 ``attention_backend_setup.py:67``).
- **which ids it hands the setter** (``target_ids``): the top-level statement of the runner function that assigns
  ``dflash_target_layer_ids`` is evaluated with ``minieval``, the drafter config as the drafter's ``hf_config``
  (a call with ``is_draft_model=True`` builds the drafter's ``ModelConfig``), the target config as
  ``model_config``'s, the release's own ``parse_dflash_draft_config``, ``resolve_target_layer_ids``,
  ``build_target_layer_ids`` and (DSPARK) ``parse_dspark_draft_config`` followed through the imports, a dataclass
  or ``msgspec.Struct`` built as a record of its fields. A ``raise`` on the way (no ``num_hidden_layers``, an id out
  of range, DSPARK's ``markov_rank``) is SGLang refusing the drafter config at start-up.
"""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from eagle3_lint.engines.sglang.registry import MODELS_DIR
from eagle3_lint.engines.sglang.runner_files import parents as _parents  # one parse and one parent map for the engine
from eagle3_lint.engines.sglang.runner_files import parse as _parse
from eagle3_lint.engines.treereader import TreeReader
from eagle3_lint.facts import dotted
from eagle3_lint.lazyimport import lazy
from eagle3_lint.semantic import Where

if TYPE_CHECKING:
    from eagle3_lint import minieval as me
    from eagle3_lint.queries import Memo
    from eagle3_lint.source import SourceTree
else:
    me = lazy("eagle3_lint.minieval")  # imported on first use (lazyimport.py)

class Reader(Protocol):
    """What these questions read: the tree and the query layer's memo (``Memo``). The analysis' ``Model`` is one;
    while the engine derives its data (``method_interface``) a ``TreeReader`` over the tree is."""

    @property
    def source(self) -> SourceTree: ...

    @property
    def memo(self) -> Memo: ...


SPEC_INFO = "sglang/srt/speculative/spec_info.py"
ENUM = "SpeculativeAlgorithm"
EAGLE3 = "EAGLE3"
# The methods whose gates the tool derives (``SglangEngine.spec_methods``), EAGLE-3's first.
CHECKED = (EAGLE3, "DFLASH", "DSPARK")
SETTER_NAME = re.compile(r"^set_\w+_layers_to_capture$")
IDS_ATTR = "dflash_target_layer_ids"  # what the DFLASH-family runner hands the setter
_NEEDLE = b"_layers_to_capture("
_MAX_DEPTH = 6


# -- 1. the release's methods --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Algorithms:
    names: tuple[str, ...]  # the enum's members, NONE left out
    path: str
    line: int
    predicates: dict[str, ast.expr]  # ``is_x`` -> its ``return`` expression
    # ``from_string`` upper-cases the name it is given before the lookup (0.4.7 spec_info.py:26, 0.5.10 :29,
    # 0.5.23 :55), so ``--speculative-algorithm dflash`` is DFLASH.
    upper_cases: bool = False


def algorithms(source: SourceTree) -> Algorithms | None:
    """The release's ``SpeculativeAlgorithm`` members and predicates; None when the tree has no such enum (a tree
    laid out otherwise, the sample trees: the method is then not judged)."""
    if not source.exists(SPEC_INFO):
        return None
    tree = _parse(source, SPEC_INFO, b"")
    cls = next((n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == ENUM), None) \
        if tree is not None else None
    if cls is None:
        return None
    names: list[str] = []
    preds: dict[str, ast.expr] = {}
    upper = False
    for st in cls.body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) \
                and st.targets[0].id.isupper():
            names.append(st.targets[0].id)
        elif isinstance(st, ast.FunctionDef) and st.name.startswith("is_"):
            body = [s for s in st.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
                preds[st.name] = body[0].value
        if isinstance(st, ast.FunctionDef) and st.name == "from_string" and st.args.args:
            param = st.args.args[-1].arg  # the name (after ``cls`` where it is a classmethod)
            upper = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "upper"
                        and isinstance(n.func.value, ast.Name) and n.func.value.id == param for n in ast.walk(st))
    return Algorithms(tuple(n for n in names if n != "NONE"), SPEC_INFO, cls.lineno, preds, upper)


def spelling(source: SourceTree, method: str) -> str:
    """``method`` as this release reads an ``--speculative-algorithm`` name: upper-cased where ``from_string``
    upper-cases it, as given otherwise (and where the tree has no such enum)."""
    algos = algorithms(source)
    return method.upper() if algos is not None and algos.upper_cases else method


def refusal_of_method(source: SourceTree, method: str, display: str, version: str) -> str | None:
    """The usage error for a method this release does not have (None: it has it, or the tree does not say)."""
    algos = algorithms(source)
    if algos is None or method in algos.names:
        return None
    checked = [m for m in CHECKED if m in algos.names]
    return (f"--method {method!r}: {display} {version} has no speculative algorithm {method} (its {ENUM}, "
            f"{algos.path}:{algos.line}, has {', '.join(algos.names)}); eagle3-lint checks "
            f"{', '.join(checked) or 'none of them'} on this release")


# -- 2. three-valued tests for one method ----------------------------------------------------------------------
def _module(sm: Reader, rel: str) -> tuple[ast.Module | None, dict[ast.AST, ast.AST]]:
    """``rel`` parsed with its parent links, one answer of the query layer per file (``Memo``: whoever asks records
    that it read ``rel``, however often it is asked); these questions walk up from nodes found earlier."""
    def parse() -> tuple[ast.Module | None, dict[ast.AST, ast.AST]]:
        tree = _parse(sm.source, rel, b"")
        return tree, _parents(tree) if tree is not None else {}

    return sm.memo.get(f"sglang:method-module:{rel}", parse)


def _last(e: ast.AST) -> str | None:
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Attribute):
        return e.attr
    return None


def _runner_files(source: SourceTree) -> list[str]:
    return [rel for rel in source.py_files() if rel.startswith("sglang/srt/") and not rel.startswith(MODELS_DIR + "/")]


@dataclass(frozen=True)
class _Site:
    path: str
    node: ast.Call  # ``<x>.set_<y>_layers_to_capture(...)``
    function: ast.FunctionDef | ast.AsyncFunctionDef | None

    @property
    def setter(self) -> str:
        return self.node.func.attr if isinstance(self.node.func, ast.Attribute) else ""


class Tests:
    """Evaluates the runner's tests for ``method`` and a class that has the setters ``has`` names."""

    def __init__(self, sm: Reader, method: str, has: dict[str, bool] | None = None) -> None:
        self.sm, self.method, self.has = sm, method, has or {}
        self.algos: Algorithms | None = sm.memo.get("sglang:algorithms", lambda: algorithms(sm.source))
        self._flags: dict[str, bool | None] = {}
        self._busy: set[str] = set()

    # -- predicates of SpeculativeAlgorithm
    def predicate(self, name: str, depth: int = 0) -> bool | None:
        if self.algos is None or name not in self.algos.predicates or depth > _MAX_DEPTH:
            return None
        return self._pred_expr(self.algos.predicates[name], depth + 1)

    def _member(self, e: ast.AST) -> str | None:
        if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id in (ENUM, "cls"):
            return e.attr
        return None

    def _pred_expr(self, e: ast.AST, depth: int) -> bool | None:
        if isinstance(e, ast.BoolOp):
            return _combine(isinstance(e.op, ast.And), [self._pred_expr(v, depth) for v in e.values])
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            v = self._pred_expr(e.operand, depth)
            return None if v is None else not v
        if isinstance(e, ast.Compare) and len(e.ops) == 1 and isinstance(e.left, ast.Name) and e.left.id == "self":
            op, right = e.ops[0], e.comparators[0]
            if isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)) and self._member(right):
                return (self.method == self._member(right)) == isinstance(op, (ast.Eq, ast.Is))
            if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
                ms = [self._member(x) for x in right.elts]
                if all(ms):
                    return (self.method in ms) == isinstance(op, ast.In)
            return None
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and isinstance(e.func.value, ast.Name) \
                and e.func.value.id == "self" and not e.args:
            return self.predicate(e.func.attr, depth)
        return None

    # -- tests in the runner
    def truth(self, e: ast.AST, depth: int = 0) -> bool | None:
        if depth > _MAX_DEPTH:
            return None
        if isinstance(e, ast.BoolOp):
            return _combine(isinstance(e.op, ast.And), [self.truth(v, depth) for v in e.values])
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            v = self.truth(e.operand, depth)
            return None if v is None else not v
        if isinstance(e, ast.Constant):
            return bool(e.value)
        if isinstance(e, ast.Call):
            if dotted(e.func) == "hasattr" and len(e.args) == 2 and isinstance(e.args[1], ast.Constant) \
                    and isinstance(e.args[1].value, str) and SETTER_NAME.match(e.args[1].value):
                return self.has.get(e.args[1].value)
            if isinstance(e.func, ast.Attribute) and not e.args and self.algos is not None \
                    and e.func.attr in self.algos.predicates:
                return self.predicate(e.func.attr)
            return None
        name = _last(e)
        if name is not None:
            return self.flag(name, depth + 1)
        return None

    def names_method(self, e: ast.AST) -> bool:
        """Whether test ``e`` depends on the method or the class (else it is a set-up condition)."""
        for n in ast.walk(e):
            if isinstance(n, ast.Call) and (dotted(n.func) == "hasattr" or (
                    isinstance(n.func, ast.Attribute) and self.algos is not None
                    and n.func.attr in self.algos.predicates)):
                return True
            if isinstance(n, (ast.Name, ast.Attribute)) and _last(n) in self._flag_names():
                return True
        return False

    def _flag_names(self) -> set[str]:
        return self.sm.memo.get("sglang:method-flags", lambda: set(_assignments(self.sm)))

    def flag(self, name: str, depth: int = 0) -> bool | None:
        """Whether flag ``name`` holds for the method: some assignment of it that the method reaches sets it true."""
        if name.endswith("is_draft_worker"):
            return False  # the runner judged is the target's
        if name in self._flags:
            return self._flags[name]
        if name in self._busy or depth > _MAX_DEPTH:
            return None
        self._busy.add(name)
        try:
            sets = _assignments(self.sm).get(name)
            if sets is None:
                out: bool | None = None
            else:
                out = False
                for rel, value, node in sets:
                    if _last(value) == name:
                        continue  # handing the flag on (``is_dspark=self.spec_aux_config.is_dspark``)
                    v = self.truth(value, depth + 1)
                    if v is False:
                        continue
                    r = self.reaches(rel, node, depth + 1)
                    if r is False:
                        continue
                    if v is True and r is True:
                        out = True
                        break
                    out = None
            self._flags[name] = out
            return out
        finally:
            self._busy.discard(name)

    def reaches(self, rel: str, node: ast.AST, depth: int = 0) -> bool | None:
        """Whether ``node`` in ``rel`` runs for the method: the ``if`` tests around it and the early ``if ...:
        return`` statements before it in its function (tests that do not depend on the method hold)."""
        tree, parents = _module(self.sm, rel)
        if tree is None:
            return None
        out: bool | None = True
        cur = node
        while cur in parents:
            par = parents[cur]
            if isinstance(par, ast.If) and cur is not par.test:
                in_body = cur in par.body
                t = self.truth(par.test, depth)
                if t is None and not self.names_method(par.test):
                    t = True if in_body else None
                if t is None:
                    out = None
                elif t != in_body:
                    return False
            for block in _blocks(par):
                if cur in block:
                    for st in block[:block.index(cur)]:
                        if isinstance(st, ast.If) and st.body and isinstance(st.body[-1], ast.Return):
                            t = self.truth(st.test, depth)
                            if t is True:
                                return False
                            if t is None and self.names_method(st.test):
                                out = None
            if isinstance(par, (ast.FunctionDef, ast.AsyncFunctionDef)):
                break
            cur = par
        return out


def _combine(is_and: bool, vals: list[bool | None]) -> bool | None:
    if is_and:
        return False if False in vals else (None if None in vals else True)
    return True if True in vals else (None if None in vals else False)


def _blocks(node: ast.AST) -> list[list[ast.stmt]]:
    return [b for b in (getattr(node, f, None) for f in ("body", "orelse", "finalbody")) if isinstance(b, list)]


def _assignments(sm: Reader) -> dict[str, list[tuple[str, ast.expr, ast.AST]]]:
    """Every assignment of a name or attribute, and every keyword argument, in the runner files that call a capture
    setter or name its flags: ``name -> [(file, value, node)]`` (the files that hold the method's set-up)."""
    def build() -> dict[str, list[tuple[str, ast.expr, ast.AST]]]:
        out: dict[str, list[tuple[str, ast.expr, ast.AST]]] = {}
        for rel in _flag_files(sm):
            tree, _p = _module(sm, rel)
            if tree is None:
                continue
            for n in ast.walk(tree):
                if isinstance(n, ast.Assign) and len(n.targets) == 1:
                    k = _last(n.targets[0])
                    if k:
                        out.setdefault(k, []).append((rel, n.value, n))
                elif isinstance(n, ast.AnnAssign) and n.value is not None:
                    k = _last(n.target)
                    if k:
                        out.setdefault(k, []).append((rel, n.value, n))
                elif isinstance(n, ast.Call):
                    for kw in n.keywords:
                        if kw.arg:
                            out.setdefault(kw.arg, []).append((rel, kw.value, n))
        return out

    return sm.memo.get("sglang:method-assignments", build)


def _flag_files(sm: Reader) -> list[str]:
    """The runner files that call a capture setter, and those that assign what those calls pass or test."""
    def build() -> list[str]:
        sites = call_sites(sm)
        want: set[str] = set()
        for s in sites:
            fn = s.function
            for n in ast.walk(fn) if fn is not None else ():
                if isinstance(n, ast.If):
                    for x in ast.walk(n.test):
                        k = _last(x)
                        if k and isinstance(x, (ast.Name, ast.Attribute)) and k != "model":
                            want.add(k)
            if isinstance(s.node, ast.Call):
                for a in s.node.args:
                    k = _last(a)
                    if k:
                        want.add(k)
        files = {s.path for s in sites}
        # A file that assigns one of them (``x = ...``, ``x: T = ...``, a keyword ``x=...``).
        assigns = re.compile(rb"\b(?:" + b"|".join(re.escape(w.encode()) for w in sorted(want)) +
                             rb")\s*(?::[^=\n]*)?=(?!=)") if want else None
        for rel in _runner_files(sm.source):
            if rel in files:
                continue
            try:
                data = sm.source.read_bytes(rel)
            except OSError:
                continue
            if assigns is not None and assigns.search(data):
                files.add(rel)
        return sorted(files)

    return sm.memo.get("sglang:method-flag-files", build)


# -- 3. the route: which setter the runner calls, or how it refuses the class ---------------------------------
def call_sites(sm: Reader) -> list[_Site]:
    """Every ``<x>.set_<y>_layers_to_capture(...)`` call outside ``models/``."""
    def build() -> list[_Site]:
        out: list[_Site] = []
        for rel in _runner_files(sm.source):
            try:
                if _NEEDLE not in sm.source.read_bytes(rel):
                    continue
            except OSError:
                continue
            tree, parents = _module(sm, rel)
            if tree is None:
                continue
            for n in ast.walk(tree):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and SETTER_NAME.match(n.func.attr):
                    up = parents.get(n)
                    while up is not None and not isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        up = parents.get(up)
                    fn = up if isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
                    out.append(_Site(rel, n, fn))
        return sorted(out, key=lambda s: (s.path, getattr(s.node, "lineno", 0)))

    return sm.memo.get("sglang:method-call-sites", build)


@dataclass(frozen=True)
class SetterCall:
    setter: str
    where: Where  # the runner's call
    arg: str  # what it passes, as written
    function: str = ""  # the runner function that calls it
    receiver: str = ""  # the object it is called on, as written (the top-level model)


@dataclass(frozen=True)
class Route:
    method: str
    calls: tuple[SetterCall, ...]  # the setters the runner calls on this class under the method
    refusal: Where | None = None  # the runner's ``raise`` for this class (its message as ``text``)
    unknown: str = ""  # why the route is not known


def _raise_text(node: ast.Raise) -> str:
    from eagle3_lint.engines.sglang.runner import _message

    exc = node.exc
    name = dotted(exc.func) if isinstance(exc, ast.Call) else dotted(exc) if exc is not None else "Exception"
    msg = _message(exc.args[0]) if isinstance(exc, ast.Call) and exc.args else ""
    return f"{name}: {msg}"[:300]


def route(sm: Reader, method: str, has: dict[str, bool]) -> Route:
    """The setters the runner calls for ``method`` on a class with the setters ``has`` says, in call order, or the
    runner's refusal of it."""
    tests = Tests(sm, method, has)
    calls: list[SetterCall] = []
    unsure: list[str] = []
    fns: dict[tuple[str, int], tuple[str, ast.AST]] = {}
    for s in call_sites(sm):
        line = s.node.lineno
        if s.function is not None:
            fns[(s.path, s.function.lineno)] = (s.path, s.function)
        r = tests.reaches(s.path, s.node)
        if r is False:
            continue
        if r is None:
            unsure.append(f"{s.path}:{line}")
            continue
        calls.append(SetterCall(s.setter, Where(s.path, line, ast.unparse(s.node)),
                                ", ".join(ast.unparse(a) for a in s.node.args),
                                s.function.name if s.function is not None else "<module>",
                                ast.unparse(s.node.func.value) if isinstance(s.node.func, ast.Attribute) else ""))
    # The runner's refusal: a raise under a hasattr() test of a capture setter (or the ``if not hasattr(...):
    # raise`` guard before a call) that the method and class reach, in the functions that call the setters.
    for rel, fn in fns.values():
        _t, parents = _module(sm, rel)
        for n in ast.walk(fn):
            if not isinstance(n, ast.Raise) or not _under_hasattr(n, parents):
                continue
            r = tests.reaches(rel, n)
            if r is True:
                return Route(method, (), Where(rel, n.lineno, _raise_text(n)))
            if r is None:
                unsure.append(f"{rel}:{n.lineno}")
    if unsure and not calls:
        return Route(method, (), None, f"whether the runner's capture call at {', '.join(unsure)} runs for "
                                       f"{method} is not known")
    return Route(method, tuple(calls))


def _under_hasattr(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    cur = node
    while cur in parents:
        par = parents[cur]
        if isinstance(par, ast.If) and any(dotted(x.func) == "hasattr" for x in ast.walk(par.test)
                                           if isinstance(x, ast.Call)):
            return True
        if isinstance(par, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        cur = par
    return False


# -- 4. the ids the runner hands the setter --------------------------------------------------------------------
@dataclass(frozen=True)
class Ids:
    ids: tuple[int, ...] | None
    where: Where | None  # the runner's assignment of the ids
    # The ids the drafter config names, as the release's parser read them (the last parsed config that holds some:
    # DSPARK's parser after DFLASH's); None: the runner selected its own.
    named: tuple[int, ...] | None = None
    draft_layers: int | None = None  # the drafter's num_hidden_layers, as the runner reads it
    raised: str = ""  # the runner refuses this drafter config: ``ValueError: ...``
    raised_where: Where | None = None
    note: str = ""


class _Linker:
    """Module environments whose ``from sglang... import f`` names resolve to the tree's own functions and
    classes (one module at a time, on first use)."""

    def __init__(self, sm: Reader) -> None:
        self.sm = sm
        self.envs: dict[str, Any] = {}
        self.by_name: dict[str, Any] = {}

    def env(self, rel: str) -> Any:
        if rel in self.envs:
            return self.envs[rel]
        tree, _p = _module(self.sm, rel)
        if tree is None:
            return None
        env = me.ModuleEnv.of(tree, rel)
        self.envs[rel] = env
        for name, v in env.names.items():
            if isinstance(v, (me.FuncValue, me.ClassValue)):
                self.by_name.setdefault(name, v)
        for st in tree.body:
            if isinstance(st, ast.ImportFrom):
                self.link(env, st)
        return env

    def link(self, env: Any, st: ast.ImportFrom) -> None:
        target = self.sm.source.module_path(st.module or "") if st.level == 0 else None
        if target is None:
            return
        for a in st.names:
            nm = a.asname or a.name
            if nm in env.names and not isinstance(env.names[nm], me.Opaque):
                continue
            env.names[nm] = _LazyName(self, target, a.name)

    def resolve(self, rel: str, name: str) -> Any:
        env = self.env(rel)
        v = env.names.get(name) if env is not None else None
        if isinstance(v, _LazyName):
            v = v.get()
        return v if isinstance(v, (me.FuncValue, me.ClassValue)) else None


class _LazyName(me.Opaque):
    """An imported name, resolved to the tree's function or class when the evaluator calls it."""

    linker: _Linker
    rel: str

    def __init__(self, linker: _Linker, rel: str, name: str) -> None:
        super().__init__((name,))
        object.__setattr__(self, "linker", linker)
        object.__setattr__(self, "rel", rel)

    def get(self) -> Any:
        return self.linker.resolve(self.rel, self.path[0])


def _record_of(cls: Any, args: list[Any], kwargs: dict[str, Any], made: list[Any] | None = None) -> Any:
    """A dataclass or ``msgspec.Struct`` instance: its fields (positional ones in declaration order), its methods."""
    fields = [st.target.id for st in cls.node.body if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)]
    rec = me.Record(cls.name)
    if made is not None:
        made.append(rec)
    rec.attrs.update(dict(zip(fields, args, strict=False)))
    rec.attrs.update(kwargs)

    def method(attr: str) -> Any:
        for st in cls.node.body:
            if isinstance(st, ast.FunctionDef) and st.name == attr:
                return me.FuncValue(st, cls.module, (rec,))
        return me.NOTHING

    rec.fallback = method
    return rec


def _text(cfg: dict[str, Any]) -> dict[str, Any]:
    t = cfg.get("text_config")
    return t if isinstance(t, dict) else cfg


def target_ids(sm: Reader, method: str, draft: dict[str, Any], target: dict[str, Any] | None) -> Ids:
    """The ids the runner hands the capture setter for ``method`` with this drafter and target config."""
    tests = Tests(sm, method)
    sets = [(rel, v, n) for rel, v, n in _assignments(sm).get(IDS_ATTR, [])
            if isinstance(n, ast.Assign) and not (isinstance(v, ast.Constant) and v.value is None)]
    reached = [(rel, n) for rel, _v, n in sets if tests.reaches(rel, n) is not False]
    if not reached:
        return Ids(None, None, note=f"no assignment of {IDS_ATTR} in the runner that {method} reaches")
    rel, node = reached[0]
    where = Where(rel, node.lineno, ast.unparse(node).split("\n")[0][:120])
    tree, parents = _module(sm, rel)
    top: ast.AST = node
    while top in parents and not isinstance(parents[top], (ast.FunctionDef, ast.AsyncFunctionDef)):
        top = parents[top]
    fn = parents.get(top)
    if tree is None or fn is None or not isinstance(top, ast.stmt):
        return Ids(None, where, note=f"{rel}:{node.lineno} is not in a function the tool can evaluate")
    linker = _Linker(sm)
    env = linker.env(rel)
    block = copy.deepcopy(top)
    # Imports inside the block bind the tree's own functions (``from ...dflash_utils import
    # parse_dflash_draft_config``): linked into the module's names and dropped from the block.
    for n in ast.walk(block):
        if isinstance(n, ast.ImportFrom):
            linker.link(env, n)
    block = _NoImports().visit(block)
    draft_rec = me.Record("draft_model_config")
    draft_rec.attrs.update({"hf_config": draft, "hf_text_config": _text(draft)})
    tcfg = target or {}
    target_rec = me.Record("model_config")
    target_rec.attrs.update({"hf_config": tcfg, "hf_text_config": _text(tcfg)})
    assert isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
    out = me.Record("config")
    made: list[Any] = []  # the records the parsers build (DFlashDraftConfig, DSparkDraftConfig)

    def bound(name: str) -> Any:
        if name.endswith("is_draft_worker"):
            return False
        if name == "model_config":
            return target_rec
        if name == "config":
            return out
        return me.NOTHING

    def self_attr(attr: str) -> Any:
        v = bound(attr)
        return me.Opaque(("self", attr)) if v is me.NOTHING else v

    def call(path: tuple[str, ...], args: list[Any], kwargs: dict[str, Any]) -> Any:
        if kwargs.get("is_draft_model") is True:
            return draft_rec
        if len(path) >= 2 and tests.algos is not None and path[-1] in tests.algos.predicates and not args:
            v = tests.predicate(path[-1])
            return me.NOTHING if v is None else v
        if path[0] == "class" and len(path) == 2:
            cls = linker.by_name.get(path[1])
            if isinstance(cls, me.ClassValue):
                return _record_of(cls, args, kwargs, made)
        if len(path) == 1:
            f = linker.by_name.get(path[0])
            if isinstance(f, me.FuncValue):
                return interp.call(f, args, kwargs)
            if isinstance(f, me.ClassValue):
                return _record_of(f, args, kwargs, made)
        return me.NOTHING

    interp = me.Interpreter(me.World(call=call), strict=False)
    orig_apply = interp._apply

    def apply(f: Any, args: list[Any], kwargs: dict[str, Any], n: ast.AST) -> Any:
        if isinstance(f, _LazyName):
            got = f.get()
            if got is not None:
                f = got
        if isinstance(f, me.ClassValue):
            return _record_of(f, args, kwargs, made)
        return orig_apply(f, args, kwargs, n)

    interp._apply = apply  # type: ignore[method-assign,assignment]  # imported names resolve when called
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)]
    selfv = me.Record("self", self_attr)
    binds = {p: (selfv if p == "self" else bound(p)) for p in params}
    binds = {p: (me.Opaque((p,)) if v is me.NOTHING else v) for p, v in binds.items()}
    synth = ast.FunctionDef(  # type: ignore[call-arg]  # type_params: a field of 3.12+ ast only
        name="_resolve", args=ast.arguments(posonlyargs=[], args=[ast.arg(p) for p in binds], kwonlyargs=[],
                                            kw_defaults=[], defaults=[]),
        body=[block], decorator_list=[], returns=None, type_params=[])
    ast.fix_missing_locations(ast.copy_location(synth, top))
    try:
        interp.call(me.FuncValue(synth, env), list(binds.values()))
    except me.EvalRaise as exc:
        return Ids(None, where, raised=f"{exc.kind}: {exc.message}",
                   raised_where=Where(_raise_file(linker, exc.line, rel, top), exc.line))
    except me.Unsupported as exc:
        return Ids(None, where, note=f"the runner's selection at {rel}:{top.lineno} could not be evaluated ({exc})")
    holder = selfv if isinstance(node, ast.Assign) and dotted(node.targets[0]) == f"self.{IDS_ATTR}" else out
    ids = holder.attrs.get(IDS_ATTR)
    n_draft = _draft_layers(draft)
    if not (isinstance(ids, (list, tuple)) and all(isinstance(i, int) and not isinstance(i, bool) for i in ids)):
        return Ids(None, where, draft_layers=n_draft,
                   note=f"the runner's selection at {rel}:{top.lineno} gives {ids!r}, not a list of layer ids")
    # Named by the drafter config: a parsed config record holds target ids (else the runner selected its own).
    named = [r.attrs["target_layer_ids"] for r in made if isinstance(r.attrs.get("target_layer_ids"), (list, tuple))]
    return Ids(tuple(ids), where, tuple(named[-1]) if named else None, n_draft)


class _NoImports(ast.NodeTransformer):
    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST:  # noqa: N802 - ast.NodeTransformer's naming
        return ast.copy_location(ast.Pass(), node)


def _raise_file(linker: _Linker, line: int, default: str, block: ast.AST) -> str:
    """The file whose ``raise`` at ``line`` the evaluation stopped at: the runner's block's own, else the first
    module followed through the imports that has one there."""
    if any(isinstance(n, ast.Raise) and n.lineno == line for n in ast.walk(block)):
        return default
    return next((rel for rel, env in linker.envs.items() if rel != default
                 and any(isinstance(n, ast.Raise) and n.lineno == line for n in ast.walk(env.tree))), default)


def _draft_layers(draft: dict[str, Any]) -> int | None:
    v = _text(draft).get("num_hidden_layers")
    return v if isinstance(v, int) and not isinstance(v, bool) else None


# -- 4b. whether the ids the runner hands the setter are ever None ----------------------------------------------
# How far ``_never_none`` follows names and calls: 0.5.23's ids come through two calls and two names.
_NONE_DEPTH = 8
_LIST_BUILDERS = frozenset({"list", "tuple", "sorted"})
_LIST_RETURN = re.compile(r"^(?:typing\.)?(?:List|list|Sequence|Tuple|tuple)\b")


@dataclass(frozen=True)
class _Scope:
    """Where an expression is evaluated: its file, its function, and the parameters bound by the call followed."""

    rel: str
    fn: ast.FunctionDef | ast.AsyncFunctionDef | None
    binds: dict[str, tuple[ast.expr, _Scope]]


def _enclosing_fn(sm: Reader, rel: str, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    _t, parents = _module(sm, rel)
    cur = parents.get(node)
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
        cur = parents.get(cur)
    return cur if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _imported_modules(sm: Reader, rel: str, fn: ast.AST | None) -> list[str]:
    """``rel`` and the tree's modules it (and ``fn``'s own imports) name in ``from ... import``."""
    tree, _p = _module(sm, rel)
    out = [rel]
    for scope in (tree, fn):
        for st in ast.walk(scope) if scope is not None else ():
            if isinstance(st, ast.ImportFrom) and st.level == 0 and st.module:
                m = sm.source.module_path(st.module)
                if m is not None and m not in out:
                    out.append(m)
    return out


def _callee(sm: Reader, scope: _Scope, call: ast.Call) -> tuple[str, ast.FunctionDef] | None:
    """The tree's function a call reaches: a module function of the file or one it imports by name, or the one
    method of that name in the modules the file imports (``dflash_draft_config.resolve_target_layer_ids``)."""
    f = call.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    if name is None:
        return None
    hits: list[tuple[str, ast.FunctionDef]] = []
    for rel in _imported_modules(sm, scope.rel, scope.fn):
        tree, _p = _module(sm, rel)
        if tree is None:
            continue
        nodes = tree.body if isinstance(f, ast.Name) else [n for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
                                                          for n in c.body]
        hits += [(rel, n) for n in nodes if isinstance(n, ast.FunctionDef) and n.name == name]
        if hits and isinstance(f, ast.Name):
            break  # the file's own function, else the first import that defines it
    return hits[0] if len(hits) == 1 or (hits and isinstance(f, ast.Name)) else None


def _never_none(sm: Reader, e: ast.expr, scope: _Scope, busy: set[tuple[str, int, str]], depth: int = 0) -> bool:
    """Whether ``e`` can only be a value other than None (False: it may be None, or the tool cannot tell). A name
    is never None when none of its assignments in its function is; a call of the tree's function when its return
    annotation is a list or tuple type, else when each of its ``return`` values is (its parameters bound to the
    call's arguments). A name met again while it is being followed adds nothing (the least fixpoint)."""
    if depth > _NONE_DEPTH:
        return False
    if isinstance(e, ast.Constant):
        return e.value is not None
    if isinstance(e, (ast.List, ast.Tuple, ast.ListComp, ast.Set, ast.SetComp, ast.Dict, ast.DictComp)):
        return True
    if isinstance(e, ast.IfExp):
        return _never_none(sm, e.body, scope, busy, depth + 1) and _never_none(sm, e.orelse, scope, busy, depth + 1)
    if isinstance(e, ast.BoolOp) and isinstance(e.op, ast.Or):
        return _never_none(sm, e.values[-1], scope, busy, depth + 1)  # ``a or b``: a true ``a``, else ``b``
    if isinstance(e, ast.Name):
        if e.id in scope.binds:
            arg, caller = scope.binds[e.id]
            return _never_none(sm, arg, caller, busy, depth + 1)
        if scope.fn is None:
            return False
        key = (scope.rel, scope.fn.lineno, e.id)
        if key in busy:
            return True
        params = {a.arg for a in (*scope.fn.args.posonlyargs, *scope.fn.args.args, *scope.fn.args.kwonlyargs)}
        if e.id in params:
            return False  # a parameter of a function no followed call binds
        values = [n.value for n in ast.walk(scope.fn) if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value
                  is not None and any(isinstance(t, ast.Name) and t.id == e.id
                                      for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
        if not values:
            return False
        busy.add(key)
        try:
            return all(_never_none(sm, v, scope, busy, depth + 1) for v in values)
        finally:
            busy.discard(key)
    if isinstance(e, ast.Call):
        if isinstance(e.func, ast.Name) and e.func.id in _LIST_BUILDERS:
            return True
        hit = _callee(sm, scope, e)
        if hit is None:
            return False
        rel, fn = hit
        if fn.returns is not None:
            ann = ast.unparse(fn.returns)
            if _LIST_RETURN.match(ann) and "Optional" not in ann and "None" not in ann:
                return True
        if not fn.body or not isinstance(fn.body[-1], (ast.Return, ast.Raise)):
            return False  # it may end without a return: None
        a = fn.args
        pos = [p.arg for p in (*a.posonlyargs, *a.args)]
        if isinstance(e.func, ast.Attribute) and pos and pos[0] in ("self", "cls"):
            pos = pos[1:]
        binds = {p: (v, scope) for p, v in zip(pos, e.args, strict=False)}
        binds.update({k.arg: (k.value, scope) for k in e.keywords if k.arg})
        inner = _Scope(rel, fn, binds)
        rets = [n for n in ast.walk(fn) if isinstance(n, ast.Return)
                and _enclosing_fn(sm, rel, n) is fn]
        return bool(rets) and all(r.value is not None and _never_none(sm, r.value, inner, busy, depth + 1)
                                  for r in rets)
    return False


def _guards(sm: Reader, site: _Site) -> list[str]:
    """The flags the call runs under: names tested (alone, or in an ``and``) by the ``if`` statements whose body
    holds it (0.5.23 ``attention_backend_setup.py:62`` ``if dflash_use_aux_hidden_state:``)."""
    _t, parents = _module(sm, site.path)
    out: list[str] = []
    cur: ast.AST = site.node
    while cur in parents:
        par = parents[cur]
        if isinstance(par, ast.If) and cur in par.body:
            tests = par.test.values if isinstance(par.test, ast.BoolOp) and isinstance(par.test.op, ast.And) \
                else [par.test]
            out += [n for t in tests if isinstance(t, (ast.Name, ast.Attribute)) and (n := _last(t))]
        if isinstance(par, (ast.FunctionDef, ast.AsyncFunctionDef)):
            break
        cur = par
    return out


def _block_of(sm: Reader, rel: str, node: ast.AST) -> list[ast.stmt] | None:
    _t, parents = _module(sm, rel)
    par = parents.get(node)
    return next((b for b in _blocks(par) if node in b), None) if par is not None else None


def ids_given(sm: Reader, method: str, calls: tuple[SetterCall, ...]) -> Where | None:
    """Where the runner sets the ids it hands ``method``'s setter, when every value it can hand it is a list of ids,
    never None (so a setter written for the method needs no ``None`` branch); None when one may be None or the tool
    cannot tell. Read off the same assignments ``target_ids`` evaluates: each assignment of the call's argument the
    method reaches must give a value that is never None (``_never_none``), except a ``None`` that cannot reach the
    call: the field's default (``SpecAuxHiddenStateConfig.dflash_target_layer_ids: Any = None``, 0.5.23
    ``spec_aux_hidden_state.py:40``) or an earlier assignment in the same function (0.5.11
    ``model_runner.py:389``), when a flag the call runs under (``dflash_use_aux_hidden_state``) is set true only
    in blocks that also assign the ids (0.5.23 :279 and :283; the capture-only path's :108-109). EAGLE-3's ids may
    be None (0.5.23 :196, ``eagle_aux_hidden_state_layer_ids = None`` when the drafter config names none)."""
    if not calls:
        return None
    tests = Tests(sm, method)
    sites = {(s.path, s.node.lineno): s for s in call_sites(sm)}
    first: Where | None = None
    for c in calls:
        site = sites.get((c.where.path, c.where.line))
        if site is None or len(site.node.args) != 1 or site.node.keywords:
            return None
        name = _last(site.node.args[0])
        if name is None:
            return None
        busy: set[tuple[str, int, str]] = set()

        def given(rel: str, value: ast.expr, node: ast.AST, busy: set[tuple[str, int, str]] = busy) -> bool:
            return _never_none(sm, value, _Scope(rel, _enclosing_fn(sm, rel, node), {}), busy)

        nones: list[tuple[str, ast.stmt]] = []
        for rel, value, node in _assignments(sm).get(name, []):
            if _last(value) == name or tests.reaches(rel, node) is False:
                continue  # handed on (``dflash_target_layer_ids=self.spec_aux_config...``), or not for this method
            if not isinstance(node, (ast.Assign, ast.AnnAssign)):
                return None  # a keyword argument setting it: which call it reaches is not followed
            if given(rel, value, node):
                if first is None:
                    first = Where(rel, node.lineno, ast.unparse(node).split("\n")[0][:120])
                continue
            if not (isinstance(value, ast.Constant) and value.value is None):
                return None
            nones.append((rel, node))
        if first is None:
            return None
        if nones and not any(_paired(sm, tests, flag, name, nones, given) for flag in _guards(sm, site)):
            return None
    return first


def _paired(sm: Reader, tests: Tests, flag: str, name: str, nones: list[tuple[str, ast.stmt]],
            given: Any) -> bool:
    """Whether every assignment the method reaches that may set ``flag`` true sits in a block that also assigns
    ``name`` a value that is never None, after each of the ``None`` assignments ``nones`` (a class field's default,
    or earlier in the same function), so a call under ``flag`` never gets their None."""
    trues = [(rel, v, n) for rel, v, n in _assignments(sm).get(flag, [])
             if _last(v) != flag and tests.truth(v) is not False and tests.reaches(rel, n) is not False]
    if not trues:
        return False
    for rel, _v, node in trues:
        block = _block_of(sm, rel, node) if isinstance(node, ast.stmt) else None
        if block is None:
            return False
        sets = [st for st in block if isinstance(st, ast.Assign) and len(st.targets) == 1
                and _last(st.targets[0]) == name and given(rel, st.value, st)]
        if not sets:
            return False
        fn = _enclosing_fn(sm, rel, node)
        for nrel, nnode in nones:
            _nt, nparents = _module(sm, nrel)
            if isinstance(nparents.get(nnode), ast.ClassDef):
                continue  # the field's default, before anything runs
            if nrel != rel or _enclosing_fn(sm, nrel, nnode) is not fn or nnode.lineno >= sets[0].lineno:
                return False
    return True


# -- 5. the interface the runner asks of the target for a method: the engine's derivation data -------------------
@dataclass(frozen=True)
class MethodInterface:
    """What SGLang's runner asks of the top-level model for one method, read off its calls (``route``)."""

    method: str
    # The setters one of which the class needs (any one will do): each the runner calls on a class that has only it.
    accepted: tuple[str, ...]
    preferred: str | None  # the one it calls on a class that has them all: what a fix adds
    calls: tuple[SetterCall, ...]  # the runner's call of each accepted setter, in ``accepted``'s order
    refusal: Where | None  # its ``raise`` for a class with none of them (the message as ``text``)
    note: str = ""  # why the interface is not known ("" when it is)
    # Where the runner sets the ids it hands the setters when they are never None (``ids_given``), else None.
    ids_given: Where | None = None


def method_interface(source: SourceTree, method: str) -> MethodInterface:
    """The setters the runner calls for ``method``: evaluated (``route``) for a class with every setter the runner
    names, with each one alone, and with none."""
    r = TreeReader(source)
    names = sorted({s.setter for s in call_sites(r)})
    if not names:
        return MethodInterface(method, (), None, (), None, "the runner calls no capture setter")
    full = route(r, method, dict.fromkeys(names, True))
    preferred = full.calls[0].setter if full.calls else None
    accepted: list[str] = []
    calls: list[SetterCall] = []
    for n in names:
        alone = route(r, method, {m: m == n for m in names})
        hit = next((c for c in alone.calls if c.setter == n), None)
        if hit is not None:
            accepted.append(n)
            calls.append(hit)
    none = route(r, method, dict.fromkeys(names, False))
    note = full.unknown or ("" if accepted else f"the runner calls no capture setter for {method}")
    if preferred in accepted:  # the preferred one first: the contract's setter
        i = accepted.index(preferred)
        accepted.insert(0, accepted.pop(i))
        calls.insert(0, calls.pop(i))
    return MethodInterface(method, tuple(accepted), preferred, tuple(calls), none.refusal, note,
                           ids_given(r, method, tuple(calls)))
