"""A third engine needs no edit outside its own package (issue 22, "Engines as plugins").

``sample_trees/_engines/toyengine/`` is ToyServe, a made-up engine, as its own distribution: a pyproject that
declares the entry point ``toyserve`` in the group ``eagle3_lint.engines``, the engine (``eagle3_lint_toyengine``)
and a ToyServe tree (``tree/``) with a layout, a registry and a capture idiom of its own (the plugin's docstring
says which). It is installed here as a user would, with pip (``--target``, then ``PYTHONPATH``), and the tool is
run on the tree as a subprocess: verdicts, a serving chain and a fix that ``git apply`` accepts. Every
expectation below is read from the tree's files, with file:line.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cihelp import strict
from tests.conftest import REPO, SAMPLES
from tests.hostile import assert_one_line_error

TOY = SAMPLES / "_engines" / "toyengine"
ARCHS = ("--arch", "ToyLMForCausalLM", "--arch", "ToyMoEForCausalLM")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin installed with pip into a folder of its own (a copy is built: the build writes beside it)."""
    tmp = tmp_path_factory.mktemp("toy")
    src = tmp / "src"
    shutil.copytree(TOY, src, ignore=shutil.ignore_patterns("tree"))
    out = tmp / "site"
    # --no-build-isolation: the test environment's setuptools builds it (offline; no index is asked).
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "--disable-pip-version-check", "--target", str(out), str(src)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert (out / "eagle3_lint_toyengine" / "__init__.py").is_file()
    assert not (out / "toyserve").exists()  # the tree is checked, never installed
    return out


def test_the_registry_finds_it_as_importlib_metadata_does(site: Path, tmp_path: Path) -> None:
    code = ("from eagle3_lint import engines; a = engines._entry_points(); b = engines._metadata_entry_points(); "
            "print(a == b, ('toyserve', 'eagle3_lint_toyengine:ENGINE') in a)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": str(site)}, timeout=120)
    assert p.stdout.split() == ["True", "True"], p.stderr


