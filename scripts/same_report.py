#!/usr/bin/env python3
"""Check that a change left the reports alone: this checkout vs a git ref, byte for byte.

    python scripts/same_report.py                      # vLLM 0.16.0 and 0.33.0 against c5d5891
    python scripts/same_report.py --ref HEAD~3 0.30.0   # other releases, another ref
    python scripts/same_report.py 0.33.0 sglang-0.5.23  # an SGLang release: named as in the release cache

For each cached release, ``eagle3-lint check TREE --format json`` runs once with the ref's code
(extracted with ``git archive`` into a temporary folder, imported through PYTHONPATH) and six
times with this checkout's: without a cache, cold into an empty cache, warm with the report cache
emptied (facts replayed), cold with the parse (and the runner path) forced into two processes
(``EAGLE3_LINT_JOBS=2``) and warm after it, and cold forced serial. All seven reports must be
byte-identical, and so must the exit codes. Speed-ups that were meant to change nothing are
checked with this (issue 13, item 6). The exit status is 1 if any report differs. The cached
release trees are only read.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "eagle3-lint"


def run(code: Path, tree: Path, out: Path, cwd: Path, *cache: str, jobs: str | None = None) -> int:
    env = dict(os.environ, PYTHONPATH=str(code))
    if jobs:
        env["EAGLE3_LINT_JOBS"] = jobs
    # --format, not --output-format: a ref older than 1666b9e (2026-12-01) knows only --format, and today's code
    # still reads it (its deprecation warning goes to stderr, which is not compared)
    p = subprocess.run([sys.executable, "-m", "eagle3_lint", "check", str(tree), "--format", "json",
                        "--output", str(out), *cache], env=env, cwd=cwd, capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise SystemExit(f"same_report: {code} on {tree} failed (exit {p.returncode}):\n{p.stderr[-2000:]}")
    return p.returncode


def drop_reports(cache: Path) -> None:
    """Empty the report cache (every tree's replayable reports), keeping facts and answers."""
    for p in (*cache.glob("trees/*/*.report"), *cache.glob("reports/*")):  # reports/: an older layout
        p.unlink()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("versions", nargs="*", default=["0.16.0", "0.33.0"],
                    help="cached releases: a vLLM version, or a folder name of the release cache (sglang-0.5.23)")
    ap.add_argument("--ref", default="c5d5891", help="the git ref to compare against (default c5d5891)")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="eagle3-lint-same-"))
    failed = False
    try:
        old = work / "old"
        old.mkdir()
        archive = subprocess.run(["git", "-C", str(REPO), "archive", args.ref, "eagle3_lint"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        for v in args.versions:
            tree = cache_root() / (v if "-" in v else f"vllm-{v}")
            if not tree.is_dir():
                print(f"{v}: not cached under {tree}, skipped")
                continue
            base = work / f"{v}-ref.json"
            rc = run(old, tree, base, work, "--no-cache")
            want = base.read_bytes()
            cache = work / f"cache-{v}"
            pcache = work / f"cache-parallel-{v}"
            for name, extra, jobs in (("no cache", ("--no-cache",), None),
                                      ("cold", ("--cache-dir", str(cache)), None),
                                      ("warm analysis", ("--cache-dir", str(cache)), None),
                                      ("cold, 2 jobs", ("--cache-dir", str(pcache)), "2"),
                                      ("warm analysis after it", ("--cache-dir", str(pcache)), None),
                                      ("cold, 1 job", ("--cache-dir", str(work / f"cache-serial-{v}")), "1")):
                if name.startswith("warm analysis"):
                    drop_reports(pcache if "after" in name else cache)
                got = work / f"{v}-now.json"
                rc_now = run(REPO, tree, got, work, *extra, jobs=jobs)
                same = got.read_bytes() == want and rc_now == rc
                failed |= not same
                print(f"{v} {name}: {'identical' if same else 'DIFFERENT'} ({len(want)} bytes, exit {rc_now} vs {rc})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
