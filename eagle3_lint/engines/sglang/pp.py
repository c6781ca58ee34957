"""Pipeline parallelism with EAGLE-3 on SGLang, as data with a reason: refused at launch, or the layers lost.

Two release-level facts, both read from the tree:

- **refused at launch.** Server-argument validation holds ``if <args>.pp_size > 1: assert (... and
  <args>.speculative_algorithm is None ...), "Pipeline parallelism is not compatible with ... speculative
  decoding"`` (``server_args.py`` up to 0.5.18, ``arg_groups/validation_hook.py`` in 0.5.19). ``refusal`` finds
  that shape in any file (an ``assert`` that requires no speculative algorithm, guarded only by the PP size
  test): where it exists, EAGLE-3 with PP never starts. An ``if`` that also tests another option (the
  watermark's ``pp_size > 1 and speculative_algorithm is not None``) is not a refusal of EAGLE-3.
- **the layers lost.** Where PP is allowed, setters return unless on the last pipeline rank
  (``IdTransform.pp_last_rank_only``), and the last rank's forward runs only its own layers: ids held by earlier
  ranks are never captured (``drafter._pp``). The split is SGLang's own ``get_pp_indices``
  (``sglang/srt/distributed/utils.py``: the remainder goes to the *last* ranks, unlike vLLM's), evaluated with
  ``minieval`` with ``SGLANG_PP_LAYER_PARTITION`` as ``--pp-partition``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from eagle3_lint.drafter import Split, split_ranges
from eagle3_lint.facts import decode_source
from eagle3_lint.lazyimport import lazy
from eagle3_lint.source import SourceTree

if TYPE_CHECKING:
    from eagle3_lint import minieval as me
    from eagle3_lint.stages import Model
else:
    me = lazy("eagle3_lint.minieval")  # imported on first use (lazyimport.py)

PP_MODULE_PATHS = ("sglang/srt/distributed/utils.py",)
PP_FUNCTION = "get_pp_indices"
PARTITION_ENV = "SGLANG_PP_LAYER_PARTITION"
SPEC_ATTR = "speculative_algorithm"
SPEC_VALUE = "EAGLE3"  # --speculative-algorithm EAGLE3, as server-argument validation sees it
PP_ATTR = "pp_size"


@dataclass(frozen=True)
class Refusal:
    path: str
    line: int
    text: str  # the assert's message, as written
    via: str = ""  # the helper the PP test calls, when the assert sits in it ("check_pipeline_parallel_compat")


_UNKNOWN: Any = object()


def _value(node: ast.expr, pp_size: int, spec: str = SPEC_VALUE) -> Any:
    """The value of a test operand when the speculative algorithm is ``spec`` (EAGLE-3) and PP is on; ``_UNKNOWN``
    otherwise."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Attribute) and node.attr == SPEC_ATTR:
        return spec
    if isinstance(node, ast.Attribute) and node.attr == PP_ATTR:
        return pp_size
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args \
            and node.func.attr in ("upper", "lower"):
        inner = _value(node.func.value, pp_size, spec)
        return getattr(inner, node.func.attr)() if isinstance(inner, str) else _UNKNOWN
    return _UNKNOWN


def _holds(test: ast.expr, pp_size: int, spec: str = SPEC_VALUE) -> bool | None:
    """Whether ``test`` holds for ``spec`` (EAGLE-3) with PP, in three values (None: it depends on something else)."""
    if isinstance(test, ast.BoolOp):
        parts = [_holds(v, pp_size, spec) for v in test.values]
        if isinstance(test.op, ast.And):
            return False if False in parts else (True if all(p is True for p in parts) else None)
        return True if True in parts else (False if all(p is False for p in parts) else None)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _holds(test.operand, pp_size, spec)
        return None if inner is None else not inner
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        a, b = _value(test.left, pp_size, spec), _value(test.comparators[0], pp_size, spec)
        if a is _UNKNOWN or b is _UNKNOWN:
            return None
        op = test.ops[0]
        try:
            return {ast.Eq: lambda: a == b, ast.NotEq: lambda: a != b, ast.Is: lambda: a is b,
                    ast.IsNot: lambda: a is not b, ast.Gt: lambda: a > b, ast.GtE: lambda: a >= b,
                    ast.Lt: lambda: a < b, ast.LtE: lambda: a <= b}.get(type(op), lambda: None)()
        except TypeError:
            return None
    return None


def _tests_only_pp(test: ast.expr) -> bool:
    """``<x>.pp_size > 1`` / ``!= 1`` and nothing else."""
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Attribute) and test.left.attr == PP_ATTR


def _about_spec(node: ast.AST) -> bool:
    return SPEC_ATTR in ast.unparse(node)


