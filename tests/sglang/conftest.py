"""Fixtures for the SGLang engine tests: real SGLang releases, fetched once into the shared cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eagle3_lint import releases
from eagle3_lint.engines.sglang import fetch
from tests.conftest import real_cache_dir


class SglangTrees:
    """Session-wide access to real SGLang releases: ``trees.get("0.5.10")`` -> root folder."""

    def __init__(self) -> None:
        self.cache = real_cache_dir()

    def get(self, version: str) -> Path:
        if os.environ.get("EAGLE3_LINT_OFFLINE") and \
                not (fetch.release_dir(version, self.cache) / releases.COMPLETE_MARKER).exists():
            pytest.skip(f"sglang=={version} not cached and EAGLE3_LINT_OFFLINE is set")
        return fetch.fetch_release(version, self.cache)


@pytest.fixture(scope="session")
def sglang_trees() -> SglangTrees:
    return SglangTrees()
