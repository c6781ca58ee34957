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
from eagle3_lint import releases as release_cache  # the module: ``releases`` is a fixture here
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
    j = run_cli([*args, "--output-format", "json"], cwd=tmp_path)
    assert j.returncode == 0, j.stderr
    rep: dict[str, Any] = json.loads(j.stdout)
    assert [r["label"] for r in rep["releases"]] == ["0.15.0", "0.16.0", "0.17.0", "0.18.0"]
    toy = next(a for a in rep["architectures"] if a["name"] == "ToyForCausalLM")
    assert toy["first_supported"] == "0.16.0" and toy["regressions"] == ["0.17.0"]
    assert rep["releases"][0]["statuses"] == {"supported": 1, "unsupported": 1}
    out = tmp_path / "docs" / "compat.md"
    md = run_cli([*args, "--output-format", "markdown", "-o", str(out)], cwd=tmp_path)
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
    p = run_cli(["matrix", str(releases[0]), str(broken), "--no-cache", "--output-format", "json"], cwd=tmp_path)
    assert p.returncode == 2 and "cannot analyze" in p.stderr
    rep = json.loads(p.stdout)
    assert [r["error"] is not None for r in rep["releases"]] == [False, True]


def test_release_range_from_the_cache(tmp_path: Path) -> None:
    for v in ("0.9.2", "0.10.0", "0.10.1.1", "0.11.0", "0.12.0", "0.12.1rc1"):
        d = tmp_path / f"vllm-{v}"
        d.mkdir()
        if v != "0.12.0":
            (d / release_cache.COMPLETE_MARKER).write_text(v)  # 0.12.0 is an interrupted download
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
    (done / release_cache.COMPLETE_MARKER).write_text("0.10.0")
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

    monkeypatch.setattr(release_cache, "fetch_release", fake_fetch)
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


# -- the terminal table fits the terminal (issue 21, item 3) ------------------------------------------------
LONG = "TransformersMultiModalForSequenceClassification"  # 47 characters: the longest name 0.33.0 registers


