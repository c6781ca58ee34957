"""Differential test of the incremental path: after each kind of edit, a check that reuses the caches of
the previous runs (facts pack, derived contract/runner, report cache) prints exactly what a check
without any cache prints on the edited tree, in JSON and in the default text format.

The tree is a copy of a real release (vLLM 0.33.0), primed once, then edited step by step, each edit
on top of the previous ones: a model class loses ``SupportsEagle3`` (its verdict changes), a base
class in another file loses it (a subclass in a third file changes with it), a non-model file the
runner path is read from moves its call site, a model file another one imports is deleted, and a new
model file is added. Each step also checks that the edit changed the report, so a cache that ignored
edits could not pass by printing the previous report again.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from eagle3_lint import store as store_mod
from tests.cihelp import run_cli

MODELS = "vllm/model_executor/models"
RUNNER = "vllm/v1/worker/gpu_model_runner.py"


def _check(root: Path, *flags: str) -> str:
    p = run_cli(("check", str(root), *flags))
    assert p.returncode in (0, 1), p.stderr
    return p.stdout


def _status(report: str, arch: str) -> str:
    rows = [a for a in json.loads(report)["architectures"] if a["name"] == arch]
    assert len(rows) == 1, arch
    return str(rows[0]["status"])


def _drop_eagle3_base(path: Path, cls: str) -> None:
    """Remove ``SupportsEagle3`` from the bases of ``class <cls>(...)`` (the class keeps its methods)."""
    text = path.read_text(encoding="utf-8")
    head = text.index(f"class {cls}(")
    end = text.index("):", head)
    bases = text[head:end]
    assert "SupportsEagle3" in bases, (path, cls)
    path.write_text(text[:head] + bases.replace("SupportsEagle3,", "", 1) + text[end:], encoding="utf-8")


@pytest.mark.real
def test_incremental_runs_equal_fresh_runs_after_each_edit(real_trees: object, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    src = real_trees.get("0.33.0")  # type: ignore[attr-defined]
    root = tmp_path / "tree"
    shutil.copytree(src / "vllm", root / "vllm")
    for d in src.glob("vllm-*.dist-info"):
        shutil.copytree(d, root / d.name)
    # Trust stat memos at once, as for a checkout older than the racy window: the incremental path then
    # finds edits by stat and content hash exactly as it does for a user's tree.
    monkeypatch.setattr(store_mod, "_RACY_NS", 0)
    cache = tmp_path / "cache"
    flags = ("--cache-dir", str(cache))

    def both(*extra: str) -> tuple[str, str]:
        return _check(root, "--output-format", "json", *extra), _check(root, *extra)

    prev_json, prev_text = both(*flags)
    assert _status(prev_json, "Qwen2ForCausalLM") == "supported"
    assert _status(prev_json, "MistralForCausalLM") == "supported"
    assert _status(prev_json, "MiMoForCausalLM") == "supported"
    assert both(*flags) == (prev_json, prev_text)  # unchanged tree: replayed, same bytes

    def step(name: str, edit: object) -> str:
        nonlocal prev_json, prev_text
        edit()  # type: ignore[operator]
        inc = both(*flags)
        fresh = both("--no-cache")
        assert inc[0] == fresh[0], f"{name}: JSON of the incremental run differs from a fresh run"
        assert inc[1] == fresh[1], f"{name}: text of the incremental run differs from a fresh run"
        assert inc[0] != prev_json, f"{name}: the edit did not change the report"
        assert both(*flags) == inc  # and the run after it (report replayed) prints the same again
        prev_json, prev_text = inc
        return inc[0]

    # 1. A model class loses the interface: its own verdict, and that of a class inheriting it elsewhere.
    out = step("model file", lambda: _drop_eagle3_base(root / MODELS / "qwen2.py", "Qwen2ForCausalLM"))
    assert _status(out, "Qwen2ForCausalLM") != "supported"
    assert _status(out, "MiMoForCausalLM") != "supported"  # mimo.py: class MiMoForCausalLM(Qwen2ForCausalLM)
    # 2. A base class file: llama.py's LlamaForCausalLM; MistralForCausalLM (mistral.py) inherits it.
    out = step("base class file", lambda: _drop_eagle3_base(root / MODELS / "llama.py", "LlamaForCausalLM"))
    assert _status(out, "MistralForCausalLM") != "supported"

    # 3. A non-model file the runner path is derived from: its check moves down two lines.
    def shift_runner() -> None:
        p = root / RUNNER
        p.write_text("# edited\n# edited\n" + p.read_text(encoding="utf-8"), encoding="utf-8")

    step("runner file", shift_runner)
    # 4. A file deleted: mimo.py, which a registry entry names.
    before = _status(prev_json, "MiMoForCausalLM")
    out = step("file deleted", lambda: (root / MODELS / "mimo.py").unlink())
    assert _status(out, "MiMoForCausalLM") != before

    # 5. A file added: a model file that cannot be parsed (EGL000).
    def add_files() -> None:
        (root / MODELS / "zz_added.py").write_text("class Broken(\n", encoding="utf-8")

    out = step("file added", add_files)
    assert any(f["rule"] == "EGL000" and f["path"].endswith("zz_added.py")
               for f in json.loads(out)["findings"])
