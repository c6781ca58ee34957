"""Functional tests in the style of semgrep/pylint: every case under ``sample_trees/`` is a tiny
vLLM-shaped tree whose flagged lines carry ``# expect: EGLnnn`` markers.

For each case: the findings must equal the markers exactly, by (file, line, rule); the verdicts in
``case.toml`` must hold; the fix must equal ``expected.diff``; applying it with ``git apply`` must
give a tree on which the fixed rules are silent, every patched file compiles, and a second fix is
empty. ``EAGLE3_LINT_REGEN=1`` rewrites ``expected.diff`` files (never the markers).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from eagle3_lint import fixes
from eagle3_lint._compat import tomllib
from eagle3_lint.analysis import Analysis, Options, analyze
from eagle3_lint.engines import dir_source
from tests.conftest import SAMPLES, materialize

MARKER = re.compile(r"#\s*expect:\s*(EGL\d{3}(?:\s*,\s*EGL\d{3})*)")


def cases() -> list[Path]:
    return sorted(p.parent for p in SAMPLES.glob("*/*/case.toml") if not p.parent.parent.name.startswith("_"))


def expected_markers(root: Path) -> set[tuple[str, int, str]]:
    out: set[tuple[str, int, str]] = set()
    for f in sorted(root.rglob("*.py")):
        rel = f.relative_to(root).as_posix()
        for i, line in enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            m = MARKER.search(line)
            if m:
                for rule in re.split(r"\s*,\s*", m.group(1)):
                    out.add((rel, i, rule))
    return out


def declared_outside(meta: dict) -> set[tuple[str, int, str]]:
    """``[[expect_outside]]`` tables: findings in files a case cannot mark (a base file it does not
    overlay, or its target config), as ``where`` (a tree path, or "target"), ``line`` and ``rule``."""
    out: set[tuple[str, int, str]] = set()
    for w in meta.get("expect_outside", []):
        where = meta.get("target_config", "") if w["where"] == "target" else w["where"]
        out.add((where, int(w["line"]), w["rule"]))
    return out


def run(root: Path, meta: dict) -> Analysis:
    tc = None
    if meta.get("target_config"):
        import json

        tc = json.loads((root / meta["target_config"]).read_text())
    opts = Options(targets=tuple(meta.get("archs", ())), target_config=tc,
                   target_config_path=meta.get("target_config"))
    return analyze(dir_source(root), opts)


@pytest.mark.parametrize("case", cases(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_case(case: Path, tmp_path: Path) -> None:
    meta = tomllib.loads((case / "case.toml").read_text())
    root = materialize(case, tmp_path / "tree")
    ctx = run(root, meta)
    assert not ctx.errors, [e.message for e in ctx.errors]

    got = {(f.location.path, f.location.line, f.rule) for f in ctx.findings}
    want = expected_markers(root) | declared_outside(meta)
    assert got == want, "\n".join(
        [f"unexpected: {g} {next(f.message for f in ctx.findings if (f.location.path, f.location.line, f.rule) == g)}"
         for g in sorted(got - want)] + [f"missing:    {w}" for w in sorted(want - got)]
    )

    for arch, status in meta.get("verdicts", {}).items():
        assert ctx.verdicts[arch].status.value == status, (arch, ctx.verdicts[arch].reason)
    for arch, sup in meta.get("supports", {}).items():
        want_sup = None if sup == "null" else sup
        assert ctx.verdicts[arch].supports_eagle3 is want_sup, (arch, ctx.verdicts[arch].reason)

    unsafe = bool(meta.get("unsafe_fixes", True))
    plan = fixes.plan(ctx.source, ctx.findings, unsafe)
    diff = fixes.unified_diff(plan)
    exp_file = case / "expected.diff"
    if os.environ.get("EAGLE3_LINT_REGEN"):
        if diff:
            exp_file.write_text(diff)
        elif exp_file.exists():
            exp_file.unlink()
    expected = exp_file.read_text() if exp_file.exists() else ""
    assert diff == expected
    if not diff:
        return

    # The patch applies with git apply in the tree root, and converges.
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "apply", "--check", "-"], cwd=root, input=diff, text=True, check=True)
    subprocess.run(["git", "apply", "-"], cwd=root, input=diff, text=True, check=True)
    for path in plan.files:
        compile((root / path).read_text(), path, "exec")
    fixed_rules = {f.rule for f, _fx in plan.fixes}
    ctx2 = run(root, meta)
    again = [f for f in ctx2.findings if f.rule in fixed_rules]
    assert not again, [(f.rule, f.location.path, f.location.line, f.message) for f in again]
    assert fixes.unified_diff(fixes.plan(ctx2.source, ctx2.findings, unsafe)) == ""
    for arch, sup in meta.get("supports_after_fix", {}).items():
        assert ctx2.verdicts[arch].supports_eagle3 is sup, (arch, ctx2.verdicts[arch].reason)
