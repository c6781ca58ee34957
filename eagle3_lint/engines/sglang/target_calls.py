"""The other method SGLang's EAGLE worker calls on the target model at start-up: ``get_embed_and_head()``.

The drafter shares the target's embedding and LM head, so the EAGLE worker asks the top-level target model for
them: ``self.target_worker.model_runner.model.get_embed_and_head()`` in every release up to 0.5.20 (0.5.10
``speculative/eagle_worker.py:158``), and from 0.5.21 ``target_model.get_embed_and_head()`` in
``speculative/pp_draft_embedding.py`` (0.5.23 :95), whose ``resolve_target_embed_and_head`` first tries
``get_embed_and_head_for_draft`` when the target has it (``hasattr``, :85-94) and re-raises an
``AttributeError`` unless the target's input embedding is a pipeline stage's ``PPMissingLayer`` (:96-99). A class
without the method fails there with ``AttributeError``, whether or not it has the setter.

A call site is any ``<expr>.get_embed_and_head()`` outside ``models/``. Whether it runs before the setter check
is read from the tree, not assumed:

* if the setter check runs while the target's model runner is built (the function holding it is reached from the
  runner class's ``__init__`` through ``self.`` calls: 0.5.10 ``ModelRunner.__init__`` -> ``initialize``,
  ``model_runner.py:668``), it runs first: the EAGLE worker reads the target through a worker built before it;
* else the callers of both are walked up (a call of a method through ``self.`` reaches only that class's
  method; any other call by name), and in the nearest function that leads to both, the earlier call decides
  (0.5.23 ``Scheduler.init_model_worker``: ``init_memory_pools()`` at ``managers/scheduler.py:1137``, which
  allocates the drafter's pools and takes the target's embedding, before ``init_all_attention_backends()`` at
  :1145, which checks the setter);
* else the order is unknown (``before_setter=None``).

Only files whose bytes name a function being walked are parsed.
"""

from __future__ import annotations

import ast
from collections import deque
from dataclasses import dataclass

from eagle3_lint.engines.sglang.runner_files import SETTER, RunnerFiles, hasattr_tests, walk
from eagle3_lint.facts import dotted
from eagle3_lint.runner import TargetCall

GETTER = "get_embed_and_head"
# How far up the callers are walked: 0.5.23's setter check is 3 calls below Scheduler.init_model_worker and the
# getter 5 (resolve_target_embed_and_head <- resolve_draft_embed_and_head <- _resolve_shared_embed_and_head <-
# init_lm_head <- alloc_memory_pool <- init_memory_pools); one more for slack.
MAX_UP = 7
# A name called from more files than this is a generic one (``run``, ``forward``): walking up through it would
# reach most of the package, not the start-up path (0.5.23's path names are called from 1-3 files each).
MAX_CALLING_FILES = 40


@dataclass(frozen=True)
class _Def:
    path: str
    cls: str | None  # the class a method belongs to, None for a module function
    name: str

    @property
    def qual(self) -> str:
        return f"{self.cls}.{self.name}" if self.cls else self.name


# A def, its node, and its calls: (callee name, called through ``self.``, line).
_DefCalls = tuple[_Def, ast.FunctionDef | ast.AsyncFunctionDef, list[tuple[str, bool, int]]]
# A call of a name: the def it is in, whether it is through ``self.``, its line.
_Call = tuple[_Def, bool, int]


