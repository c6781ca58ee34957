"""House-keeping of the suite itself (issue 15): a test that reads a real release must say so with the
``real`` marker, or the fast set (``-m 'not real and not oracle'``) would download releases."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def test_real_trees_without_the_marker_stops_collection(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        "import pytest\n\n\ndef test_unmarked(real_trees):\n    pass\n\n\n"
        "@pytest.mark.real\ndef test_marked(real_trees):\n    pass\n\n\ndef test_plain():\n    pass\n",
        encoding="utf-8")
    cmd = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider",
           "--rootdir", str(tmp_path), "-W", "ignore::pytest.PytestUnknownMarkWarning", str(tmp_path / "test_x.py")]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 4, p.stdout + p.stderr  # pytest's usage error
    assert "real_trees without @pytest.mark.real: test_x.py::test_unmarked" in p.stderr
    assert "test_marked" not in p.stderr and "test_plain" not in p.stderr
    # With the marker added, the same file collects.
    fixed = (tmp_path / "test_x.py").read_text().replace("def test_unmarked", "@pytest.mark.real\ndef test_unmarked")
    (tmp_path / "test_x.py").write_text(fixed, encoding="utf-8")
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "3 tests collected" in p.stdout, p.stdout + p.stderr
