"""Opt-in pytest plugin: what each test costs in CPU seconds, beside its wall-clock time.

``--durations`` measures wall time, which on a shared machine says more about the other users than about
the test (at load 8 on 2 cores a test takes four times as long). CPU time, this process's and that of the
children it waited for (``subprocess.run``, the analysis' forked workers, the oracle venv's python), is
close to what the test would take alone. It is what docs/testing.md's estimates of CI time are made from:

    EAGLE3_LINT_CPUTIME=/tmp/cpu python -m pytest -q -p tests.cputime [-n 2]

writes ``/tmp/cpu.<worker>.tsv`` (``gw0``, ``gw1`` under xdist, ``main`` without), one line per test:
node id, wall seconds, CPU seconds, setup through teardown.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Generator

import pytest


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    out = os.environ.get("EAGLE3_LINT_CPUTIME")
    t0, c0 = time.perf_counter(), _cpu()
    yield
    if out:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(f"{out}.{worker}.tsv", "a", encoding="utf-8") as fh:
            fh.write(f"{item.nodeid}\t{time.perf_counter() - t0:.3f}\t{_cpu() - c0:.3f}\n")
