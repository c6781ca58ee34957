"""Architectures to classes, read from the tree's ``registry.py`` dicts.

The merged dict the runtime registry is built from (``_VLLM_MODELS``) is found as the dict that
spreads the others and is spread by none; its entries are expanded in source order, later keys
winning, as ``{**a, **b}`` does. Relative module names are prefixed the way the registry's own
f-string does; names that already start with ``vllm.`` (the ``vllm/models/<family>/`` layout) are
kept. Those packages dispatch per platform in their ``__init__``; the graph resolves the default.
"""

from __future__ import annotations

import re

from eagle3_lint.facts import ModuleFacts
from eagle3_lint.registry import Entry, Registry

REGISTRY_MODULE = "vllm.model_executor.models.registry"
DEFAULT_PREFIX = "vllm.model_executor.models"


def derive(mf: ModuleFacts | None, text: str) -> Registry:
    if mf is None:
        return Registry(False, "", {}, (), DEFAULT_PREFIX, "registry.py not found")
    if mf.error:
        return Registry(False, mf.path, {}, (), DEFAULT_PREFIX, f"registry.py unreadable: {mf.error}")
    m = re.search(r"f[\"'](vllm(?:\.\w+)+)\.\{", text)
    prefix = m.group(1) if m else DEFAULT_PREFIX
    dicts = mf.dicts
    spread = {name for d in dicts.values() for name in d.merges}
    roots = [d for d in dicts.values() if d.merges and d.name not in spread]
    root = max(roots, key=lambda d: len(d.merges)).name if roots else None

    entries: dict[str, Entry] = {}

    def expand(name: str, depth: int = 0) -> None:
        d = dicts.get(name)
        if d is None or depth > 10:
            return
        for merged in d.merges:
            expand(merged, depth + 1)
        for arch, mod, cls, line in d.entries:
            absmod = mod if mod.startswith("vllm.") else f"{prefix}.{mod}"
            entries[arch] = Entry(arch, absmod, cls, name, line)

    if root is not None:
        expand(root)
    else:
        for name in dicts:
            expand(name)
    return Registry(bool(entries), mf.path, entries, tuple(dicts), prefix,
                    "" if entries else "no architecture dicts found in registry.py")
