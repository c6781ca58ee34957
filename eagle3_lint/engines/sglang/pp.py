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

from eagle3_lint import minieval as me
from eagle3_lint.drafter import Split
from eagle3_lint.facts import decode_source
from eagle3_lint.source import SourceTree

if TYPE_CHECKING:
    from eagle3_lint.analysis import Context

PP_MODULE_PATHS = ("sglang/srt/distributed/utils.py",)
PP_FUNCTION = "get_pp_indices"
PARTITION_ENV = "SGLANG_PP_LAYER_PARTITION"
SPEC_ATTR = "speculative_algorithm"
PP_ATTR = "pp_size"


@dataclass(frozen=True)
class Refusal:
    path: str
    line: int
    text: str  # the assert's message, as written


def _tests_only_pp(test: ast.expr) -> bool:
    """``<x>.pp_size > 1`` / ``!= 1`` and nothing else."""
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Attribute) and test.left.attr == PP_ATTR


def _requires_no_spec(test: ast.expr) -> bool:
    """The assert's test holds only when ``<x>.speculative_algorithm is None`` (alone or in an ``and``)."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    return any(isinstance(p, ast.Compare) and isinstance(p.left, ast.Attribute) and p.left.attr == SPEC_ATTR
               and len(p.ops) == 1 and isinstance(p.ops[0], ast.Is) and isinstance(p.comparators[0], ast.Constant)
               and p.comparators[0].value is None for p in parts)


def _scan(source: SourceTree) -> Refusal | None:
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
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            # Only an ``if`` directly in the function body: one nested under another option's test is not a
            # refusal of every EAGLE-3 set-up.
            for st in fn.body:
                if not (isinstance(st, ast.If) and _tests_only_pp(st.test)):
                    continue
                for a in st.body:
                    if isinstance(a, ast.Assert) and _requires_no_spec(a.test):
                        msg = a.msg.value if isinstance(a.msg, ast.Constant) and isinstance(a.msg.value, str) else (
                            ast.unparse(a.msg) if a.msg is not None else "AssertionError")
                        return Refusal(rel, a.lineno, f"AssertionError: {msg}")
    return None


def refusal(ctx: Context) -> Refusal | None:
    """Where this tree refuses speculative decoding with pipeline parallelism at launch, or None."""
    return ctx.memo.get("sglang:pp-refusal", lambda: _scan(ctx.source))


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

        interp = me.Interpreter(me.World(call=call), strict=True)
        ranges: list[tuple[int, int]] = []
        try:
            for r in range(pp_size):
                res = interp.call(fn, [num_layers, r, pp_size])
                if not (isinstance(res, tuple) and len(res) == 2 and all(isinstance(x, int) for x in res)):
                    raise me.Unsupported(f"{PP_FUNCTION} returned {res!r}")
                ranges.append((res[0], res[1]))
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
