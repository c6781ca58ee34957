"""Seeded mutations of model source files that matter to EAGLE-3 analysis (for tests/test_incremental_mutations.py).

Each mutation is one edit a developer could make to a model file of a vLLM or SGLang tree: drop a base class,
add ``SupportsEagle3``, delete one of the contract's methods (or ``forward``/``__init__``), point ``self.model``
at another class of the file, stop the decoder's ``forward`` collecting or returning the aux hidden states,
rename a module-level class (its importers break), append a function (an edit the report must not show),
delete the file, or add a file that subclasses one of its classes and registers nothing.

Positions come from ``ast`` (and, for a class's name, from the tokens at the ``class`` statement); the text is
then edited by line and column. ``ast`` columns are UTF-8 byte offsets, converted to characters per line, so a
file with non-ASCII text is edited where ``ast`` says. Every edited text is parsed again: a mutation that would
leave a file that does not parse is a bug here, and raises instead of returning a broken file.

Everything is deterministic for a given ``random.Random``: candidates are listed in source order and drawn with
the generator, so a seed replays the same sequence on the same tree. A mutation that does not apply to a file
(no class with bases, no such method, nothing collected) returns None, and the caller tries another file.
"""

from __future__ import annotations

import ast
import enum
import io
import random
import re
import tokenize
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


class Kind(enum.Enum):
    """What a mutation does; the value is how a failure message names it."""

    DROP_BASE = "drop-base"
    ADD_EAGLE3_BASE = "add-eagle3-base"
    DELETE_METHOD = "delete-method"
    RETARGET_INNER = "retarget-inner"
    DROP_AUX_CAPTURE = "drop-aux-capture"
    DROP_AUX_RETURN = "drop-aux-return"
    RENAME_CLASS = "rename-class"
    APPEND_FUNCTION = "append-function"
    DELETE_FILE = "delete-file"
    ADD_SUBCLASS_FILE = "add-subclass-file"


class Engine(enum.Enum):
    """Whose tree a file belongs to: only vLLM has the ``SupportsEagle3`` interface to add."""

    VLLM = "vllm"
    SGLANG = "sglang"


# The kinds each engine's files can take (SGLang has no interface class: its contract is one duck-typed method).
KINDS: dict[Engine, tuple[Kind, ...]] = {
    Engine.VLLM: tuple(Kind),
    Engine.SGLANG: tuple(k for k in Kind if k is not Kind.ADD_EAGLE3_BASE),
}
# Mutations that change no class, method or registration: the report of the tree must stay the same.
NO_OP_KINDS = frozenset({Kind.APPEND_FUNCTION})

# Methods whose deletion the analysis must notice (the contract's, the decoder's, the constructor that
# builds the inner model).
METHODS = ("set_aux_hidden_state_layers", "get_eagle3_aux_hidden_state_layers",
           "get_eagle3_default_aux_hidden_state_layers", "set_eagle3_layers_to_capture", "forward", "__init__")
CONTRACT_METHODS = frozenset(METHODS[:4])
# Where a candidate "looks like" what the analysis reads, it is drawn first with this probability, so a short
# sequence is not spent on MLP or attention layers; the rest of the time any candidate may be drawn.
HOT_BIAS = 0.8
MODEL_SUFFIXES = ("ForCausalLM", "ForConditionalGeneration", "Model", "Mixin")
INNER_ATTRS = frozenset({"model", "language_model", "text_model", "llm"})
EAGLE3 = "SupportsEagle3"
VLLM_INTERFACES = "vllm.model_executor.models.interfaces"


class MutationError(AssertionError):
    """A mutation produced text that does not parse: a bug in this module, not in the tree."""


@dataclass(frozen=True)
class Mutation:
    """One applied mutation: what, where (tree-relative path), and a short human description."""

    kind: Kind
    path: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind.value} {self.path}: {self.detail}"


@dataclass(frozen=True)
class Edit:
    """A new text for one file and what the edit did."""

    text: str
    detail: str


@dataclass(frozen=True)
class _Span:
    """Replace characters ``start:end`` of the text with ``new``."""

    start: int
    end: int
    new: str


