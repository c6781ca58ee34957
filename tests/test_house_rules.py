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



# -- issue 22 item 1: stages with frozen outputs ------------------------------------------------------------------
# Where a function's parameters are checked: every stage after the pipeline's own module works on frozen data.
_NO_CONTEXT = ("rules/", "report/", "engines/", "engine.py", "semantic.py", "verdict.py", "graph.py", "serving.py",
               "fixgen.py", "suppress.py", "trace.py", "outcome.py", "drafter_weights.py")


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    a = fn.args
    return [*a.posonlyargs, *a.args, *a.kwonlyargs, *([a.vararg] if a.vararg else []),
            *([a.kwarg] if a.kwarg else [])]


def _names_context(annotation: ast.expr | None) -> bool:
    """Whether an annotation names a ``Context`` of ours (``click.Context`` is click's, in cli.py only)."""
    if annotation is None:
        return False
    for n in ast.walk(annotation):
        if isinstance(n, ast.Name) and n.id == "Context":
            return True
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and "Context" in n.value.replace("click.", ""):
            return True
        if isinstance(n, ast.Attribute) and n.attr == "Context" and not (
                isinstance(n.value, ast.Name) and n.value.id == "click"):
            return True
    return False


def test_no_function_takes_a_context() -> None:
    """Issue 22's acceptance: no function in the rules, renderers, engines or the semantic model takes ``Context``
    (an annotation naming it, or a parameter named ``ctx``), and the pipeline builds no mutable context: its stage
    outputs (stages.py) are frozen dataclasses."""
    import dataclasses

    from eagle3_lint import analysis, stages

    takers = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if not rel.startswith(_NO_CONTEXT):
            continue
        for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                bad = [p.arg for p in _params(n) if p.arg == "ctx" or _names_context(p.annotation)]
                if bad or _names_context(n.returns):
                    takers.append(f"{rel}:{n.lineno} {n.name}({', '.join(bad)})")
    assert takers == [], takers
    assert not hasattr(analysis, "Context") and not hasattr(stages, "Context")
    for cls in (stages.Options, stages.Facts, stages.EngineData, stages.Model, stages.Analysis, stages.Keep,
                stages.InternalError):
        assert dataclasses.is_dataclass(cls) and vars(cls)["__dataclass_params__"].frozen, cls.__name__


def test_no_rule_names_a_cache() -> None:
    """Rules never choose a cache key or persistence: the pipeline keeps each rule's answers per (rule, scope item)
    and each fix per (rule, finding) (analysis.run_rule). No rule module reads the query layer or its memo, and none
    records dependencies itself."""
    users = []
    for path in sorted((PKG / "rules").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        attrs = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        hits = sorted((attrs & {"queries", "memo", "note_answer"})
                      | (imported & {"deps", "queries", "eagle3_lint.deps", "eagle3_lint.queries"}))
        if hits:
            users.append(f"{path.name}: {hits}")
    assert users == [], users


# Modules after the facts stage that may import ``ast``, and why. Nothing else may: a fact read a second time from
# the source is the derivation twice that issue 22 is about. semantic.py is not on it: it imports no ast.
_AST_ALLOWED = {
    # The facts stage itself: one AST pass per file, and the 3.10 shim of its node types.
    "facts.py": "the facts pass",
    "_compat.py": "ast.TryStar on 3.10, for the facts pass and the plugin reader",
    # The evaluator engines run their own code with (never imported): it walks the nodes it is handed.
    "minieval.py": "evaluates the engine's config/runner code",
    # Engine derivation: each engine reads its own non-model files (registry, interfaces, runner, config, speculative
    # config, the drafter classes, out-of-tree plugins) while it derives its data.
    "engines/drafter_keys.py": "the drafter classes' config reads",
    "engines/drafter_classes.py": "the drafter classes' __init__ run for the drafter config, and their load_weights",
    "engines/sglang/drafter.py": "the drafter config's id handling in SGLang's runner",
    "engines/sglang/methods.py": "SGLang's SpeculativeAlgorithm and the runner's per-method setter choice",
    "engines/sglang/pp.py": "SGLang's pipeline-parallel checks and layer split",
    "engines/sglang/registry.py": "SGLang's registry",
    "engines/sglang/runner.py": "SGLang's runner call sites",
    "engines/sglang/runner_files.py": "SGLang's non-model files, read and parsed once for the runner derivations",
    "engines/sglang/setter.py": "the setter bodies SGLang's runner calls",
    "engines/sglang/target_calls.py": "the EAGLE worker's get_embed_and_head() calls and SGLang's start-up order",
    "engines/vllm/contract.py": "vLLM's interfaces.py",
    "engines/vllm/drafter.py": "vLLM's speculative config and drafter classes",
    "engines/vllm/gates.py": "vLLM's config-time gates",
    "engines/vllm/hfconfig.py": "the transformers config classes vLLM ships",
    "engines/vllm/methods.py": "vLLM's speculative methods",
    "engines/vllm/plugins.py": "out-of-tree plugin packages",
    "engines/vllm/runner.py": "vLLM's model runners",
    "engines/vllm/runnerchoice.py": "vLLM's runner choice",
    # The readers engine derivation uses on its own non-model files (read_module, read_function, method_node, fc_init),
    # moved out of semantic.py, which reads class bodies from the facts (facts.Body). Debt left (issue 22): the
    # semantic model's default_ids still evaluates a model method it gets from here (minieval, per layer count).
    "source_ast.py": "engine derivation's readers of its own files; semantic.default_ids' method",
}


def test_no_module_after_the_facts_stage_imports_ast() -> None:
    importers = set()
    for path in sorted(PKG.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any((isinstance(n, ast.Import) and any(a.name == "ast" for a in n.names))
               or (isinstance(n, ast.ImportFrom) and n.module == "ast") for n in ast.walk(tree)):
            importers.add(path.relative_to(PKG).as_posix())
    assert sorted(importers - set(_AST_ALLOWED)) == [], "a module after the facts stage parses source"
    # A module that stopped needing ast leaves the list: the list says what is left, not what once was.
    assert sorted(set(_AST_ALLOWED) - importers) == []


def _module_of(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _import_graph() -> dict[str, set[str]]:
    """Each module of the package and the package's modules it imports: every import statement, at module level,
    under ``if TYPE_CHECKING`` or inside a function (a type-only or lazy import still ties the two modules)."""
    modules = {_module_of(p): p for p in PKG.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(n, ast.Import):
                targets = [a.name for a in n.names]
            elif isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
                # ``from eagle3_lint import semantic`` imports the submodule; ``from eagle3_lint.x import Name``, x.
                targets = [f"{n.module}.{a.name}" if f"{n.module}.{a.name}" in modules else n.module for a in n.names]
            graph[mod].update(t for t in targets if t in modules and t != mod)
    return graph


def test_the_package_imports_in_no_circle() -> None:
    # Stages import only the stages before them (docs/architecture.md): a circle, even through a type-only import,
    # is two modules that each need the other to be understood.
    graph = _import_graph()
    assert len(graph) > 90 and graph["eagle3_lint.analysis"], "the scan sees the package's imports"
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert circles == []


def test_the_circle_check_sees_a_circle() -> None:
    # The check above on a graph that has one: the two modules that named each other before engine_hooks.py.
    graph = _import_graph()
    assert "eagle3_lint.stages" in graph["eagle3_lint.engine_hooks"]
    assert "eagle3_lint.engine" in graph["eagle3_lint.stages"]
