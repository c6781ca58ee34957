"""Where SGLang's runner asks a model for EAGLE-3 capture, and where the drafter's layer ids come from.

Both are found by shape, not by file name (the call moved from ``model_runner.py`` and
``cuda_graph_runner.py`` to ``model_runner_components/`` over the releases):

* a call site is any ``<expr>.set_eagle3_layers_to_capture(...)`` outside ``models/``; the receiver
  is the top-level model object, so the check it amounts to is "the registered class has the method
  (through its MRO)". A call with no argument captures the model's default layers (the CUDA-graph
  runner of 0.4.x - 0.5.10 did this, before the drafter's ids were applied). A ``hasattr`` test on
  the same method in the enclosing function tells whether a missing method raises a readable error
  (``ValueError``) or Python's ``AttributeError``, or is skipped.
* an id source is a read of ``"eagle_aux_hidden_state_layer_ids"`` from the drafter's config
  (subscript or ``.get``); when it sits in a ``try`` whose handler assigns a fallback, the fallback is
  recorded (``None``: each model's setter then picks its default layers).

Only files whose bytes name the method (or the key) are parsed (runner_files.py: each file is read once for both,
and for target_calls.py's walk of the start-up order).
"""

from __future__ import annotations

import ast
import enum
from dataclasses import dataclass

from eagle3_lint.engines.sglang import target_calls
from eagle3_lint.engines.sglang.runner_files import IDS_KEY, SETTER, RunnerFiles, hasattr_tests
from eagle3_lint.facts import dotted
from eagle3_lint.runner import MODEL_CLASS, RunnerPath, RunnerSite, SetterIds
from eagle3_lint.source import SourceTree


class IdsPassed(enum.Enum):
    DRAFTER = "drafter-ids"  # called with the drafter config's ids (or None when the config has none)
    DEFAULT = "default-ids"  # called with no argument: the model's own default layers


class MissingMethod(enum.Enum):
    ATTRIBUTE_ERROR = "AttributeError"  # no hasattr guard: Python raises on the attribute lookup
    RAISES = "raises"  # ``if not hasattr(...): raise ...`` before the call
    SKIPPED = "skipped"  # ``if hasattr(...):`` around the call: a model without it is silently not asked


@dataclass(frozen=True)
class CallSite:
    path: str
    line: int
    function: str  # the enclosing def
    receiver: str  # ``self.model``, ``model``, ``self.model_runner.model``
    args: str  # the arguments as written
    ids: IdsPassed
    missing: MissingMethod
    error: str = ""  # for RAISES: ``ValueError: Model {...} does not implement ...``
    # The first call after this one, in the same function, that captures (``self.capture()`` of the CUDA-graph
    # runner): what the decoder collects is then baked into the capture. "" when there is none.
    captured_by: str = ""


@dataclass(frozen=True)
class IdSource:
    path: str
    line: int
    text: str  # the read as written
    fallback: str | None  # the handler's assigned value when the read is in a try (``None``), else None
    bare_except: bool  # ``except:`` (catches everything, KeyboardInterrupt included)


def _enclosing(node: ast.AST, parents: dict[ast.AST, ast.AST], kinds: tuple[type, ...]) -> ast.AST | None:
    cur = parents.get(node)
    while cur is not None and not isinstance(cur, kinds):
        cur = parents.get(cur)
    return cur


def _files(source: SourceTree | RunnerFiles) -> RunnerFiles:
    return source if isinstance(source, RunnerFiles) else RunnerFiles(source)


def _hasattr_guard(fn: ast.AST, receiver: str) -> tuple[MissingMethod, str]:
    for node, method in hasattr_tests(fn, receiver):
        if method != SETTER:
            continue
        raises = [s for s in node.body if isinstance(s, ast.Raise)]
        if isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not) and raises:
            exc = raises[0].exc
            name = dotted(exc.func) if isinstance(exc, ast.Call) else dotted(exc)
            msg = _message(exc.args[0]) if isinstance(exc, ast.Call) and exc.args else ""
            return MissingMethod.RAISES, f"{name}: {msg}"[:300]
        return MissingMethod.SKIPPED, ""
    return MissingMethod.ATTRIBUTE_ERROR, ""


