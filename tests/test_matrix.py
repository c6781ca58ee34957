"""``eagle3-lint matrix``: per-architecture status across releases, first supported, regressions.

Sample "releases" are built from the sample bases with different ``version.py`` and models, so the
transitions are known by construction. The real test checks the acceptance facts (Kimi-K2.5 and
DeepSeek-V3 from 0.18.0) and verifies them against the releases' own source text, independently
of the tool.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from eagle3_lint import matrix, target
from eagle3_lint.errors import UsageError
from tests.cihelp import run_cli
from tests.conftest import SAMPLES

GOOD = '''
from torch import nn

from .interfaces import SupportsEagle3, SupportsPP


class {name}(nn.Module, SupportsPP, SupportsEagle3):
    def set_aux_hidden_state_layers(self, layers):
        self.layers_ = layers

    def get_eagle3_aux_hidden_state_layers(self):
        return (2, 16, 29)
'''
BAD = '''
from torch import nn

from .interfaces import SupportsPP


class {name}(nn.Module, SupportsPP):
    pass
'''


def _release(root: Path, version: str, models: dict[str, str]) -> Path:
    """A vLLM-shaped tree of ``version`` whose registry holds ``models`` (arch -> GOOD or BAD)."""
    shutil.copytree(SAMPLES / "_bases" / "v016", root)
    (root / "vllm" / "version.py").write_text(f'__version__ = "{version}"\n')
    mdir = root / "vllm" / "model_executor" / "models"
    entries = []
    for arch, kind in models.items():
        mod = arch.lower()
        (mdir / f"{mod}.py").write_text(kind.format(name=arch))
        entries.append(f'    "{arch}": ("{mod}", "{arch}"),')
    (mdir / "registry.py").write_text("_TEXT_GENERATION_MODELS = {\n" + "\n".join(entries) + "\n}\n"
                                      "_VLLM_MODELS = {\n    **_TEXT_GENERATION_MODELS,\n}\n")
    return root


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    base = tmp_path_factory.mktemp("releases")
    return [
        _release(base / "a", "0.15.0", {"ToyForCausalLM": BAD, "OldForCausalLM": GOOD}),
        _release(base / "b", "0.16.0", {"ToyForCausalLM": GOOD, "OldForCausalLM": GOOD}),
        _release(base / "c", "0.17.0", {"ToyForCausalLM": BAD, "NewForCausalLM": GOOD}),
        _release(base / "d", "0.18.0", {"ToyForCausalLM": GOOD, "NewForCausalLM": GOOD}),
    ]


def test_transitions(releases: list[Path]) -> None:
    # Targets given out of order are sorted by version.
    m = matrix.run([str(p) for p in reversed(releases)], jobs=1, use_cache=False)
    assert m.labels == ["0.15.0", "0.16.0", "0.17.0", "0.18.0"]
    toy, old, new = m.row("ToyForCausalLM"), m.row("OldForCausalLM"), m.row("NewForCausalLM")
    assert toy is not None and old is not None and new is not None
    assert toy.cells == ["unsupported", "supported", "unsupported", "supported"]
    assert toy.first_supported == "0.16.0" and toy.regressions == ["0.17.0"] and toy.added == "0.15.0"
    assert old.cells == ["supported", "supported", None, None] and old.removed == ["0.17.0"] and not old.regressions
    assert new.added == "0.17.0" and new.first_supported == "0.17.0"
    assert [r.arch for r in matrix.select_rows(m, changed=True)] == ["OldForCausalLM", "ToyForCausalLM"]


def test_cli_formats(releases: list[Path], tmp_path: Path) -> None:
    args = ["matrix", *map(str, releases), "--no-cache", "-j", "2"]
    j = run_cli([*args, "--format", "json"], cwd=tmp_path)
    assert j.returncode == 0, j.stderr
    rep: dict[str, Any] = json.loads(j.stdout)
    assert [r["label"] for r in rep["releases"]] == ["0.15.0", "0.16.0", "0.17.0", "0.18.0"]
    toy = next(a for a in rep["architectures"] if a["name"] == "ToyForCausalLM")
    assert toy["first_supported"] == "0.16.0" and toy["regressions"] == ["0.17.0"]
    assert rep["releases"][0]["statuses"] == {"supported": 1, "unsupported": 1}
    out = tmp_path / "docs" / "compat.md"
    md = run_cli([*args, "--format", "markdown", "-o", str(out)], cwd=tmp_path)
    assert md.returncode == 0, md.stderr
    text = out.read_text()
    assert text.startswith("# EAGLE-3 support matrix") and "Regenerate: `eagle3-lint matrix " in text
    assert "| ToyForCausalLM | 0.16.0 | 0.17.0 | ✗ | ✓ | ✗ | ✓ |" in text
    assert "| OldForCausalLM | 0.15.0 | - | ✓ | ✓ | · | · |" in text
    t = run_cli([*args, "--arch", "ToyForCausalLM"], cwd=tmp_path)
    assert (t.returncode == 0 and "ToyForCausalLM" in t.stdout and "0.16.0" in t.stdout
            and "OldForCausalLM" not in t.stdout)
    bad = run_cli([*args, "--arch", "NoSuchForCausalLM"], cwd=tmp_path)
    assert bad.returncode == 2 and "not registered in any" in bad.stderr


def test_unreadable_target_is_a_row_and_exit_2(releases: list[Path], tmp_path: Path) -> None:
    broken = tmp_path / "broken.whl"
    broken.write_bytes(b"not a zip")
    p = run_cli(["matrix", str(releases[0]), str(broken), "--no-cache", "--format", "json"], cwd=tmp_path)
    assert p.returncode == 2 and "cannot analyze" in p.stderr
    rep = json.loads(p.stdout)
    assert [r["error"] is not None for r in rep["releases"]] == [False, True]


def test_release_range_from_the_cache(tmp_path: Path) -> None:
    for v in ("0.9.2", "0.10.0", "0.10.1.1", "0.11.0", "0.12.0", "0.12.1rc1"):
        d = tmp_path / f"vllm-{v}"
        d.mkdir()
        if v != "0.12.0":
            (d / target.COMPLETE_MARKER).write_text(v)  # 0.12.0 is an interrupted download
    assert matrix.expand_range("0.10.0..0.11.0", str(tmp_path)) == ["0.10.0", "0.10.1.1", "0.11.0"]
    with pytest.raises(UsageError, match="not in the cache"):
        matrix.expand_range("0.10.0..0.12.0", str(tmp_path))
    with pytest.raises(UsageError, match="FIRST..LAST"):
        matrix.expand_range("0.10", str(tmp_path))
    assert matrix.targets_from([], "0.9.2..0.10.0", str(tmp_path), False) == ["vllm==0.9.2", "vllm==0.10.0"]


def _source_has(root: Path, rel: str, text: str) -> bool:
    p = root / rel
    return p.is_file() and text in p.read_text(encoding="utf-8")


@pytest.mark.real
def test_real_kimi_and_deepseek_first_supported(real_trees: Any) -> None:
    # The releases around the transitions; EAGLE3_LINT_FULL_MATRIX=1 runs the whole 0.11.0 ... 0.33.0
    # acceptance range instead (35 releases: minutes with a cold cache, so not by default).
    versions = ["0.14.1", "0.15.0", "0.17.1", "0.18.0", "0.33.0"]
    if os.environ.get("EAGLE3_LINT_FULL_MATRIX"):
        versions = matrix.expand_range("0.11.0..0.33.0", str(real_trees.cache))
    for v in versions:
        real_trees.get(v)
    m = matrix.run([f"vllm=={v}" for v in versions], str(real_trees.cache))
    assert not [r.error for r in m.releases if r.error]
    kimi, dsv3 = m.row("KimiK25ForConditionalGeneration"), m.row("DeepseekV3ForCausalLM")
    assert kimi is not None and dsv3 is not None
    by_release = dict(zip(m.labels, kimi.cells, strict=True))
    key = matrix.version_key
    for label, status in by_release.items():
        k = key(label)
        assert k is not None
        if k < (0, 15, 0):
            assert status is None, label  # not registered before 0.15.0
        elif k < (0, 18, 0):
            assert status == "unsupported", label
        else:
            assert status == "supported", label
    assert kimi.first_supported == "0.18.0" and not kimi.regressions
    assert dsv3.first_supported == "0.18.0" and not dsv3.regressions
    # Independent evidence from the source text: 0.18.0 adds SupportsEagle3 to DeepseekV2ForCausalLM
    # (which DeepseekV3ForCausalLM subclasses) and to the Kimi-K2.5 wrapper; 0.17.1 has neither.
    ds = "vllm/model_executor/models/deepseek_v2.py"
    old, new = real_trees.get("0.17.1"), real_trees.get("0.18.0")
    assert _source_has(old, ds, "class DeepseekV3ForCausalLM(DeepseekV2ForCausalLM)")
    assert not _source_has(old, ds, "SupportsEagle3") and _source_has(new, ds, "SupportsEagle3")
    assert not _source_has(old, "vllm/model_executor/models/kimi_k25.py", "SupportsEagle3")
    assert _source_has(new, "vllm/model_executor/models/kimi_k25.py", "SupportsEagle3")


def test_missing_releases_are_named_and_fetched_once_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Releases not in the cache are fetched one by one before the workers start (issue 13: name missing
    releases, fetch them with a progress bar); one that cannot be fetched becomes an error column without
    a second attempt in a worker."""
    done = tmp_path / "vllm-0.10.0"
    done.mkdir()
    (done / target.COMPLETE_MARKER).write_text("0.10.0")
    (tmp_path / "vllm-0.11.0").mkdir()  # an interrupted download is still missing
    specs = ["vllm==0.10.0", "vllm==0.11.0", "sglang==0.5.1", str(tmp_path)]
    missing = matrix.missing_releases(specs, str(tmp_path))
    assert [(e.name, v) for e, v in missing] == [("vllm", "0.11.0"), ("sglang", "0.5.1")]

    calls: list[tuple[str, str]] = []

    def fake_fetch(version: str, cache_dir: Any = None, progress: Any = None, *, package: str,
                   pip_args: tuple[str, ...] = ()) -> Path:
        calls.append((package, version))
        if package == "sglang":
            raise target.TargetError("cannot fetch sglang==0.5.1: offline")
        return tmp_path / f"{package}-{version}"

    monkeypatch.setattr(target, "fetch_release", fake_fetch)
    said: list[str] = []
    failed = matrix.prefetch(missing, str(tmp_path), said.append)
    assert calls == [("vllm", "0.11.0"), ("sglang", "0.5.1")]
    assert said == ["fetching vllm==0.11.0 (1 of 2, not in the cache)",
                    "fetching sglang==0.5.1 (2 of 2, not in the cache)"]
    assert failed == {"sglang==0.5.1": "cannot fetch sglang==0.5.1: offline"}
    m = matrix.run(["sglang==0.5.1"], str(tmp_path), 1, unfetched=failed)
    assert [(r.target, r.error) for r in m.releases] == [
        ("sglang==0.5.1", "TargetError: cannot fetch sglang==0.5.1: offline")]
    assert calls == [("vllm", "0.11.0"), ("sglang", "0.5.1")]  # no second attempt
