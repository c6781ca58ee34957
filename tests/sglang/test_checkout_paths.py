"""An SGLang checkout keeps its package in ``python/sglang``: output paths are relative to the checkout.

The tree root is ``<checkout>/python`` (the folder holding ``sglang/``), but git, GitHub annotations, SARIF
and a pre-commit hook read paths from the checkout's top folder. Checked from the top folder with no
argument (what the hook runs), and with the top folder as argument: findings, the verdict line, github
annotations, JSON, and a ``--fix`` diff that ``git apply`` takes at the top. Naming ``python/`` itself keeps
the paths relative to it, and a replayed report does not mix the two.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import cihelp

ARCH = "KimiVLForConditionalGeneration"  # kimi_vl.py:128 (0.5.23): a wrapper over DeepSeek-V2 without the setter


@pytest.mark.real
def test_checkout_paths_are_relative_to_its_top(sglang_trees, tmp_path: Path) -> None:
    repo = tmp_path / "sglang-fork"
    shutil.copytree(sglang_trees.get("0.5.23") / "sglang", repo / "python" / "sglang")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    want = "python/sglang/srt/models/kimi_vl.py:128:1: error: EGL002 "

    for args in (("check", "--arch", ARCH), ("check", ".", "--arch", ARCH)):
        p = cihelp.cli(*args, cwd=repo, env=env)
        assert p.returncode == 1, p.stderr
        lines = p.stdout.splitlines()
        # KimiVLForConditionalGeneration has no get_embed_and_head either: the EAGLE worker's call of it
        # (speculative/pp_draft_embedding.py:95, re-raised at :96-99 at PP 1) fails before the setter check.
        assert lines[0].startswith(f"{ARCH} on SGLang 0.5.23 (CUDA): refused at load "
                                   "(python/sglang/srt/speculative/pp_draft_embedding.py:95)")
        assert any(ln.startswith(want) for ln in lines), p.stdout
    gh = cihelp.cli("check", "--arch", ARCH, "--output-format", "github", cwd=repo, env=env).stdout
    assert "::error file=python/sglang/srt/models/kimi_vl.py,line=128," in gh
    report = json.loads(cihelp.cli("check", "--arch", ARCH, "--output-format", "json", cwd=repo, env=env).stdout)
    paths = {f["path"] for f in report["findings"]}
    assert paths and all(p.startswith("python/sglang/") for p in paths), paths
    diff = cihelp.cli("check", "--arch", ARCH, "--fix", "--unsafe-fixes", cwd=repo, env=env).stdout
    assert "--- a/python/sglang/srt/models/kimi_vl.py" in diff
    (tmp_path / "fix.diff").write_text(diff)
    assert subprocess.run(["git", "apply", "--check", str(tmp_path / "fix.diff")], cwd=repo).returncode == 0

    # Named directly, python/ is the top: paths relative to it, also when the report is replayed from the cache.
    for _ in range(2):
        p = cihelp.cli("check", "--arch", ARCH, cwd=repo / "python", env=env)
        assert any(ln.startswith(want[len("python/"):]) for ln in p.stdout.splitlines()), p.stdout
        assert "python/sglang/" not in p.stdout