class _Text:
    """A source text with ``ast`` positions (line, UTF-8 byte column) turned into character offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        # Python's own line breaks (the tokenizer's), not str.splitlines, which also breaks at \f, \x1c, ...
        self.starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]

    def line(self, lineno: int) -> str:
        end = self.starts[lineno] if lineno < len(self.starts) else len(self.text)
        return self.text[self.starts[lineno - 1]:end]

    def offset(self, lineno: int, col: int) -> int:
        return self.starts[lineno - 1] + len(self.line(lineno).encode("utf-8")[:col].decode("utf-8", "replace"))

    def start(self, node: ast.AST) -> int:
        return self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        return self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def line_end(self, lineno: int) -> int:
        return self.starts[lineno] if lineno < len(self.starts) else len(self.text)

    def apply(self, spans: Sequence[_Span]) -> str:
        out = self.text
        for s in sorted(spans, key=lambda s: s.start, reverse=True):
            out = out[:s.start] + s.new + out[s.end:]
        return out


def _pick(rng: random.Random, candidates: Sequence[T], hot: Sequence[T]) -> T | None:
    """A candidate drawn with ``rng``: from ``hot`` (if any) with probability ``HOT_BIAS``, else from all."""
    if not candidates:
        return None
    if hot and rng.random() < HOT_BIAS:
        return rng.choice(list(hot))
    return rng.choice(list(candidates))


def _name(node: ast.expr) -> str:
    """The last name of a base or callee: ``SupportsPP``, ``interfaces.SupportsPP`` -> ``SupportsPP``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        return _name(node.value)
    return ""


def _model_like(name: str) -> bool:
    return name.endswith(MODEL_SUFFIXES) or name.startswith("Supports")


def _classes(tree: ast.Module) -> list[ast.ClassDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]


def _module_classes(tree: ast.Module) -> list[ast.ClassDef]:
    return [n for n in tree.body if isinstance(n, ast.ClassDef)]


def _bodies(tree: ast.AST) -> Iterator[tuple[ast.stmt, list[ast.stmt]]]:
    """Every statement with the block (list of statements) that holds it."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if isinstance(block, list):
                for stmt in block:
                    if isinstance(stmt, ast.stmt):
                        yield stmt, block


def _functions(tree: ast.AST, name: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]


def _mentions_aux(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and "aux" in n.id for n in ast.walk(node))


def _remove_stmt(t: _Text, stmt: ast.stmt, block: list[ast.stmt]) -> _Span | None:
    """The whole lines of ``stmt`` (decorators included) removed, or replaced with ``pass`` when it is the only
    statement of its block; None if it shares a line with other code (``a = 1; b = 2``), where whole-line
    removal would take more than the statement."""
    decorators: list[ast.expr] = getattr(stmt, "decorator_list", [])
    first = min([stmt.lineno] + [d.lineno for d in decorators])
    prefix = _before(t, stmt)
    if decorators:  # the first decorator's line holds only its '@' before it
        top = min(decorators, key=lambda d: (d.lineno, d.col_offset))
        if _before(t, top).strip() != "@":
            return None
    assert stmt.end_lineno is not None and stmt.end_col_offset is not None
    rest = t.line(stmt.end_lineno).encode("utf-8")[stmt.end_col_offset:].decode("utf-8", "replace").strip()
    if prefix.strip() or (rest and not rest.startswith("#")):
        return None
    span_start, span_end = t.starts[first - 1], t.line_end(stmt.end_lineno)
    if len(block) == 1:
        newline = re.search(r"\r\n|\r|\n", t.line(stmt.end_lineno))
        return _Span(span_start, span_end, prefix + "pass" + (newline.group() if newline else "\n"))
    return _Span(span_start, span_end, "")


def _before(t: _Text, node: ast.AST) -> str:
    """What its line holds before ``node`` starts."""
    return t.line(node.lineno).encode("utf-8")[:node.col_offset].decode("utf-8", "replace")  # type: ignore[attr-defined]


def _comma_after(t: _Text, offset: int) -> int | None:
    """The offset just past a ``,`` that is the next token after ``offset`` (comments and line breaks
    skipped), or None. Tokenizing from the middle of a bracketed list is fine for the first few tokens."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    rest = t.text[offset:]
    lines = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", rest)]
    try:
        for tok in tokenize.generate_tokens(io.StringIO(rest).readline):
            if tok.type in skip:
                continue
            if tok.string == ",":
                return offset + lines[tok.end[0] - 1] + tok.end[1]
            return None
    except (tokenize.TokenError, SyntaxError):
        return None
    return None


