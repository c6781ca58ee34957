"""Ask SGLang itself, live: build (or reuse) the CPU oracle venv from the committed lock, run
scripts/oracle/sglang_verdicts.py and scripts/oracle/sglang_setters.py, and compare with the committed
snapshots and the static verdicts.

Runs in CI (``CI=true``) or with ``EAGLE3_LINT_ORACLE=1``; it builds a 4 GB venv the first time
(about 5 minutes from the lock here).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from eagle3_lint.engines.sglang.verdicts import Status, contract

REPO = Path(__file__).resolve().parents[2]


def _live() -> bool:
    return os.environ.get("CI") == "true" or os.environ.get("EAGLE3_LINT_ORACLE") == "1"


def _sited(failed: dict[str, str]) -> dict[str, str]:
    return {m: re.sub(r"\(/\S*/site-packages/", "(<site-packages>/", why) for m, why in failed.items()}


@pytest.mark.oracle
@pytest.mark.real
@pytest.mark.parametrize("version", ["0.5.10", "0.5.19", "0.5.23"])
def test_live_sglang_oracle(version: str, sglang_trees, tmp_path: Path) -> None:
    if not _live():
        pytest.skip("live oracle runs in CI or with EAGLE3_LINT_ORACLE=1 (builds a CPU SGLang venv)")
    build = subprocess.run([sys.executable, str(REPO / "scripts/oracle/build_sglang_venv.py"), version],
                           capture_output=True, text=True, timeout=3600)
    assert build.returncode == 0, build.stderr[-2000:]
    py = build.stdout.strip().splitlines()[-1]
    out = tmp_path / "o.json"
    run = subprocess.run([py, str(REPO / "scripts/oracle/sglang_verdicts.py"), "--stub", "sgl_kernel",
                          "--output", str(out)], capture_output=True, text=True, timeout=1800, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    live = json.loads(out.read_text())
    snap = json.loads((REPO / f"tests/differential/oracle/sglang-{version}.json").read_text())
    # An import error names the venv's own site-packages (under the cache folder, which differs between machines).
    assert live["archs"] == snap["archs"] and _sited(live["modules_failed"]) == _sited(snap["modules_failed"])
    got = contract(sglang_trees.get(version)).by_arch()
    wrong = [a for a, o in live["archs"].items()
             if got[a].supports is not o["supports"] or (got[a].status is Status.WRAPPER_GAP) != o["wrapper_gap"]]
    assert not wrong
    # The setters' effects, recorded again in the same venv, equal the committed snapshot that
    # test_setter_oracle.py compares the static transform with.
    out = tmp_path / "s.json"
    run = subprocess.run([py, str(REPO / "scripts/oracle/sglang_setters.py"), "--stub", "sgl_kernel",
                          "--output", str(out)], capture_output=True, text=True, timeout=1800, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    snap = json.loads((REPO / f"tests/differential/oracle/sglang-setters-{version}.json").read_text())
    assert json.loads(out.read_text())["archs"] == snap["archs"]
