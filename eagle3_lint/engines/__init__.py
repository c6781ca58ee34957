"""The registry of serving engines: every engine is a plugin, discovered under the entry point group
``eagle3_lint.engines`` (what ``importlib.metadata.entry_points`` lists; ``_entry_points`` says how it is read).

An engine is one package (the ``engine.Engine`` it exposes, e.g. ``eagle3_lint.engines.vllm:ENGINE``): everything
that names an engine's modules, paths, registry, runner call sites, config-time gates, pipeline-parallel split,
drafter-config reading, id convention, fix idioms, release spellings and fetching lives there; the semantic model
(facts, class graph, MRO, delegation, collection), the rules, fixes and reports stay engine-neutral and take their
facts from an engine. This tool's own engines are declared in its ``pyproject.toml`` like any third-party one; the
core names none of them. A package installed beside the tool adds an engine by declaring its own entry point
(``sample_trees/_engines/toyengine/`` does, and ``tests/test_toy_engine.py`` installs it).

When the tool runs from a source folder whose installed metadata does not declare an engine package of
``eagle3_lint/engines/`` (``PYTHONPATH`` on a checkout, or an install made before that package existed), the
package is found here by its folder, under its folder name: metadata that lags the code never loses an engine.
"""

from __future__ import annotations

import pkgutil
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from eagle3_lint.errors import UsageError
from eagle3_lint.source import DirSource, ZipSource

if TYPE_CHECKING:
    from eagle3_lint.engine import Engine

GROUP = "eagle3_lint.engines"


def _normal(name: str) -> str:
    """A distribution name as PyPI compares them (PEP 503): ``tensorrt_llm`` == ``TensorRT-LLM``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _entry_points() -> list[tuple[str, str]]:
    """``(name, value)`` of the group's entry points, as ``importlib.metadata.entry_points(group=GROUP)`` lists
    them. Where every ``sys.path`` entry is a folder and no import hook adds distributions, they are read here the
    way importlib.metadata reads them (each folder's ``*.dist-info``/``*.egg-info``, the first distribution of a
    name winning, its ``entry_points.txt``): importing importlib.metadata costs about 60 ms of CPU (its ``email``
    imports), half of a replayed check (reportcache.py). tests/test_engine_boundary.py checks the two agree."""
    import os
    import sys
    from importlib.machinery import PathFinder

    if any(hasattr(f, "find_distributions") and f is not PathFinder for f in sys.meta_path):
        return _metadata_entry_points()
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for entry in sys.path:
        root = entry or "."
        if os.path.isfile(root):  # a zip or an egg on the path: importlib.metadata reads those
            return _metadata_entry_points()
        try:
            children = os.listdir(root)
        except OSError:
            continue
        for child in children:
            stem, dot, suffix = child.rpartition(".")
            if not dot or suffix.lower() not in ("dist-info", "egg-info"):
                continue
            name = _normal(stem.partition("-")[0]).replace("-", "_")
            if name in seen:
                continue
            seen.add(name)
            try:
                with open(os.path.join(root, child, "entry_points.txt"), encoding="utf-8") as fh:
                    text = fh.read()
            except OSError:
                continue
            section = None
            for line in (ln.strip() for ln in text.splitlines()):
                if not line or line.startswith("#"):
                    continue
                if line.startswith("[") and line.endswith("]"):
                    section = line.strip("[]")
                elif section == GROUP and "=" in line:
                    key, _, value = line.partition("=")
                    out.append((key.strip(), value.strip()))
    return out


def _metadata_entry_points() -> list[tuple[str, str]]:
    from importlib.metadata import entry_points

    return [(ep.name, ep.value) for ep in entry_points(group=GROUP)]


@lru_cache(maxsize=1)
def _declared() -> dict[str, str]:
    """Engine name -> ``module:attribute``, from the entry points, then this package's own engine folders."""
    out: dict[str, str] = {}
    for name, value in _entry_points():
        if out.setdefault(name, value) != value:
            raise UsageError(f"two engines are called {name!r} ({out[name]} and {value}): uninstall one")
    for info in pkgutil.iter_modules(__path__):
        if info.ispkg:
            out.setdefault(info.name, f"{__name__}.{info.name}:ENGINE")
    return out


