"""What one ``set_eagle3_layers_to_capture`` does with the ids it is given, read from its body.

SGLang captures the hidden state *entering* layer ``i``, while a drafter's ids mean "output of layer
k", so most setters store ``k + 1`` for drafter ids (``[val + 1 for val in layer_ids]``) and a
literal default list (``[2, num_layers // 2, num_layers - 3]``) when given ``None``. Some add 1 only
under a condition (``layer_ids[0] == 1``, ``max(layer_ids) == num_layers``), some delegate to the
inner model's setter (``self.model.set_eagle3_layers_to_capture(...)``, often behind ``hasattr``),
and most return early unless on the last pipeline rank. This module reports those shapes; it does not
run anything.
"""

from __future__ import annotations

import ast
import enum
import textwrap
from dataclasses import dataclass

from eagle3_lint.engines.sglang.runner import SETTER
from eagle3_lint.facts import decode_source, dotted
from eagle3_lint.source import SourceTree


class Heuristic(enum.Enum):
    FIRST_IS_ONE = "layer_ids[0] == 1"  # the +1 depends on the first id
    MAX_IS_N = "max(ids) == num_layers"  # the +1 depends on the largest id
    OTHER_CONDITION = "other condition"  # some other test on the ids decides the transform


@dataclass(frozen=True)
class IdTransform:
    """The setter at ``path:line`` (the class that defines it)."""

    path: str
    line: int
    param: str  # the ids parameter's name
    offset: int | None  # k in ``[v + k for v in ids]`` for drafter ids; None when not one plain shift
    conditional: tuple[Heuristic, ...]  # tests on the ids that change the transform
    default: str | None  # the list used when the ids are None, as written
    num_layers: str | None  # what the default's layer count is read from (``self.config.num_hidden_layers``)
    writes: tuple[str, ...]  # ``self.model.layers_to_capture``, ``layer._is_layer_to_capture``, ...
    delegates_to: tuple[str, ...]  # receivers whose own setter is called (``self.model``)
    delegation_guarded: bool  # a ``hasattr`` test on the receiver's setter
    pp_last_rank_only: bool  # returns early unless ``pp_group.is_last_rank``
    # For a conditional transform: (test, shift when it holds, shift otherwise), None where a branch
    # stores something other than a plain shift of the ids.
    branches: tuple[tuple[Heuristic, int | None, int | None], ...] = ()
    # The default is assigned to the ids parameter (``layer_ids = [2, n // 2, n - 3]``) and then goes through
    # the same shift as a drafter's ids (minimax_m3_vl.py in 0.5.19+: ``[val + 1 for val in layer_ids]`` on
    # both paths), rather than being stored as written.
    default_shifted: bool = False


def _shift(node: ast.AST, param: str) -> int | None:
    """k for ``[v + k for v in <param>]`` / ``[v for v in <param>]`` / ``list(<param>)`` / ``<param>``."""
    if isinstance(node, ast.Name) and node.id == param:
        return 0
    if isinstance(node, ast.Call) and dotted(node.func) == "list" and node.args and _shift(node.args[0], param) == 0:
        return 0
    if isinstance(node, ast.ListComp) and len(node.generators) == 1:
        g = node.generators[0]
        if isinstance(g.target, ast.Name) and isinstance(g.iter, ast.Name) and g.iter.id == param:
            v, e = g.target.id, node.elt
            if isinstance(e, ast.Name) and e.id == v:
                return 0
            if isinstance(e, ast.BinOp) and isinstance(e.left, ast.Name) and e.left.id == v \
                    and isinstance(e.right, ast.Constant) and isinstance(e.right.value, int):
                if isinstance(e.op, ast.Add):
                    return e.right.value
                return -e.right.value if isinstance(e.op, ast.Sub) else None
    return None


def _is_none_test(test: ast.AST, param: str) -> bool | None:
    """True for ``param is None``/``not param``, False for ``param is not None``/``param``, else None."""
    if isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == param \
            and len(test.ops) == 1 and isinstance(test.comparators[0], ast.Constant) \
            and test.comparators[0].value is None:
        return isinstance(test.ops[0], ast.Is) if isinstance(test.ops[0], (ast.Is, ast.IsNot)) else None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.Name) \
            and test.operand.id == param:
        return True
    if isinstance(test, ast.Name) and test.id == param:
        return False
    return None