def run(site: Path | None, *args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if site is not None:
        environ["PYTHONPATH"] = str(site)
    return subprocess.run([sys.executable, "-m", "eagle3_lint", *args], capture_output=True, text=True, cwd=cwd,
                          env={**environ, **env}, timeout=300)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "toyserve-0.3.1"
    shutil.copytree(TOY / "tree", root)
    return root


def _json(p: subprocess.CompletedProcess[str]) -> Any:
    assert p.returncode in (0, 1), p.stderr
    return json.loads(p.stdout)


def test_verdicts_and_serving_chain(site: Path, tree: Path, tmp_path: Path) -> None:
    rep = _json(run(site, "check", str(tree), *ARCHS, "--output-format", "json", "--no-cache", cwd=tmp_path))
    assert rep["target"]["engine"] == "toyserve"
    assert rep["target"]["engine_version"] == "0.3.1"  # toyserve/__init__.py:3
    status = {a["name"]: a["status"] for a in rep["architectures"]}
    # ToyLMForCausalLM defines tap_layers (toy_lm.py:33); ToyMoEForCausalLM (toy_moe.py:26) has none in its MRO.
    assert status == {"ToyLMForCausalLM": "supported", "ToyMoEForCausalLM": "unsupported"}
    found = {(f["rule"], f["path"], f["line"]) for f in rep["findings"]}
    # The forward unpacks (out, taps) behind self.emit_taps (toy_moe.py:37-38) and ToyMoE.forward collects
    # `i in self.taps` (toy_moe.py:18): the plumbing without the setter, EGL003 at the class.
    assert ("EGL003", "toyserve/zoo/toy_moe.py", 26) in found
    # ToyLM.forward returns (h, taps), the list it appends to (toy_lm.py:19, 23): it collects and returns them.
    assert not any(f["rule"] == "EGL004" for f in rep["findings"]), rep["findings"]
    chains = {s["architecture"]: s for s in rep["serving"]}
    moe = chains["ToyMoEForCausalLM"]
    assert (moe["engine"], moe["outcome"], moe["stage"]) == ("toyserve", "refused-at-load", "runner-interface")
    steps = [(s["gate"], s["result"], s["path"], s["line"]) for s in moe["steps"]]
    # The CATALOG entry (catalog.py:5), then worker.py:17's RuntimeError for a model without tap_layers.
    assert steps[:2] == [("registry", "pass", "toyserve/catalog.py", 5),
                         ("runner-interface", "fail", "toyserve/worker.py", 17)]
    assert "RuntimeError: ToyMoEForCausalLM cannot feed an EAGLE-3 drafter" in moe["steps"][1]["message"]
    assert "--fix" in moe["next_step"]
    lm = chains["ToyLMForCausalLM"]
    assert lm["outcome"] == "unchecked"
    assert [(s["gate"], s["result"]) for s in lm["steps"]][:3] == [
        ("registry", "pass"), ("runner-interface", "pass"), ("aux-ids", "unchecked")]


def test_the_report_validates_against_the_installed_schema(site: Path, tree: Path, tmp_path: Path) -> None:
    """``schema json`` lists the plugin's engine where it is installed, and its reports validate strictly."""
    import jsonschema

    p = run(site, "schema", "json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    schema = json.loads(p.stdout)
    assert schema["properties"]["target"]["properties"]["engine"]["enum"] == ["vllm", "sglang", "toyserve"]
    rep = _json(run(site, "check", str(tree), *ARCHS, "--output-format", "json", "--no-cache", cwd=tmp_path))
    errors = list(jsonschema.Draft202012Validator(strict(schema)).iter_errors(rep))
    assert not errors, errors[:3]
    without = json.loads(run(None, "schema", "json", cwd=tmp_path).stdout)
    assert list(jsonschema.Draft202012Validator(strict(without)).iter_errors(rep))  # the enum is not open


def test_the_fix_applies_and_serves(site: Path, tree: Path, tmp_path: Path) -> None:
    p = run(site, "check", str(tree), "--fix", "--unsafe-fixes", "--no-cache", cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    diff = p.stdout
    assert diff.startswith("--- a/toyserve/zoo/toy_moe.py\n+++ b/toyserve/zoo/toy_moe.py\n"), diff
    # The setter in ToyServe's own style (the engine's CollectionIdiom, as toy_lm.py:33-38 writes it).
    assert "+    def tap_layers(self, layer_ids=None):\n" in diff and "+        self.emit_taps = True\n" in diff
    (tmp_path / "fix.patch").write_text(diff)
    dry = [["patch", "-p1", "--dry-run", "-i", str(tmp_path / "fix.patch")]] if shutil.which("patch") else []
    for cmd in (["git", "apply", "--check", str(tmp_path / "fix.patch")], *dry,
                ["git", "apply", str(tmp_path / "fix.patch")]):
        q = subprocess.run(cmd, cwd=tree, capture_output=True, text=True)
        assert q.returncode == 0, q.stderr
    rep = _json(run(site, "check", str(tree), *ARCHS, "--output-format", "json", "--no-cache", cwd=tmp_path))
    assert {a["name"]: a["status"] for a in rep["architectures"]}["ToyMoEForCausalLM"] == "supported"
    assert rep["findings"] == []
    assert {s["architecture"]: s["outcome"] for s in rep["serving"]}["ToyMoEForCausalLM"] == "unchecked"


def test_release_spelling_comes_from_the_engine(site: Path, tree: Path, tmp_path: Path) -> None:
    """``toy-serve==X`` (the plugin's distribution name, either spelling PyPI allows) is the toy's own release,
    fetched by the toy (from ``$TOYSERVE_RELEASES``); unknown to the tool without the plugin."""
    env = {"TOYSERVE_RELEASES": str(tree.parent)}
    for spec in ("toy-serve==0.3.1", "toy_serve==0.3.1"):
        rep = _json(run(site, "check", spec, "--output-format", "json", "--no-cache", cwd=tmp_path, **env))
        assert rep["target"]["engine"] == "toyserve" and rep["target"]["root"] == str(tree)
    assert_one_line_error(run(site, "check", "toy-serve==9.9", "--no-cache", cwd=tmp_path, **env),
                          contains="TOYSERVE_RELEASES/toyserve-9.9")
    assert_one_line_error(run(site, "check", "toy-serve==0.3.1", "--engine", "vllm", cwd=tmp_path, **env),
                          contains="is a ToyServe release but --engine is vllm")
    assert_one_line_error(run(None, "check", str(tree), "--no-cache", cwd=tmp_path), contains="not a vLLM or SGLang")
    p = run(site, "check", "--help", cwd=tmp_path)
    assert "--engine [vllm|sglang|toyserve]" in p.stdout


def test_layers_refuses_an_engine_it_does_not_read(site: Path, tree: Path, tmp_path: Path) -> None:
    """`eagle3-lint layers` translates ids between the engines it models: a plugin engine's tree is refused in one
    line rather than read as another engine's (it was read as SGLang's before)."""
    p = run(site, "layers", str(tree), "--arch", "ToyLMForCausalLM", "--num-layers", "32",
            "--trained-on", "trtllm:1,15,27", "--no-cache", cwd=tmp_path)
    assert_one_line_error(p, contains="how ToyServe turns drafter ids into layers is not modelled")


def test_the_core_names_nothing_of_the_toy() -> None:
    """The count of files a new engine needs outside its package is 0: no module of eagle3_lint names ToyServe's
    package, engine, registry, runner call or collection names in code (docstrings and comments may cite it)."""
    words = {"toyserve", "ToyServe", "toy-serve", "CATALOG", "tap_layers", "tap_ids", "taps", "emit_taps"}
    hits = []
    for path in sorted((REPO / "eagle3_lint").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if not any(w in text for w in words):
            continue  # parsed only where a word occurs at all
        tree = ast.parse(text)
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
                and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for n in ast.walk(tree):
            code = n.value if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs else \
                n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None
            if code is not None and any(w in code.replace(",", " ").split() or w == code for w in words):
                hits.append((path.relative_to(REPO).as_posix(), n.lineno, code[:60]))  # type: ignore[attr-defined]
    assert not hits, hits


def test_a_broken_plugin_is_one_line_exit_2(tmp_path: Path) -> None:
    """An entry point whose module cannot be imported, or two engines with one name: the user's to fix, named."""
    for name, value in (("broken", "no_such_module_xyz:ENGINE"), ("vllm", "eagle3_lint.engines.sglang:ENGINE")):
        site = tmp_path / name
        info = site / f"eagle3_lint_{name}_plugin-0.1.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: eagle3-lint-{name}-plugin\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[eagle3_lint.engines]\n{name} = {value}\n")
        p = run(site, "check", str(REPO / "sample_trees" / "_bases" / "v016"), "--no-cache", cwd=tmp_path)
        assert_one_line_error(p, contains="cannot be loaded" if name == "broken" else "two engines are called")
