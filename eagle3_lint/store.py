"""Facts for every module, loaded lazily, with an optional on-disk cache keyed by content hash.

The cache is a layer under ``load``: a hit returns the same ``ModuleFacts`` that extraction would,
so no rule can tell the difference. One pack file per tree holds ``path -> (sha256, facts)``; a
pack that fails to unpickle or whose header does not match is dropped and rebuilt.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path

from eagle3_lint import __version__
from eagle3_lint.facts import FACTS_VERSION, ModuleFacts, extract
from eagle3_lint.source import SourceTree

_PACK_HEADER = ("eagle3-lint-facts", __version__, FACTS_VERSION)


class FactStore:
    def __init__(self, source: SourceTree, cache_dir: Path | None = None) -> None:
        self.source = source
        self.cache_dir = cache_dir
        self._facts: dict[str, ModuleFacts | None] = {}
        self._pack: dict[str, tuple[str, ModuleFacts]] = {}
        self._dirty = False
        self.read_errors: dict[str, str] = {}
        self.hits = 0
        self.misses = 0
        if cache_dir is not None:
            self._load_pack()

    # -- cache pack ------------------------------------------------------------------------------
    def _pack_path(self) -> Path:
        assert self.cache_dir is not None
        tag = hashlib.sha256(self.source.root_label.encode()).hexdigest()[:16]
        return self.cache_dir / "facts" / f"{tag}.pack"

    def _load_pack(self) -> None:
        p = self._pack_path()
        try:
            with open(p, "rb") as fh:
                header, body = pickle.load(fh)
            if header != _PACK_HEADER or not isinstance(body, dict):
                raise ValueError("stale header")
            self._pack = body
        except FileNotFoundError:
            self._pack = {}
        except Exception:  # noqa: BLE001 - any damage to the pack means: rebuild it
            self._pack = {}
            self._dirty = True

    def save(self) -> None:
        if self.cache_dir is None or not self._dirty:
            return
        p = self._pack_path()
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".pack-")
            with os.fdopen(fd, "wb") as fh:
                pickle.dump((_PACK_HEADER, self._pack), fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, p)
            self._dirty = False
        except OSError:
            pass  # a cache that cannot be written only costs time

    # -- facts -----------------------------------------------------------------------------------
    def load_path(self, rel: str) -> ModuleFacts | None:
        if rel in self._facts:
            return self._facts[rel]
        try:
            data = self.source.read_bytes(rel)
        except OSError as exc:
            self.read_errors[rel] = str(exc) or type(exc).__name__
            self._facts[rel] = None
            return None
        module = self.source.path_module(rel)
        is_pkg = rel.endswith("/__init__.py")
        digest = hashlib.sha256(data).hexdigest()
        hit = self._pack.get(rel)
        if hit is not None and hit[0] == digest:
            mf = hit[1]
            self.hits += 1
        else:
            mf = extract(rel, module, is_pkg, data)
            self.misses += 1
            if self.cache_dir is not None:
                self._pack[rel] = (digest, mf)
                self._dirty = True
        self._facts[rel] = mf
        return mf

    def load(self, module: str) -> ModuleFacts | None:
        rel = self.source.module_path(module)
        if rel is None:
            return None
        return self.load_path(rel)

    def loaded(self) -> list[ModuleFacts]:
        return [mf for mf in self._facts.values() if mf is not None]
