"""Turn what the user passed (a folder, a wheel, ``<engine>==X.Y.Z`` or nothing) into a read-only tree.

``<dist>==X.Y.Z`` (a distribution name an engine spells its releases with, ``Engine.release_names``) is fetched
once by that engine, with ``pip download --no-deps`` here; only its ``.py`` files and dist-info are kept, under
``$XDG_CACHE_HOME/eagle3-lint/<package>-X.Y.Z/``; a ``.complete`` marker, written last, tells a finished
extraction from an interrupted one. Which engine a folder holds is each engine's own call (``Engine.tree_root``);
when one folder holds two, ``--engine`` picks.

Two runs may fetch the same release at once (two terminals, a matrix beside a check, pytest-xdist
workers). A fetch holds a file lock, ``.<package>-X.Y.Z.lock`` beside the tree (``cache_lock``), for
the download and unpacking, and checks the marker again once it holds it, so the second run waits
and reads the first one's tree instead of downloading it again. The tree is unpacked in a temporary
folder of the cache folder and renamed into place whole (``publish``), so a reader never sees part of
one, and a complete tree is never deleted or replaced: a run may be reading it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from eagle3_lint import engines
from eagle3_lint.engine import Engine
from eagle3_lint.errors import TargetError, UsageError
from eagle3_lint.source import DirSource, SourceTree

# A release: a distribution name as PyPI writes them (``vllm``, ``tensorrt_llm``, ``tensorrt-llm``), an exact version.
SPEC_RE = re.compile(r"^(?P<engine>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)==(?P<ver>[0-9][0-9A-Za-z.+\-]*)$")
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


def is_fetched(root: Path, cache_dir: str | os.PathLike[str] | None = None) -> bool:
    """Whether ``root`` is a release ``<engine>==X`` downloaded into the cache (read-only: later runs trust it)."""
    try:
        real = root.resolve()
        cache = cache_root(cache_dir).resolve()
    except OSError:
        return False
    return real.parent == cache and any(real.name.startswith(f"{e.package}-") for e in engines.all_engines())


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


def _pick(found: list[tuple[Engine, Path]], engine: str | None, where: str) -> tuple[Engine, Path] | None:
    """The one engine tree among ``found`` (``engine`` names it when there are several)."""
    if engine is not None:
        found = [f for f in found if f[0].name == engine]
    if len(found) > 1:
        names = " and ".join(e.display for e, _ in found)
        raise UsageError(f"{where} holds both {names}: say which with --engine "
                         f"{'|'.join(e.name for e, _ in found)}")
    return found[0] if found else None


def _git_checkout_root(start: Path, engine: str | None) -> tuple[Engine, Path, Path] | None:
    """The engine and tree root of the git checkout ``start`` is in, and the checkout's top folder."""
    for p in (start, *start.parents):
        if (p / ".git").exists():
            hit = _pick(engines.detect(p), engine, str(p))
            return None if hit is None else (hit[0], hit[1], p)
    return None


def _names(engine: str | None) -> list[Engine]:
    return [e for e in engines.all_engines() if engine is None or e.name == engine]


def parse_spec(text: str) -> tuple[Engine, str] | None:
    """``(engine, version)`` for a release spelled ``<dist>==X.Y.Z`` with a distribution name of an engine's."""
    m = SPEC_RE.match(text.strip())
    engine = engines.for_spec(m.group("engine")) if m else None
    return (engine, m.group("ver")) if m and engine is not None else None


def _below(root: Path, named: Path) -> str:
    """``root`` relative to the folder the user named (``python/`` for an SGLang checkout), or "" when the root
    is that folder or above it (a site-packages, a ``vllm/`` package folder)."""
    try:
        rel = root.resolve().relative_to(named.resolve()).as_posix()
    except ValueError:
        return ""
    return "" if rel == "." else rel + "/"


def resolve(
    target: str | None,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: Callable[[str], None] | None = None,
    engine: str | None = None,
) -> SourceTree:
    """Resolve a target argument; raises UsageError/TargetError with a one-line message."""
    wanted = _names(engine)
    specs = " or ".join(f"{e.release_names[0]}==X.Y.Z" for e in wanted)
    if target is None:
        here = Path.cwd()
        here_hit = _pick(engines.detect(here), engine, str(here))
        found = (*here_hit, here) if here_hit is not None else _git_checkout_root(here, engine)
        if found is not None:
            return DirSource(found[1], found[0].package, _below(found[1], found[2]))
        # find_spec on a top-level name locates it without running its __init__.
        installed = []
        for e in wanted:
            spec = importlib.util.find_spec(e.package)
            if spec is not None and spec.submodule_search_locations:
                installed.append((e, Path(list(spec.submodule_search_locations)[0]).parent))
        hit = _pick(installed, engine, "this Python environment")
        if hit is not None:
            return DirSource(hit[1], hit[0].package)
        raise UsageError(
            f"no {' or '.join(e.display for e in wanted)} found: pass a path (site-packages, package folder, "
            f"checkout or .whl) or {specs}"
        )

    release = parse_spec(target)
    if release is not None:
        spec_engine, version = release
        if engine is not None and spec_engine.name != engine:
            raise UsageError(f"{target} is a {spec_engine.display} release but --engine is {engine}")
        return DirSource(spec_engine.fetch_release(version, cache_dir, progress), spec_engine.package)
    if any(target.startswith(d) for e in engines.all_engines() for d in e.release_names) and \
            any(c in target for c in "=<>"):
        raise UsageError(f"unsupported version spec {target!r}: use an exact pin, {specs}")

    path = Path(target).expanduser()
    if not path.exists():
        if os.path.lexists(path):
            raise TargetError(f"target is a dangling or looping symlink: {target}")
        raise TargetError(f"target does not exist: {target}")
    if path.is_file():
        if path.suffix == ".whl":
            wheel = engines.zip_source(path)
            if engine is not None and wheel.package != engines.get(engine).package:
                raise UsageError(f"{target} is not a {engines.get(engine).display} wheel")
            return wheel
        raise UsageError(f"target is a file but not a wheel (.whl): {target}")
    if not os.access(path, os.R_OK | os.X_OK):
        raise TargetError(f"target folder is not readable: {target}")
    path = path.resolve()
    hit = _pick(engines.detect(path), engine, target)
    if hit is not None:
        return DirSource(hit[1], hit[0].package, _below(hit[1], path))
    raise UsageError(
        f"not a {' or '.join(e.display for e in wanted)} tree: {target} (expected a folder holding "
        f"{' or '.join(e.package + '/' for e in wanted)}, such a package folder, a .whl or {specs})"
    )
