"""Modules imported on first use: fix generation and the mini evaluator are a quarter of the import time.

A re-check whose fixes and default-id evaluations are all kept between runs (queries.py) never needs
``fixgen`` or ``minieval``; importing them anyway (about 50 ms: ~100 dataclasses and node tables built at
import) was a sixth of such a check. ``importlib.util.LazyLoader`` is the standard library's way: the
module object exists at once, and its code runs on the first attribute read.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy(name: str) -> ModuleType:
    """``name``, imported when first used (at once if something imported it already)."""
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    loader.exec_module(mod)
    return mod
