"""SGLang as an EAGLE-3 target engine: release fetching and the contract derived from the tree.

Everything SGLang-specific (``sglang/srt/...`` paths, ``EntryClass``, ``set_eagle3_layers_to_capture``)
is named here and nowhere else; the class graph and the per-file facts it uses are the core's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from eagle3_lint.engine import Derived, Engine
from eagle3_lint.errors import UsageError

if TYPE_CHECKING:
    import os

    from eagle3_lint.source import SourceTree
    from eagle3_lint.store import FactStore

PACKAGE = "sglang"


class SglangEngine(Engine):
    name = "sglang"
    display = "SGLang"
    package = PACKAGE
    model_dirs = ("sglang/srt/models/",)
    registry_module = "sglang.srt.models.registry"
    check_words = "whether `set_eagle3_layers_to_capture` is on the class the runner calls it on (through its MRO)"

    def tree_root(self, path: Path) -> Path | None:
        """A folder holding ``sglang/srt/`` (site-packages, unpacked wheel), ``sglang/`` itself, or a checkout."""
        if (path / PACKAGE / "srt").is_dir():
            return path
        if path.name == PACKAGE and (path / "srt").is_dir():
            return path.parent
        if (path / "python" / PACKAGE / "srt").is_dir():  # a git checkout keeps the package under python/
            return path / "python"
        return None

    def fetch_release(self, version: str, cache_dir: str | os.PathLike[str] | None,
                      progress: Callable[[str], None] | None = None) -> Path:
        from eagle3_lint.engines.sglang import fetch

        return fetch.fetch_release(version, cache_dir, progress)

    def version(self, source: SourceTree) -> str:
        return source.package_version(PACKAGE, ("version.py", "_version.py"))

    def derive(self, source: SourceTree, store: FactStore) -> Derived:
        raise UsageError("checking SGLang trees is not wired into `check` yet (issue 14): "
                         "see scripts/sglang_sweep.py for SGLang verdicts")


ENGINE = SglangEngine()
