"""A finding names every architecture it concerns (issue 21): JSON and SARIF ``architectures``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cihelp import cli_json


@pytest.mark.real
def test_a_finding_names_every_architecture_it_concerns(sglang_trees: object, tmp_path: Path) -> None:
    """SGLang 0.5.23 sglang/srt/models/bailing_mm.py: BailingMM2NativeForConditionalGeneration (line 262) is
    ``pass`` over BailingMMNativeForConditionalGeneration (line 46), and EntryClass (lines 266-269) registers both,
    so the one EGL002 on the base class concerns both. A CI job filtering by its target finds it either way, and
    with --arch the subclass's report keeps it."""
    tree = str(sglang_trees.get("0.5.23"))  # type: ignore[attr-defined]  # conftest accessor
    both = ["BailingMM2NativeForConditionalGeneration", "BailingMMNativeForConditionalGeneration"]
    _, rep = cli_json("check", tree, "--output-format", "json", cwd=tmp_path)
    f = next(f for f in rep["findings"] if f["rule"] == "EGL002" and f["symbol"] == both[1])
    assert f["architectures"] == both and f["architecture"] in both
    assert all(f["architecture"] in f["architectures"] for f in rep["findings"] if f["architecture"])
    _, sarif = cli_json("check", tree, "--output-format", "sarif", cwd=tmp_path)
    assert any(r["properties"].get("architectures") == both for r in sarif["runs"][0]["results"])
    _, mine = cli_json("check", tree, "--arch", both[0], "--output-format", "json", cwd=tmp_path)
    assert any(g["rule"] == "EGL002" and g["symbol"] == both[1] for g in mine["findings"])
