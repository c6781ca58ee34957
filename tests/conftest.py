"""Shared fixtures: real released vLLM trees (downloaded once, cached) and sample-tree materialisation."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from eagle3_lint import releases

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_trees"

# The whole suite (and every CLI subprocess it starts) runs with the full guard: besides the import
# hook, which is always on during analysis, an audit hook refuses exec of tree code and writes into
# the tree while it is analyzed (eagle3_lint/guard.py).
os.environ.setdefault("EAGLE3_LINT_GUARD", "1")


def real_cache_dir() -> Path:
    """Where real releases are cached; CI and developers share the user cache by default."""
    env = os.environ.get("EAGLE3_LINT_TEST_CACHE")
    return Path(env) if env else releases.cache_root()


class RealTrees:
    """Session-wide access to real vLLM releases: ``trees.get("0.16.0")`` -> root folder."""

    def __init__(self) -> None:
        self.cache = real_cache_dir()

    def get(self, version: str) -> Path:
        cached = (releases.release_dir(version, self.cache, "vllm") / releases.COMPLETE_MARKER).exists()
        if os.environ.get("EAGLE3_LINT_OFFLINE") and not cached:
            pytest.skip(f"vllm=={version} not cached and EAGLE3_LINT_OFFLINE is set")
        return releases.fetch_release(version, self.cache, package="vllm")


@pytest.fixture(scope="session")
def real_trees() -> RealTrees:
    return RealTrees()


_SESSION_CACHE: list[Path] = []


@pytest.fixture(scope="session", autouse=True)
def _session_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    _SESSION_CACHE[:] = [tmp_path_factory.mktemp("session-cache")]


def session_cache() -> Path:
    """A cache folder of this session (of this xdist worker), for the tests' analyses of real releases.

    ``Options(cache_dir=session_cache())`` parses each release once per session instead of once per test: the
    facts cache is a layer under loading that gives back what parsing gives (store.py; tests/test_cache.py
    compares reports with and without it on a real release). It starts empty, so each analysis is computed in
    this session and no result of an earlier run or of another version of the code (what the user cache may
    hold) is read. A test that compares two analyses with the same options must not use it: the second would
    reuse the first one's answers (queries.py)."""
    return _SESSION_CACHE[0]


def unmarked_real(items: list[pytest.Item]) -> list[str]:
    """Tests that take ``real_trees`` without the ``real`` marker: they would download releases in the
    fast set (``-m 'not real and not oracle'``), which must run offline."""
    return [item.nodeid for item in items
            if "real_trees" in getattr(item, "fixturenames", ()) and item.get_closest_marker("real") is None]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = unmarked_real(items)
    if missing:
        raise pytest.UsageError("tests use real_trees without @pytest.mark.real: " + ", ".join(missing))


def materialize(case_dir: Path, dest: Path) -> Path:
    """Copy a sample case (its base, then its own files on top) to ``dest``; returns the tree root."""
    from eagle3_lint._compat import tomllib

    meta = tomllib.loads((case_dir / "case.toml").read_text()) if (case_dir / "case.toml").exists() else {}
    base = meta.get("base")
    if base:
        shutil.copytree(SAMPLES / "_bases" / base, dest, dirs_exist_ok=True)
    for item in case_dir.iterdir():
        if item.name in ("case.toml", "expected.diff") or item.name.endswith(".json"):
            continue
        if item.is_dir():
            shutil.copytree(item, dest / item.name, dirs_exist_ok=True)
        else:
            shutil.copy2(item, dest / item.name)
    return dest
