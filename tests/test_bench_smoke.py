"""bench/bench.py runs end to end on a tiny tree (no timing assertions: it only has to work)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, SAMPLES, materialize


def test_bench_runs_on_a_sample_tree(tmp_path: Path) -> None:
    tree = materialize(SAMPLES / "core" / "wrapper_inner_supports", tmp_path / "tree")
    out = tmp_path / "bench.json"
    p = subprocess.run(
        [sys.executable, str(REPO / "bench" / "bench.py"), "--tree", str(tree), "--repeat", "1",
         "--no-sweep", "--no-compare", "--no-serial", "--phases", "--report-only", "--quiet", "--json", str(out)],
        capture_output=True, text=True, timeout=600,
    )
    assert p.returncode == 0, p.stderr
    rows = {r["measure"]: r for r in json.loads(out.read_text())["rows"]}
    assert {"floor", "cold", "warm", "one-edit", "peak-rss"} <= set(rows)
    assert rows["cold"]["ratio"] is not None and rows["peak-rss"]["value"] > 0
    assert "report identical to cold: True" in rows["warm"]["detail"]
    for name in ("floor", "cold", "warm", "one-edit"):
        assert name in p.stdout
    # All four targets of issue 13 on one line, wall and CPU ratios.
    summary = next(line for line in p.stdout.splitlines() if line.startswith("targets: "))
    for part in ("cold ", "warm ", "one-edit ", "peak RSS ", "(cpu "):
        assert part in summary
    # The tree it measured was only read: the one-edit case edits a copy.
    assert "_bench_edit_" not in "".join(f.read_text() for f in tree.rglob("*.py"))
