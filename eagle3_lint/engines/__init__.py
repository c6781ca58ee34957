"""Engine-specific knowledge, one sub-package per serving engine (the boundary of ``engine.py``).

Everything that names an engine's modules, paths, registry, runner call sites, config-time gates,
pipeline-parallel split, drafter-config reading, id convention, fix idioms and release fetching
lives in ``engines/<engine>/``; the semantic model (facts, class graph, MRO, delegation,
collection), the rules, fixes and reports stay engine-neutral and take their facts from an engine.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eagle3_lint.engine import Engine


class EngineName(str, Enum):
    VLLM = "vllm"
    SGLANG = "sglang"


def get(name: EngineName | str) -> Engine:
    """The engine called ``name``; imported on first use so a vLLM check never loads SGLang's code."""
    name = EngineName(name)
    if name is EngineName.VLLM:
        from eagle3_lint.engines.vllm import ENGINE

        return ENGINE
    from eagle3_lint.engines.sglang import ENGINE as SGLANG_ENGINE

    return SGLANG_ENGINE


def all_engines() -> tuple[Engine, ...]:
    return tuple(get(n) for n in EngineName)


def detect(path: Path) -> list[tuple[Engine, Path]]:
    """Every engine whose tree ``path`` is (or holds), with that tree's root, in ``EngineName`` order."""
    out: list[tuple[Engine, Path]] = []
    for engine in all_engines():
        root = engine.tree_root(path)
        if root is not None:
            out.append((engine, root))
    return out


def for_package(package: str) -> Engine:
    """The engine whose top-level package is ``package`` (a tree's ``SourceTree.package``); the first engine for a
    tree that holds none, so its errors name what is missing."""
    return next((e for e in all_engines() if e.package == package), all_engines()[0])
