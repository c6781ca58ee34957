"""One build of an oracle venv at a time, and a completion marker that is never half-written.

The venv builders (build_venv.py, build_sglang_venv.py, e2e_build_venv.py) check the venv's marker, delete
an incomplete venv and build it, a step of 5-30 minutes. Two at once (two pytest-xdist workers, a test beside
a manual run) would each delete the other's half-built venv. ``exclusive`` serialises them on a file lock
beside the venv, ``.<name>.lock`` (filelock, eagle3-lint's own dependency: flock, released by the kernel if the
holder dies); the caller reads the marker again once it holds the lock, so the second one reuses the first
one's venv. A venv cannot be built elsewhere and renamed into place (pip writes its absolute path into the
console scripts' shebangs), so the marker, written last and atomically (``write_marker``), is what says
"complete": a reader trusts no venv without one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout


@contextmanager
def exclusive(venv: Path, log: Callable[[str], None]) -> Iterator[None]:
    venv.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(venv.parent / f".{venv.name}.lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        log(f"waiting for another build of {venv} to finish (lock {lock.lock_file})")
        lock.acquire()  # no time limit: a build takes as long as pip does, and a dead holder's lock is gone
    try:
        yield
    finally:
        lock.release()


def write_marker(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all (a temporary file beside it, then a rename)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
