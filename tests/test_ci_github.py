"""``--format github`` (issue 5): workflow-command annotations, their escaping, severity order and
the notice about annotations GitHub's per-step limit would hide."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from eagle3_lint.model import Finding, Location, Severity
from eagle3_lint.report.github import PER_STEP_LIMIT, annotation, escape_data, escape_property, render
from tests.cihelp import broken, cli, tree

LINE = re.compile(r"^::(error|warning|notice) ([^:]*)::(.*)$")


def parse(line: str) -> tuple[str, dict[str, str], str]:
    """Undo the workflow-command encoding, as the runner does."""
    m = LINE.match(line)
    assert m, line

    def unescape(s: str) -> str:
        return s.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")

    props = dict(kv.split("=", 1) for kv in m.group(2).split(",")) if m.group(2) else {}
    return m.group(1), {k: unescape(v) for k, v in props.items()}, unescape(m.group(3))


def finding(sev: Severity, line: int = 1, msg: str = "m", path: str = "vllm/a.py", rule: str = "EGL001") -> Finding:
    return Finding(rule, "some-name", sev, msg, Location(path, line))


def test_escaping_round_trips() -> None:
    assert escape_data("50%\r\nnext") == "50%25%0D%0Anext"
    assert escape_property("a: b, c%") == "a%3A b%2C c%25"
    f = Finding("EGL005", "aux-loop", Severity.ERROR, "100% broken:\nline two, with a comma\r",
                Location("vllm/we,ird:dir/m.py", 7, 4, 9, 2))
    line = annotation(f)
    assert "\n" not in line and "\r" not in line
    kind, props, msg = parse(line)
    assert kind == "error" and msg == f.message
    # Columns only for one-line spans (GitHub ignores them otherwise).
    assert props == {"file": "vllm/we,ird:dir/m.py", "line": "7", "endLine": "9", "title": "EGL005 aux-loop"}
    one = annotation(Finding("EGL005", "aux-loop", Severity.NOTE, "x", Location("p.py", 3, 4, 3, 10)))
    assert parse(one)[:2] == ("notice", {"file": "p.py", "line": "3", "endLine": "3", "col": "5", "endColumn": "11",
                                         "title": "EGL005 aux-loop"})


def test_most_severe_first_and_hidden_notice() -> None:
    fs = ([finding(Severity.NOTE, i) for i in range(3)] + [finding(Severity.ERROR, i) for i in range(12)]
          + [finding(Severity.WARNING, i) for i in range(11)])
    lines = render(fs).splitlines()
    kinds = [parse(ln)[0] for ln in lines]
    assert kinds[:12] == ["error"] * 12 and kinds[12:23] == ["warning"] * 11 and kinds[23:26] == ["notice"] * 3
    kind, props, msg = parse(lines[-1])
    assert len(lines) == 27 and kind == "notice" and props == {"title": "eagle3-lint"}
    assert msg.startswith("eagle3-lint: 3 of 26 annotations are not shown")  # 2 errors + 1 warning
    assert render([finding(Severity.ERROR, i) for i in range(PER_STEP_LIMIT)]).count("::notice") == 0


def test_summary_stays_visible_when_notes_fill_the_notice_budget() -> None:
    fs = [finding(Severity.NOTE, i) for i in range(12)] + [finding(Severity.ERROR)]
    lines = render(fs).splitlines()
    kinds = [parse(ln)[0] for ln in lines]
    # error, then the summary as the first notice (GitHub keeps the first ten), then the notes.
    assert kinds == ["error"] + ["notice"] * 13
    assert parse(lines[1])[2].startswith("eagle3-lint: 3 of 13 annotations are not shown")  # 12 notes, 9 shown


def test_cli_github_on_a_tree(tmp_path: Path) -> None:
    """12 EGL001 errors and 11 EGL100 warnings from a real tree: order, fields, and the count."""
    names = [f"Bad{i:02d}ForCausalLM" for i in range(12)]
    src = broken(*names)
    # Unused suppressions on the registry-less helper lines give warnings (EGL100).
    src += "".join(f"\nX{i} = {i}  # eagle3-lint: ignore[EGL001]\n" for i in range(11))
    root = tree(tmp_path / "t", {"bad": src})
    args = ["check", str(root), "--output-format", "github", "--no-cache", "--select", "EGL001,EGL100"]
    p = cli(*args, *[a for n in names for a in ("--arch", n)], cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    lines = p.stdout.splitlines()
    parsed = [parse(ln) for ln in lines]
    kinds = [k for k, _, _ in parsed]
    assert kinds == ["error"] * 12 + ["warning"] * 11 + ["notice"]
    for _k, props, msg in parsed[:12]:
        assert props["file"] == "vllm/model_executor/models/bad.py"
        assert props["title"] == "EGL001 missing-eagle3-interface"
        src_line = (root / props["file"]).read_text().splitlines()[int(props["line"]) - 1]
        assert src_line.startswith("class Bad") and src_line[5:20] in msg
    assert parsed[12][1]["title"] == "EGL100 unused-suppression"
    assert parsed[-1][2].startswith("eagle3-lint: 3 of 23 annotations are not shown")
    # --exit-zero keeps the annotations and exits 0.
    assert cli(*args, "--exit-zero", *[a for n in names for a in ("--arch", n)], cwd=tmp_path).returncode == 0


@pytest.mark.real
def test_cli_github_on_real_v016(real_trees: Any, tmp_path: Path) -> None:
    root = real_trees.get("0.16.0")
    p = cli("check", str(root), "--arch", "KimiK25ForConditionalGeneration", "--output-format", "github", cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    parsed = [parse(ln) for ln in p.stdout.splitlines()]
    assert parsed, p.stderr
    rank = {"error": 3, "warning": 2, "notice": 1}
    ranks = [rank[k] for k, props, _ in parsed if props.get("title") != "eagle3-lint"]
    assert ranks == sorted(ranks, reverse=True)
    egl001 = [(props, msg) for k, props, msg in parsed if props.get("title", "").startswith("EGL001 ")]
    assert len(egl001) == 1 and egl001[0][0]["file"] == "vllm/model_executor/models/kimi_k25.py"
    assert "KimiK25ForConditionalGeneration" in egl001[0][1]
