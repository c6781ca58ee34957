"""The engine boundary (issues 14, 22): engine-specific names live in the engines' own packages only.

A newcomer looking for a vLLM (or SGLang) module path, class or function name must find it in that
engine's package. The engines are the registry's (``engines.all_engines()``: every entry point of the group
``eagle3_lint.engines``), and so are the packages exempt from the scan and the engine names it looks for. This
test reads every other module of the tool (``ast``, no import) and fails on code that names an engine: string
constants (docstrings and comments are prose and may give an example), names and attributes. What remains
outside is listed below, each with why it stays.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from eagle3_lint import engines

PKG = Path(__file__).resolve().parent.parent / "eagle3_lint"
# Each registered engine's package folder: the code allowed to name that engine.
ENGINE_DIRS = tuple(Path(sys.modules[type(e).__module__].__file__ or "").parent for e in engines.all_engines())
ENGINE_NAMES = re.compile(
    "|".join(sorted({re.escape(n) for e in engines.all_engines() for n in (e.name, e.package, *e.release_names)}))
    # vLLM's contract, registry and runner names, which the core gets from the engine's derivation.
    + r"|SupportsEagle3|supports_eagle3|set_eagle3_layers_to_capture|model_executor|gpu_model_runner"
    r"|EntryClass|init_vllm_registered_model"
    # SGLang's collection names (``engine.CollectionIdiom``): the semantic model and the rules get them from the engine.
    r"|layers_to_capture|_is_layer_to_capture|capture_aux_hidden_states|dflash",
    re.IGNORECASE,
)
# Modules between the engines, outside any one engine's package: each compares the engines by name.
BETWEEN = {
    "engines/layers.py": "`eagle3-lint layers` turns trained layers into each engine's ids, TensorRT-LLM's from its "
                         "public sources (no tree): it dispatches on the engine's name (issue 22 debt)",
    "drafter_fields.py": "drafter checkpoints' id fields, named after the formats that define them",
}

# (module, text it may contain, why)
ALLOWED: list[tuple[str, str, str]] = [
    # Public report fields keep their names (issue 14: "supports_eagle3 keeps its name"; vllm_version stays).
    ("*", "supports_eagle3", "the report's field: passes the engine's own EAGLE-3 check"),
    ("*", "vllm_version", "the report's and the baseline's field for vLLM trees, kept for compatibility"),
    ("report/sarif.py", "vllmVersion", "SARIF run property, kept for compatibility"),
    # Engine names as values of the public vocabulary (EngineName's values, drafter id conventions).
    ("report/schema.py", "vllm", "the report's engine and drafter-convention enums"),
    ("report/schema.py", "sglang", "the report's engine and drafter-convention enums"),
    ("cli.py", "vllm", "--drafter-convention's choices and help of options that exist for one engine"),
    ("cli.py", "sglang", "--drafter-convention's choices"),
    # Drafter id conventions are named after the engines that defined them (vLLM: the state entering layer k;
    # SGLang/SpecForge: the output of layer k); EGL007 explains a carried-over drafter in those words.
    ("rules/egl007_draft_layer_ids_invalid.py", "vllm", "the vLLM numbering convention of drafter ids"),
    ("rules/egl007_draft_layer_ids_invalid.py", "sglang", "the SGLang numbering convention of drafter ids"),
]


def _allowed(rel: str, text: str) -> bool:
    hits = {m.group(0).lower() for m in ENGINE_NAMES.finditer(text)}
    ok = {t.lower() for mod, t, _why in ALLOWED if mod in ("*", rel)}
    # A hit is allowed when an allowed text covers it (``vllm_version`` covers the ``vllm`` inside it).
    return all(any(h in a for a in ok) for h in hits)


def _code_mentions(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(n.body[0].value) for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
        and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)
    }
    out: list[tuple[int, str]] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings:
            text = n.value
        elif isinstance(n, ast.Name):
            text = n.id
        elif isinstance(n, ast.Attribute):
            text = n.attr
        elif isinstance(n, ast.ImportFrom) and n.module:
            text = n.module
        else:
            continue
        if ENGINE_NAMES.search(text):
            out.append((getattr(n, "lineno", 0), text))
    return out


NEUTRAL = sorted(p for p in PKG.rglob("*.py") if not any(p.is_relative_to(d) for d in ENGINE_DIRS)
                 and p.relative_to(PKG).as_posix() not in BETWEEN)


@pytest.mark.parametrize("path", NEUTRAL, ids=lambda p: str(p.relative_to(PKG)))
def test_neutral_module_names_no_engine(path: Path) -> None:
    rel = path.relative_to(PKG).as_posix()
    bad = [(line, text[:100]) for line, text in _code_mentions(path)
           if not _allowed(rel, text)]
    assert not bad, f"{rel} names an engine outside eagle3_lint/engines/: {bad}"


def test_the_scan_sees_engine_names() -> None:
    """The scan is not vacuous: the engine packages themselves are full of what it looks for."""
    vllm_pkg = PKG / "engines" / "vllm"
    hits = [h for p in vllm_pkg.glob("*.py") for h in _code_mentions(p)]
    assert len(hits) > 50
    assert any("SupportsEagle3" in t for _line, t in hits) and any("vllm/" in t for _line, t in hits)


def test_the_registry_is_neutral_and_the_scan_covers_it() -> None:
    """The registry itself and the modules between the engines are scanned or listed, never skipped silently."""
    scanned = {p.relative_to(PKG).as_posix() for p in NEUTRAL}
    assert "engines/__init__.py" in scanned and "engine.py" in scanned and "target.py" in scanned
    assert all((PKG / rel).is_file() for rel in BETWEEN)
    assert {d.relative_to(PKG).as_posix() for d in ENGINE_DIRS} == {"engines/vllm", "engines/sglang"}


def test_every_engine_is_reachable_through_the_interface() -> None:
    from eagle3_lint.engine import Engine, EngineProtocol

    got = engines.all_engines()
    assert [e.name for e in got] == list(engines.names()) == ["vllm", "sglang"]  # Engine.order: vLLM is the default
    for e in got:
        assert isinstance(e, Engine) and isinstance(e, EngineProtocol)
        assert e.package and e.model_dirs and e.registry_module
        assert engines.for_package(e.package) is e and engines.get(e.name) is e
        assert engines.for_spec(e.release_names[0]) is e


def test_a_model_hook_needs_model_hooks_among_the_bases() -> None:
    # The hooks that take the Model are engine_hooks.ModelHooks' (engine.py sits below the Model): an engine that
    # defines one on Engine alone would never be asked, so it is refused where it is written.
    from types import SimpleNamespace

    from eagle3_lint import engine_hooks
    from eagle3_lint.engine import MODEL_HOOKS, Derived, Engine
    from eagle3_lint.engine_hooks import ModelHooks

    assert set(MODEL_HOOKS) == {n for n in vars(ModelHooks) if not n.startswith("_") and callable(vars(ModelHooks)[n])}
    with pytest.raises(TypeError, match="defines serving_verdict without eagle3_lint.engine_hooks.ModelHooks"):
        class Stray(Engine):  # noqa: F841 - the class statement is what raises
            def serving_verdict(self, sm: object, arch: str, kind: object = None) -> None:
                return None

    class Bare(Engine):  # the data an engine needs, and no hook: the defaults answer for it
        name = display = package = "bare"
        model_dirs = ("bare/models/",)
        registry_module = "bare.registry"

        def tree_root(self, path: Path) -> Path | None:
            return None

        def fetch_release(self, version: str, cache_dir: object, progress: object = None) -> Path:
            raise AssertionError

        def derive(self, source: object, store: object, preload: object) -> Derived:
            raise AssertionError

    class Kept(Bare, ModelHooks):
        def pp_refused(self, sm: object) -> str | None:
            return "kept's own"

    assert engine_hooks.pp_refused(SimpleNamespace(engine=Kept())) == "kept's own"  # type: ignore[arg-type]
    assert engine_hooks.pp_refused(SimpleNamespace(engine=Bare())) is None  # type: ignore[arg-type]
    assert all(isinstance(e, ModelHooks) for e in engines.all_engines())


def test_the_registry_reads_what_importlib_metadata_lists() -> None:
    """engines._entry_points (a scan that spares importlib.metadata's import) lists what importlib.metadata does."""
    assert engines._entry_points() == engines._metadata_entry_points()
    assert {n for n, _v in engines._entry_points()} >= {"vllm", "sglang"}


def test_the_tool_registers_its_engines_as_entry_points() -> None:
    """pyproject.toml declares every engine package of eagle3_lint/engines/ under the group, and the installed
    metadata (what importlib.metadata.entry_points reads) has them: no engine is found only by its folder."""
    from importlib.metadata import entry_points

    from eagle3_lint._compat import tomllib

    pyproject = tomllib.loads((PKG.parent / "pyproject.toml").read_text(encoding="utf-8"))
    declared = pyproject["project"]["entry-points"][engines.GROUP]
    folders = {p.parent.name for p in (PKG / "engines").glob("*/__init__.py")}
    assert declared == {n: f"eagle3_lint.engines.{n}:ENGINE" for n in folders}
    installed = {ep.name: ep.value for ep in entry_points(group=engines.GROUP)}
    assert {n: installed.get(n) for n in declared} == declared, "reinstall: pip install -e ."


def test_no_rule_id_is_written_outside_rules() -> None:
    """Code outside ``rules/`` finds a rule by the role it declares (``rules.Role``), never by its id: an id as a
    value (``f.rule == "EGL009"``) is written once, in its rule's META. Prose in help texts may cite ids."""
    rule_id = re.compile(r"^EGL\d{3}$")
    hits = [(p.relative_to(PKG).as_posix(), line, text) for p in PKG.rglob("*.py") if "rules" not in p.parts
            for line, text in _constants(p) if rule_id.match(text)]
    assert not hits, hits


def _constants(path: Path) -> list[tuple[int, str]]:
    return [(n.lineno, n.value) for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def test_every_role_is_one_rules() -> None:
    from eagle3_lint.rules import Role, all_rules, with_role

    for role in Role:
        assert [r.meta for r in all_rules() if r.meta.role is role] == [with_role(role)]
    assert with_role(Role.CONFIG_GATE).name == "eagle3-model-type-gate"
    assert with_role(Role.UNPARSABLE).name == "unparsable-file"
