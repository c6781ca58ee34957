"""SGLang's model registry, derived from the tree: every top-level ``models/*.py`` and its ``EntryClass``.

SGLang's ``models/registry.py`` imports each top-level module of ``sglang.srt.models`` (sub-packages
are skipped: ``pkgutil.iter_modules`` with ``ispkg`` false), reads the module attribute ``EntryClass``
(a class or a list of classes) and keys the registry by each class's ``__name__``. So an alias
(``EntryClass = [FooAlias]`` with ``FooAlias = Bar``) registers ``Bar``, and a class re-exported from
a helper package (``from .dots3_common.modeling import X``) is registered under its own name. The
``EntryClass`` expression is read from the statement the core's facts point at (only that statement
is parsed again), and each element is resolved with the class graph.
"""

from __future__ import annotations

import ast
import enum
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from eagle3_lint import registry as neutral
from eagle3_lint.deps import Answers
from eagle3_lint.facts import ModuleFacts
from eagle3_lint.graph import ClassGraph, ClassKey
from eagle3_lint.source import SourceTree

ENTRY = "EntryClass"
MODELS_PACKAGE = "sglang.srt.models"
MODELS_DIR = "sglang/srt/models"
REGISTRY_PATH = MODELS_DIR + "/registry.py"


class EntryKind(enum.Enum):
    CLASS = "class"  # an element that names a class in the tree
    UNRESOLVED = "unresolved"  # an element the graph cannot follow to a class


@dataclass(frozen=True)
class Entry:
    """One registered architecture (or one element the tool could not resolve)."""

    arch: str  # the key SGLang uses: the class's ``__name__`` (for UNRESOLVED: the name as written)
    kind: EntryKind
    key: ClassKey | None
    path: str  # the models/*.py file holding the EntryClass
    line: int
    written: str  # the element as written in EntryClass
    note: str = ""


@dataclass(frozen=True)
class Registry:
    entries: tuple[Entry, ...]
    modules: int  # top-level model modules seen
    without_entry: tuple[str, ...]  # modules with no EntryClass (helpers)
    duplicates: tuple[str, ...]  # arch names listed twice: SGLang's registry asserts, outside its try, at import

    def by_arch(self) -> dict[str, Entry]:
        out: dict[str, Entry] = {}
        for e in self.entries:
            out.setdefault(e.arch, e)
        return out


def model_modules(source: SourceTree) -> list[str]:
    """Paths of the top-level modules of ``sglang/srt/models/`` that the registry imports."""
    prefix = MODELS_DIR + "/"
    return [rel for rel in source.py_files()
            if rel.startswith(prefix) and "/" not in rel[len(prefix):] and rel != prefix + "__init__.py"]


def _statement(text: str, line: int) -> ast.stmt | None:
    """The statement starting at ``line``: the shortest run of lines from there that parses."""
    lines = text.splitlines()
    for n in range(1, min(80, len(lines) - line + 2)):
        chunk = "\n".join(lines[line - 1: line - 1 + n])
        try:
            mod = ast.parse(chunk.lstrip() if chunk[:1].isspace() else chunk)
        except SyntaxError:
            continue
        return mod.body[0] if mod.body else None
    return None


