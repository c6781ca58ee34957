"""Turn what the user passed (a folder, a wheel, ``<engine>==X.Y.Z`` or nothing) into a read-only tree.

``<dist>==X.Y.Z`` (a distribution name an engine spells its releases with, ``Engine.release_names``) is fetched
once by that engine into the cache (releases.py: the download, the lock, the ``.complete`` marker). Which engine a
folder holds is each engine's own call (``Engine.tree_root``); when one folder holds two, ``--engine`` picks.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Callable
from pathlib import Path

from eagle3_lint import engines
from eagle3_lint.engine import Engine
from eagle3_lint.errors import TargetError, UsageError
from eagle3_lint.releases import cache_root
from eagle3_lint.source import DirSource, SourceTree

# A release: a distribution name as PyPI writes them (``vllm``, ``tensorrt_llm``, ``tensorrt-llm``), an exact version.
SPEC_RE = re.compile(r"^(?P<engine>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)==(?P<ver>[0-9][0-9A-Za-z.+\-]*)$")


def is_fetched(root: Path, cache_dir: str | os.PathLike[str] | None = None) -> bool:
    """Whether ``root`` is a release ``<engine>==X`` downloaded into the cache (read-only: later runs trust it)."""
    try:
        real = root.resolve()
        cache = cache_root(cache_dir).resolve()
    except OSError:
        return False
    return real.parent == cache and any(real.name.startswith(f"{e.package}-") for e in engines.all_engines())


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
