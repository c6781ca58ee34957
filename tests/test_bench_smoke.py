"""bench/bench.py runs end to end on a tiny tree (no timing assertions: it only has to work)."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, SAMPLES, materialize


def _bench(monkeypatch: pytest.MonkeyPatch) -> Any:
    """bench/bench.py loaded as a module (it is a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("eagle3_lint_bench", REPO / "bench" / "bench.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, bench)  # its dataclasses look their module up there
    spec.loader.exec_module(bench)
    return bench


def test_bench_runs_on_a_sample_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """bench.py's ``main`` in this process (its measurements are subprocesses of their own either way)."""
    bench = _bench(monkeypatch)
    # The bench lets a copied tree age 2.1 s before its one-edit runs, so a real release's figures are not
    # those of a racily clean tree; a smoke test asserts no figure, so it does not wait.
    real_sleep = time.sleep
    monkeypatch.setattr(time, "sleep", lambda s: real_sleep(0) if s == 2.1 else real_sleep(s))
    # Each measured run imports a fresh copy of the package: let the first one leave its bytecode for the others.
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    tree = materialize(SAMPLES / "core" / "wrapper_inner_supports", tmp_path / "tree")
    out = tmp_path / "bench.json"
    rc = bench.main(["--tree", str(tree), "--repeat", "1", "--no-sweep", "--no-compare", "--no-serial", "--phases",
                     "--report-only", "--quiet", "--json", str(out)])
    stdout = capsys.readouterr().out
    assert rc == 0
    figures = json.loads(out.read_text())
    rows = {r["measure"]: r for r in figures["rows"]}
    # --phases: where a one-edit check spends its time, every phase named, as fractions of the floor.
    phases = next(n for n in figures["notes"] if n.startswith("one-edit phases (x floor): "))
    for part in ("imports ", "open pack ", "facts ", "verdicts ", "rules+save ", "render ", "total "):
        assert part in phases, phases
    assert {"floor", "cold", "warm", "one-edit", "peak-rss"} <= set(rows)
    assert rows["cold"]["ratio"] is not None and rows["peak-rss"]["value"] > 0
    assert "report identical to cold: True" in rows["warm"]["detail"]
    for name in ("floor", "cold", "warm", "one-edit"):
        assert name in stdout
    # All four targets of issue 13 on one line, wall and CPU ratios.
    summary = next(line for line in stdout.splitlines() if line.startswith("targets: "))
    for part in ("cold ", "warm ", "one-edit ", "peak RSS ", "(cpu "):
        assert part in summary
    # The tree it measured was only read: the one-edit case edits a copy.
    assert "_bench_edit_" not in "".join(f.read_text() for f in tree.rglob("*.py"))
    assert "edit kind append; edited " in rows["one-edit"]["detail"]


def test_bench_class_edit_changes_llama_model_to_a_new_state_each_round(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """``--edit-kind class``: each round LlamaModel gains that round's probe method and loses the previous one,
    so no round brings back a tree an earlier run saw (whose report the report cache would replay)."""
    import ast

    bench = _bench(monkeypatch)
    tree = materialize(SAMPLES / "slice-relative-aux-index" / "good_v016", tmp_path / "tree")
    llama = tree / "vllm/model_executor/models/llama.py"
    seen = {llama.read_text()}
    for n in range(4):
        detail = bench.edit_one_file(tree, n, "class")
        assert detail.startswith("vllm/model_executor/models/llama.py (class: LlamaModel._bench_probe_"), detail
        text = llama.read_text()
        assert text not in seen
        seen.add(text)
        classes = {c.name: c for c in ast.parse(text).body if isinstance(c, ast.ClassDef)}
        probes = [(c, f.name) for c in classes.values() for f in c.body
                  if isinstance(f, ast.FunctionDef) and f.name.startswith("_bench_probe_")]
        assert probes == [(classes["LlamaModel"], f"_bench_probe_{n}")], probes