def read_setter(source: SourceTree, path: str, line: int, end_line: int, setter: str = SETTER) -> IdTransform | None:
    """The transform of the setter defined at ``path:line-end_line``; None when it cannot be read or parsed.
    ``setter``: its name (another method's, ``set_dflash_layers_to_capture``, reads the same way)."""
    try:
        lines = decode_source(source.read_bytes(path)).splitlines()
    except (OSError, UnicodeError, LookupError, SyntaxError):
        return None
    # Parse only the method, dedented; its span comes from the core's facts.
    try:
        mod = ast.parse(textwrap.dedent("\n".join(lines[line - 1: end_line])))
        fn = mod.body[0] if mod.body and isinstance(mod.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    except (SyntaxError, ValueError, RecursionError):
        fn = None
    if fn is None or fn.name != setter:
        return None
    args = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    param = args[1] if len(args) > 1 else ""
    offset: int | None = None
    conditional: list[Heuristic] = []
    branches: list[tuple[Heuristic, int | None, int | None]] = []
    shifts: list[int] = []
    default: str | None = None
    num_layers: str | None = None
    writes: list[str] = []
    delegates: list[str] = []
    guarded = pp = shifted = False
    for node in ast.walk(fn):
        if isinstance(node, ast.If):
            t = ast.unparse(node.test)
            if "is_last_rank" in t and any(isinstance(s, ast.Return) for s in node.body):
                pp = True
            if "hasattr(" in t and setter in t:
                guarded = True
            none = _is_none_test(node.test, param) if param else None
            if none is not None:
                for st in (node.body if none else node.orelse):
                    for sub in ast.walk(st):
                        # ``x = [2, n // 2, n - 3]`` or ``self.model.<setter>([2, n // 2, n - 3])``
                        lists = [sub.value] if isinstance(sub, ast.Assign) else \
                            sub.args if isinstance(sub, ast.Call) else []
                        for lst in lists:
                            if isinstance(lst, ast.List) and default is None:
                                default = " ".join(ast.unparse(lst).split())
                                shifted = isinstance(sub, ast.Assign) and any(
                                    isinstance(tg, ast.Name) and tg.id == param for tg in sub.targets)
            elif param and param in t:
                h = Heuristic.FIRST_IS_ONE if "[0]" in t and "== 1" in t else Heuristic.MAX_IS_N if "max(" in t \
                    else Heuristic.OTHER_CONDITION if any(isinstance(n, ast.Name) and n.id == param
                                                          for n in ast.walk(node.test)) else None
                if h is not None:
                    conditional.append(h)
                    branches.append((h, _branch_shift(node.body, param), _branch_shift(node.orelse, param)))
        elif isinstance(node, ast.IfExp) and param and _is_none_test(node.test, param) is not None:
            none = _is_none_test(node.test, param)
            alt = node.body if none else node.orelse
            if isinstance(alt, ast.List) and default is None:
                default = ast.unparse(alt)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for tg in targets:
                d = dotted(tg) or ast.unparse(tg)
                if d.startswith("self.") or "_is_layer_to_capture" in d:
                    writes.append(d)
                if isinstance(tg, ast.Name) and "layer" in tg.id and node.value is not None \
                        and "num_hidden_layers" in ast.unparse(node.value) or (
                        isinstance(tg, ast.Name) and tg.id in ("num_layers", "n") and node.value is not None):
                    num_layers = num_layers or ast.unparse(node.value)
            if param and node.value is not None:
                k = _shift(node.value, param)
                if k is not None:
                    shifts.append(k)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == setter:
            delegates.append(dotted(node.func.value) or ast.unparse(node.func.value))
            if param and node.args:
                k = _shift(node.args[0], param)
                if k is not None:
                    shifts.append(k)
        elif isinstance(node, ast.Call) and dotted(node.func) == "setattr" and len(node.args) >= 2 \
                and isinstance(node.args[1], ast.Constant) and node.args[1].value == "_is_layer_to_capture":
            writes.append("<layer>._is_layer_to_capture")
    offset = shifts[0] if shifts and len(set(shifts)) == 1 else None
    if not param and default is None:
        # Early setters take no ids at all (0.4.7 - 0.4.8): the list they store is the default.
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.List):
                default = " ".join(ast.unparse(node.value).split())
                break
    return IdTransform(path, line, param, offset, tuple(dict.fromkeys(conditional)), default, num_layers,
                       tuple(dict.fromkeys(writes)), tuple(dict.fromkeys(delegates)), guarded, pp, tuple(branches),
                       shifted)


def _branch_shift(body: list[ast.stmt], param: str) -> int | None:
    """The shift stored by one branch, when it stores exactly one plain shift of the ids."""
    ks = {k for st in body for n in ast.walk(st) if isinstance(n, ast.Assign)
          for k in [_shift(n.value, param)] if k is not None}
    return ks.pop() if len(ks) == 1 else None


def capture_indices(t: IdTransform, drafter_ids: list[int] | None, n: int) -> list[int] | None:
    """The layer indices (``i``: the hidden state entering layer ``i``) the setter stores for the
    drafter's ids on a model of ``n`` layers; None when the setter is given None (its default is an
    expression of the model's config), hands the ids on unchanged to another setter, or its transform is
    not a plain shift the tool can follow."""
    if drafter_ids is None:
        return None
    if t.delegates_to and t.offset == 0:
        return None  # hands the ids on unchanged: the delegate's setter decides
    if not t.conditional:
        return None if t.offset is None else [k + t.offset for k in drafter_ids]
    if len(t.branches) != 1:
        return None
    h, yes, no = t.branches[0]
    if h is Heuristic.FIRST_IS_ONE:
        holds = bool(drafter_ids) and drafter_ids[0] == 1
    elif h is Heuristic.MAX_IS_N:
        holds = bool(drafter_ids) and max(drafter_ids) == n
    else:
        return None
    k = yes if holds else no
    return None if k is None else [i + k for i in drafter_ids]


def default_indices(t: IdTransform, n: int) -> list[int] | None:
    """The default list (used when the drafter config has no ids) for a model of ``n`` layers, evaluated
    with the core's whitelisted evaluator: the one free name of the expression (``num_layers``) is ``n``; then
    shifted as a drafter's ids are when the setter puts its default through the same shift. None when there is
    no default or it is not plain arithmetic on that one name."""
    if t.default is None or t.default_shifted and t.offset is None:
        return None
    from eagle3_lint.minieval import Interpreter, Unsupported

    try:
        node = ast.parse(t.default, mode="eval").body
    except SyntaxError:
        return None
    names = {x.id for x in ast.walk(node) if isinstance(x, ast.Name)}
    if len(names) > 1:
        return None
    try:
        value = Interpreter(strict=True).eval_expr(node, {name: n for name in names})
    except (Unsupported, ArithmeticError, TypeError, ValueError):
        return None
    if not (isinstance(value, list) and all(type(v) is int for v in value)):
        return None
    return [v + t.offset for v in value] if t.default_shifted and t.offset is not None else list(value)