def _remove_argument(t: _Text, node: ast.ClassDef | ast.Call, victim: ast.AST) -> _Span:
    """``victim`` (a base, a positional argument or a keyword) taken out of its parenthesised list, with the
    comma that separated it from its neighbour."""
    items: list[ast.AST] = [*(node.bases if isinstance(node, ast.ClassDef) else node.args), *node.keywords]
    items.sort(key=lambda n: (n.lineno, n.col_offset))  # type: ignore[attr-defined]
    i = items.index(victim)
    if i + 1 < len(items):
        return _Span(t.start(victim), t.start(items[i + 1]), "")
    if i > 0:
        return _Span(t.end(items[i - 1]), t.end(victim), "")
    # The only one: its trailing comma goes too, or ``class X(\n    A,\n)`` would become ``class X(\n    ,\n)``.
    return _Span(t.start(victim), _comma_after(t, t.end(victim)) or t.end(victim), "")


def _bound_names(tree: ast.Module) -> set[str]:
    """Names a module binds at its top level by class, function, assignment or import."""
    out: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            out.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in stmt.names)
        elif isinstance(stmt, ast.Assign):
            out.update(n.id for tgt in stmt.targets for n in ast.walk(tgt) if isinstance(n, ast.Name))
    return out


# -- the text mutations --------------------------------------------------------------------------------------


def drop_base(text: str, tree: ast.Module, rng: random.Random) -> Edit | None:
    """One base class taken out of a class's bases (``SupportsEagle3``, ``SupportsPP``, a model base, ...)."""
    cands = [(c, b) for c in _classes(tree) for b in c.bases]
    hot = [(c, b) for c, b in cands if _model_like(_name(b)) or (_model_like(c.name) and _name(b) != "Module")]
    got = _pick(rng, cands, hot)
    if got is None:
        return None
    cls, base = got
    t = _Text(text)
    return Edit(t.apply([_remove_argument(t, cls, base)]), f"{cls.name} loses base {ast.unparse(base)}")


def add_eagle3_base(text: str, tree: ast.Module, rng: random.Random) -> Edit | None:
    """``SupportsEagle3`` appended to a class's bases, and imported from vLLM's interfaces if the file lacks it."""
    cands = [c for c in _classes(tree) if c.bases and c.name != EAGLE3 and EAGLE3 not in map(_name, c.bases)]
    hot = [c for c in cands if c.name.endswith(MODEL_SUFFIXES[:2])]
    cls = _pick(rng, cands, hot)
    if not isinstance(cls, ast.ClassDef):
        return None
    t = _Text(text)
    spans = [_Span(t.end(cls.bases[-1]), t.end(cls.bases[-1]), f", {EAGLE3}")]
    if EAGLE3 not in _bound_names(tree):
        imports = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
        # Import it the way the file already imports vLLM's interfaces (relative or absolute), if it does.
        beside = [s for s in imports if isinstance(s, ast.ImportFrom) and (s.module or "").split(".")[-1] ==
                  "interfaces"]
        if beside:
            anchor: ast.stmt | None = beside[0]
            line = f"from {'.' * beside[0].level}{beside[0].module} import {EAGLE3}\n"
        else:
            anchor = imports[-1] if imports else None
            line = f"from {VLLM_INTERFACES} import {EAGLE3}\n"
        if anchor is None and tree.body and isinstance(tree.body[0], ast.Expr) and \
                isinstance(tree.body[0].value, ast.Constant) and isinstance(tree.body[0].value.value, str):
            anchor = tree.body[0]  # after the module docstring, which must stay first
        at = t.line_end(anchor.end_lineno) if anchor is not None and anchor.end_lineno else 0
        if at == len(text) and not text.endswith(("\n", "\r")):
            line = "\n" + line
        spans.append(_Span(at, at, line))
    return Edit(t.apply(spans), f"{cls.name} gains base {EAGLE3}")


