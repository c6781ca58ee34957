"""The fast paths of issue 13, item 6 keep every result: what a replay skips, and what it must not.

Speed is measured by bench/bench.py, not here; these tests pin the behaviour the speed-ups rely on.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
                        "--format", "json", "--output", str(out)], capture_output=True, text=True, cwd=cwd,
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
