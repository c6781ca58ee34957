"""Fixes never damage a tree: ``--fix`` writes nothing, ``--apply`` is atomic and careful, and every
patch the tool emits applies cleanly, converges, compiles and silences what it fixed.

The property test is generic over whatever fixable findings the rules produce (rules are added
over time): every sample tree, and two real releases, with safe fixes only and with unsafe fixes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from eagle3_lint import fixes
from eagle3_lint.analysis import Analysis, Options, analyze
from eagle3_lint.app import CheckRequest, run_check
from eagle3_lint.engines import dir_source
from eagle3_lint.model import Finding
from tests.conftest import SAMPLES, materialize
from tests.hostile import fixable_case, run_cli, tree_digest

# Two releases with fixable findings; the unsafe set contains the safe one, so the newer release only runs it.
REAL_RELEASES = [("0.16.0", False), ("0.16.0", True), ("0.33.0", True)]
MAX_ROUNDS = 4


def sample_cases() -> list[Path]:
    return sorted(p.parent for p in SAMPLES.glob("*/*/case.toml") if not p.parent.parent.name.startswith("_"))


def identity(f: Finding) -> tuple[str, str | None, str | None, str]:
    """What a finding is about, independent of where edits moved its line."""
    return (f.rule, f.architecture, f.symbol, f.location.path)


def options_for(root: Path) -> Options:
    """The options the sample tree's case.toml asks for (target config), else defaults."""
    import json

    from eagle3_lint._compat import tomllib

    meta_file = root / "case.toml"
    meta = tomllib.loads(meta_file.read_text()) if meta_file.exists() else {}
    tc = json.loads((root / meta["target_config"]).read_text()) if meta.get("target_config") else None
    return Options(targets=tuple(meta.get("archs", ())), target_config=tc, target_config_path=meta.get("target_config"))


def git_apply(root: Path, diff: str, *, check_only: bool) -> None:
    if not (root / ".git").exists():
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    args = ["git", "apply", "--check", "-"] if check_only else ["git", "apply", "-"]
    proc = subprocess.run(args, cwd=root, input=diff, text=True, capture_output=True)
    assert proc.returncode == 0, proc.stderr


def py_digest(root: Path) -> dict[str, str]:
    return {k: v for k, v in tree_digest(root / "vllm").items() if k.endswith(".py")}


def double_defs(root: Path, rels: list[str]) -> set[tuple[str, str, str]]:
    """(file, class, name) for every undecorated ``def`` a class body holds twice (a property's setter is
    decorated): the first is dead, so a fix that makes one adds a method that only shadows."""
    import ast

    out = set()
    for rel in rels:
        for node in ast.walk(ast.parse((root / rel).read_bytes())):
            if isinstance(node, ast.ClassDef):
                names = [st.name for st in node.body
                         if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and not st.decorator_list]
                out |= {(rel, node.name, n) for n in names if names.count(n) > 1}
    return out


