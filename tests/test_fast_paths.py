"""The fast paths of issue 13, item 6 keep every result: what a replay skips, and what it must not.

Speed is measured by bench/bench.py, not here; these tests pin the behaviour the speed-ups rely on.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from eagle3_lint.config import rule_ids
from eagle3_lint.rules import all_rules
from tests.conftest import REPO, SAMPLES, materialize

_PROBE = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('LOADED', *sorted(m for m in sys.modules if m.startswith(('eagle3_lint', 'rich'))),"
    " file=sys.stderr))\n"
    "from eagle3_lint.cli import main\n"
    "main()\n"
)


def test_rule_ids_from_module_names_are_the_rules_own() -> None:
    """config.rule_ids() reads the ids off the module names without importing a rule."""
    assert rule_ids() == tuple(r.meta.id for r in all_rules())
    assert len(rule_ids()) >= 10


def _check(tree: Path, cache: Path, out: Path, cwd: Path) -> tuple[int, set[str]]:
    p = subprocess.run([sys.executable, "-c", _PROBE, "check", str(tree), "--cache-dir", str(cache),
                        "--output-format", "json", "--output", str(out)], capture_output=True, text=True, cwd=cwd,
                       env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert p.returncode in (0, 1), p.stderr
    loaded = next(line for line in p.stderr.splitlines() if line.startswith("LOADED"))
    return p.returncode, set(loaded.split()[1:])


def test_a_replayed_check_imports_no_analysis(tmp_path: Path) -> None:
    tree = materialize(SAMPLES / "core" / "wrapper_inner_supports", tmp_path / "tree")
    cache, out = tmp_path / "cache", tmp_path / "report.json"
    rc1, first = _check(tree, cache, out, tmp_path)
    report = out.read_bytes()
    rc2, second = _check(tree, cache, out, tmp_path)
    assert (rc2, out.read_bytes()) == (rc1, report)
    # The first run analysed (so the probe sees what an analysis loads); the replay loaded none of it.
    heavy = {"eagle3_lint.analysis", "eagle3_lint.semantic", "eagle3_lint.graph", "eagle3_lint.facts",
             "eagle3_lint.outcome", "eagle3_lint.rules.egl001_missing_eagle3_interface"}
    assert heavy <= first
    assert not (heavy | {"rich.console", "eagle3_lint.fixes"}) & second, second


def _copy_release(src: Path, dest: Path) -> Path:
    shutil.copytree(src / "vllm", dest / "vllm", ignore=shutil.ignore_patterns("__pycache__"))
    for d in src.glob("vllm-*.dist-info"):
        shutil.copytree(d, dest / d.name)
    return dest


def _run_json(tree: Path, out: Path, cwd: Path, *extra: str) -> tuple[int, bytes]:
    p = subprocess.run([sys.executable, "-m", "eagle3_lint", "check", str(tree), "--output-format", "json",
                        "--output", str(out), *extra], capture_output=True, text=True, cwd=cwd,
                       env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600)
    assert p.returncode in (0, 1), p.stderr
    return p.returncode, out.read_bytes()


@pytest.mark.real
def test_one_edit_recheck_equals_a_cold_run_on_the_edited_tree(real_trees: Any, tmp_path: Path) -> None:
    """The pre-commit case: a primed cache, then model files edited. The cached re-check (facts of the
    unchanged files replayed, suppression comments looked for only where a file's facts say one can
    be) must print what a run without any cache prints on the edited tree."""
    tree = _copy_release(real_trees.get("0.16.0"), tmp_path / "tree")
    time.sleep(2.1)  # older than the store's racy-stat window, as a real checkout is
    cache, out = tmp_path / "cache", tmp_path / "report.json"
    _, primed = _run_json(tree, out, tmp_path, "--cache-dir", str(cache))
    before = json.loads(primed)
    egl005 = {f["path"]: f["line"] for f in before["findings"] if f["rule"] == "EGL005"}
    assert "vllm/model_executor/models/llama.py" in egl005 and "vllm/model_executor/models/qwen2.py" in egl005
    # One line more at the top of llama.py moves its finding; a suppression comment silences qwen2's.
    llama = tree / "vllm/model_executor/models/llama.py"
    llama.write_text("# edited\n" + llama.read_text(encoding="utf-8"), encoding="utf-8")
    qwen2 = tree / "vllm/model_executor/models/qwen2.py"
    lines = qwen2.read_text(encoding="utf-8").split("\n")
    n = egl005["vllm/model_executor/models/qwen2.py"]
    lines[n - 1] += "  # eagle3-lint: ignore[EGL005] checked by hand"
    qwen2.write_text("\n".join(lines), encoding="utf-8")

    rc_edit, edited = _run_json(tree, out, tmp_path, "--cache-dir", str(cache))
    rc_cold, cold = _run_json(tree, out, tmp_path, "--no-cache")
    assert (rc_edit, edited) == (rc_cold, cold)
    after = json.loads(edited)
    assert after["findings"] != before["findings"]
    assert [s["rule"] for s in after["suppressed"]] == ["EGL005"]
    moved = {f["path"]: f["line"] for f in after["findings"] if f["rule"] == "EGL005"}
    assert moved["vllm/model_executor/models/llama.py"] == egl005["vllm/model_executor/models/llama.py"] + 1
    # And once more with the report cache emptied: every fact replayed, the whole analysis run.
    for p in cache.glob("trees/*/*.report"):
        p.unlink()
    assert _run_json(tree, out, tmp_path, "--cache-dir", str(cache)) == (rc_cold, cold)


def _store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    from eagle3_lint.engines import dir_source
    from eagle3_lint.queries import Queries
    from eagle3_lint.store import FactStore

    monkeypatch.setenv("EAGLE3_LINT_JOBS", "2")  # a second process even on a busy machine
    tree = materialize(SAMPLES / "core" / "wrapper_inner_supports", tmp_path / "tree")
    store = FactStore(dir_source(tree), tmp_path / "cache")
    Queries().watch(store.source, store)  # the analysis' answers, which the derivations are kept with
    return store


def _sizes(src: Any) -> dict[str, int]:
    return {rel: len(src.read_bytes(rel)) for rel in src.py_files()}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the background derivation forks")
def test_memo_in_background_gives_what_memo_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner path of a cold run is read in a forked child: its value, the answer kept and the
    content hashes adopted are those of ``memo`` computing in place."""
    from eagle3_lint.deps import LISTING

    store = _store(tmp_path, monkeypatch)
    parent = os.getpid()
    files = store.source.py_files()

    def sizes(src: Any) -> dict[str, int]:
        assert os.getpid() != parent  # computed in the child
        return _sizes(src)

    got = store.memo_in_background("sizes", ("p",), files, sizes)()
    assert got == _sizes(store.source) and len(got) >= 2
    e = store.recorder._run[("derived", "sizes", ("p",))]
    assert e.persist and e.atoms == {*files, LISTING}  # what memo records: the files and the listing
    assert all(store._digests.get(rel) for rel in files)
    assert store.memo("sizes", ("p",), files, lambda src: {}) == got  # the answer, not computed again


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the background derivation forks")
def test_memo_in_background_falls_back_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A child that dies is replaced by the computation in place; an error of the computation itself
    is raised in this process, where analysis.build records it as an internal error."""
    store = _store(tmp_path, monkeypatch)
    parent = os.getpid()

    def dies_in_child(src: Any) -> str:
        if os.getpid() != parent:
            os._exit(3)
        return "computed here"

    assert store.memo_in_background("a", (), [], dies_in_child)() == "computed here"

    def broken(src: Any) -> str:
        raise KeyError("bug")

    with pytest.raises(KeyError, match="bug"):
        store.memo_in_background("b", (), [], broken)()
