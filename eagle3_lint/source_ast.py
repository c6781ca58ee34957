"""The syntax trees engine derivation reads of its own files, parsed on demand: the engine's non-model code
(registry, interfaces, runners, configs, the drafter classes) that an engine evaluates or walks while it derives
its data (``engines/``), and the one model method the semantic model still evaluates rather than reads from the
facts (``semantic.default_ids``: the model's default aux ids, run in ``minieval`` for a layer count).

Nothing else after the facts stage parses: the semantic model reads every class body from the facts
(``facts.Body``, ``facts.Method``), and rules and renderers read the semantic model
(``tests/test_house_rules.py``). These readers moved here from ``semantic.py`` (issue 22).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from eagle3_lint.facts import decode_source
from eagle3_lint.graph import ClassKey
from eagle3_lint.lazyimport import lazy

if TYPE_CHECKING:
    from eagle3_lint import minieval as me
    from eagle3_lint.stages import Model
else:
    me = lazy("eagle3_lint.minieval")  # imported on first use (lazyimport.py)


_PARSED_KEEP = 4


def read_module(sm: Model, rel: str) -> ast.Module | None:
    """The parsed module the model evaluates code of (default ids, the capture loop, the drafter's fc): parsed once
    per analysis, since several questions read the same large model file."""
    cache: dict[str, ast.Module | None] = sm.memo.get("parsed-modules", dict)
    sm.queries.note(rel)  # a syntax tree parsed for an earlier question: whoever asks now read that file too
    if rel not in cache:
        if len(cache) >= _PARSED_KEEP:
            del cache[next(iter(cache))]  # the oldest: questions about one class come together, ASTs are large
        cache[rel] = _parse_module(sm, rel)
    return cache[rel]


def read_function(sm: Model, rel: str, first: int, line: int, end: int) -> ast.FunctionDef | None:
    """The ``def`` on ``line`` of ``rel`` (decorators from ``first``, body to ``end``: the facts' span of it), as
    ``read_module`` would give it, but parsed from its own lines: SGLang's collection walks read a few methods
    of hundreds of large model files, and parsing each whole module for them was a third of a cold check of
    0.5.23. The lines are parsed under an ``if 1:`` so that their indentation, and with it every column, stays
    the file's, after blank lines that keep their numbers. Parsed once per analysis."""
    cache: dict[tuple[str, int], ast.FunctionDef | None] = sm.memo.get("parsed-functions", dict)
    sm.queries.note(rel)  # a method parsed for an earlier question: whoever asks now read that file too
    k = (rel, line)
    if k not in cache:
        cache[k] = _parse_function(sm, rel, first, line, end)
    return cache[k]


def _parse_function(sm: Model, rel: str, first: int, line: int, end: int) -> ast.FunctionDef | None:
    lines = _lines(sm, rel)
    if lines is None:
        return None
    span = lines[first - 1:end]
    if first < 2 or not span or not span[0][:1].isspace():
        return _whole(sm, rel, line)  # not a span this reading fits: the module, as read_module gives it
    # Blank lines first, so that the def's lines keep their numbers (cheaper than ast.increment_lineno after).
    tree = me.parse("\n" * (first - 2) + "if 1:\n" + "\n".join(span) + "\n", rel)
    fn = tree.body[0].body[0] if tree is not None and isinstance(tree.body[0], ast.If) and tree.body[0].body else None
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or fn.lineno != line:
        return _whole(sm, rel, line)
    return fn  # type: ignore[return-value]  # async def too; same fields used (minieval.function_at)


def _lines(sm: Model, rel: str) -> list[str] | None:
    """``rel``'s lines as the tokenizer counts them (``str.splitlines`` also breaks at form feeds and other
    separators), for the last few files asked: the methods asked about one class come together."""
    cache: dict[str, list[str] | None] = sm.memo.get("source-lines", dict)
    if rel not in cache:
        if len(cache) >= _PARSED_KEEP:
            del cache[next(iter(cache))]
        try:
            text = decode_source(sm.source.read_bytes(rel)) if sm.source.exists(rel) else None
        except (OSError, UnicodeError):
            text = None
        cache[rel] = None if text is None else text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return cache[rel]


def _whole(sm: Model, rel: str, line: int) -> ast.FunctionDef | None:
    tree = read_module(sm, rel)
    return me.function_at(tree, line) if tree is not None else None


def _parse_module(sm: Model, rel: str) -> ast.Module | None:
    if not sm.source.exists(rel):
        return None
    try:
        return me.parse(decode_source(sm.source.read_bytes(rel)), rel)
    except (OSError, UnicodeError, SyntaxError):
        return None



# -- the drafter's fc ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FcInit:
    """The ``__init__`` that builds a drafter's ``self.fc``: the class (``key`` or a model it builds), its line,
    file and function node; ``fnode`` None when it cannot be read."""

    owner: ClassKey
    line: int
    path: str
    tree: ast.Module | None
    fnode: ast.FunctionDef | None


def fc_init(sm: Model, key: ClassKey) -> FcInit | None:
    """Where ``key`` (or a model it builds, breadth first) assigns ``self.fc``, or None when nothing does. The
    drafter-fc step and the checkpoint check (drafter_weights.py) both evaluate that ``__init__``."""
    todo, seen = [key], set()
    found = None
    while todo and found is None:
        k = todo.pop(0)
        if k in seen:
            continue
        seen.add(k)
        found = sm.graph.assigns_attr(k, "fc")
        if found is None:
            todo.extend(d.target for d in sm.graph.delegations(k) if d.target is not None)
    if found is None:
        return None
    owner, line = found
    path = sm.graph.path_of(owner)
    tree = read_module(sm, path)
    cf = sm.graph.class_facts(owner)
    init = cf.methods.get("__init__") if cf else None
    fnode = me.function_at(tree, init.line) if tree is not None and init is not None else None
    return FcInit(owner, line, path, tree, fnode)


def method_node(sm: Model, key: ClassKey, name: str,
                after: ClassKey | None = None) -> tuple[ClassKey, ast.FunctionDef] | None:
    """The ``def`` of ``name`` for an instance of ``key`` (after class ``after`` in the MRO: ``super()``), parsed:
    for an engine that walks a model method's syntax while it derives its data (SGLang's drafter checks). The
    semantic model reads the facts' ``Body`` of it instead (``semantic.body_of``)."""
    found = sm.graph.def_of(key, name, after)
    if found is None:
        return None
    e, m = found
    fn = read_function(sm, sm.graph.path_of(e), m.first_line or m.line, m.line, m.end_line)
    return (e, fn) if fn is not None else None
