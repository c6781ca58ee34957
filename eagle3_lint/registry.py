"""Architectures to classes: what an engine's model registry maps each architecture name to.

Each engine reads its registry from the tree (``engines/<engine>/registry.py``); this module holds the
engine-neutral data the rest of the tool queries.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    arch: str
    module: str  # absolute module name
    class_name: str
    source_dict: str
    line: int
    path: str = ""  # where the entry is declared when not in registry.py (a plugin's register_model call)
    note: str = ""  # shown with the registry step of the evidence (a plugin's: conditional, overrides a built-in)


@dataclass(frozen=True)
class Registry:
    found: bool
    path: str
    entries: dict[str, Entry]
    dicts: tuple[str, ...]
    prefix: str
    note: str = ""