def delete_method(text: str, tree: ast.Module, rng: random.Random) -> Edit | None:
    """One of ``METHODS`` deleted from a class (a class left empty keeps a ``pass``)."""
    t = _Text(text)
    cands = [(c, f) for c in _classes(tree) for f in c.body
             if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name in METHODS
             and _remove_stmt(t, f, c.body) is not None]
    hot = [(c, f) for c, f in cands if f.name in CONTRACT_METHODS or c.name.endswith(MODEL_SUFFIXES)]
    got = _pick(rng, cands, hot)
    if got is None:
        return None
    cls, fn = got
    span = _remove_stmt(t, fn, cls.body)
    assert span is not None
    return Edit(t.apply([span]), f"{cls.name}.{fn.name} deleted")


def retarget_inner(text: str, tree: ast.Module, rng: random.Random) -> Edit | None:
    """In an ``__init__``, ``self.X = A(...)`` (A a class name) becomes ``self.X = B(...)``, B another class of
    the file."""
    names = [c.name for c in _module_classes(tree)]
    cands: list[tuple[str, ast.Attribute, ast.Name]] = []
    for cls in _classes(tree):
        for init in (f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"):
            for node in ast.walk(init):
                if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
                    continue
                tgt, val = node.targets[0], node.value
                if isinstance(tgt, ast.Attribute) and isinstance(tgt.value, ast.Name) and tgt.value.id == "self" \
                        and isinstance(val, ast.Call) and isinstance(val.func, ast.Name) \
                        and (val.func.id in names or val.func.id[:1].isupper()) \
                        and any(n != val.func.id for n in names):
                    cands.append((cls.name, tgt, val.func))
    hot = [c for c in cands if c[1].attr in INNER_ATTRS]
    got = _pick(rng, cands, hot)
    if got is None:
        return None
    owner, attr, callee = got
    new = rng.choice([n for n in names if n != callee.id])
    t = _Text(text)
    return Edit(t.apply([_Span(t.start(callee), t.end(callee), new)]),
                f"{owner}.__init__: self.{attr.attr} = {callee.id}(...) -> {new}(...)")


def drop_aux_capture(text: str, tree: ast.Module, rng: random.Random) -> Edit | None:
    """In a ``forward``, the statement that collects an aux hidden state is removed
    (``aux_hidden_states.append(...)``, ``self._maybe_add_hidden_state(aux_hidden_states, ...)``), or the
    keyword argument that hands the collector to a layer (SGLang: ``capture_output=aux_hidden_states.capture``)."""
    t = _Text(text)
    owner = {id(f): c.name for c in _classes(tree) for f in c.body if isinstance(f, ast.FunctionDef)}
    cands: list[tuple[str, _Span, str]] = []
    for fn in _functions(tree, "forward"):
        where = f"{owner.get(id(fn), '<function>')}.forward"
        for stmt, block in _bodies(fn):
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and _mentions_aux(stmt.value):
                span = _remove_stmt(t, stmt, block)
                if span is not None:
                    cands.append((where, span, f"line {stmt.lineno} removed: {ast.unparse(stmt)[:60]}"))
        for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
            for kw in call.keywords:
                if kw.arg and _mentions_aux(kw.value):
                    cands.append((where, _remove_argument(t, call, kw),
                                  f"line {kw.lineno} keyword {kw.arg}= removed"))
    got = _pick(rng, cands, [])
    if got is None:
        return None
    where, span, what = got
    return Edit(t.apply([span]), f"{where}: {what}")


def drop_aux_return(text: str, tree: ast.Module, rng: random.Random) -> Edit | None:
    """In a ``forward``, ``return hidden_states, aux_hidden_states`` becomes ``return hidden_states``."""
    cands = [r for fn in _functions(tree, "forward") for r in ast.walk(fn)
             if isinstance(r, ast.Return) and isinstance(r.value, ast.Tuple) and len(r.value.elts) >= 2
             and any(_mentions_aux(e) for e in r.value.elts[1:])]
    ret = _pick(rng, cands, [])
    if not isinstance(ret, ast.Return) or not isinstance(ret.value, ast.Tuple):
        return None
    t = _Text(text)
    first = ret.value.elts[0]
    kept = text[t.start(first):t.end(first)]
    return Edit(t.apply([_Span(t.start(ret.value), t.end(ret.value), kept)]),
                f"line {ret.lineno}: return {ast.unparse(ret.value)[:50]} -> return {kept}")


def _method_of(tree: ast.Module, cls: str, name: str) -> tuple[ast.ClassDef, ast.FunctionDef] | None:
    for c in _classes(tree):
        if c.name == cls:
            for f in c.body:
                if isinstance(f, ast.FunctionDef) and f.name == name:
                    return c, f
    return None


def remove_method(text: str, tree: ast.Module, cls: str, name: str) -> Edit | None:
    """``cls.name`` deleted, as ``delete_method`` deletes one, with the method named rather than drawn (a test that
    pins one real class's shape)."""
    hit = _method_of(tree, cls, name)
    t = _Text(text)
    span = _remove_stmt(t, hit[1], hit[0].body) if hit is not None else None
    return None if span is None else Edit(t.apply([span]), f"{cls}.{name} deleted")


def stop_delegating(text: str, tree: ast.Module, cls: str, name: str) -> Edit | None:
    """In ``cls.name``, the first statement that hands the call on to an inner model (``self.<attr>.<name>(...)``,
    its ``if hasattr(...)`` guard included) removed; a ``pass`` stays where it was the method's only statement."""
    hit = _method_of(tree, cls, name)
    if hit is None:
        return None
    fn = hit[1]
    me = fn.args.args[0].arg if fn.args.args else "self"
    t = _Text(text)
    for st in fn.body:
        calls = [n for n in ast.walk(st) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and n.func.attr == name and _name(n.func.value) != me
                 and ast.unparse(n.func.value).startswith(me + ".")]
        span = _remove_stmt(t, st, fn.body) if calls else None
        if span is not None:
            return Edit(t.apply([span]), f"{cls}.{name}: line {st.lineno} removed: {ast.unparse(calls[0])[:60]}")
    return None


def rebase_index(text: str, tree: ast.Module, rng: random.Random) -> Edit | None:
    """In a ``forward``'s ``for i in range(<start>, <end>)`` loop, one ``i in self.<ids>`` becomes
    ``i - <start> in self.<ids>``: the index, absolute already, rebased onto the loop's first layer."""
    cands: list[tuple[ast.Compare, str, str]] = []
    for fn in _functions(tree, "forward"):
        for loop in (n for n in ast.walk(fn) if isinstance(n, ast.For)):
            it = loop.iter
            if not (isinstance(loop.target, ast.Name) and isinstance(it, ast.Call) and _name(it.func) == "range"
                    and len(it.args) >= 2 and not isinstance(it.args[0], ast.Constant)):
                continue
            idx, start = loop.target.id, ast.unparse(it.args[0])
            cands += [(n, idx, start) for st in loop.body for n in ast.walk(st)
                      if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.In)
                      and isinstance(n.left, ast.Name) and n.left.id == idx]
    got = _pick(rng, cands, [])
    if got is None:
        return None
    cmp, idx, start = got
    t = _Text(text)
    return Edit(t.apply([_Span(t.start(cmp.left), t.end(cmp.left), f"{idx} - {start}")]),
                f"line {cmp.lineno}: {ast.unparse(cmp)[:50]} -> {idx} - {start} in ...")


