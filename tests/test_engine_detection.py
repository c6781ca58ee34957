"""Which engine's tree a target is (issue 14): folders, package folders, checkouts, wheels, specs, --engine.

Small trees built here: a folder holding ``vllm/`` (``model_executor/``) and one holding ``sglang/srt/``, the way a
site-packages or an unpacked wheel holds them; a checkout keeps SGLang under ``python/``.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from eagle3_lint import target
from eagle3_lint.errors import UsageError
from tests.hostile import assert_one_line_error, run_cli


def _vllm(root: Path) -> Path:
    (root / "vllm" / "model_executor" / "models").mkdir(parents=True)
    (root / "vllm" / "__init__.py").write_text("")
    return root


def _sglang(root: Path) -> Path:
    (root / "sglang" / "srt" / "models").mkdir(parents=True)
    (root / "sglang" / "__init__.py").write_text("")
    return root


def test_folders_package_folders_and_checkouts(tmp_path: Path) -> None:
    v, s = _vllm(tmp_path / "v"), _sglang(tmp_path / "s")
    assert (target.resolve(str(v)).package, target.resolve(str(s)).package) == ("vllm", "sglang")
    assert target.resolve(str(v / "vllm")).package == "vllm"
    assert target.resolve(str(s / "sglang")).package == "sglang"
    checkout = tmp_path / "checkout"
    _sglang(checkout / "python")
    got = target.resolve(str(checkout))
    assert got.package == "sglang" and Path(got.root_label) == checkout / "python"


def test_both_engines_in_one_folder_need_engine(tmp_path: Path) -> None:
    both = _sglang(_vllm(tmp_path / "site-packages"))
    with pytest.raises(UsageError, match=r"holds both vLLM and SGLang: say which with --engine vllm\|sglang"):
        target.resolve(str(both))
    assert target.resolve(str(both), engine="sglang").package == "sglang"
    assert target.resolve(str(both), engine="vllm").package == "vllm"
    p = run_cli(["check", str(both)], tmp_path)
    assert_one_line_error(p, contains="--engine")


def test_specs_and_wheels(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a SGLang release but --engine is vllm"):
        target.resolve("sglang==0.5.23", tmp_path, engine="vllm")
    with pytest.raises(UsageError, match="use an exact pin, vllm==X.Y.Z or sglang==X.Y.Z"):
        target.resolve("sglang>=0.5", tmp_path)
    wheel = tmp_path / "sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("sglang/__init__.py", "")
        z.writestr("sglang/srt/models/llama.py", "")
    assert target.resolve(str(wheel)).package == "sglang"
    with pytest.raises(UsageError, match="is not a vLLM wheel"):
        target.resolve(str(wheel), engine="vllm")
