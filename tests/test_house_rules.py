"""Rules query the semantic model: no rule module parses or reads a source file (issue 12), and no module but
``semantic.py`` walks owner/delegation/collection (``aux.py`` and the rules' own walks are gone)."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "eagle3_lint"
READS = {"read_text", "read_bytes", "read_module", "open", "parse", "function_at", "find_function"}


def _calls(tree: ast.AST) -> set[str]:
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            f = n.func
            out.add(f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else "")
    return out


def test_no_rule_module_parses_or_reads_source() -> None:
    for path in sorted((PKG / "rules").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert "ast" not in imported, f"{path.name} imports ast"
        bad = _calls(tree) & READS
        assert not bad, f"{path.name} calls {sorted(bad)}"


def test_one_module_owns_owner_delegation_collection() -> None:
    assert not (PKG / "aux.py").exists()
    owners = []
    for path in sorted(PKG.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        if {"owner", "forward_of", "capture"} & names or "layer_owner" in names or "forward_collection" in names:
            owners.append(path.relative_to(PKG).as_posix())
    assert owners == ["semantic.py"], owners


# The facts' loop and capture records, and the names only a reader of ``for`` statements needs.
_LOOP_RECORDS = {"loops", "iterates"}
_LOOP_TYPES = {"Loop", "Site", "SiteKind", "Use", "UseKind", "IndexBase", "LoopForm", "Slicing",
               "index_offset", "rebased_index"}


def test_only_the_semantic_model_reads_the_loop_records() -> None:
    """Issue 22 item 4: every loop over the layers is read once, by the facts pass, and its records are read by the
    semantic model only. No other module reads ``Method.loops`` or ``Method.iterates``, none but facts.py looks for
    an ``islice`` (the loop forms are recognised there), and no rule imports the record types from facts.py (they
    get loops from the semantic model and read what it hands them)."""
    readers, slicers, importers = [], [], []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        attrs = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        if attrs & _LOOP_RECORDS and rel not in ("facts.py", "semantic.py"):
            readers.append(rel)
        if rel != "facts.py" and any(isinstance(n, ast.Constant) and n.value in ("islice", "itertools.islice")
                                     for n in ast.walk(tree)):
            slicers.append(rel)
        if rel.startswith("rules/") and any(isinstance(n, ast.ImportFrom) and n.module == "eagle3_lint.facts"
                                            and {a.name for a in n.names} & _LOOP_TYPES for n in ast.walk(tree)):
            importers.append(rel)
    assert readers == [], readers
    assert slicers == [], slicers
    assert importers == [], importers