class _Index:
    """The server's own files (``runner_files.SERVER_DIR``: what ``sglang.launch_server`` runs; benchmarks and tests
    drive the runner in orders of their own), parsed on demand, and who calls whom by name."""

    def __init__(self, files: RunnerFiles) -> None:
        self._rf = files
        self.files = files.server_files
        self._defs: dict[str, list[_DefCalls]] = {}
        self._calls: dict[str, dict[str, list[_Call]]] = {}  # file -> callee name -> its calls, in def and call order
        self._calling: dict[str, list[str]] = {}  # name -> the files whose bytes hold ``name(``

    def data(self, rel: str) -> bytes:
        return self._rf.server_data(rel)

    def calling(self, name: str) -> list[str]:
        """The files whose bytes hold ``name(``, in path order (found once per name)."""
        out = self._calling.get(name)
        if out is None:
            needle = name.encode() + b"("
            out = self._calling[name] = [rel for rel in self.files if needle in self.data(rel)]
        return out

    def defs(self, rel: str) -> list[_DefCalls]:
        """Every def of ``rel`` with its calls: (callee name, called through ``self.``, line)."""
        if rel in self._defs:
            return self._defs[rel]
        out: list[_DefCalls] = []
        tree = self._rf.tree(rel)
        if tree is not None:
            def visit(node: ast.AST, cls: str | None) -> None:
                for ch in ast.iter_child_nodes(node):
                    if isinstance(ch, ast.ClassDef):
                        visit(ch, ch.name)
                    elif isinstance(ch, ast.FunctionDef | ast.AsyncFunctionDef):
                        calls: list[tuple[str, bool, int]] = []
                        for n in walk(ch):
                            if not isinstance(n, ast.Call):
                                continue
                            if isinstance(n.func, ast.Attribute):
                                via_self = isinstance(n.func.value, ast.Name) and n.func.value.id == "self"
                                calls.append((n.func.attr, via_self, n.lineno))
                            elif isinstance(n.func, ast.Name):
                                calls.append((n.func.id, False, n.lineno))
                        out.append((_Def(rel, cls, ch.name), ch, calls))
                        visit(ch, cls)
            visit(tree, None)
        self._defs[rel] = out
        return out

    def calls_in(self, rel: str) -> dict[str, list[_Call]]:
        """``rel``'s calls by callee name, each list in def order, then call order (the order ``defs`` lists)."""
        by = self._calls.get(rel)
        if by is None:
            by = self._calls[rel] = {}
            for c, _, calls in self.defs(rel):
                for callee, via_self, line in calls:
                    by.setdefault(callee, []).append((c, via_self, line))
        return by

    def enclosing(self, rel: str, line: int) -> _Def | None:
        best: _Def | None = None
        for d, node, _ in self.defs(rel):
            if node.lineno <= line <= (node.end_lineno or node.lineno):
                best = d  # defs are listed outer first, so the last hit is the innermost
        return best

    def callers(self, d: _Def) -> list[tuple[_Def, int]]:
        """The defs calling ``d`` (a constructor call for ``__init__``) and the line of each call."""
        name = d.cls if d.name == "__init__" else d.name
        if name is None:
            return []
        out: list[tuple[_Def, int]] = []
        for rel in self.calling(name):
            for c, via_self, line in self.calls_in(rel).get(name, ()):
                if via_self and d.name == "__init__":
                    continue
                if via_self and not (rel == d.path and c.cls == d.cls):
                    continue  # self.x() reaches only x of its own class
                out.append((c, line))
        return out

    def level(self, seen: dict[_Def, tuple[int, int, tuple[str, ...]]], hops: int) -> None:
        """Add to ``seen`` (def -> (hops, line of the call that leads down, the defs on the way, the start first))
        the callers of the defs ``hops`` calls up, skipping names called from too many files to be one path."""
        for d in [d for d, v in seen.items() if v[0] == hops]:
            name = d.cls if d.name == "__init__" else d.name
            if name is None or len(self.calling(name)) > MAX_CALLING_FILES:
                continue
            for c, line in self.callers(d):
                if c not in seen:
                    seen[c] = (hops + 1, line, (*seen[d][2], c.qual))

    def built_with(self, start: _Def) -> tuple[str, ...] | None:
        """The ``self.`` calls from its class's ``__init__`` down to ``start`` (a module function: from the first
        method calling it), or None when ``start`` does not run while its object is built."""
        firsts = [start] if start.cls is not None else [c for c, _ in self.callers(start) if c.cls is not None]
        for first in firsts:
            seen: dict[_Def, tuple[str, ...]] = {first: (first.qual,)}
            todo = deque([first])
            while todo:
                d = todo.popleft()
                if d.name == "__init__":
                    way = seen[d][::-1]
                    return way + ((start.qual,) if start is not first else ())
                for c, _line in self.callers(d):
                    if c.path == d.path and c.cls == d.cls and c not in seen:
                        seen[c] = (*seen[d], c.qual)
                        todo.append(c)
        return None


def _alternatives(fn: ast.AST, receiver: str) -> tuple[str, ...]:
    """Methods tested with ``hasattr(<receiver>, "m")`` in ``fn`` and then called on it: tried first."""
    out: list[str] = []
    for node, m in hasattr_tests(fn, receiver):
        if m == GETTER or m in out:
            continue
        if any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == m
               for c in ast.walk(node)):
            out.append(m)
    return tuple(out)


def _order(ix: _Index, setter: _Def | None, getter: _Def) -> tuple[bool | None, str]:
    if setter is None:
        return None, f"no runner call of {SETTER}() to order against"
    built = ix.built_with(setter)
    if built is not None:
        return False, (f"the setter check runs while the target's {built[0].split('.')[0]} is built "
                       f"({' -> '.join(built)}, {setter.path}), before the worker that calls {GETTER}() is given "
                       "the target")
    a: dict[_Def, tuple[int, int, tuple[str, ...]]] = {setter: (0, 0, (setter.qual,))}
    b: dict[_Def, tuple[int, int, tuple[str, ...]]] = {getter: (0, 0, (getter.qual,))}
    for hops in range(MAX_UP):
        # Both sides one call further up at a time, so the nearest function leading to both is found first.
        common = sorted(((a[d][0] + b[d][0], d.path, a[d][1], d) for d in a if d in b), key=lambda t: t[:3])
        for _, _, _, d in common:
            la, lb = a[d][1], b[d][1]
            if la == lb:
                continue  # one call leads to both: its callee orders them, which is a nearer common caller
            first = "before" if lb < la else "after"
            return lb < la, (f"{d.qual} reaches {GETTER}() through {b[d][2][-2]}() at {d.path}:{lb}, {first} the "
                             f"setter check through {a[d][2][-2]}() at :{la}")
        ix.level(a, hops)
        ix.level(b, hops)
    return None, f"no function found within {MAX_UP} calls that leads to both the setter check and {GETTER}()"


def derive(files: RunnerFiles, setter_site: tuple[str, int] | None) -> tuple[TargetCall, ...]:
    """Every runner call of ``get_embed_and_head()`` on the target, with the order against the setter check at
    ``setter_site`` (the runner's primary call of the setter), read from ``files`` (runner.derive's)."""
    ix = _Index(files)
    setter = ix.enclosing(*setter_site) if setter_site is not None else None
    out: list[TargetCall] = []
    for rel in ix.calling(GETTER):
        for d, fn, _calls in ix.defs(rel):
            for node in ast.walk(fn):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr == GETTER) or ix.enclosing(rel, node.lineno) != d:
                    continue
                receiver = dotted(node.func.value) or ast.unparse(node.func.value)
                before, why = _order(ix, setter, d)
                out.append(TargetCall(rel, node.lineno, d.qual, GETTER, receiver, _alternatives(fn, receiver),
                                      before, why))
    return tuple(sorted(out, key=lambda c: (c.path, c.line)))
