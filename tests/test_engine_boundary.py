"""The engine boundary (issue 14): engine-specific names live under ``eagle3_lint/engines/<engine>/`` only.

A newcomer looking for a vLLM (or SGLang) module path, class or function name must find it in that
engine's package. This test reads every other module of the tool (``ast``, no import) and fails on
code that names an engine: string constants (docstrings and comments are prose and may give an
example), names and attributes. What remains outside is listed below, each with why it stays.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "eagle3_lint"
ENGINE_NAMES = re.compile(
    r"vllm|sglang|SupportsEagle3|supports_eagle3|set_eagle3_layers_to_capture|model_executor|gpu_model_runner"
    r"|EntryClass|init_vllm_registered_model"
    # SGLang's collection names (``engine.CollectionIdiom``): the semantic model and the rules get them from the engine.
    r"|layers_to_capture|_is_layer_to_capture|capture_aux_hidden_states|dflash",
    re.IGNORECASE,
)

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


NEUTRAL = sorted(p for p in PKG.rglob("*.py") if "engines" not in p.relative_to(PKG).parts)


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


def test_every_engine_is_reachable_through_the_interface() -> None:
    from eagle3_lint import engines
    from eagle3_lint.engine import Engine

    got = engines.all_engines()
    assert [e.name for e in got] == [n.value for n in engines.EngineName]
    for e in got:
        assert isinstance(e, Engine) and e.package and e.model_dirs and e.registry_module
        assert engines.for_package(e.package) is e