@pytest.fixture(scope="module")
def long_named(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    base = tmp_path_factory.mktemp("long")
    return [
        _release(base / "a", "0.15.0", {LONG: GOOD, "ToyForCausalLM": BAD}),
        _release(base / "b", "0.16.0", {LONG: BAD, "ToyForCausalLM": GOOD}),
    ]


def _table_lines(text: str) -> list[str]:
    """The table part of ``matrix``'s text: the lines before the legend."""
    lines = text.splitlines()
    return lines[:next(i for i, line in enumerate(lines) if line.startswith("✓ supported"))]


def test_table_fits_80_columns_and_its_legend_names_its_columns(long_named: list[Path], tmp_path: Path) -> None:
    """At 80 columns (a pipe with COLUMNS=80, and a real 80x24 tmux pane) every line of ``matrix`` fits,
    nothing is cut, and the legend explains the columns there are (main: 90 wide for two releases, as with
    0.16.0 and 0.33.0, and a "gate column" it does not have)."""
    from rich.cells import cell_len

    args = ["matrix", *map(str, long_named), "--no-cache", "-j", "1"]
    p = run_cli(args, cwd=tmp_path, env={**os.environ, "COLUMNS": "80"})
    assert p.returncode == 0, p.stderr
    assert max(cell_len(line) for line in p.stdout.splitlines()) <= 80, p.stdout
    table = _table_lines(p.stdout)
    assert table[0].split() == ["architecture", "since", "regressed", "0.15.0", "0.16.0"]
    assert f"{LONG} 0.15.0 0.16.0 ✓ ✗".split() in [line.split() for line in table]  # whole, on one line
    assert ["ToyForCausalLM", "0.16.0", "-", "✗", "✓"] in [line.split() for line in table]
    legend = " ".join(" ".join(p.stdout.splitlines()[len(table):]).split())  # wrapped lines joined
    assert "gate column" not in legend
    assert "since: the first release here where it is supported" in legend and "regressed: the releases" in legend
    # 0.15.0 of the sample base has the model-type gate of speculative.py: the legend points at its line.
    gate = "config gate of 0.15.0: eagle3 needs"
    assert ("allow-list (listed below)" in legend) == (gate in legend), legend
    if shutil.which("tmux"):
        from tests.test_output import in_tmux

        shown = in_tmux(args, tmp_path)
        start = next(i for i, line in enumerate(shown) if line.startswith("architecture"))
        # The pane shows the lines as printed: none wrapped at the pane's edge.
        assert [line.rstrip() for line in shown[start:start + len(table)]] == [line.rstrip() for line in table]


def _parse_tables(text: str) -> dict[tuple[str, str], str]:
    """(architecture, column) -> cell, read back from every table of ``render_table``'s text by the columns'
    positions under their headers (a centred symbol lies inside its header's span)."""
    import re

    cells: dict[tuple[str, str], str] = {}
    for block in text.split("\n\n"):
        lines = [line for line in block.splitlines() if line.strip()]
        if not lines or not lines[0].startswith("architecture"):
            continue
        heads = [(m.group(), m.start()) for m in re.finditer(r"\S+", lines[0])]
        spans = [(h, start, heads[i + 1][1] if i + 1 < len(heads) else None) for i, (h, start) in enumerate(heads)]
        arch = ""
        for line in lines[2:]:
            if line.startswith("✓ supported"):
                break
            values = [line[a:b].strip() for _h, a, b in spans]
            if not values[0]:  # a list of regressions wrapped onto the next line
                for (h, _a, _b), v in zip(spans[1:], values[1:], strict=True):
                    cells[(arch, h)] = f"{cells[(arch, h)]} {v}".strip() if v else cells[(arch, h)]
                continue
            arch = values[0]
            for (h, _a, _b), v in zip(spans[1:], values[1:], strict=True):
                assert (arch, h) not in cells, (arch, h)  # each column is in one table only
                cells[(arch, h)] = v
    return cells


@pytest.mark.parametrize("width", [80, 60, 120])
def test_many_releases_split_into_tables_that_fit(width: int) -> None:
    """Twelve releases do not fit beside 47-character names at 80 columns: the columns go into several
    tables, each repeating the architecture column, each at most ``width`` wide, every cell in one of them."""
    import io

    from rich.cells import cell_len
    from rich.console import Console

    labels = [f"0.{n}.0" for n in range(20, 32)]
    statuses = ["supported", "unsupported", "partial", "wrapper-gap", "unknown"]
    rels = [matrix.Release(label=v, target=f"vllm=={v}", engine="vllm", version=v,
                           statuses={LONG: statuses[i % 5], "ToyForCausalLM": statuses[(i + 1) % 5],
                                     **({"OldForCausalLM": "supported"} if i < 4 else {})})
            for i, v in enumerate(labels)]
    m = matrix.Matrix(rels, matrix.rows_of(rels))
    out = io.StringIO()
    matrix.render_table(m, m.rows, Console(file=out, width=width, color_system=None))
    text = out.getvalue()
    assert max(cell_len(line) for line in text.splitlines()) <= width, text
    tables = [b for b in text.split("\n\n") if b.startswith("architecture")]
    assert len(tables) > 1 and f"in {len(tables)} tables of at most {width} columns" in " ".join(text.split())
    cells = _parse_tables(text)
    for row in m.rows:
        assert cells[(row.arch, "since")] == (row.first_supported or "-")
        assert cells[(row.arch, "regressed")] == (", ".join(row.regressions) or "-")
        for label, status in zip(labels, row.cells, strict=True):
            assert cells[(row.arch, label)] == matrix.SYMBOL[status], (row.arch, label)
    assert len(cells) == len(m.rows) * (2 + len(labels))


def test_table_in_a_file_is_one_table(long_named: list[Path], tmp_path: Path) -> None:
    """``-o FILE`` has no terminal width: one table as wide as the content, every line whole."""
    out = tmp_path / "matrix.txt"
    p = run_cli(["matrix", *map(str, long_named), "--no-cache", "-j", "1", "-o", str(out)], cwd=tmp_path,
                env={**os.environ, "COLUMNS": "40"})
    assert p.returncode == 0, p.stderr
    table = _table_lines(out.read_text(encoding="utf-8"))
    assert table[0].split() == ["architecture", "since", "regressed", "0.15.0", "0.16.0"]
    assert sum(line.startswith("architecture") for line in table) == 1


def test_a_matrix_mixing_engines_is_refused_outside_html(releases: list[Path], tmp_path: Path) -> None:
    """"since" and "regressed" read one engine's releases in version order (SGLang 0.5.23 would sort before vLLM
    0.16.0), so a text, JSON or Markdown matrix of vLLM and SGLang targets is a usage error; HTML writes one page
    per engine."""
    sg = tmp_path / "sg"
    shutil.copytree(SAMPLES / "_bases" / "sglang_small", sg)
    for fmt in ("table", "json", "markdown"):
        proc = run_cli(["matrix", str(releases[0]), str(sg), "--output-format", fmt, "--no-cache"], cwd=tmp_path)
        assert proc.returncode == 2 and "matrix compares the releases of one engine" in proc.stderr, proc.stderr
    proc = run_cli(["matrix", str(releases[0]), str(sg), "--output-format", "html", "-o", str(tmp_path / "pages"),
                    "--no-cache"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "pages").iterdir()) == ["sglang.html", "vllm.html"]