def fix_round_trip(src_root: Path, tmp: Path, unsafe: bool, opts: Options) -> int:
    """fix -> git apply --check -> apply (tool and git agree) -> compile -> re-check -> converge.

    ``a`` and ``b`` are identical copies: the diff made on ``b`` is applied to ``a`` by git, the plan
    to ``b`` by the tool. Returns how many fixes the first round applied."""
    a, b = tmp / "a", tmp / "b"
    for d in (a, b):
        shutil.copytree(src_root, d, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    ctx = analyze(dir_source(b), opts)
    assert not ctx.errors, [e.message for e in ctx.errors]
    before = tree_digest(b)
    plan = fixes.plan(ctx.source, ctx.findings, unsafe)
    diff = fixes.unified_diff(plan)
    assert tree_digest(b) == before, "planning a fix wrote to the tree"
    if not plan.files:
        return 0
    supported_before = {arch for arch, v in ctx.verdicts.items() if v.supports_eagle3 is True}
    doubled_before = double_defs(b, sorted(plan.files))
    fixed = {identity(f) for f, _fx in plan.fixes}

    # The patch applies to the tree it was made for, and git and the tool produce the same bytes.
    git_apply(a, diff, check_only=True)
    git_apply(a, diff, check_only=False)
    written = fixes.apply(ctx.source.writable_root, plan, backup=False)
    assert sorted(written) == sorted(plan.files)
    assert py_digest(a) == py_digest(b), "git apply and --apply disagree"

    for rel in plan.files:
        compile((b / rel).read_bytes(), rel, "exec")
    assert double_defs(b, sorted(plan.files)) <= doubled_before, "a fix added a second def of a method"

    after = analyze(dir_source(b), opts)
    assert not after.errors, [e.message for e in after.errors]
    again = [f for f in after.findings if identity(f) in fixed]
    assert not again, [(f.rule, f.architecture, f.location.path, f.location.line, f.message[:120]) for f in again]
    assert not [f for f in after.findings if f.rule == "EGL000"], "a fix made a file unparsable"
    lost = sorted(a for a in supported_before if after.verdicts[a].supports_eagle3 is not True)
    assert not lost, f"fixes broke supported architectures: {lost}"

    # A fix overlapping one planned before it is held back whole for the next run; a few rounds reach a fixed point.
    ctx_n = after
    for _ in range(MAX_ROUNDS):
        plan_n = fixes.plan(ctx_n.source, ctx_n.findings, unsafe)
        if not plan_n.files:
            break
        fixes.apply(ctx_n.source.writable_root, plan_n)
        ctx_n = analyze(dir_source(b), opts)
        assert not ctx_n.errors
    else:
        pytest.fail("fixes do not converge")
    return len(plan.fixes)


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
@pytest.mark.parametrize("case", sample_cases(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sample_tree_fixes_round_trip(case: Path, unsafe: bool, tmp_path: Path) -> None:
    root = materialize(case, tmp_path / "tree")
    shutil.copy2(case / "case.toml", root / "case.toml")
    fix_round_trip(root, tmp_path, unsafe, options_for(root))


@pytest.mark.real
@pytest.mark.parametrize(("version", "unsafe"), REAL_RELEASES, ids=lambda v: {True: "unsafe", False: "safe"}.get(v, v))
def test_real_release_fixes_round_trip(version: str, unsafe: bool, real_trees: object, tmp_path: Path) -> None:
    src = real_trees.get(version)  # type: ignore[attr-defined]
    # The facts cache (private to this test) keeps re-analysis of the patched copy to changed files.
    n = fix_round_trip(src, tmp_path, unsafe, Options(cache_dir=tmp_path / "cache"))
    assert n > 0, f"vllm {version} has no fixable finding any more; pick another release for this test"


# -- --fix writes nothing ---------------------------------------------------------------------------------


def case_args(case: Path) -> list[str]:
    """The CLI options a sample case's case.toml implies (configs, targeted architectures)."""
    from eagle3_lint._compat import tomllib

    meta = tomllib.loads((case / "case.toml").read_text())
    args: list[str] = []
    for key, opt in (("target_config", "--target-config"), ("draft_config", "--draft-config")):
        if meta.get(key):
            args += [opt, str(case / meta[key])]
    for a in meta.get("archs", ()):
        args += ["--arch", a]
    return args


@pytest.mark.real
def test_fix_without_apply_never_writes(real_trees: object, tmp_path: Path) -> None:
    """--fix (and -o to a file outside the tree) leaves every byte, mode and link as it was: over a
    real release in a subprocess, and over every sample tree through the same click entry point."""
    from click.testing import CliRunner

    from eagle3_lint import cli

    root = real_trees.get("0.16.0")  # type: ignore[attr-defined]
    before = tree_digest(root)
    for args in (["--fix"], ["--fix", "--unsafe-fixes", "-o", str(tmp_path / "out.diff")]):
        proc = run_cli(["check", str(root), *args], tmp_path)
        assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    assert tree_digest(root) == before
    assert (tmp_path / "out.diff").read_text().startswith("--- a/vllm/")
    for case in sample_cases():
        root = materialize(case, tmp_path / "samples" / f"{case.parent.name}-{case.name}")
        before = tree_digest(root)
        cmd = ["check", str(root), "--fix", "--unsafe-fixes", "--no-cache", *case_args(case)]
        res = CliRunner().invoke(cli.main, cmd)
        # Exit 2 is fine here (a registry-less gate case targets its config's architecture); a crash is not.
        assert isinstance(res.exception, (SystemExit, type(None))) and "Traceback" not in res.output, res.output
        assert tree_digest(root) == before, case


# -- how --apply writes ------------------------------------------------------------------------------------


def planned(root: Path, unsafe: bool = False) -> tuple[Analysis, fixes.Plan]:
    ctx = run_check(CheckRequest(str(root), no_cache=True))
    plan = fixes.plan(ctx.source, ctx.findings, unsafe)
    assert plan.files
    return ctx, plan


def test_apply_is_atomic_and_keeps_mode_owner_and_backup(tmp_path: Path) -> None:
    root = fixable_case(tmp_path)
    ctx, plan = planned(root)
    rel = sorted(plan.files)[0]
    target = root / rel
    target.chmod(0o640)
    os.chown(target, 12345, 23456)
    original = target.read_bytes()
    inode = target.stat().st_ino
    written = fixes.apply(ctx.source.writable_root, plan, backup=True)
    assert rel in written
    st = target.stat()
    assert st.st_ino != inode, "not written through a temp file and a rename"
    assert (st.st_mode & 0o777) == 0o640 and (st.st_uid, st.st_gid) == (12345, 23456)
    assert target.read_bytes() != original
    assert (root / (rel + ".orig")).read_bytes() == original
    assert not [p for p in root.rglob("*") if p.name.endswith(".e3l-tmp")], "temp files left behind"


def test_apply_preserves_encoding_bom_and_line_endings(tmp_path: Path) -> None:
    """A latin-1 file with its coding cookie stays latin-1; a BOM stays; CRLF stays CRLF."""
    root = fixable_case(tmp_path)
    _ctx, plan0 = planned(root)
    rel = sorted(plan0.files)[0]
    p = root / rel
    text = p.read_text(encoding="utf-8")
    # latin-1 with a cookie on line 1 (every edit moves down one line, which the re-analysis sees).
    p.write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + text.encode("latin-1"))
    ctx, plan = planned(root)
    fixes.apply(ctx.source.writable_root, plan)
    data = p.read_bytes()
    assert data.startswith(b"# -*- coding: latin-1 -*-\n# caf\xe9\n")
    compile(data, rel, "exec")
    assert plan.files[rel][1] == data.decode("latin-1")
    # BOM and CRLF.
    p.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode("utf-8"))
    ctx, plan = planned(root)
    fixes.apply(ctx.source.writable_root, plan)
    data = p.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and b"\n" not in data.replace(b"\r\n", b"")
    compile(data, rel, "exec")


def test_apply_writes_through_an_in_tree_link_and_refuses_links_out_of_the_tree(tmp_path: Path) -> None:
    root = fixable_case(tmp_path)
    _ctx, plan0 = planned(root)
    rel = sorted(plan0.files)[0]
    p = root / rel
    # In the tree: the file lives elsewhere in the tree and the model path is a relative link to it.
    real = root / "vllm" / "shared_copy.py"
    shutil.move(p, real)
    os.symlink(os.path.relpath(real, p.parent), p)
    ctx, plan = planned(root)
    fixes.apply(ctx.source.writable_root, plan)
    assert p.is_symlink() and real.read_text() == plan.files[rel][1]
    # Out of the tree: refused, the outside file untouched.
    outside = tmp_path / "outside.py"
    shutil.copy2(real, outside)
    p.unlink()
    real.unlink()
    outside.write_text(plan0.files[rel][0])
    os.symlink(outside, p)
    before = outside.read_bytes()
    ctx, plan = planned(root)
    with pytest.raises(fixes.ApplyError, match="outside the tree"):
        fixes.apply(ctx.source.writable_root, plan)
    assert outside.read_bytes() == before


def test_apply_failure_while_staging_leaves_tree_untouched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Simulation of a full disk (ENOSPC) on the second temp file: nothing is renamed, no temp left."""
    root = fixable_case(tmp_path)
    ctx, plan = planned(root, unsafe=True)
    before = tree_digest(root)
    real = fixes._write_temp  # noqa: SLF001
    calls = {"n": 0}

    def flaky(*a: object, **k: object) -> str:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(28, "No space left on device")
        return real(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(fixes, "_write_temp", flaky)
    with pytest.raises(fixes.ApplyError, match="No space left"):
        fixes.apply(ctx.source.writable_root, plan, backup=True)
    assert tree_digest(root) == before


def test_cli_apply_reports_what_it_wrote(tmp_path: Path) -> None:
    root = fixable_case(tmp_path)
    _ctx, plan = planned(root)
    proc = run_cli(["check", str(root), "--fix", "--apply", "--no-cache"], tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr
    for rel in plan.files:
        assert f"fixed {rel}" in proc.stderr
    # Applying again finds nothing safe left to do, and writes nothing.
    before = tree_digest(root)
    proc = run_cli(["check", str(root), "--fix", "--apply", "--no-cache"], tmp_path)
    assert "fixed " not in proc.stderr and tree_digest(root) == before


# -- overlapping fixes: whole or not at all ---------------------------------------------------------------------
def _islice_case(tmp_path: Path) -> tuple[Analysis, Finding]:
    """The v016_islice sample and its EGL005 finding on llama.py, whose fix adds ``start=`` to the loop header."""
    root = materialize(SAMPLES / "slice-relative-aux-index" / "v016_islice", tmp_path / "tree")
    an = analyze(dir_source(root), options_for(root))
    (f,) = [f for f in an.findings if f.rule == "EGL005" and f.location.path.endswith("/llama.py")]
    assert f.fix is not None and len(f.fix.edits) == 1
    return an, f


def test_a_fix_overlapping_a_planned_one_is_held_back_whole_with_a_note(tmp_path: Path) -> None:
    """A second fix that rewrites the same loop header (another way to the same end) and also inserts a line at
    the top of the file: the whole second fix is held back and named, not applied without its overlapping edit."""
    import dataclasses

    from eagle3_lint import cli
    from eagle3_lint.model import Edit, Fix

    an, f = _islice_case(tmp_path)
    assert f.fix is not None
    (header,) = f.fix.edits
    path = f.location.path
    top = Edit(path, 1, 0, 1, 0, "# a rival fix was here\n")
    # The real fix inserts ``, start=...`` into the header; the rival rewrites the text around that point.
    around = dataclasses.replace(header, col=header.col - 5, end_line=header.line + 1, end_col=1, new_text="(x)")
    rival = dataclasses.replace(f, rule="EGL004", location=dataclasses.replace(f.location, line=f.location.line + 1),
                                fix=Fix("rival", (top, around)))
    alone = fixes.unified_diff(fixes.plan(an.source, [f], unsafe=True))
    assert alone  # the real fix changes the header
    p = fixes.plan(an.source, [f, rival], unsafe=True)
    assert fixes.unified_diff(p) == alone and "rival fix was here" not in alone
    assert p.fixes == [(f, f.fix)] and p.overlaps == [(rival, f)]
    said: list[str] = []
    cli._say_overlaps(p, said.append)
    assert said == [f"eagle3-lint: note: the fix for EGL004 at {path}:{f.location.line + 1} is held back: its edits "
                    f"overlap the fix for EGL005 at {path}:{f.location.line}; rerun --fix after applying"]
    # Planned first, the rival wins the same way: the order of the findings decides, never a half of each.
    p2 = fixes.plan(an.source, [rival, f], unsafe=True)
    assert p2.fixes == [(rival, rival.fix)] and p2.overlaps == [(f, rival)]
    assert "rival fix was here" in fixes.unified_diff(p2)


def test_a_fix_whose_own_edits_overlap_is_held_back_and_identical_edits_merge(tmp_path: Path) -> None:
    import dataclasses

    from eagle3_lint import cli
    from eagle3_lint.model import Fix

    an, f = _islice_case(tmp_path)
    assert f.fix is not None
    (header,) = f.fix.edits
    around = dataclasses.replace(header, col=header.col - 5, end_line=header.line + 1, end_col=1, new_text="(x)")
    twice = dataclasses.replace(f, fix=Fix("twice", (header, around)))
    p = fixes.plan(an.source, [twice], unsafe=True)
    assert not p.files and p.overlaps == [(twice, twice)]
    said: list[str] = []
    cli._say_overlaps(p, said.append)
    assert said and "its own edits overlap" in said[0]
    # The same edit from two findings (one import two fixes add) is made once, and both fixes count as planned.
    same = dataclasses.replace(f, rule="EGL004")
    p = fixes.plan(an.source, [f, same], unsafe=True)
    assert len(p.fixes) == 2 and not p.overlaps
    assert fixes.unified_diff(p) == fixes.unified_diff(fixes.plan(an.source, [f], unsafe=True))