_loaded: dict[str, Engine] = {}


def _load(name: str, value: str) -> Engine:
    """The engine an entry point names, imported on first use (a vLLM check never loads SGLang's code)."""
    if name not in _loaded:
        import importlib

        from eagle3_lint.engine import Engine, EngineProtocol

        module, _, attr = value.partition(":")
        try:
            obj: object = importlib.import_module(module)
            for part in attr.split(".") if attr else ():
                obj = getattr(obj, part)
        except Exception as exc:  # noqa: BLE001 - a broken plugin is the user's to fix, said in one line
            raise UsageError(f"engine plugin {name!r} ({value}) cannot be loaded: {type(exc).__name__}: {exc}") \
                from None
        if isinstance(obj, type) and issubclass(obj, Engine):
            obj = obj()
        # The protocol's check is the one that sees a class attribute the engine forgot to set (``display``).
        if not isinstance(obj, Engine) or not isinstance(obj, EngineProtocol):
            raise UsageError(f"engine plugin {name!r} ({value}) is not an eagle3_lint.engine.Engine with every "
                             "member of EngineProtocol")
        if obj.name != name:
            raise UsageError(f"engine plugin {name!r} ({value}) calls itself {obj.name!r}: the names must agree")
        _loaded[name] = obj
    return _loaded[name]


def get(name: str) -> Engine:
    """The engine called ``name``."""
    value = _declared().get(name)
    if value is None:
        raise UsageError(f"no engine called {name!r}: the installed ones are {', '.join(names())}")
    return _load(name, value)


@lru_cache(maxsize=1)
def all_engines() -> tuple[Engine, ...]:
    """Every engine, in the order each declares (``Engine.order``, then name): the first is the default one."""
    return tuple(sorted((_load(n, v) for n, v in _declared().items()), key=lambda e: (e.order, e.name)))


def names() -> tuple[str, ...]:
    return tuple(e.name for e in all_engines())


def detect(path: Path) -> list[tuple[Engine, Path]]:
    """Every engine whose tree ``path`` is (or holds), with that tree's root, in ``all_engines`` order."""
    out: list[tuple[Engine, Path]] = []
    for engine in all_engines():
        root = engine.tree_root(path)
        if root is not None:
            out.append((engine, root))
    return out


def dir_source(root: Path) -> DirSource:
    """The tree at ``root``, its package the one of the engine whose own test of a folder (``Engine.tree_root``, as
    target.resolve uses) finds its tree there; the first engine's when none does, so errors name what is missing."""
    package = next((e.package for e, r in detect(root) if r == root), all_engines()[0].package)
    return DirSource(root, package)


def zip_source(wheel: Path) -> ZipSource:
    """The wheel at ``wheel``, read in place, its package the first engine's (``all_engines`` order) among the
    wheel's top-level names; the first engine's when none is there, so errors name what is missing."""
    def pick(names: list[str]) -> str:
        return next((e.package for e in all_engines() if e.package in names), all_engines()[0].package)

    return ZipSource(wheel, pick)


def for_package(package: str) -> Engine:
    """The engine whose top-level package is ``package`` (a tree's ``SourceTree.package``); the first engine for a
    tree that holds none, so its errors name what is missing."""
    return next((e for e in all_engines() if e.package == package), all_engines()[0])


def for_spec(dist: str) -> Engine | None:
    """The engine a release is spelled with (``<dist>==X.Y.Z``): the one that lists ``dist`` among its
    distribution names, compared as PyPI compares them."""
    want = _normal(dist)
    return next((e for e in all_engines() if any(_normal(d) == want for d in e.release_names)), None)