def _elements(node: ast.AST | None) -> list[ast.AST]:
    """The class expressions of an EntryClass value: a name, a list/tuple, or lists joined with ``+``."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return [x for e in node.elts for x in (_elements(e.value) if isinstance(e, ast.Starred) else [e])]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _elements(node.left) + _elements(node.right)
    return [node] if node is not None else []


def read_registry(source: SourceTree, graph: ClassGraph, load: Callable[[str], ModuleFacts | None],
                  answers: Answers | None = None) -> Registry:
    """Every registered architecture of the tree, in module order.

    With ``answers`` (the analysis' queries), each module's entries are one kept answer, resting on what
    reading them read (the module's facts and bytes, and the modules its elements resolve through): a
    re-check after an edit reads the edited modules again, not all ~300 (that was a fifth of a one-edit
    re-check of SGLang 0.5.23)."""
    entries: list[Entry] = []
    without: list[str] = []
    seen: dict[str, str] = {}
    dups: list[str] = []
    mods = model_modules(source)
    for rel in mods:
        if answers is None:
            listed = _listed(source, graph, load, rel)
        else:
            listed = answers.get(("sglang-entries", rel), functools.partial(_listed, source, graph, load, rel),
                                 persist=True)
        if listed is None:
            without.append(rel)
            continue
        for e in listed:
            entries.append(e)
            if e.kind is EntryKind.CLASS:
                # SGLang asserts on a repeated __name__ (even the same class listed by two modules).
                if e.arch in seen:
                    dups.append(e.arch)
                seen[e.arch] = str(e.key)
    return Registry(tuple(entries), len(mods), tuple(without), tuple(dups))


def _listed(source: SourceTree, graph: ClassGraph, load: Callable[[str], ModuleFacts | None],
            rel: str) -> list[Entry] | None:
    """The entries of the model module ``rel``, None if it has no ``EntryClass``."""
    mf = load(rel)
    if mf is None or mf.error or ENTRY not in mf.bindings:
        return None
    return _module_entries(source, graph, mf, MODELS_PACKAGE + "." + rel.rsplit("/", 1)[-1][:-3], rel, depth=0)


def _module_entries(source: SourceTree, graph: ClassGraph, mf: ModuleFacts, module: str, rel: str,
                    depth: int) -> list[Entry]:
    binding = graph._pick(mf.bindings[ENTRY])  # noqa: SLF001 - the same branch choice as name resolution
    try:
        text = source.read_bytes(mf.path).decode("utf-8", "replace")
    except OSError as exc:
        return [Entry(ENTRY, EntryKind.UNRESOLVED, None, rel, binding.line, ENTRY, f"cannot read: {exc}")]
    if binding.kind == "import" and binding.attr == ENTRY and depth < 5:
        # ``from .other import EntryClass``: the other module's list.
        other = graph.module(binding.target)
        if other is not None and ENTRY in other.bindings:
            return _module_entries(source, graph, other, binding.target, rel, depth + 1)
    st = _statement(text, binding.line)
    value = st.value if isinstance(st, (ast.Assign, ast.AnnAssign)) else None
    if value is None:
        return [Entry(ENTRY, EntryKind.UNRESOLVED, None, rel, binding.line, ENTRY,
                      "EntryClass is not bound by a plain assignment")]
    out: list[Entry] = []
    for el in _elements(value):
        written = ast.unparse(el)
        line = binding.line + getattr(el, "lineno", 1) - 1
        r = graph.resolve_dotted(module, written) if isinstance(el, (ast.Name, ast.Attribute)) else None
        if r is not None and r.kind == "class" and r.key is not None:
            # The key is the class's __name__, whatever name the EntryClass element used.
            out.append(Entry(r.key.qualname.rsplit(".", 1)[-1], EntryKind.CLASS, r.key, rel, line, written))
        else:
            why = f"{r.kind}: {r.name}" if r is not None else "not a name"
            out.append(Entry(written, EntryKind.UNRESOLVED, None, rel, line, written, why))
    return out


# SGLang's registry has no categories; drafter modules are named for the algorithm that loads them as the
# draft model (``llama_eagle3.py``, ``deepseek_nextn.py``, ``qwen3_5_mtp.py``, ``qwen2_dflash.py``), never as
# a target. The neutral registry marks those entries as speculative (the word the core scopes drafters by).
_DRAFTER_MODULE = re.compile(r"(?:^|_)(?:eagle3?|mtp|nextn|medusa|dflash|mimo_mtp)(?:_|$)")


def _category(path: str) -> str:
    stem = path.rsplit("/", 1)[-1][:-3]
    return f"{ENTRY} (SPECULATIVE)" if _DRAFTER_MODULE.search(stem) else ENTRY


def derive(source: SourceTree, graph: ClassGraph, load: Callable[[str], ModuleFacts | None],
           answers: Answers | None = None) -> neutral.Registry:
    """The neutral registry (``registry.Registry``): one entry per architecture, keyed by the class ``__name__``
    SGLang uses, pointing at the class itself (an alias or a re-export resolved); an element the graph cannot
    follow keeps the name as written, in the module that lists it, so the verdict says why it is unknown."""
    reg = read_registry(source, graph, load, answers)
    entries: dict[str, neutral.Entry] = {}
    for e in reg.entries:
        if e.arch in entries:
            continue  # SGLang asserts on the second one; the first is what it would have registered
        module = MODELS_PACKAGE + "." + e.path.rsplit("/", 1)[-1][:-3]
        if e.kind is EntryKind.CLASS and e.key is not None:
            note = "" if e.written == e.arch else f"listed as {e.written}"
            entries[e.arch] = neutral.Entry(e.arch, e.key.module, e.key.qualname, _category(e.path), e.line, e.path,
                                            note)
        else:
            entries[e.arch] = neutral.Entry(e.arch, module, e.written, ENTRY, e.line, e.path,
                                            f"EntryClass element not followed: {e.note}")
    notes = []
    unresolved = [e.written for e in reg.entries if e.kind is EntryKind.UNRESOLVED]
    if unresolved:
        notes.append(f"{len(unresolved)} EntryClass element(s) not followed: {', '.join(unresolved[:5])}")
    if reg.duplicates:
        notes.append(f"listed twice (SGLang's registry asserts at import): {', '.join(sorted(set(reg.duplicates)))}")
    path = REGISTRY_PATH if source.exists(REGISTRY_PATH) else MODELS_DIR
    return neutral.Registry(bool(entries), path, entries, (ENTRY,), MODELS_PACKAGE,
                            "; ".join(notes) if entries or notes else "no EntryClass found in the model modules")
