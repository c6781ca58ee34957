"""Read-only access to an SGLang tree (the folder holding ``sglang/``) through the core's ``DirSource``.

``source.DirSource`` walks ``vllm/`` and lists ``vllm-*.dist-info``; this subclass walks ``sglang/``
instead, so the core's ``FactStore`` and ``ClassGraph`` work on SGLang unchanged. (At the engine
boundary the walked package becomes a parameter of ``DirSource`` and this class goes away.)
"""

from __future__ import annotations

import os
from pathlib import Path

from eagle3_lint.source import DirSource

PACKAGE = "sglang"
MODELS_PACKAGE = "sglang.srt.models"
MODELS_DIR = "sglang/srt/models"


def looks_like_sglang(root: Path) -> bool:
    """A folder holding ``sglang/srt/`` (a site-packages, an unpacked wheel, ``python/`` of a checkout)."""
    return (root / PACKAGE / "srt").is_dir()


class SglangDirSource(DirSource):
    """``DirSource`` over ``<root>/sglang/``: same read limits, symlink-loop guard and sorting."""

    def _walk(self) -> list[str]:
        out: list[str] = []
        seen_dirs: set[tuple[int, int]] = set()
        for dirpath, dirnames, filenames in os.walk(self.root / PACKAGE, followlinks=False):
            try:
                st = os.stat(dirpath)
            except OSError:
                dirnames[:] = []
                continue
            if (st.st_dev, st.st_ino) in seen_dirs:
                dirnames[:] = []
                continue
            seen_dirs.add((st.st_dev, st.st_ino))
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
            out.extend(os.path.relpath(os.path.join(dirpath, fn), self.root).replace(os.sep, "/")
                       for fn in filenames if fn.endswith(".py"))
        return sorted(out)

    def other_files(self) -> list[str]:
        try:
            return sorted(f"{p.name}/METADATA" for p in self.root.iterdir()
                          if p.name.startswith("sglang-") and p.name.endswith(".dist-info")
                          and (p / "METADATA").is_file())
        except OSError:
            return []

    def sglang_version(self) -> str:
        """``sglang/version.py``'s literal ``__version__`` (older releases), else dist-info, else "unknown"."""
        return self.package_version("sglang", ("version.py", "_version.py"))
