"""Pipeline-parallel layer split, computed with the analyzed tree's own ``get_pp_indices``.

``make_layers`` (``vllm/model_executor/models/utils.py``) gives rank ``r`` the layers
``[start, end)`` returned by ``get_pp_indices(num_hidden_layers, r, pp_size)`` in
``vllm/distributed/utils.py``, and every layer outside that range is a ``PPMissingLayer``. The
split is therefore data the tree defines; it is evaluated here with ``minieval`` from the tree's
own function body (including its ``VLLM_PP_LAYER_PARTITION`` override), never imported.

``reference_split`` is the same arithmetic written out (as in every release 0.9.2 … 0.33.0, read
from ``vllm/distributed/utils.py``: even split, remainder spread over all but the last rank,
from the second-to-last backwards). It is used to cross-check the evaluation and as a fallback
when the tree's function cannot be evaluated; the result says which one was used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eagle3_lint.drafter import Split, split_ranges
from eagle3_lint.facts import decode_source
from eagle3_lint.lazyimport import lazy
from eagle3_lint.source import SourceTree

if TYPE_CHECKING:
    from eagle3_lint import minieval as me
else:
    me = lazy("eagle3_lint.minieval")  # imported on first use (lazyimport.py)

PP_MODULE_PATHS = ("vllm/distributed/utils.py",)
PP_FUNCTION = "get_pp_indices"
PARTITION_ENV = "VLLM_PP_LAYER_PARTITION"


def reference_split(num_layers: int, pp_size: int, partition: str | None = None) -> tuple[tuple[int, int], ...]:
    """The partition arithmetic of ``get_pp_indices`` as read from the releases (see module docstring)."""
    if partition is not None:
        parts = [int(x) for x in partition.split(",")]
        if len(parts) != pp_size or sum(parts) != num_layers:
            raise ValueError(f"partition {partition!r} does not match pp_size={pp_size}, layers={num_layers}")
    else:
        per = num_layers // pp_size
        parts = [per] * pp_size
        rem = num_layers % pp_size
        for i in range(2, rem + 2):
            parts[-i] += 1
    out = []
    start = 0
    for p in parts:
        out.append((start, start + p))
        start += p
    return tuple(out)


def _locate(source: SourceTree) -> tuple[str, me.ModuleEnv, me.FuncValue] | None:
    for rel in PP_MODULE_PATHS:
        if not source.exists(rel):
            continue
        try:
            text = decode_source(source.read_bytes(rel))
        except (OSError, UnicodeError, SyntaxError):
            continue
        tree = me.parse(text, rel)
        if tree is None:
            continue
        env = me.ModuleEnv.of(tree, rel)
        fn = env.function(PP_FUNCTION)
        if fn is not None:
            return rel, env, fn
    return None


def split(source: SourceTree, num_layers: int, pp_size: int, partition: str | None = None) -> Split:
    """The layer range of every rank, from the tree's ``get_pp_indices``."""
    if pp_size < 1:
        raise ValueError("pipeline-parallel size must be at least 1")
    if num_layers < pp_size:
        note = f"{num_layers} layers cannot be split over {pp_size} ranks (get_pp_indices would leave a rank empty)"
    else:
        note = ""
    found = _locate(source)
    ref: tuple[tuple[int, int], ...] | None
    try:
        ref = reference_split(num_layers, pp_size, partition)
    except ValueError as exc:
        ref = None
        note = note or str(exc)
    if found is None:
        return Split(num_layers, pp_size, ref or (), "reference", "", 0, False, partition,
                     note or f"{PP_FUNCTION} not found in {PP_MODULE_PATHS[0]}; used the reference arithmetic")
    rel, env, fn = found
    reads_env = any(isinstance(n, me.ast.Attribute) and n.attr == PARTITION_ENV for n in me.ast.walk(fn.node))

    def attr(path: tuple[str, ...]) -> object:
        if path and path[-1] == PARTITION_ENV:
            return partition
        return me.NOTHING

    try:
        ranges = split_ranges(fn, me.World(attr=attr), num_layers, pp_size, PP_FUNCTION)
    except me.EvalRaise as exc:
        return Split(num_layers, pp_size, (), "tree", rel, fn.node.lineno, reads_env, partition,
                     f"{PP_FUNCTION} raises for this layout: {exc.message}")
    except me.Unsupported as exc:
        return Split(num_layers, pp_size, ref or (), "reference", rel, fn.node.lineno, reads_env, partition,
                     f"{rel}:{fn.node.lineno} {PP_FUNCTION} could not be evaluated ({exc}); "
                     "used the reference arithmetic")
    if ref is not None and tuple(ranges) != ref:
        note = (note + "; " if note else "") + (
            f"the tree's {PP_FUNCTION} differs from the reference arithmetic {list(ref)}; the tree's split is used")
    if partition is not None and not reads_env:
        note = (note + "; " if note else "") + f"this tree's {PP_FUNCTION} does not read {PARTITION_ENV}"
    return Split(num_layers, pp_size, tuple(ranges), "tree", rel, fn.node.lineno, reads_env, partition, note)
