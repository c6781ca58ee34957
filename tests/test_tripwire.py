"""eagle3-lint never imports, executes or (without ``--apply``) writes the tree it analyzes.

The tripwire tree is a vLLM-shaped tree (the v016 base plus the core sample cases: a wrapper over
a supported decoder, aliases, re-exports, a class factory, and a ``vllm/models/<family>/``
dispatcher package) in which *every* ``.py`` file, including ``registry.py``, ``interfaces.py``,
the runner and ``config/speculative.py``, starts with module-level code that writes a marker file
and then raises ``SystemExit``. The tree root also holds files named like our dependencies
(``click.py``, ``rich/``, ``json.py``) that would trip if ``python -m eagle3_lint`` were run
inside the tree and picked them up from the working directory.

Every command and output format the CLI offers (discovered from ``--help``, so formats added
later are covered) runs over it, over the folder, over the ``vllm/`` folder, from inside the tree
with no target, and over the tree zipped as a wheel; ``--fix --apply`` runs on a copy. No marker may
appear. The runs from inside the tree start a real interpreter (the console script and ``python -m``,
whose start-up is what could pick up the shadowing files); the others run the CLI in this process
(tests/cihelp.py), where a tree file executed would equally write its marker and raise SystemExit.
Positive controls prove the tripwire fires when the code is really imported, and that the in-tool
guard (``eagle3_lint.guard``) refuses imports and ``exec``.
"""

from __future__ import annotations

import importlib
import os
import re
import runpy
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from eagle3_lint import guard
from eagle3_lint.analysis import Options, analyze
from eagle3_lint.engines import dir_source, zip_source
from tests.conftest import SAMPLES
from tests.hostile import cli_env, commands, formats, run_cli, tree_digest, write

MARKER_PREFIX = "TRIPPED-"
# The message a tripped module dies with (the header's source text, shown in diffs, does not match).
TRIPPED = re.compile(r"tripwire: [\w.]+ was executed")

# One line, so line numbers in findings stay readable; it must come before anything else a file
# does, so an import of the module runs it no matter what the rest of the file needs.
TRIPWIRE = (
    "import os as _tw_os; _tw_d = _tw_os.environ.get('EAGLE3_TRIPWIRE_DIR') or "
    "_tw_os.path.dirname(_tw_os.path.abspath(__file__)); "
    "open(_tw_os.path.join(_tw_d, 'TRIPPED-' + str(__name__).replace('/', '_')), 'w').close(); "
    "raise SystemExit('tripwire: ' + str(__name__) + ' was executed')\n"
)

REGISTRY = '''_TEXT_GENERATION_MODELS = {
    "AliasForCausalLM": ("alias", "AliasForCausalLM"),
    "ReexportForCausalLM": ("reexport", "ReexportForCausalLM"),
    "FamForCausalLM": ("vllm.models.fam", "FamForCausalLM"),
    "PlainForCausalLM": ("reexport", "PlainForCausalLM"),
    "InnerForCausalLM": ("inner", "InnerForCausalLM"),
    "GhostForCausalLM": ("ghost", "GhostForCausalLM"),
}
_SEQUENCE_CLASSIFICATION_MODELS = {
    "AliasForSequenceClassification": ("alias", "AliasForSequenceClassification"),
}
_MULTIMODAL_MODELS = {
    "WrapForConditionalGeneration": ("wrap", "WrapForConditionalGeneration"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
    **_SEQUENCE_CLASSIFICATION_MODELS,
    **_MULTIMODAL_MODELS,
}
'''

# Files at the tree root that shadow what the tool imports, if the working directory were on sys.path.
SHADOWS = ("click.py", "rich/__init__.py", "json.py", "networkx/__init__.py", "astroid/__init__.py",
           "eagle3_lint_plugins.py", "setup.py", "conftest.py", "sitecustomize.py", "usercustomize.py")


