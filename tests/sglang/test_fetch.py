"""``sglang==X`` is fetched like ``vllm==X``: pure wheels (<= 0.5.10) and cp311 manylinux ones (>= 0.5.11)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from eagle3_lint import releases
from eagle3_lint.engines.sglang import fetch
from eagle3_lint.errors import TargetError


@pytest.mark.real
@pytest.mark.parametrize("version, tag", [("0.5.10", "py3-none-any"), ("0.5.23", "cp311-cp311-manylinux_2_34_x86_64")])
def test_release_tree_holds_only_python_and_metadata(sglang_trees, version: str, tag: str) -> None:
    root = sglang_trees.get(version)
    assert root.name == f"sglang-{version}" and (root / releases.COMPLETE_MARKER).read_text() == version
    assert (root / "sglang" / "srt" / "models" / "registry.py").is_file()
    wheel_meta = next(root.glob("sglang-*.dist-info")) / "WHEEL"
    assert f"Tag: {tag}" in wheel_meta.read_text()
    # Compiled wheels carry .so files; only .py files and dist-info are kept.
    kept = {p.suffix for p in (root / "sglang").rglob("*") if p.is_file()}
    assert kept == {".py"}


def test_spec_parsing() -> None:
    assert fetch.parse_spec("sglang==0.5.23") == "0.5.23"
    assert fetch.parse_spec(" sglang==0.5.10.post1 ") == "0.5.10.post1"
    for bad in ("sglang>=0.5", "vllm==0.5.10", "sglang==", "sglang==../x"):
        assert fetch.parse_spec(bad) is None


def test_fetch_without_an_index_fails_in_one_line_and_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    with pytest.raises(TargetError, match=r"cannot fetch sglang==0\.5\.23") as exc:
        fetch.fetch_release("0.5.23", tmp_path)
    assert "\n" not in str(exc.value)
    assert not list(tmp_path.glob("sglang-*")) and not list(tmp_path.glob(".dl-*"))
    assert fetch.release_dir("0.5.23", tmp_path) == tmp_path / "sglang-0.5.23"


def test_pip_gets_the_wheel_tags(tmp_path: Path, monkeypatch) -> None:
    """The command pip runs: one ``--platform`` new enough for manylinux_2_34 wheels (pip expands it downwards)."""
    seen: list[list[str]] = []

    def fake_run(cmd, **_kw):
        seen.append(list(cmd))
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution found")

    monkeypatch.setattr(releases.subprocess, "run", fake_run)
    with pytest.raises(TargetError):
        fetch.fetch_release("0.5.23", tmp_path)
    cmd = seen[0]
    assert cmd[:3] == [sys.executable, "-m", "pip"] and "--only-binary=:all:" in cmd and "--no-deps" in cmd
    assert cmd[cmd.index("--platform") + 1] == "manylinux_2_34_x86_64"
    assert cmd[cmd.index("--python-version") + 1] == "3.11" and cmd[cmd.index("--abi") + 1] == "cp311"
    assert cmd[cmd.index("-d") - 1] == "sglang==0.5.23"
    assert os.fspath(tmp_path) in cmd[cmd.index("-d") + 1]


@pytest.mark.real
@pytest.mark.parametrize("version", ["0.4.7", "0.5.23"])
def test_tree_detection_and_version(sglang_trees, version: str, tmp_path: Path) -> None:
    """0.4.7 writes its version as a literal in sglang/version.py; 0.5.23 imports it from a generated
    _version.py, so it comes from the dist-info METADATA."""
    from eagle3_lint.engines import dir_source
    from eagle3_lint.engines.sglang import ENGINE

    root = sglang_trees.get(version)
    assert ENGINE.tree_root(root) == root and ENGINE.tree_root(tmp_path) is None
    src = dir_source(root)  # the package is found under the root
    assert src.package == "sglang" and ENGINE.version(src) == version
    files = src.py_files()
    assert files and all(f.startswith("sglang/") and f.endswith(".py") for f in files)
    assert "sglang/srt/models/llama.py" in files