def rename_class(text: str, tree: ast.Module, rng: random.Random, tag: int) -> Edit | None:
    """A module-level class renamed ``<Name>Mut<tag>``, with every use of the name in its own file: the file
    stays consistent, the files that import the old name break."""
    imported = {a.asname or a.name for s in ast.walk(tree) if isinstance(s, (ast.Import, ast.ImportFrom))
                for a in s.names}
    cands = [c for c in _module_classes(tree) if c.name not in imported]
    hot = [c for c in cands if _model_like(c.name)]
    cls = _pick(rng, cands, hot)
    if not isinstance(cls, ast.ClassDef):
        return None
    t = _Text(text)
    new = f"{cls.name}Mut{tag}"
    # The name's own position: the NAME token after ``class`` (ast keeps the statement's start only).
    start = t.start(cls)
    tokens = tokenize.generate_tokens(io.StringIO(text[start:]).readline)
    names = [tok for _, tok in zip(range(2), (k for k in tokens if k.type == tokenize.NAME), strict=False)]
    assert names[0].string == "class" and names[1].string == cls.name, names
    row, col = names[1].start  # row 1 is the rest of the class line, whose column counts from ``start``
    at = start + col if row == 1 else t.starts[cls.lineno + row - 2] + col
    spans = [_Span(at, at + len(cls.name), new)]
    spans += [_Span(t.start(n), t.end(n), new) for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == cls.name]
    return Edit(t.apply(spans), f"class {cls.name} renamed {new} ({len(spans) - 1} uses in the file)")


