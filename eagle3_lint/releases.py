"""Released trees in the cache: ``pip download --no-deps`` of one release, only its ``.py`` files and dist-info kept,
under ``$XDG_CACHE_HOME/eagle3-lint/<package>-X.Y.Z/``, with a ``.complete`` marker written last that tells a
finished extraction from an interrupted one. Each engine's ``fetch_release`` calls ``fetch_release`` here with its
package (and the wheel tags its releases need); target.py turns ``<dist>==X.Y.Z`` into that call.

Two runs may fetch the same release at once (two terminals, a matrix beside a check, pytest-xdist
workers). A fetch holds a file lock, ``.<package>-X.Y.Z.lock`` beside the tree (``cache_lock``), for
the download and unpacking, and checks the marker again once it holds it, so the second run waits
and reads the first one's tree instead of downloading it again. The tree is unpacked in a temporary
folder of the cache folder and renamed into place whole (``publish``), so a reader never sees part of
one, and a complete tree is never deleted or replaced: a run may be reading it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from eagle3_lint.errors import TargetError

COMPLETE_MARKER = ".complete"
# What pip prints when it cannot reach an index (it still ends with "No matching distribution").
_NETWORK_ERRORS = ("NewConnectionError", "Failed to establish a new connection", "Could not fetch URL",
                   "Temporary failure in name resolution", "Network is unreachable", "ProxyError",
                   "ConnectTimeoutError", "Read timed out")
# How long a fetch waits for another process fetching the same release: pip's own time limit (below), plus the
# unpacking. The lock is the kernel's (flock), so a process that dies releases it: only a live fetch is waited for.
_PIP_TIMEOUT = 3600
LOCK_WAIT = _PIP_TIMEOUT + 600


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    if cache_dir:
        return Path(cache_dir)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "eagle3-lint"


def release_dir(version: str, cache_dir: str | os.PathLike[str] | None, package: str) -> Path:
    return cache_root(cache_dir) / f"{package}-{version}"


def _extract_py(wheel: Path, dest: Path) -> int:
    n = 0
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.endswith(".py") or ".dist-info/" in name:
                # Wheels are untrusted too: refuse members that would escape the destination.
                if name.startswith("/") or ".." in Path(name).parts:
                    continue
                z.extract(name, dest)
                n += 1
    return n


@contextmanager
def cache_lock(dest: Path, what: str, progress: Callable[[str], None] | None = None,
               wait: float = LOCK_WAIT) -> Iterator[None]:
    """Hold the lock of the cache entry ``dest`` (``<parent>/.<name>.lock``): one process at a time sets it up.

    ``filelock`` (flock on POSIX, msvcrt on Windows; the lock file opened with O_NOFOLLOW, so a symlink planted in
    a shared cache folder cannot redirect it). Raises TargetError after ``wait`` seconds, and OSError when the
    lock file cannot be created (a read-only cache folder)."""
    from filelock import FileLock, Timeout  # only a fetch pays for the import (~30 ms), never a cached run

    lock = FileLock(str(dest.parent / f".{dest.name}.lock"), timeout=wait)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if progress:
            progress(f"waiting for another process to finish setting up {what}")
        try:
            lock.acquire()
        except Timeout:
            raise TargetError(f"cannot set up {what}: another process has held {lock.lock_file} for "
                              f"{wait / 60:.0f} minutes") from None
    try:
        yield
    finally:
        lock.release()


def publish(staging: Path, dest: Path, scratch: Path) -> None:
    """Rename the finished tree ``staging`` to ``dest`` (same file system: one atomic rename). Call it holding
    ``cache_lock(dest)``. A ``dest`` already there is incomplete (it has no marker), left by an older version of
    this tool or by hand: it is first renamed into ``scratch``, a temporary folder deleted with its contents."""
    if os.path.lexists(dest):
        os.replace(dest, scratch / "incomplete")
    os.replace(staging, dest)


def fetch_release(
    version: str,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: Callable[[str], None] | None = None,
    *,
    package: str,
    pip_args: tuple[str, ...] = (),
) -> Path:
    """The cached source tree of ``<package>==version``, downloading it on first use.

    ``pip_args`` go to ``pip download`` before the requirement: platform tags for wheels that are
    built for one interpreter only (SGLang's cp311 manylinux wheels).
    """
    dest = release_dir(version, cache_dir, package)
    spec = f"{package}=={version}"
    if (dest / COMPLETE_MARKER).is_file():
        return dest
    with ExitStack() as held:
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            held.enter_context(cache_lock(dest, spec, progress))
        except OSError as exc:
            # A read-only or foreign cache: the user's to fix, said in their words, not an internal error.
            raise TargetError(f"cannot fetch {spec}: the cache folder {dest.parent} is not writable "
                              f"({exc.strerror or exc}); pass --cache-dir DIR") from None
        if (dest / COMPLETE_MARKER).is_file():
            return dest  # fetched by the process this one waited for
        return _download(spec, version, dest, progress, pip_args)


def _download(spec: str, version: str, dest: Path, progress: Callable[[str], None] | None,
              pip_args: tuple[str, ...]) -> Path:
    """Download and unpack ``spec`` into ``dest``, holding its lock (``fetch_release``)."""
    try:
        probe = tempfile.TemporaryDirectory(dir=dest.parent, prefix=".dl-")
    except OSError as exc:
        raise TargetError(f"cannot fetch {spec}: the cache folder {dest.parent} is not writable "
                          f"({exc.strerror or exc}); pass --cache-dir DIR") from None
    with probe as td:
        if progress:
            progress(f"downloading {spec} with pip (hundreds of MB, once)")
        # --only-binary: for an sdist pip would run the package's build backend to read its
        # metadata, i.e. execute the code this tool promises never to run.
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "--progress-bar",
            "on" if progress else "off",
            *pip_args,
            spec,
            "-d",
            td,
        ]
        try:
            proc = subprocess.run(cmd, stdout=sys.stderr if progress else subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, timeout=_PIP_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise TargetError(f"cannot run pip to fetch {spec}: {exc}") from None
        if proc.returncode != 0:
            last = [ln for ln in (proc.stderr or "").splitlines() if ln.strip()]
            reason = last[-1].strip() if last else f"pip exited {proc.returncode}"
            if any(m in (proc.stderr or "") for m in _NETWORK_ERRORS):
                reason += " (the package index could not be reached: offline? pass a path or a .whl instead)"
            raise TargetError(f"cannot fetch {spec}: {reason}")
        wheels = sorted(Path(td).glob("*.whl"))
        if not wheels:
            raise TargetError(f"cannot fetch {spec}: pip produced no wheel (only an sdist?)")
        if progress:
            progress(f"extracting .py files of {wheels[0].name}")
        staging = Path(td) / "tree"
        try:
            _extract_py(wheels[0], staging)
        except (zipfile.BadZipFile, OSError) as exc:
            raise TargetError(f"cannot unpack {wheels[0].name}: {exc}") from None
        (staging / COMPLETE_MARKER).write_text(version)
        try:
            publish(staging, dest, Path(td))
        except OSError as exc:
            raise TargetError(f"cannot fetch {spec}: cannot move the unpacked tree to {dest}: "
                              f"{exc.strerror or exc}") from None
    return dest