def build_tripwire(dest: Path) -> Path:
    """Materialise the tripwire tree at ``dest`` and return it."""
    shutil.copytree(SAMPLES / "_bases" / "v016", dest, dirs_exist_ok=True)
    for case in ("aliased_base", "wrapper_inner_supports"):
        shutil.copytree(SAMPLES / "core" / case / "vllm", dest / "vllm", dirs_exist_ok=True)
    write(dest, "vllm/model_executor/models/registry.py", REGISTRY)
    write(dest, "vllm/platforms/__init__.py", "current_platform = None\n")
    for rel in SHADOWS:
        write(dest, rel, "")
    for f in sorted(dest.rglob("*.py")):
        f.write_text(TRIPWIRE + f.read_text(encoding="utf-8"), encoding="utf-8")
    return dest


def markers(*places: Path) -> list[str]:
    return sorted(str(p) for place in places if place.exists() for p in place.rglob(MARKER_PREFIX + "*"))


@pytest.fixture(scope="module")
def tripwire(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    base = tmp_path_factory.mktemp("tripwire")
    root = build_tripwire(base / "tree")
    marks = base / "markers"
    marks.mkdir()
    wheel = base / "vllm-0.16.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted((root / "vllm").rglob("*.py")):
            z.write(f, f.relative_to(root).as_posix())
        z.writestr("vllm-0.16.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: vllm\nVersion: 0.16.0\n")
    return root, marks, wheel


def test_tripwire_fires_when_really_imported(tripwire: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """Positive control: the tripwire is live, so its silence below means something."""
    root, _marks, _wheel = tripwire
    mdir = tmp_path / "m"
    mdir.mkdir()
    env = dict(os.environ, EAGLE3_TRIPWIRE_DIR=str(mdir), PYTHONPATH=str(root))
    for mod in ("vllm.model_executor.models.registry", "vllm.model_executor.models.interfaces",
                "vllm.v1.worker.gpu_model_runner", "vllm.config.speculative", "vllm.models.fam"):
        proc = subprocess.run([sys.executable, "-c", f"import {mod}"], env=env, capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode != 0 and "tripwire" in proc.stderr, (mod, proc.stderr)
    assert markers(mdir), "the tripwire did not write a marker"


def _run_all(
    root: Path, marks: Path, wheel: Path, tmp: Path
) -> list[tuple[list[str], subprocess.CompletedProcess[str]]]:
    env = cli_env(tmp, EAGLE3_TRIPWIRE_DIR=str(marks))
    runs: list[tuple[list[str], subprocess.CompletedProcess[str]]] = []

    def go(args: list[str], *, cwd: Path | None = None, module: bool = True, process: bool = False) -> None:
        runs.append((args, run_cli(args, tmp, cwd=cwd, module=module, env=env, process=process)))

    fmts = formats()
    assert {"text", "json"} <= set(fmts)
    archs = ["PlainForCausalLM", "WrapForConditionalGeneration", "FamForCausalLM", "GhostForCausalLM"]
    for target in (str(root), str(root / "vllm"), str(wheel)):
        for fmt in fmts:
            go(["check", target, "--output-format", fmt])
            go(["check", target, "--output-format", fmt, "--arch", archs[0], "--arch", archs[1]])
        go(["check", target, "--fix"])
        go(["check", target, "--fix", "--unsafe-fixes", "--arch", archs[0], "--arch", archs[1]])
        go(["check", target, "--no-cache", "--debug", "--all", "--arch", archs[0]])
        for arch in archs:
            go(["trace", arch, target])
    # No target: the checkout you are in, both as the console script and as ``python -m`` (whose
    # sys.path would start with the working directory and its shadowing click.py).
    go(["check"], cwd=root, module=False)
    go(["check", "--output-format", "json"], cwd=root, module=True, process=True)
    go(["trace", archs[0]], cwd=root, module=True, process=True)
    # Every other subcommand (a matrix, ...) over the tree; whatever it answers, it must not run it.
    for cmd in commands():
        if cmd not in ("check", "trace"):
            go([cmd, str(root)])
    return runs


def test_no_command_executes_the_tree(tripwire: tuple[Path, Path, Path], tmp_path: Path) -> None:
    root, marks, wheel = tripwire
    before = tree_digest(root)
    runs = _run_all(root, marks, wheel, tmp_path)
    assert not markers(marks, root, tmp_path), "analyzed code was executed"
    for args, proc in runs:
        out = proc.stdout + proc.stderr
        assert not TRIPPED.search(out) and "Traceback" not in out and "GuardViolation" not in out, (args, out[-3000:])
        assert proc.returncode in (0, 1) or args[0] not in ("check", "trace"), (args, proc.returncode, proc.stderr)
    # Reports really analysed the tree (the tripwire header did not hide the classes).
    json_runs = [p for a, p in runs if a[:1] == ["check"] and "json" in a and "--arch" not in a and str(root) in a]
    assert json_runs and '"WrapForConditionalGeneration"' in json_runs[0].stdout
    assert '"wrapper-gap"' in json_runs[0].stdout
    assert tree_digest(root) == before, "a command without --apply changed the tree"


def test_fix_apply_on_a_copy_executes_nothing(tripwire: tuple[Path, Path, Path], tmp_path: Path) -> None:
    root, marks, _wheel = tripwire
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, symlinks=True)
    env = cli_env(tmp_path, EAGLE3_TRIPWIRE_DIR=str(marks))
    for args in (["check", str(copy), "--fix", "--apply", "--backup", "--arch", "PlainForCausalLM"],
                 ["check", str(copy), "--fix", "--apply", "--unsafe-fixes"],
                 ["check", str(copy), "--output-format", "json"]):
        proc = run_cli(args, tmp_path, env=env)
        out = proc.stdout + proc.stderr
        assert "Traceback" not in out and not TRIPPED.search(out), (args, out[-3000:])
        assert proc.returncode in (0, 1), (args, proc.returncode, proc.stderr)
    assert not markers(marks, copy, tmp_path)


# -- the guard itself --------------------------------------------------------------------------------


def test_guard_refuses_imports_from_the_tree(tripwire: tuple[Path, Path, Path], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process: with the tree on sys.path, importing from it during analysis raises, loudly."""
    root, _marks, _wheel = tripwire
    mdir = tmp_path / "m"
    mdir.mkdir()
    monkeypatch.setenv("EAGLE3_TRIPWIRE_DIR", str(mdir))
    monkeypatch.syspath_prepend(str(root))
    source = dir_source(root)
    with pytest.raises(guard.GuardViolation, match="imported: vllm"), guard.protect(source):
        importlib.import_module("vllm.model_executor.models.registry")
    # A shadowing top-level module under the root but outside vllm/ is the root's own business;
    # a module file *inside* vllm/ reached under another name is not.
    monkeypatch.syspath_prepend(str(root / "vllm" / "model_executor"))
    with pytest.raises(guard.GuardViolation, match="models"), guard.protect(source):
        importlib.import_module("models.interfaces")
    # ``except ImportError`` cannot swallow it, and the scope re-raises what a broad except hid.
    with pytest.raises(guard.GuardViolation), guard.protect(source):
        try:  # noqa: SIM105 - spelled out as careless code spells it
            importlib.import_module("vllm.config.speculative")
        except Exception:  # noqa: BLE001 - what careless code would do
            pass
    assert not markers(mdir)
    assert not [m for m in sys.modules if m == "vllm" or m.startswith(("vllm.", "models"))]
    assert guard._FINDER not in sys.meta_path  # noqa: SLF001 - the hook is gone once the scope ends
    importlib.invalidate_caches()


def test_guard_refuses_exec_and_writes(tripwire: tuple[Path, Path, Path], tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """With EAGLE3_LINT_GUARD=1 the audit hook stops exec of tree code and writes into the tree."""
    root, _marks, _wheel = tripwire
    mdir = tmp_path / "m"
    mdir.mkdir()
    monkeypatch.setenv("EAGLE3_TRIPWIRE_DIR", str(mdir))
    monkeypatch.setenv(guard.ENV, "1")
    source = dir_source(root)
    runner = root / "vllm" / "v1" / "worker" / "gpu_model_runner.py"
    with pytest.raises(guard.GuardViolation, match="executed"), guard.protect(source):
        exec(compile(runner.read_text(), str(runner), "exec"), {"__name__": "x"})  # noqa: S102
    with pytest.raises(guard.GuardViolation, match="executed"), guard.protect(source):
        runpy.run_path(str(runner))
    with pytest.raises(guard.GuardViolation, match="written"), guard.protect(source):
        (root / "vllm" / "new.py").write_text("x = 1\n")
    assert not (root / "vllm" / "new.py").exists()
    assert not markers(mdir)
    # Outside a scope nothing is refused (the hook stays installed but idle).
    scratch = tmp_path / "ok.py"
    scratch.write_text("y = 2\n")
    exec(compile(scratch.read_text(), str(scratch), "exec"), {})  # noqa: S102


def test_guard_is_active_during_analysis(tripwire: tuple[Path, Path, Path], tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule that tries to import the tree fails the run loudly, even if the rule swallows the error."""
    from eagle3_lint import rules as rules_mod

    root, _marks, wheel = tripwire
    mdir = tmp_path / "m"
    mdir.mkdir()
    monkeypatch.setenv("EAGLE3_TRIPWIRE_DIR", str(mdir))
    monkeypatch.syspath_prepend(str(root))

    class Sneaky:
        meta = rules_mod.RuleMeta("EGL999", "sneaky", rules_mod.Severity.NOTE, False, "imports the tree")

        def check(self, sm: object) -> list[object]:
            try:  # noqa: SIM105 - spelled out as a careless rule would write it
                importlib.import_module("vllm.model_executor.models.inner")
            except BaseException:  # noqa: BLE001 - a rule that hides the error must not hide it from the guard
                pass
            return []

    real = rules_mod.all_rules()
    monkeypatch.setattr(rules_mod, "all_rules", lambda: (*real, _as_rule(Sneaky())))
    with pytest.raises(guard.GuardViolation):
        analyze(dir_source(root), Options())
    with pytest.raises(guard.GuardViolation):
        analyze(zip_source(wheel), Options())
    assert not markers(mdir)
    # And a clean analysis of the same tree passes with the guard on, wheel included.
    monkeypatch.setattr(rules_mod, "all_rules", lambda: real)
    for src in (dir_source(root), zip_source(wheel)):
        ctx = analyze(src, Options(targets=("PlainForCausalLM",)))
        assert not ctx.errors, ctx.errors
        assert ctx.verdicts["WrapForConditionalGeneration"].status.value == "wrapper-gap"
        assert ctx.verdicts["FamForCausalLM"].supports_eagle3 is True


def _as_rule(obj: object) -> object:
    """Wrap a duck-typed rule so ``run_rules`` asks it as it asks a rule module (``check(sm)``)."""
    from eagle3_lint.rules import Rule

    r = Rule.__new__(Rule)
    r.meta = obj.meta  # type: ignore[attr-defined]
    r._check = obj.check  # type: ignore[attr-defined]  # noqa: SLF001
    r._fix = None  # noqa: SLF001
    return r


def test_fetching_a_release_never_builds_an_sdist(tmp_path: Path) -> None:
    """``vllm==X`` downloads with ``pip download --only-binary=:all:``: for an sdist-only release,
    pip would otherwise run the package's setup.py to read its metadata. A local find-links folder
    (no network) offers only an sdist whose setup.py writes a marker."""
    import tarfile

    links = tmp_path / "links"
    links.mkdir()
    marker = tmp_path / "SETUP-PY-RAN"
    setup = (f"open({str(marker)!r}, 'w').close()\n"
             "from setuptools import setup\nsetup(name='vllm', version='9.9.9', packages=[])\n")
    pkg = tmp_path / "vllm-9.9.9"
    pkg.mkdir()
    (pkg / "setup.py").write_text(setup)
    (pkg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 9.9.9\n")
    with tarfile.open(links / "vllm-9.9.9.tar.gz", "w:gz") as tf:
        tf.add(pkg, arcname="vllm-9.9.9")
    env = cli_env(tmp_path, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(links), PIP_NO_BUILD_ISOLATION="0")
    env.pop("PIP_INDEX_URL", None)
    # Positive control: plain pip download does run setup.py here.
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "vllm==9.9.9", "-d", str(tmp_path / "dl")],
                   env=env, capture_output=True, text=True, timeout=300)
    if not marker.exists():
        pytest.skip("pip did not build the sdist here (no setuptools available offline); nothing to prove")
    marker.unlink()
    proc = run_cli(["check", "vllm==9.9.9"], tmp_path, env=env)
    assert proc.returncode == 2 and "cannot fetch vllm==9.9.9" in proc.stderr, proc.stderr
    assert not marker.exists(), "eagle3-lint made pip run the release's setup.py"