def append_function(text: str, tag: int) -> Edit:
    """A module-level function appended: new facts for the file, nothing the EAGLE-3 analysis reads."""
    sep = "" if text.endswith(("\n", "\r")) or not text else "\n"
    return Edit(text + sep + f"\n\ndef _mutation_probe_{tag}() -> int:\n    return {tag}\n",
                f"def _mutation_probe_{tag}() appended")


def mutate_text(kind: Kind, text: str, rng: random.Random, tag: int = 0) -> Edit | None:
    """``text`` after a mutation of ``kind`` (a text kind), or None when the file has nothing it applies to
    (or does not parse). ``tag`` makes added names unique over a sequence."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    if kind is Kind.APPEND_FUNCTION:
        edit: Edit | None = append_function(text, tag)
    elif kind is Kind.RENAME_CLASS:
        edit = rename_class(text, tree, rng, tag)
    else:
        fn = {Kind.DROP_BASE: drop_base, Kind.ADD_EAGLE3_BASE: add_eagle3_base, Kind.DELETE_METHOD: delete_method,
              Kind.RETARGET_INNER: retarget_inner, Kind.DROP_AUX_CAPTURE: drop_aux_capture,
              Kind.DROP_AUX_RETURN: drop_aux_return}.get(kind)
        if fn is None:
            raise ValueError(f"{kind.value} is not a text mutation")
        edit = fn(text, tree, rng)
    if edit is None:
        return None
    if edit.text == text:
        raise MutationError(f"{kind.value}: {edit.detail}: the text did not change")
    try:
        ast.parse(edit.text)
    except SyntaxError as exc:
        raise MutationError(f"{kind.value}: {edit.detail}: the result does not parse: {exc}") from None
    return edit


# -- on a tree ------------------------------------------------------------------------------------------------


def engine_of(rel: str) -> Engine:
    return Engine.SGLANG if rel.split("/", 1)[0] == "sglang" else Engine.VLLM


def module_of(rel: str) -> str:
    mod = rel[:-3].replace("/", ".")
    return mod[: -len(".__init__")] if mod.endswith(".__init__") else mod


def apply(root: Path, rel: str, kind: Kind, rng: random.Random, tag: int) -> Mutation | None:
    """Mutate the file ``rel`` (tree-relative, '/'-separated) of the tree at ``root`` in place, or None when the
    mutation does not apply to it. ``ADD_SUBCLASS_FILE`` writes a new file beside it, ``zz_mutation_<tag>.py``."""
    path = root / rel
    if kind not in KINDS[engine_of(rel)] or not path.is_file():
        return None
    if kind is Kind.DELETE_FILE:
        path.unlink()
        return Mutation(kind, rel, "file deleted")
    text = path.read_bytes().decode("utf-8", "surrogateescape")
    if kind is Kind.ADD_SUBCLASS_FILE:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return None
        cands = _module_classes(tree)
        cls = _pick(rng, cands, [c for c in cands if _model_like(c.name)])
        if not isinstance(cls, ast.ClassDef):
            return None
        new_rel = f"{rel.rsplit('/', 1)[0]}/zz_mutation_{tag}.py"
        sub = f"{cls.name}Sub{tag}"
        (root / new_rel).write_text(
            f'"""Added by tests/mutate.py: a subclass of {cls.name} that nothing registers."""\n\n'
            f"from {module_of(rel)} import {cls.name}\n\n\nclass {sub}({cls.name}):\n    pass\n", encoding="utf-8")
        return Mutation(kind, new_rel, f"class {sub}({cls.name}) added, from {rel}")
    edit = mutate_text(kind, text, rng, tag)
    if edit is None:
        return None
    path.write_bytes(edit.text.encode("utf-8", "surrogateescape"))
    return Mutation(kind, rel, edit.detail)
