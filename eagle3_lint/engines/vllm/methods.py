"""Which gates a speculative method rides in the vLLM tree being checked (issue 23 item 3).

EAGLE-3 is one of several methods that feed the drafter the target's hidden states: ``dflash`` and
``extract_hidden_states`` ride the same ``supports_eagle3`` check and setter, ``eagle`` (EAGLE-1) does not ask for
aux states at all. Which method rides which gate is read from the tree, never listed:

- **the runner's aux-state flag.** The runner asks the model for aux states only under a flag
  (``self.use_aux_hidden_state_outputs``): the ``if`` around the check (or the early ``return`` before it) in the
  site's function, or around the call of the site's function in that runner's files. Every assignment of the flag
  in that file is evaluated for the method: its value (a constant, or a call such as V2's
  ``requires_aux_hidden_states(spec_config)``, evaluated with ``minieval``) under the ``if``/``elif`` chain it sits
  in, whose tests (``speculative_config.method == "eagle3"``, ``speculative_config.use_dflash()``) are evaluated
  for the method, a ``SpeculativeConfig`` predicate through its own ``return`` in ``config/speculative.py``. The
  last assignment the method reaches decides.
- **the config-time gates** carry their methods already (``runner.Gate.methods``), and **the drafter's class**
  comes from ``EAGLEConfig``'s branch for the method (``drafter.eagle3_architectures``).
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from eagle3_lint.engines.vllm.runner import runner_of
from eagle3_lint.lazyimport import lazy
from eagle3_lint.runner import RunnerSite
from eagle3_lint.semantic import Where
from eagle3_lint.source_ast import read_module

if TYPE_CHECKING:
    from eagle3_lint import minieval as me
    from eagle3_lint.engines.treereader import TreeReader
    from eagle3_lint.stages import Model
else:
    me = lazy("eagle3_lint.minieval")  # imported on first use (lazyimport.py)

SPEC_CONFIG = "vllm/config/speculative.py"
DEFAULT = "eagle3"


@dataclass(frozen=True)
class AuxUse:
    """Whether the runner asks the model for aux hidden states under ``method``."""

    method: str
    asks: bool | None  # None: the tree does not say (a test or value the tool cannot evaluate)
    flag: str  # the runner's flag (``use_aux_hidden_state_outputs``), "" when the site has none
    where: Where | None  # the assignment that decides
    note: str = ""


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}


def _self_attr(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _guard_flag(tree: ast.Module, fn_name: str, line: int) -> str | None:
    """The ``self.<flag>`` an ``if`` around ``line`` tests, or an early ``if not self.<flag>: return`` before it,
    in function ``fn_name``."""
    for fn in ast.walk(tree):
        if not (isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == fn_name):
            continue
        for n in ast.walk(fn):
            if not isinstance(n, ast.If):
                continue
            t = n.test
            early = isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not) and n.lineno < line and \
                any(isinstance(s, ast.Return) for s in n.body)
            inside = n.lineno < line <= (n.end_lineno or n.lineno)
            if early and isinstance(t, ast.UnaryOp):
                f = _self_attr(t.operand)
                if f:
                    return f
            if inside:
                f = _self_attr(t)
                if f:
                    return f
    return None


def _call_guard(sm: Model, site: RunnerSite) -> tuple[str, str] | None:
    """``(file, flag)``: a ``if self.<flag>:`` around a call of the site's function in that runner's files."""
    for rel in sm.source.py_files():
        if not rel.startswith("vllm/v1/worker/") or runner_of(rel) is not site.kind:
            continue
        tree = read_module(sm, rel)
        if tree is None:
            continue
        for n in ast.walk(tree):
            if isinstance(n, ast.If) and _self_attr(n.test) and any(
                    isinstance(c, ast.Call) and (getattr(c.func, "id", None) == site.function
                                                 or getattr(c.func, "attr", None) == site.function)
                    for b in n.body for c in ast.walk(b)):
                return rel, _self_attr(n.test) or ""
    return None


class _Cond:
    """Three-valued evaluation of runner tests for one method (None: cannot tell)."""

    def __init__(self, sm: Model, method: str) -> None:
        self.sm, self.method = sm, method
        self.spec = read_module(sm, SPEC_CONFIG)
        self.depth = 0

    def truth(self, e: ast.AST) -> bool | None:
        if isinstance(e, ast.BoolOp):
            vals = [self.truth(v) for v in e.values]
            if isinstance(e.op, ast.And):
                return False if False in vals else (None if None in vals else True)
            return True if True in vals else (None if None in vals else False)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            v = self.truth(e.operand)
            return None if v is None else not v
        if isinstance(e, ast.Compare) and len(e.ops) == 1 and isinstance(e.left, ast.Attribute) \
                and e.left.attr == "method":
            right = self._const(e.comparators[0])
            if right is None:
                return None
            op = e.ops[0]
            if isinstance(op, (ast.Eq, ast.NotEq)):
                return (self.method == right) == isinstance(op, ast.Eq)
            if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, tuple):
                return (self.method in right) == isinstance(op, ast.In)
            return None
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and not e.args and self.spec is not None \
                and self.depth < 5:
            fn = next((n for n in ast.walk(self.spec) if isinstance(n, ast.FunctionDef) and n.name == e.func.attr),
                      None)
            if fn is not None and len(fn.body) >= 1 and isinstance(fn.body[-1], ast.Return) and fn.body[-1].value:
                self.depth += 1
                try:
                    return self.truth(fn.body[-1].value)
                finally:
                    self.depth -= 1
        return None

    def _const(self, e: ast.AST) -> Any:
        if isinstance(e, ast.Constant):
            return e.value
        if isinstance(e, (ast.Tuple, ast.List, ast.Set)):
            vals = [self._const(x) for x in e.elts]
            return None if any(v is None for v in vals) else tuple(vals)
        return None


def _reach(parents: dict[ast.AST, ast.AST], node: ast.AST, cond: _Cond) -> bool | None:
    """Whether ``node`` runs for the method, from the ``if``/``elif`` tests around it (tests the tool cannot read
    that do not name the method, such as ``get_pp_group().is_last_rank``, are taken as holding)."""
    out: bool | None = True
    cur = node
    while cur in parents:
        par = parents[cur]
        if isinstance(par, ast.If) and cur is not par.test:
            t = cond.truth(par.test)
            in_body = cur in par.body
            if t is None and not _names_method(par.test):
                t = True if in_body else None  # a set-up condition: the branch is taken in a speculative set-up
            if t is not None:
                if t != in_body:
                    return False
            else:
                out = None
        if isinstance(par, (ast.FunctionDef, ast.AsyncFunctionDef)):
            break
        cur = par
    return out


def _names_method(e: ast.AST) -> bool:
    return any((isinstance(n, ast.Attribute) and (n.attr == "method" or n.attr.startswith(("use_", "uses_"))))
               for n in ast.walk(e))


def _value(sm: Model, rel: str, value: ast.AST, method: str, draft: dict[str, Any]) -> tuple[bool | None, str]:
    """The flag's assigned value for the method: a constant, or a call of the tree's own predicate."""
    if isinstance(value, ast.Constant):
        return bool(value.value), ""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        name = value.func.id
        for cand in sm.source.py_files():
            if not cand.startswith("vllm/v1/"):
                continue
            tree = read_module(sm, cand)
            fn = me.find_function(tree, name) if tree is not None else None
            if fn is None or tree is None:
                continue
            spec = me.ConfigView({"method": method, "draft_model_config": {"hf_config": draft}}, "spec_config")
            try:
                res = me.Interpreter(me.World(), strict=True).call(me.FuncValue(fn, me.ModuleEnv.of(tree, cand)),
                                                                  [spec])
            except (me.EvalRaise, me.Unsupported) as exc:
                return None, f"{name}() could not be evaluated ({exc})"
            return (bool(res), f"{name}() at {cand}:{fn.lineno}") if isinstance(res, bool) else (None, "")
    # An attribute of the drafter (``self.drafter.eagle3_use_aux_hidden_state``): true unless the drafter config
    # switches aux states off (eagle_config.use_aux_hidden_state, which the aux-ids step reads).
    return True, f"{ast.unparse(value)}, true unless the drafter config turns aux states off"


def aux_use(sm: Model, site: RunnerSite | None, method: str, draft: dict[str, Any] | None) -> AuxUse:
    """Whether runner ``site`` asks the model for aux states (and so applies its check) under ``method``: once per
    check for the site, the method and the drafter config (every architecture's chain asks the same question, and
    answering it reads the runner's files)."""
    key = f"vllm:aux-use:{site.path}:{site.line}:{method}:{json.dumps(draft, sort_keys=True, default=str)}" \
        if site is not None else ""
    return sm.memo.get(key, lambda: _aux_use(sm, site, method, draft)) if key else _aux_use(sm, site, method, draft)


def _aux_use(sm: Model, site: RunnerSite | None, method: str, draft: dict[str, Any] | None) -> AuxUse:
    if site is None:
        return AuxUse(method, None, "", None, "no runner call site")
    tree = read_module(sm, site.path)
    flag = _guard_flag(tree, site.function, site.line) if tree is not None else None
    rel = site.path
    if flag is None:
        found = _call_guard(sm, site)
        if found is not None:
            rel, flag = found
    if not flag:
        # No flag: the check runs whenever the site runs (older trees); only EAGLE-3 is known to reach it.
        return AuxUse(method, True if method == DEFAULT else None, "", Where(site.path, site.line),
                      "the runner's check is not behind a flag the tool can read")
    ftree = read_module(sm, rel)
    if ftree is None:
        return AuxUse(method, None, flag, None, f"{rel} cannot be read")
    parents = _parents(ftree)
    cond = _Cond(sm, method)
    decided: AuxUse | None = None
    for n in sorted((n for n in ast.walk(ftree) if isinstance(n, ast.Assign) and len(n.targets) == 1
                     and _self_attr(n.targets[0]) == flag), key=lambda n: n.lineno):
        r = _reach(parents, n, cond)
        if r is False:
            continue
        val, how = _value(sm, rel, n.value, method, draft or {})
        w = Where(rel, n.lineno, f"self.{flag} = {ast.unparse(n.value)}")
        if r is None:
            return AuxUse(method, None, flag, w, f"whether {rel}:{n.lineno} runs for method {method!r} is unknown")
        decided = AuxUse(method, val, flag, w, how)
    return decided or AuxUse(method, None, flag, None, f"no assignment of self.{flag} in {rel}")


def nothing_asked(sm: Model | TreeReader, sites: tuple[RunnerSite, ...], method: str) -> str | None:
    """Why the runners ask the top-level model nothing under ``method``, or None if one of them may ask: every site
    (each runner the tree has) decides, for any drafter config, that it asks for no aux states, so it never applies
    the check nor calls the setter (EAGLE-1's ``eagle`` on 0.33.0: ``self.use_aux_hidden_state_outputs = False``,
    ``gpu_model_runner.py:593``). ``Engine.for_method`` makes the contract ``CheckKind.NONE`` from it."""
    if method == DEFAULT or not sites:
        return None
    told = []
    for site in sites:
        a = aux_use(sm, site, method, None)  # type: ignore[arg-type]  # reads only source and memo (TreeReader)
        if a.asks is not False or a.where is None:
            return None
        told.append(f"{a.where.text} at {a.where.path}:{a.where.line}")
    return (f"under method {method!r} the runner asks the model for no aux hidden states, so it applies no EAGLE-3 "
            f"check and calls no setter: {'; '.join(dict.fromkeys(told))}")


def known(sm: Model, method: str) -> bool | None:
    """Whether ``config/speculative.py`` names ``method`` (its ``SpeculativeMethod`` literals and tests): False is a
    method this vLLM does not know, which ``SpeculativeConfig`` refuses before anything loads; None where the tree
    has no such file (a tree laid out otherwise: not judged)."""
    tree = read_module(sm, SPEC_CONFIG)
    if tree is None:
        return None
    return any(isinstance(n, ast.Constant) and n.value == method for n in ast.walk(tree))


def builds_through_eagle_config(sm: Model, method: str) -> tuple[bool | None, Where | None]:
    """Whether ``SpeculativeConfig`` wraps the drafter's HF config in ``EAGLEConfig`` for ``method`` (the ``if``
    around ``EAGLEConfig(...)`` in ``config/speculative.py``, evaluated for the method)."""
    tree = read_module(sm, SPEC_CONFIG)
    if tree is None:
        return None, None
    parents = _parents(tree)
    call = next((n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "EAGLEConfig"),
                None)
    if call is None:
        return None, None
    cond = _Cond(sm, method)
    cur: ast.AST = call
    while cur in parents:
        par = parents[cur]
        if isinstance(par, ast.If) and cur in par.body and _names_method(par.test):
            return cond.truth(par.test), Where(SPEC_CONFIG, par.lineno, ast.unparse(par.test))
        cur = par
    return True, Where(SPEC_CONFIG, call.lineno, "EAGLEConfig(...)")