def _message(node: ast.expr) -> str:
    """The text of an exception message as the user reads it: a literal as is; an f-string with its literal
    parts, the model's class name as ``MODEL_CLASS`` and any other value as ``{...}`` source."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if not isinstance(node, ast.JoinedStr):
        return ast.unparse(node)
    parts: list[str] = []
    for v in node.values:
        if isinstance(v, ast.Constant):
            parts.append(str(v.value))
        elif isinstance(v, ast.FormattedValue):
            src = ast.unparse(v.value)
            parts.append(MODEL_CLASS if src.endswith("__class__.__name__") or src.endswith("__class__") else
                         "{" + src + "}")
    return "".join(parts)


def call_sites(source: SourceTree | RunnerFiles) -> tuple[CallSite, ...]:
    """Every runner call of the capture method, in path/line order."""
    files = _files(source)
    out: list[CallSite] = []
    for rel, tree in files.parsed_holding(SETTER.encode()):
        parents = files.parents(rel)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == SETTER):
                continue
            receiver = dotted(node.func.value) or ast.unparse(node.func.value)
            fn = _enclosing(node, parents, (ast.FunctionDef, ast.AsyncFunctionDef))
            missing, error = _hasattr_guard(fn, receiver) if fn is not None else (MissingMethod.ATTRIBUTE_ERROR, "")
            ids = IdsPassed.DRAFTER if node.args or node.keywords else IdsPassed.DEFAULT
            out.append(CallSite(rel, node.lineno, getattr(fn, "name", "<module>"), receiver,
                                ", ".join(ast.unparse(a) for a in [*node.args, *node.keywords]), ids, missing, error,
                                _capture_after(fn, node) if fn is not None else ""))
    return tuple(sorted(out, key=lambda c: (c.path, c.line)))


def _capture_after(fn: ast.AST, call: ast.Call) -> str:
    """The first call in ``fn`` after ``call`` whose name says it captures (``capture``, ``capture_one_batch_size``;
    not the setter), as written, or "": the CUDA-graph runner sets the layers, then captures graphs that replay
    the collection as it was at capture time."""
    later = sorted((n for n in ast.walk(fn) if isinstance(n, ast.Call) and n is not call
                    and (n.lineno, n.col_offset) > (call.lineno, call.col_offset)),
                   key=lambda n: (n.lineno, n.col_offset))
    for n in later:
        name = dotted(n.func) or ""
        last = name.rsplit(".", 1)[-1]
        if last.startswith("capture") and last != SETTER:
            return f"{name}() at line {n.lineno}"
    return ""


def id_sources(source: SourceTree | RunnerFiles) -> tuple[IdSource, ...]:
    """Every read of the drafter's aux-layer ids from its config, in path/line order."""
    files = _files(source)
    out: list[IdSource] = []
    for rel, tree in files.parsed_holding(IDS_KEY.encode()):
        parents = files.parents(rel)
        for node in ast.walk(tree):
            hit = (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                   and node.slice.value == IDS_KEY and isinstance(node.ctx, ast.Load)) or \
                  (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                   and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == IDS_KEY)
            if not hit or not isinstance(node, ast.expr):  # hit: a Subscript or a Call
                continue
            fallback: str | None = None
            bare = False
            tr = _enclosing(node, parents, (ast.Try, ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(tr, ast.Try):
                for h in tr.handlers:
                    bare = bare or h.type is None
                    for st in h.body:
                        if isinstance(st, ast.Assign) and any(IDS_KEY in ast.unparse(t) for t in st.targets):
                            fallback = ast.unparse(st.value)
            out.append(IdSource(rel, node.lineno, " ".join(ast.unparse(node).split())[:200], fallback, bare))
    return tuple(sorted(out, key=lambda s: (s.path, s.line)))


def _error(site: CallSite) -> str:
    if site.missing is MissingMethod.RAISES:
        return site.error
    if site.missing is MissingMethod.ATTRIBUTE_ERROR:
        return f"AttributeError: '{MODEL_CLASS}' object has no attribute '{SETTER}'"
    return ""


def derive(source: SourceTree) -> RunnerPath:
    """The neutral runner path: one ``RunnerSite`` per call site (those passing the drafter's ids first: the
    model runner applies them before the CUDA-graph runner captures), where the ids come from, and notes. Every
    non-model file is read once, and each file holding a call parsed once, for all three (``RunnerFiles``)."""
    files = RunnerFiles(source)
    sites = call_sites(files)
    ordered = sorted(sites, key=lambda c: (c.ids is not IdsPassed.DRAFTER, c.path, c.line))
    out = tuple(RunnerSite(c.path, c.line, c.function, c.receiver, error=_error(c), error_line=c.line,
                           setter=SETTER, setter_line=c.line, checked=False,
                           negated=c.missing is not MissingMethod.SKIPPED,
                           setter_ids=SetterIds.DRAFTER if c.ids is IdsPassed.DRAFTER
                           else SetterIds.CAPTURED_DEFAULT if c.captured_by else SetterIds.DEFAULT)
                for c in ordered)
    ids = id_sources(files)
    notes: list[str] = []
    if not sites:
        notes.append(f"no runner call of {SETTER}() found outside the model files")
    defaults = [c for c in sites if c.ids is IdsPassed.DEFAULT]
    if defaults and any(c.ids is IdsPassed.DRAFTER for c in sites):
        d = defaults[0]
        notes.append(f"{d.path}:{d.line} ({d.function}) calls {SETTER}() with no ids: the model's default layers "
                     "replace the drafter's while CUDA graphs are captured")
    for c in sites:
        if c.missing is MissingMethod.SKIPPED:
            notes.append(f"{c.path}:{c.line} skips a model without {SETTER}() (hasattr guard): it is not asked")
    first = out[0] if out else None
    return RunnerPath(sites=out, config_key=IDS_KEY if ids else None, config_key_path=ids[0].path if ids else "",
                      notes=tuple(notes),
                      target_calls=target_calls.derive(files, (first.path, first.line) if first else None))