def _walk(body: list[ast.stmt], funcs: dict[str, ast.FunctionDef], pp_size: int, spec_seen: bool, depth: int,
          rel: str, via: str, spec: str = SPEC_VALUE) -> Refusal | None:
    """The refusal every path through ``body`` meets, or None. Branches whose test depends on something else
    (the platform) are both followed; the refusal must be on both."""
    for st in body:
        if isinstance(st, ast.Assert) and _about_spec(st.test) and _holds(st.test, pp_size, spec) is False:
            msg = st.msg.value if isinstance(st.msg, ast.Constant) and isinstance(st.msg.value, str) else (
                ast.unparse(st.msg) if st.msg is not None else "")
            return Refusal(rel, st.lineno, f"AssertionError: {msg}".rstrip(": "), via)
        if isinstance(st, ast.Raise) and spec_seen:
            exc = st.exc
            msg = ast.unparse(exc.args[0]) if isinstance(exc, ast.Call) and exc.args else ""
            name = ast.unparse(exc.func) if isinstance(exc, ast.Call) else "raise"
            return Refusal(rel, st.lineno, f"{name}: {msg}", via)
        if isinstance(st, ast.If):
            held = _holds(st.test, pp_size, spec)
            seen = spec_seen or _about_spec(st.test)
            yes = _walk(st.body, funcs, pp_size, seen, depth, rel, via, spec) if held is not False else None
            no = _walk(st.orelse, funcs, pp_size, spec_seen, depth, rel, via, spec) if held is not True else None
            if held is True and yes is not None:
                return yes
            if held is False and no is not None:
                return no
            if held is None and yes is not None and no is not None:
                return yes
        elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Name) \
                and st.value.func.id in funcs and depth < 2:
            # ``check_pipeline_parallel_compat(cfg)``: the helper's own checks (0.5.21+).
            name = st.value.func.id
            got = _walk(funcs[name].body, funcs, pp_size, spec_seen, depth + 1, rel, via or name, spec)
            if got is not None:
                return got
    return None


def _scan(source: SourceTree, pp_size: int = 2, spec: str = SPEC_VALUE) -> Refusal | None:
    for rel in source.py_files():
        if not rel.startswith("sglang/srt/") or rel.startswith("sglang/srt/models/"):
            continue
        try:
            data = source.read_bytes(rel)
            if SPEC_ATTR.encode() not in data or PP_ATTR.encode() not in data:
                continue
            tree = ast.parse(decode_source(data), filename=rel)
        except (OSError, UnicodeError, LookupError, SyntaxError, ValueError, RecursionError):
            continue
        funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            # Only an ``if`` on the PP size alone, directly in a function body: one nested under another option's
            # test, or testing another option too (the watermark's), is not a refusal of every EAGLE-3 set-up.
            for st in fn.body:
                if isinstance(st, ast.If) and _tests_only_pp(st.test) and _holds(st.test, pp_size, spec) is not False:
                    got = _walk(st.body, funcs, pp_size, False, 0, rel, "", spec)
                    if got is not None:
                        return got
    return None


def refusal(sm: Model, spec: str = SPEC_VALUE) -> Refusal | None:
    """Where this tree refuses EAGLE-3 (or ``--speculative-algorithm spec``) with pipeline parallelism at launch, or
    None."""
    pp = max(sm.options.pipeline_parallel or 2, 2)
    key = f"sglang:pp-refusal:{pp}" if spec == SPEC_VALUE else f"sglang:pp-refusal:{pp}:{spec}"
    return sm.memo.get(key, lambda: _scan(sm.source, pp, spec))


def split(source: SourceTree, num_layers: int, pp_size: int, partition: str | None = None) -> Split:
    """The layer range of every rank, from the tree's ``get_pp_indices`` (no fallback arithmetic: SGLang's
    differs from vLLM's, so an unreadable function leaves the split unknown)."""
    for rel in PP_MODULE_PATHS:
        if not source.exists(rel):
            continue
        try:
            tree = me.parse(decode_source(source.read_bytes(rel)), rel)
        except (OSError, UnicodeError, SyntaxError):
            continue
        if tree is None:
            continue
        fn = me.ModuleEnv.of(tree, rel).function(PP_FUNCTION)
        if fn is None:
            continue
        reads_env = PARTITION_ENV in ast.unparse(fn.node)

        def call(path: tuple[str, ...], args: list[Any], _kw: dict[str, Any]) -> Any:
            # ``os.getenv("SGLANG_PP_LAYER_PARTITION", None)`` / ``os.environ.get(...)``: the user's override.
            if path[-1] in ("getenv", "get") and args and args[0] == PARTITION_ENV:
                return partition
            return me.NOTHING

        try:
            ranges = split_ranges(fn, me.World(call=call), num_layers, pp_size, PP_FUNCTION)
        except me.EvalRaise as exc:
            return Split(num_layers, pp_size, (), "tree", rel, fn.node.lineno, reads_env, partition,
                         f"{PP_FUNCTION} raises for this layout: {exc.message}")
        except me.Unsupported as exc:
            return Split(num_layers, pp_size, (), "tree", rel, fn.node.lineno, reads_env, partition,
                         f"{rel}:{fn.node.lineno} {PP_FUNCTION} could not be evaluated ({exc})")
        note = "" if partition is None or reads_env else f"this tree's {PP_FUNCTION} does not read {PARTITION_ENV}"
        return Split(num_layers, pp_size, tuple(ranges), "tree", rel, fn.node.lineno, reads_env, partition, note)
    return Split(num_layers, pp_size, (), "tree", "", 0, False, partition,
                 f"{PP_FUNCTION} not found in {PP_MODULE_PATHS[0]}: the layer split is unknown")
