"""A small evaluator for the few pieces of a vLLM tree that eagle3-lint reads as data.

Some answers live in the analyzed tree's own arithmetic: how ``get_pp_indices`` splits layers
across pipeline ranks, what a model's default aux-layer method returns for N layers, how the
speculators converter rewrites a drafter ``config.json``, which key the runner reads the aux ids
from, and how wide a drafter's ``fc`` is. Hard-coding one release's version of that logic would
be wrong for the others, so this module walks the tree's own ``ast`` of those functions.

It is an interpreter over a whitelist, not ``exec``: only literals, arithmetic, comparisons,
comprehensions, ``if``/``for``/``try``, a few pure builtins and methods of plain values (str,
list, tuple, dict) are evaluated. Anything else in the analyzed code (torch, imports, I/O, calls
into objects the tool does not model) becomes an ``Opaque`` value that carries its attribute
path, or ``UNKNOWN``; nothing of the tree is ever imported, compiled or run. A step budget bounds
every evaluation.

Two modes: ``strict`` raises ``Unsupported`` on anything outside the whitelist (used where an
exact answer is required), and partial mode (``strict=False``) turns a statement it cannot
evaluate into ``UNKNOWN`` bindings and carries on (used to read one expression out of a large
``__init__``). A branch on an ``UNKNOWN`` test evaluates both sides and keeps the bindings they
agree on.
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from eagle3_lint.facts import head_dotted

MAX_STEPS = 200_000
MAX_SEQ = 1_000_000
# A hostile tree can grow values geometrically within the step budget (``x = x + x`` forty times,
# ``x.extend(x)``, ``n = n * n``): sizes are checked *before* each operation that can grow one.
MAX_INT_BITS = 1 << 16


class Unsupported(Exception):
    """The code uses something outside the whitelist (strict mode), or ran out of steps."""

    def __init__(self, what: str, node: ast.AST | None = None) -> None:
        line = getattr(node, "lineno", 0) if node is not None else 0
        super().__init__(f"{what}" + (f" (line {line})" if line else ""))
        self.line = line


class EvalRaise(Exception):
    """The evaluated code raised (``raise``, a failed ``assert``, or an error of a builtin)."""

    def __init__(self, kind: str, message: str, line: int = 0) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.line = line


class _Unknown:
    _inst: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._inst is None:
            cls._inst = super().__new__(cls)
        return cls._inst

    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN: Any = _Unknown()
NOTHING: Any = object()  # a hook's "no opinion"


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


@dataclass
class World:
    """How values from outside the evaluated code behave. Every hook may return ``NOTHING``.

    ``attr(path)``: the value of an attribute path rooted at an opaque name, e.g.
    ``("self", "model", "layers")``. ``length(path)``: ``len()`` of an opaque value.
    ``call(path, args, kwargs)``: the result of calling an opaque value. ``has(path)``:
    ``hasattr`` on an opaque value (default True: opaque objects are taken to have what the
    code asks of them).
    """

    attr: Callable[[tuple[str, ...]], Any] = lambda _p: NOTHING
    length: Callable[[tuple[str, ...]], Any] = lambda _p: NOTHING
    call: Callable[[tuple[str, ...], list[Any], dict[str, Any]], Any] = lambda _p, _a, _k: NOTHING
    has: Callable[[tuple[str, ...]], Any] = lambda _p: NOTHING


@dataclass(frozen=True)
class Opaque:
    """A value the evaluator does not model, named by the attribute path that produced it."""

    path: tuple[str, ...]

    def __repr__(self) -> str:
        return "<" + ".".join(self.path) + ">"


class ConfigView:
    """A Hugging Face config as code sees it: keys are attributes; a missing key is missing."""

    def __init__(self, data: dict[str, Any], name: str = "config") -> None:
        self.data = data
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


class Record:
    """A mutable attribute bag (``self`` while an ``__init__`` is read)."""

    def __init__(self, name: str, fallback: Callable[[str], Any] | None = None) -> None:
        self.name = name
        self.attrs: dict[str, Any] = {}
        self.fallback = fallback

    def __repr__(self) -> str:
        return f"<{self.name}>"


@dataclass(frozen=True, eq=False)
class EnumMember:
    """A member of an enum class of the analysed tree, read from the class body (``enum_members``), never imported.
    It equals a member of the same class with the same value and, for an ``IntEnum``, the int it stands for (as in
    Python); members are singletons there, so ``is`` is equality here."""

    cls: str
    name: str
    value: Any
    is_int: bool = False

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EnumMember):
            return self.cls == other.cls and self.value == other.value
        return self.is_int and isinstance(other, int) and not isinstance(other, bool) and self.value == other

    def __hash__(self) -> int:
        return hash(self.value) if self.is_int else hash((self.cls, self.value))

    def __repr__(self) -> str:
        return f"{self.cls}.{self.name}"


_ENUM_BASES = {"Enum": False, "IntEnum": True, "StrEnum": False, "IntFlag": True, "Flag": False}


def enum_members(tree: ast.Module, name: str) -> dict[str, EnumMember] | None:
    """The members of the module-level enum class ``name`` of ``tree`` whose values are literals (``NONE = 0``),
    or None when ``tree`` defines no enum class of that name. A member with another value (``auto()``, a tuple of
    other members) is left out: reading it gives nothing."""
    node = next((st for st in tree.body if isinstance(st, ast.ClassDef) and st.name == name), None)
    if node is None:
        return None
    kinds = [_ENUM_BASES[b.rsplit(".", 1)[-1]] for b in map(head_dotted, node.bases)
             if b.rsplit(".", 1)[-1] in _ENUM_BASES]
    if not kinds:
        return None
    out: dict[str, EnumMember] = {}
    for st in node.body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) \
                and not st.targets[0].id.startswith("_"):
            try:
                value = ast.literal_eval(st.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
            out[st.targets[0].id] = EnumMember(name, st.targets[0].id, value, kinds[0])
    return out


@dataclass
class FuncValue:
    node: ast.FunctionDef | ast.AsyncFunctionDef
    module: ModuleEnv
    bound: tuple[Any, ...] = ()  # ``cls`` for a classmethod, ``self`` for a method

    @property
    def name(self) -> str:
        return self.node.name


@dataclass
class ClassValue:
    node: ast.ClassDef
    module: ModuleEnv

    @property
    def name(self) -> str:
        return self.node.name

    def member(self, name: str) -> Any:
        for st in self.node.body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and st.name == name:
                decos = {head_dotted(d) for d in st.decorator_list}
                if "staticmethod" in decos:
                    return FuncValue(st, self.module)
                return FuncValue(st, self.module, (self,))
        members = enum_members(self.module.tree, self.node.name) if self.node in self.module.tree.body else None
        return members.get(name, NOTHING) if members else NOTHING


@dataclass
class ModuleEnv:
    """Module-level names: functions and classes of the module, plus caller-supplied bindings."""

    tree: ast.Module
    path: str = ""
    names: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, tree: ast.Module, path: str = "", extra: dict[str, Any] | None = None) -> ModuleEnv:
        env = cls(tree, path)
        for st in tree.body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                env.names[st.name] = FuncValue(st, env)
            elif isinstance(st, ast.ClassDef):
                env.names[st.name] = ClassValue(st, env)
            elif isinstance(st, (ast.Import, ast.ImportFrom)):
                for a in st.names:
                    nm = a.asname or a.name.split(".")[0]
                    env.names.setdefault(nm, Opaque((nm,)))
            elif isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                try:
                    value: Any = ast.literal_eval(st.value)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    value = NOTHING
                for t in targets:
                    if isinstance(t, ast.Name):
                        # Literals are values; anything else (``logger = init_logger(...)``) is opaque.
                        env.names[t.id] = value if value is not NOTHING else Opaque((t.id,))
        if extra:
            env.names.update(extra)
        return env

    def function(self, name: str) -> FuncValue | None:
        v = self.names.get(name)
        return v if isinstance(v, FuncValue) else None

    def cls(self, name: str) -> ClassValue | None:
        v = self.names.get(name)
        return v if isinstance(v, ClassValue) else None


_TYPES: dict[str, type] = {"dict": dict, "list": list, "tuple": tuple, "int": int, "str": str, "bool": bool,
                           "float": float, "set": set}


def _size(v: Any) -> int:
    return len(v) if isinstance(v, (str, bytes, list, tuple, dict, set, frozenset)) else 0


def _grow_check(what: str, n: int, node: ast.AST | None = None) -> None:
    if n > MAX_SEQ:
        raise Unsupported(f"{what} would exceed {MAX_SEQ:,} items", node)


def _bits_check(n: int, node: ast.AST | None = None) -> None:
    if n > MAX_INT_BITS:
        raise Unsupported(f"integer would exceed {MAX_INT_BITS:,} bits", node)


def _method_growth(obj: Any, name: str, args: list[Any], node: ast.AST) -> None:
    """Refuse a method call whose result (or new receiver) would be too large."""
    if name in ("extend", "update", "union") and args:
        _grow_check(f".{name}()", _size(obj) + _size(args[0]), node)
    elif name in ("append", "insert", "add", "setdefault"):
        _grow_check(f".{name}()", _size(obj) + 1, node)
    elif name == "join" and isinstance(obj, str) and args and isinstance(args[0], (list, tuple, set, frozenset, dict)):
        parts = list(args[0])
        _grow_check(".join()", sum(_size(x) for x in parts) + len(obj) * len(parts), node)
    elif name == "replace" and isinstance(obj, str) and len(args) >= 2 and isinstance(args[0], str) \
            and isinstance(args[1], str):
        hits = obj.count(args[0]) if args[0] else len(obj) + 1
        _grow_check(".replace()", len(obj) + hits * max(0, len(args[1]) - len(args[0])), node)
    elif name == "format" and isinstance(obj, str) and re.search(r"\d{5,}|:[^}]*\{", obj):
        raise Unsupported("format width or nested format spec the tool does not evaluate", node)


def _safe_range(*a: int) -> range:
    r = range(*a)
    if len(r) > MAX_SEQ:
        raise Unsupported("range too long")
    return r


_BUILTINS: dict[str, Callable[..., Any]] = {
    "len": len, "sum": sum, "int": int, "str": str, "bool": bool, "float": float, "range": _safe_range,
    "sorted": sorted, "set": set, "frozenset": frozenset, "tuple": tuple, "list": list, "dict": dict, "min": min,
    "max": max, "abs": abs, "enumerate": enumerate, "zip": zip, "any": any, "all": all, "reversed": reversed,
    "divmod": divmod, "round": round,
    # Handled by the interpreter itself (``_special``), never called on opaque objects.
    "getattr": getattr, "hasattr": hasattr, "isinstance": isinstance,
}
_METHODS: dict[type, frozenset[str]] = {
    str: frozenset({"split", "strip", "lstrip", "rstrip", "startswith", "endswith", "lower", "upper", "replace",
                    "join", "isdigit", "format", "rsplit", "partition", "count", "find"}),
    list: frozenset({"append", "extend", "copy", "index", "count", "insert", "pop", "sort", "reverse"}),
    tuple: frozenset({"index", "count"}),
    dict: frozenset({"get", "keys", "values", "items", "copy", "setdefault", "pop", "update"}),
    set: frozenset({"add", "union", "intersection", "difference", "issubset", "copy"}),
}
_EXC_NAMES = {"Exception", "BaseException", "ValueError", "KeyError", "TypeError", "IndexError", "AttributeError",
              "AssertionError", "ZeroDivisionError", "RuntimeError", "NotImplementedError"}


def _is_unknown(v: Any) -> bool:
    return v is UNKNOWN


def _concrete(v: Any, _seen: set[int] | None = None) -> bool:
    """A plain value a builtin may see (no opaque object or unknown inside).

    Each container is walked once: ``[[0] * 10**6] * 10**6`` holds one inner list a million times,
    and walking it per reference would take a trillion steps."""
    if v is UNKNOWN or isinstance(v, (Opaque, Record, FuncValue, ClassValue)):
        return False
    if isinstance(v, (list, tuple, set, frozenset, dict)):
        seen = set() if _seen is None else _seen
        if id(v) in seen:
            return True
        seen.add(id(v))
        items = v.values() if isinstance(v, dict) else v
        return all(_concrete(x, seen) for x in items if not isinstance(x, (int, float, str, bool, type(None))))
    return True


class Interpreter:
    def __init__(self, world: World | None = None, strict: bool = True, max_steps: int = MAX_STEPS) -> None:
        self.world = world or World()
        self.strict = strict
        self.max_steps = max_steps
        self.steps = 0
        self.depth = 0
        # ``assign_hook(target_text, value_node, env)`` sees every assignment (partial reads use it).
        self.assign_hook: Callable[[str, ast.AST, dict[str, Any]], None] | None = None

    # -- entry points -----------------------------------------------------------------------------
    def call(self, fn: FuncValue, args: Iterable[Any] = (), kwargs: dict[str, Any] | None = None) -> Any:
        return self._call_func(fn, list(args), dict(kwargs or {}))

    def eval_expr(self, node: ast.AST, env: dict[str, Any], module: ModuleEnv | None = None) -> Any:
        return self._eval(node, _Frame(env, module))

    # -- steps ------------------------------------------------------------------------------------
    def _tick(self, node: ast.AST) -> None:
        self.steps += 1
        if self.steps > self.max_steps:
            raise Unsupported("evaluation step budget exhausted", node)

    def _fail(self, what: str, node: ast.AST) -> Any:
        if self.strict:
            raise Unsupported(what, node)
        return UNKNOWN

    # -- functions --------------------------------------------------------------------------------
    def _call_func(self, fn: FuncValue, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if self.depth > 30:
            raise Unsupported("call depth exceeded", fn.node)
        a = fn.node.args
        params = [p.arg for p in (*a.posonlyargs, *a.args)]
        local: dict[str, Any] = {}
        pos = list(fn.bound) + list(args)
        frame = _Frame(local, fn.module)
        defaults = list(a.defaults)
        first_default = len(params) - len(defaults)
        for i, p in enumerate(params):
            if i < len(pos):
                local[p] = pos[i]
            elif p in kwargs:
                local[p] = kwargs.pop(p)
            elif i >= first_default:
                local[p] = self._eval(defaults[i - first_default], _Frame({}, fn.module))
            else:
                raise Unsupported(f"missing argument {p!r} for {fn.name}()", fn.node)
        extra_pos = pos[len(params):]
        if a.vararg is not None:
            local[a.vararg.arg] = tuple(extra_pos)
        elif extra_pos:
            raise Unsupported(f"too many arguments for {fn.name}()", fn.node)
        for kw, d in zip(a.kwonlyargs, a.kw_defaults, strict=True):
            if kw.arg in kwargs:
                local[kw.arg] = kwargs.pop(kw.arg)
            elif d is not None:
                local[kw.arg] = self._eval(d, _Frame({}, fn.module))
            else:
                raise Unsupported(f"missing keyword argument {kw.arg!r} for {fn.name}()", fn.node)
        if a.kwarg is not None:
            local[a.kwarg.arg] = dict(kwargs)
        elif kwargs:
            raise Unsupported(f"unexpected keyword arguments {sorted(kwargs)} for {fn.name}()", fn.node)
        self.depth += 1
        try:
            self._block(fn.node.body, frame)
        except _Return as r:
            return r.value
        finally:
            self.depth -= 1
        return None

    # -- statements -------------------------------------------------------------------------------
    def _block(self, body: list[ast.stmt], frame: _Frame) -> None:
        for st in body:
            self._stmt(st, frame)

    def _stmt(self, st: ast.stmt, frame: _Frame) -> None:
        self._tick(st)
        try:
            self._stmt_inner(st, frame)
        except (_Return, _Break, _Continue, EvalRaise):
            raise
        except Unsupported:
            if self.strict:
                raise
            # Partial mode: whatever this statement would have bound is now unknown.
            for name in _bound_names(st):
                frame.local[name] = UNKNOWN
            for tgt in _self_targets(st):
                rec = frame.local.get(tgt[0])
                if isinstance(rec, Record):
                    rec.attrs[tgt[1]] = UNKNOWN

    def _stmt_inner(self, st: ast.stmt, frame: _Frame) -> None:
        if isinstance(st, ast.Expr):
            if isinstance(st.value, ast.Constant):
                return
            self._eval(st.value, frame)
        elif isinstance(st, ast.Assign):
            value = self._eval(st.value, frame)
            for t in st.targets:
                self._assign(t, value, frame, st.value)
        elif isinstance(st, ast.AnnAssign):
            if st.value is not None:
                self._assign(st.target, self._eval(st.value, frame), frame, st.value)
        elif isinstance(st, ast.AugAssign):
            cur = self._eval(_as_load(st.target), frame)
            self._assign(st.target, self._binop(st.op, cur, self._eval(st.value, frame), st), frame, st.value)
        elif isinstance(st, ast.Return):
            raise _Return(None if st.value is None else self._eval(st.value, frame))
        elif isinstance(st, ast.If):
            self._if(st, frame)
        elif isinstance(st, ast.For):
            self._for(st, frame)
        elif isinstance(st, ast.While):
            self._while(st, frame)
        elif isinstance(st, ast.Raise):
            if st.exc is None:
                raise EvalRaise("Exception", "re-raise", st.lineno)
            exc = st.exc
            kind = head_dotted(exc.func if isinstance(exc, ast.Call) else exc) or "Exception"
            msg = ""
            if isinstance(exc, ast.Call) and exc.args:
                try:
                    m = self._eval(exc.args[0], frame)
                    msg = m if isinstance(m, str) else repr(m)
                except (Unsupported, EvalRaise):
                    msg = ast.unparse(exc.args[0])
            raise EvalRaise(kind, msg, st.lineno)
        elif isinstance(st, ast.Assert):
            test = self._eval(st.test, frame)
            if _is_unknown(test) or isinstance(test, Opaque):
                return
            if not test:
                raise EvalRaise("AssertionError", ast.unparse(st.test), st.lineno)
        elif isinstance(st, ast.Try):
            self._try(st, frame)
        elif isinstance(st, (ast.Pass, ast.Global, ast.Nonlocal)):
            return
        elif isinstance(st, ast.Break):
            raise _Break()
        elif isinstance(st, ast.Continue):
            raise _Continue()
        elif isinstance(st, (ast.Import, ast.ImportFrom)):
            for a in st.names:
                nm = a.asname or a.name.split(".")[0]
                frame.local[nm] = Opaque((nm,))
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            self._block(st.body, frame)
        elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            frame.local[st.name] = FuncValue(st, frame.module or ModuleEnv(ast.Module(body=[], type_ignores=[])))
        else:
            raise Unsupported(f"statement {type(st).__name__}", st)

    def _if(self, st: ast.If, frame: _Frame) -> None:
        test = self._eval(st.test, frame)
        truth = self._truth(test, st.test)
        if truth is not None:
            self._block(st.body if truth else st.orelse, frame)
            return
        if self.strict:
            raise Unsupported("branch on a value the tool cannot know", st.test)
        # Both sides, then keep what they agree on.
        envs: list[dict[str, Any] | None] = []
        for body in (st.body, st.orelse):
            sub = _Frame(dict(frame.local), frame.module)
            try:
                self._block(body, sub)
                envs.append(sub.local)
            except (_Return, EvalRaise, _Break, _Continue):
                envs.append(None)
        live = [e for e in envs if e is not None]
        if not live:
            raise Unsupported("both branches leave the function", st)
        keys = set().union(*live)
        for k in keys:
            vals = [e.get(k, NOTHING) for e in live]
            first = vals[0]
            same = all(_same(first, v) for v in vals[1:])
            frame.local[k] = first if same and first is not NOTHING else UNKNOWN

    def _truth(self, v: Any, node: ast.AST) -> bool | None:
        if _is_unknown(v):
            return None
        if isinstance(v, (Opaque, Record, FuncValue, ClassValue, ConfigView)):
            return True
        try:
            return bool(v)
        except Exception:  # noqa: BLE001 - a value without truth is unknown
            return None

    def _for(self, st: ast.For, frame: _Frame) -> None:
        it = self._eval(st.iter, frame)
        iterable = (list, tuple, range, set, frozenset, dict, str, enumerate, zip, reversed)
        if not _concrete(it) or not isinstance(it, iterable):
            raise Unsupported("loop over a value the tool cannot know", st.iter)
        broke = False
        for item in list(it):
            self._tick(st)
            self._assign(st.target, item, frame, st.iter)
            try:
                self._block(st.body, frame)
            except _Break:
                broke = True
                break
            except _Continue:
                continue
        if not broke:
            self._block(st.orelse, frame)

    def _while(self, st: ast.While, frame: _Frame) -> None:
        while True:
            self._tick(st)
            t = self._truth(self._eval(st.test, frame), st.test)
            if t is None:
                raise Unsupported("loop condition the tool cannot know", st.test)
            if not t:
                self._block(st.orelse, frame)
                return
            try:
                self._block(st.body, frame)
            except _Break:
                return
            except _Continue:
                continue

    def _try(self, st: ast.Try, frame: _Frame) -> None:
        try:
            self._block(st.body, frame)
        except EvalRaise as exc:
            for h in st.handlers:
                names = _handler_names(h)
                if not names or exc.kind.rsplit(".", 1)[-1] in names or names & {"Exception", "BaseException"}:
                    if h.name:
                        frame.local[h.name] = exc
                    self._block(h.body, frame)
                    break
            else:
                raise
        else:
            self._block(st.orelse, frame)
        finally:
            if st.finalbody:
                self._block(st.finalbody, frame)

    # -- assignment -------------------------------------------------------------------------------
    def _assign(self, target: ast.AST, value: Any, frame: _Frame, value_node: ast.AST) -> None:
        if self.assign_hook is not None:
            self.assign_hook(ast.unparse(target), value_node, frame.local)
        if isinstance(target, ast.Name):
            frame.local[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if _is_unknown(value) or isinstance(value, Opaque):
                for el in target.elts:
                    self._assign(el, UNKNOWN if _is_unknown(value) else Opaque(value.path + ("[]",)), frame, value_node)
                return
            seq = list(value)
            if len(seq) != len(target.elts):
                raise EvalRaise("ValueError", f"cannot unpack {len(seq)} values into {len(target.elts)}", target.lineno)
            for el, v in zip(target.elts, seq, strict=True):
                self._assign(el, v, frame, value_node)
        elif isinstance(target, ast.Subscript):
            obj = self._eval(target.value, frame)
            key = self._eval(target.slice, frame)
            if isinstance(obj, (dict, list)) and _concrete(key):
                try:
                    obj[key] = value
                except (IndexError, TypeError) as exc:
                    raise EvalRaise(type(exc).__name__, str(exc), target.lineno) from None
            elif isinstance(obj, Opaque) or _is_unknown(obj):
                return
            else:
                raise Unsupported("item assignment on a value the tool does not model", target)
        elif isinstance(target, ast.Attribute):
            obj = self._eval(target.value, frame)
            if isinstance(obj, Record):
                obj.attrs[target.attr] = value
            elif isinstance(obj, ConfigView):
                obj.data[target.attr] = value
            elif isinstance(obj, Opaque) or _is_unknown(obj):
                return
            else:
                raise Unsupported("attribute assignment on a value the tool does not model", target)
        elif isinstance(target, ast.Starred):
            raise Unsupported("starred assignment", target)
        else:
            raise Unsupported(f"assignment target {type(target).__name__}", target)

    # -- expressions ------------------------------------------------------------------------------
    def _eval(self, node: ast.AST, frame: _Frame) -> Any:
        self._tick(node)
        meth = getattr(self, f"_e_{type(node).__name__}", None)
        if meth is None:
            return self._fail(f"expression {type(node).__name__}", node)
        return meth(node, frame)

    def _e_Constant(self, node: ast.Constant, frame: _Frame) -> Any:
        return node.value

    def _e_Name(self, node: ast.Name, frame: _Frame) -> Any:
        if node.id in frame.local:
            return frame.local[node.id]
        if frame.module is not None and node.id in frame.module.names:
            return frame.module.names[node.id]
        if node.id in _BUILTINS:
            return _BUILTINS[node.id]
        if node.id in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.id]
        if node.id in _EXC_NAMES:
            return Opaque((node.id,))
        if node.id == "super":
            return Opaque(("super",))
        return self._fail(f"name {node.id!r} is not bound", node)

    def _e_Attribute(self, node: ast.Attribute, frame: _Frame) -> Any:
        obj = self._eval(node.value, frame)
        return self._getattr(obj, node.attr, node)

    def _getattr(self, obj: Any, name: str, node: ast.AST, default: Any = NOTHING) -> Any:
        if _is_unknown(obj):
            return UNKNOWN
        if isinstance(obj, Opaque):
            v = self.world.attr(obj.path + (name,))
            return Opaque(obj.path + (name,)) if v is NOTHING else v
        if isinstance(obj, ConfigView):
            if name in obj.data:
                return obj.data[name]
            v = self.world.attr((obj.name, name))
            if v is not NOTHING:
                return v
            if default is not NOTHING:
                return default
            raise EvalRaise("AttributeError", f"config has no attribute {name!r}", getattr(node, "lineno", 0))
        if isinstance(obj, Record):
            if name in obj.attrs:
                return obj.attrs[name]
            if obj.fallback is not None:
                v = obj.fallback(name)
                if v is not NOTHING:
                    return v
            if default is not NOTHING:
                return default
            return self._fail(f"attribute {name!r} of {obj.name} is not known", node)
        if isinstance(obj, ClassValue):
            v = obj.member(name)
            if v is NOTHING:
                v = self.world.attr((obj.name, name))
            # Inherited from outside the module (``cls.get_config_dict`` of transformers): opaque.
            return Opaque((obj.name, name)) if v is NOTHING else v
        if isinstance(obj, EvalRaise):
            return obj.message
        if isinstance(obj, dict) and name not in _METHODS[dict]:
            # Lenient: code reads sub-configs (``text_config``) that HF turns into objects.
            if name in obj:
                return obj[name]
            if default is not NOTHING:
                return default
            raise EvalRaise("AttributeError", f"no attribute {name!r}", getattr(node, "lineno", 0))
        for typ, names in _METHODS.items():
            if isinstance(obj, typ) and name in names:
                target = obj
                return _Bound(target, name)
        if default is not NOTHING:
            return default
        return self._fail(f"attribute {name!r} of {type(obj).__name__}", node)

    def _e_Subscript(self, node: ast.Subscript, frame: _Frame) -> Any:
        obj = self._eval(node.value, frame)
        key = self._eval(node.slice, frame)
        if _is_unknown(obj) or _is_unknown(key):
            return self._fail("subscript of an unknown value", node) if self.strict else UNKNOWN
        if isinstance(obj, Opaque):
            return Opaque(obj.path + ("[]",))
        if isinstance(obj, ConfigView):
            obj = obj.data
        try:
            return obj[key]
        except (KeyError, IndexError, TypeError) as exc:
            raise EvalRaise(type(exc).__name__, str(exc), node.lineno) from None

    def _e_Slice(self, node: ast.Slice, frame: _Frame) -> Any:
        lo = None if node.lower is None else self._eval(node.lower, frame)
        hi = None if node.upper is None else self._eval(node.upper, frame)
        st = None if node.step is None else self._eval(node.step, frame)
        if any(_is_unknown(x) for x in (lo, hi, st)):
            return UNKNOWN
        return slice(lo, hi, st)

    def _e_Tuple(self, node: ast.Tuple, frame: _Frame) -> Any:
        return tuple(self._elts(node.elts, frame))

    def _e_List(self, node: ast.List, frame: _Frame) -> Any:
        return list(self._elts(node.elts, frame))

    def _e_Set(self, node: ast.Set, frame: _Frame) -> Any:
        vals = self._elts(node.elts, frame)
        if not _concrete(vals):
            return self._fail("set of unknown values", node)
        return set(vals)

    def _elts(self, elts: list[ast.expr], frame: _Frame) -> list[Any]:
        out: list[Any] = []
        for e in elts:
            if isinstance(e, ast.Starred):
                v = self._eval(e.value, frame)
                if not _concrete(v):
                    return [UNKNOWN] if not self.strict else self._fail("star of an unknown value", e)
                _grow_check("unpacking", len(out) + _size(v), e)
                out.extend(v)
            else:
                out.append(self._eval(e, frame))
        return out

    def _e_Dict(self, node: ast.Dict, frame: _Frame) -> Any:
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:
                m = self._eval(v, frame)
                if isinstance(m, ConfigView):
                    m = m.data
                if not isinstance(m, dict):
                    return self._fail("** of a value that is not a dict", v)
                out.update(m)
            else:
                key = self._eval(k, frame)
                if not _concrete(key):
                    return self._fail("dict key the tool cannot know", k)
                out[key] = self._eval(v, frame)
        return out

    def _e_JoinedStr(self, node: ast.JoinedStr, frame: _Frame) -> Any:
        parts: list[str] = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            elif isinstance(v, ast.FormattedValue):
                try:
                    x = self._eval(v.value, frame)
                except (Unsupported, EvalRaise):
                    x = "{" + ast.unparse(v.value) + "}"
                parts.append(str(x) if _concrete(x) else "{" + ast.unparse(v.value) + "}")
        return "".join(parts)

    def _e_FormattedValue(self, node: ast.FormattedValue, frame: _Frame) -> Any:
        return str(self._eval(node.value, frame))

    def _e_NamedExpr(self, node: ast.NamedExpr, frame: _Frame) -> Any:
        v = self._eval(node.value, frame)
        self._assign(node.target, v, frame, node.value)
        return v

    def _e_IfExp(self, node: ast.IfExp, frame: _Frame) -> Any:
        t = self._truth(self._eval(node.test, frame), node.test)
        if t is None:
            a, b = self._eval(node.body, frame), self._eval(node.orelse, frame)
            return a if _same(a, b) else self._fail("conditional on a value the tool cannot know", node)
        return self._eval(node.body if t else node.orelse, frame)

    def _e_BoolOp(self, node: ast.BoolOp, frame: _Frame) -> Any:
        is_and = isinstance(node.op, ast.And)
        v: Any = None
        for e in node.values:
            v = self._eval(e, frame)
            t = self._truth(v, e)
            if t is None:
                return self._fail("boolean of a value the tool cannot know", e)
            if is_and and not t:
                return v
            if not is_and and t:
                return v
        return v

    def _e_UnaryOp(self, node: ast.UnaryOp, frame: _Frame) -> Any:
        v = self._eval(node.operand, frame)
        if isinstance(node.op, ast.Not):
            t = self._truth(v, node.operand)
            return self._fail("not of a value the tool cannot know", node) if t is None else not t
        if not _concrete(v):
            return self._fail("arithmetic on a value the tool cannot know", node)
        try:
            if isinstance(node.op, ast.USub):
                return -v
            if isinstance(node.op, ast.UAdd):
                return +v
            if isinstance(node.op, ast.Invert):
                return ~v
        except TypeError as exc:
            raise EvalRaise("TypeError", str(exc), node.lineno) from None
        return self._fail("unary operator", node)

    def _e_BinOp(self, node: ast.BinOp, frame: _Frame) -> Any:
        return self._binop(node.op, self._eval(node.left, frame), self._eval(node.right, frame), node)

    def _binop(self, op: ast.operator, a: Any, b: Any, node: ast.AST) -> Any:
        if not (_concrete(a) and _concrete(b)):
            return self._fail("arithmetic on a value the tool cannot know", node)
        if isinstance(op, ast.Add) and _size(a) and _size(b):
            _grow_check("concatenation", _size(a) + _size(b), node)
        if isinstance(op, ast.Mult):
            seq, n = (a, b) if isinstance(b, int) else (b, a)
            if isinstance(seq, (str, bytes, list, tuple)) and isinstance(n, int):
                _grow_check("repetition", len(seq) * max(0, n), node)
            elif isinstance(a, int) and isinstance(b, int):
                _bits_check(a.bit_length() + b.bit_length(), node)
        if isinstance(op, ast.Mod) and isinstance(a, str) and re.search(r"\d{5,}|\*", a):
            raise Unsupported("%-format width the tool does not evaluate", node)
        if isinstance(op, ast.Pow) and isinstance(a, int) and isinstance(b, int) and b > 0:
            _bits_check(a.bit_length() * min(b, 1 << 20), node)
        try:
            if isinstance(op, ast.Add):
                return a + b
            if isinstance(op, ast.Sub):
                return a - b
            if isinstance(op, ast.Mult):
                if isinstance(a, (str, list, tuple)) or isinstance(b, (str, list, tuple)):
                    n = b if isinstance(b, int) else a
                    if isinstance(n, int) and n > MAX_SEQ:
                        raise Unsupported("sequence too long", node)
                return a * b
            if isinstance(op, ast.FloorDiv):
                return a // b
            if isinstance(op, ast.Div):
                return a / b
            if isinstance(op, ast.Mod):
                return a % b
            if isinstance(op, ast.Pow):
                if isinstance(b, int) and b > 64:
                    raise Unsupported("exponent too large", node)
                return a**b
            if isinstance(op, ast.BitOr):
                return a | b
            if isinstance(op, ast.BitAnd):
                return a & b
        except (TypeError, ZeroDivisionError, ValueError, OverflowError) as exc:
            raise EvalRaise(type(exc).__name__, str(exc), getattr(node, "lineno", 0)) from None
        return self._fail(f"operator {type(op).__name__}", node)

    def _e_Compare(self, node: ast.Compare, frame: _Frame) -> Any:
        left = self._eval(node.left, frame)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = self._eval(comp, frame)
            r = self._cmp(op, left, right, node)
            if _is_unknown(r):
                return r
            if not r:
                return False
            left = right
        return True

    def _cmp(self, op: ast.cmpop, a: Any, b: Any, node: ast.AST) -> Any:
        if isinstance(op, (ast.Is, ast.IsNot)):
            if _is_unknown(a) or _is_unknown(b):
                return self._fail("identity of a value the tool cannot know", node)
            if isinstance(a, EnumMember) or isinstance(b, EnumMember):
                same = isinstance(a, EnumMember) and isinstance(b, EnumMember) and a == b
            elif isinstance(a, (Opaque, ConfigView, Record)) or isinstance(b, (Opaque, ConfigView, Record)):
                same = a is b or (a is not None and b is not None and _same(a, b))
                if a is None or b is None:
                    same = False
            else:
                same = a is b
            return same if isinstance(op, ast.Is) else not same
        if isinstance(op, (ast.In, ast.NotIn)):
            container = b.data if isinstance(b, ConfigView) else b
            # A dict's membership is about its keys; its values may be functions (a registry).
            keys = list(container) if isinstance(container, dict) else container
            if not _concrete(a) or not _concrete(keys):
                return self._fail("membership on a value the tool cannot know", node)
            try:
                r = a in container
            except TypeError as exc:
                raise EvalRaise("TypeError", str(exc), getattr(node, "lineno", 0)) from None
            return r if isinstance(op, ast.In) else not r
        if not (_concrete(a) and _concrete(b)):
            return self._fail("comparison of a value the tool cannot know", node)
        try:
            if isinstance(op, ast.Eq):
                return a == b
            if isinstance(op, ast.NotEq):
                return a != b
            if isinstance(op, ast.Lt):
                return a < b
            if isinstance(op, ast.LtE):
                return a <= b
            if isinstance(op, ast.Gt):
                return a > b
            if isinstance(op, ast.GtE):
                return a >= b
        except TypeError as exc:
            raise EvalRaise("TypeError", str(exc), getattr(node, "lineno", 0)) from None
        return self._fail("comparison", node)

    def _comprehension(self, gens: list[ast.comprehension], frame: _Frame, emit: Callable[[_Frame], None]) -> None:
        def rec(i: int, fr: _Frame) -> None:
            if i == len(gens):
                emit(fr)
                return
            g = gens[i]
            it = self._eval(g.iter, fr)
            if not _concrete(it):
                raise Unsupported("comprehension over a value the tool cannot know", g.iter)
            for item in list(it):
                self._tick(g)
                self._assign(g.target, item, fr, g.iter)
                ok = True
                for cond in g.ifs:
                    t = self._truth(self._eval(cond, fr), cond)
                    if t is None:
                        raise Unsupported("comprehension filter the tool cannot know", cond)
                    if not t:
                        ok = False
                        break
                if ok:
                    rec(i + 1, fr)

        rec(0, _Frame(dict(frame.local), frame.module))

    def _e_ListComp(self, node: ast.ListComp, frame: _Frame) -> Any:
        out: list[Any] = []
        try:
            self._comprehension(node.generators, frame, lambda fr: out.append(self._eval(node.elt, fr)))
        except Unsupported:
            if self.strict:
                raise
            return UNKNOWN
        return out

    _e_GeneratorExp = _e_ListComp

    def _e_SetComp(self, node: ast.SetComp, frame: _Frame) -> Any:
        v = self._e_ListComp(node, frame)  # type: ignore[arg-type]  # SetComp has ListComp's fields
        return UNKNOWN if _is_unknown(v) else set(v)

    def _e_DictComp(self, node: ast.DictComp, frame: _Frame) -> Any:
        out: dict[Any, Any] = {}

        def emit(fr: _Frame) -> None:
            out[self._eval(node.key, fr)] = self._eval(node.value, fr)

        try:
            self._comprehension(node.generators, frame, emit)
        except Unsupported:
            if self.strict:
                raise
            return UNKNOWN
        return out

    def _e_Call(self, node: ast.Call, frame: _Frame) -> Any:
        fn = self._eval(node.func, frame)
        if isinstance(fn, Opaque) or _is_unknown(fn):
            # Arguments of a call the tool does not model only matter to a hook: read what can be read.
            return self._apply(fn, *self._lenient_args(node, frame), node)
        args: list[Any] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                v = self._eval(a.value, frame)
                if not _concrete(v):
                    return self._fail("star-argument the tool cannot know", a)
                args.extend(v)
            else:
                args.append(self._eval(a, frame))
        kwargs: dict[str, Any] = {}
        for k in node.keywords:
            v = self._eval(k.value, frame)
            if k.arg is None:
                if isinstance(v, ConfigView):
                    v = v.data
                if not isinstance(v, dict):
                    return self._fail("** of a value that is not a dict", k.value)
                kwargs.update(v)
            else:
                kwargs[k.arg] = v
        return self._apply(fn, args, kwargs, node)

    def _lenient_args(self, node: ast.Call, frame: _Frame) -> tuple[list[Any], dict[str, Any]]:
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for a in node.args:
            try:
                args.append(self._eval(a.value if isinstance(a, ast.Starred) else a, frame))
            except (Unsupported, EvalRaise):
                args.append(UNKNOWN)
        for k in node.keywords:
            try:
                v = self._eval(k.value, frame)
            except (Unsupported, EvalRaise):
                v = UNKNOWN
            if k.arg is not None:
                kwargs[k.arg] = v
            elif isinstance(v, dict):
                kwargs.update(v)
        return args, kwargs

    def _apply(self, fn: Any, args: list[Any], kwargs: dict[str, Any], node: ast.AST) -> Any:
        if _is_unknown(fn):
            return UNKNOWN
        if isinstance(fn, FuncValue):
            return self._call_func(fn, args, kwargs)
        if isinstance(fn, Opaque):
            v = self.world.call(fn.path, args, kwargs)
            return Opaque(fn.path + ("()",)) if v is NOTHING else v
        if isinstance(fn, ClassValue):
            v = self.world.call(("class", fn.name), args, kwargs)
            if v is NOTHING:
                return self._fail(f"instantiating {fn.name}", node)
            return v
        if isinstance(fn, _Bound):
            return self._method(fn, args, kwargs, node)
        if fn is len:
            (x,) = args
            if isinstance(x, Opaque):
                v = self.world.length(x.path)
                return self._fail("len() of an object the tool does not model", node) if v is NOTHING else v
            if isinstance(x, ConfigView):
                return len(x.data)
        if fn is _BUILTINS["int"] and args and isinstance(args[0], str):
            try:
                return int(*args)
            except ValueError as exc:
                raise EvalRaise("ValueError", str(exc), getattr(node, "lineno", 0)) from None
        if fn in (getattr, hasattr, isinstance):
            return self._special(fn, args, node)
        if callable(fn) and fn in _BUILTINS.values():
            if not (_concrete(args) and _concrete(kwargs)):
                return self._fail(f"{getattr(fn, '__name__', 'builtin')}() of a value the tool cannot know", node)
            if fn is sum and len(args) + len(kwargs) >= 2 and isinstance(args[0], (list, tuple)):
                start = args[1] if len(args) > 1 else kwargs.get("start", 0)
                if _size(start) or isinstance(start, (list, tuple, str)):
                    _grow_check("sum()", _size(start) + sum(_size(x) for x in args[0]), node)
            try:
                res = fn(*args, **kwargs)
            except (TypeError, ValueError, KeyError, IndexError, ZeroDivisionError, OverflowError) as exc:
                raise EvalRaise(type(exc).__name__, str(exc), getattr(node, "lineno", 0)) from None
            if isinstance(res, (enumerate, zip, reversed)):
                res = list(res)
            return res
        return self._fail("call of a value the tool does not model", node)

    def _special(self, fn: Any, args: list[Any], node: ast.AST) -> Any:
        if fn is isinstance:
            obj, typ = args
            types = typ if isinstance(typ, tuple) else (typ,)
            if _is_unknown(obj) or isinstance(obj, Opaque):
                return self._fail("isinstance() of an object the tool does not model", node)
            if not all(isinstance(t, type) for t in types):
                return self._fail("isinstance() against a class the tool does not model", node)
            return isinstance(obj, types)
        obj, name = args[0], args[1]
        if not isinstance(name, str):
            return self._fail("getattr() with a name the tool cannot know", node)
        if fn is hasattr:
            if isinstance(obj, Opaque):
                v = self.world.has(obj.path + (name,))
                return True if v is NOTHING else v
            if isinstance(obj, ConfigView):
                if name in obj.data:
                    return True
                v = self.world.attr((obj.name, name))
                return v is not NOTHING
            if isinstance(obj, Record):
                return name in obj.attrs or (obj.fallback is not None and obj.fallback(name) is not NOTHING)
            if _is_unknown(obj):
                return UNKNOWN
            if isinstance(obj, (str, int, list, tuple, dict)):
                return hasattr(obj, name)
            return self._fail("hasattr()", node)
        default = args[2] if len(args) > 2 else NOTHING
        try:
            return self._getattr(obj, name, node, default)
        except EvalRaise:
            if default is not NOTHING:
                return default
            raise

    def _method(self, b: _Bound, args: list[Any], kwargs: dict[str, Any], node: ast.AST) -> Any:
        if b.name in ("append", "extend", "insert", "setdefault", "update", "add", "pop"):
            # Mutators may hold unknown values; only the receiver must be concrete.
            pass
        elif not (_concrete(args) and _concrete(kwargs)):
            return self._fail(f".{b.name}() of a value the tool cannot know", node)
        if isinstance(b.obj, dict) and b.name == "update" and args and isinstance(args[0], ConfigView):
            args = [args[0].data]
        _method_growth(b.obj, b.name, args, node)
        try:
            return getattr(b.obj, b.name)(*args, **kwargs)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError) as exc:
            raise EvalRaise(type(exc).__name__, str(exc), getattr(node, "lineno", 0)) from None


@dataclass
class _Bound:
    obj: Any
    name: str


@dataclass
class _Frame:
    local: dict[str, Any]
    module: ModuleEnv | None


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if _is_unknown(a) or _is_unknown(b):
        return False
    if isinstance(a, Opaque) and isinstance(b, Opaque):
        return a.path == b.path
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001
        return False


def _as_load(target: ast.AST) -> ast.AST:
    t = copy.deepcopy(target)
    for n in ast.walk(t):
        if hasattr(n, "ctx"):
            n.ctx = ast.Load()
    return t


def _handler_names(h: ast.ExceptHandler) -> set[str]:
    if h.type is None:
        return set()
    elts = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
    return {head_dotted(e).rsplit(".", 1)[-1] for e in elts}


def _bound_names(st: ast.stmt) -> set[str]:
    out: set[str] = set()
    for n in ast.walk(st):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
    return out


def _self_targets(st: ast.stmt) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for n in ast.walk(st):
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name):
            out.append((n.value.id, n.attr))
    return out


def parse(text: str, filename: str = "<tree>") -> ast.Module | None:
    try:
        return ast.parse(text, filename=filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def find_function(tree: ast.Module, name: str, cls: str | None = None) -> ast.FunctionDef | None:
    """A module-level function, or a method of a module-level class."""
    body: list[ast.stmt] = tree.body
    if cls is not None:
        c = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls), None)
        if c is None:
            return None
        body = c.body
    found = None
    for n in body:
        if isinstance(n, ast.FunctionDef) and n.name == name:
            found = n  # the last definition wins, as at runtime
    return found


def function_at(tree: ast.Module, line: int) -> ast.FunctionDef | None:
    """The function (or method) whose ``def`` is on ``line``."""
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.lineno == line:
            return n  # type: ignore[return-value]  # async def too; same fields used
    return None
