"""Output that leads with the answer (issue 13): the first screen, the formats, fixes the way ruff users
expect, the CI surfaces, trace/matrix/rules, each bug of the issue with its regression test.

Real inputs: released vLLM trees (``real_trees``), the sample trees, the real ``pre-commit`` binary.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any

import pytest
import yaml

from eagle3_lint import releases
from tests.cihelp import REPO, cli, cli_json, sample

KIMI = "KimiK25ForConditionalGeneration"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
FINDING = re.compile(r"^(\S+?):(\d+):(\d+): (?:error|warning|note): (EGL\d{3})(?: |$)")


def in_terminal(args: list[str], cols: int = 80, rows: int = 24, env: dict[str, str] | None = None,
                raw: bool = False) -> str:
    """Run the CLI with stdout and stderr on a pseudo-terminal of ``cols`` x ``rows``; what it showed."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    e = {k: v for k, v in os.environ.items() if k not in ("CI", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR")}
    e.update({"TERM": "xterm-256color", **(env or {})})
    p = subprocess.Popen([sys.executable, "-m", "eagle3_lint", *args], stdin=slave, stdout=slave, stderr=slave,
                         env=e, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    p.wait(timeout=600)
    os.close(master)
    text = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    return text if raw else ANSI.sub("", text)


def in_tmux(args: list[str], tmp: Path, cols: int = 80, rows: int = 24) -> list[str]:
    """What a ``cols`` x ``rows`` tmux pane shows (its whole history) after the CLI ran in it.

    A real terminal, unlike a bare pseudo-terminal: the transient progress bar of a cold parse is
    erased as it is on a user's screen, and long lines wrap at the pane's width."""
    import shlex
    import time

    sock = str(tmp / "tmux.sock")
    drop = ("CI", "COLUMNS", "LINES", "TMUX", "NO_COLOR", "FORCE_COLOR")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    cmd = f"{shlex.join([sys.executable, '-m', 'eagle3_lint', *args])}; echo __EXIT=$?; sleep 600"
    subprocess.run(["tmux", "-S", sock, "-f", "/dev/null", "new-session", "-d", "-x", str(cols), "-y", str(rows), cmd],
                   env=env, check=True, cwd=REPO)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            shown = subprocess.run(["tmux", "-S", sock, "capture-pane", "-p", "-S", "-", "-E", "-"], env=env,
                                   capture_output=True, text=True, check=True).stdout.split("\n")
            done = [i for i, line in enumerate(shown) if line.startswith("__EXIT=")]
            if done:
                return shown[:done[0]]
            time.sleep(0.5)
        raise AssertionError("the command did not finish in the tmux pane")
    finally:
        subprocess.run(["tmux", "-S", sock, "kill-server"], env=env, capture_output=True)


def screen_rows(text: str, cols: int = 80) -> list[str]:
    """The rows a terminal of ``cols`` columns shows for ``text`` (long lines wrap)."""
    rows: list[str] = []
    for line in text.rstrip("\n").split("\n"):
        rows += [line[i:i + cols] for i in range(0, max(len(line), 1), cols)]
    return rows


def released_copy(real_trees: object, version: str, cache: Path) -> Path:
    """A private cache holding ``vllm==version`` as eagle3-lint fetched it (the shared cache stays untouched)."""
    src = real_trees.get(version)  # type: ignore[attr-defined]
    dest = releases.release_dir(version, cache, "vllm")
    shutil.copytree(src, dest)
    return dest


def tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        h.update(p.relative_to(root).as_posix().encode() + p.read_bytes())
    return h.hexdigest()


# -- 1. the first lines are the answer -----------------------------------------------------------------
def _kimi_path_findings(real_trees: object) -> set[tuple[str, int, str]]:
    """(path, line, rule) of 0.16.0's findings that are about Kimi-K2.5 (named for it, in its files)."""
    root = real_trees.get("0.16.0")  # type: ignore[attr-defined]
    _p, rep = cli_json("check", str(root), "--arch", KIMI, "--output-format", "json")
    return {(f["path"], f["line"], f["rule"]) for f in rep["findings"] if f["architecture"] == KIMI}


@pytest.mark.real
def test_readme_first_command_in_an_80x24_terminal_and_piped(real_trees: object, tmp_path: Path) -> None:
    real_trees.get("0.16.0")  # type: ignore[attr-defined]  # in the default cache, as `vllm==0.16.0` finds it
    args = ["check", "vllm==0.16.0", "--arch", KIMI]
    kimi = _kimi_path_findings(real_trees)
    assert {r for _p, _l, r in kimi} >= {"EGL001", "EGL009"}
    piped = cli(*args, env={"COLUMNS": "80"}, process=True)  # a real pipe from a real interpreter
    assert piped.returncode == 1, piped.stderr
    screens = [screen_rows(in_terminal(args)), screen_rows(piped.stdout)]  # a bare pty (warm now), and a pipe
    if shutil.which("tmux"):
        screens.append(in_tmux([*args, "--no-cache"], tmp_path))  # a real 80x24 terminal, cold: the bar is erased
    for rows in screens:
        shown = "\n".join(rows)
        assert len(rows) <= 15, "\n".join(rows)
        first = re.sub(r"\s+", "", "".join(rows[:10]))  # wrapped rows joined back (a terminal drops the spaces)
        assert rows[0].startswith(f"{KIMI} on vLLM 0.16.0 (CUDA): "), rows
        assert "refusedatload(vllm/v1/worker/gpu_model_runner.py:4190)" in first, rows
        assert "next:eagle3-lintcheckvllm==0.16.0--archKimiK25ForConditionalGeneration--fix" in first, rows
        matches = [FINDING.match(line) for line in rows]
        found = [(m.group(1), int(m.group(2)), m.group(4)) for m in matches if m]
        assert found and set(found) <= kimi, found  # every finding shown concerns Kimi-K2.5's path
        assert "more about other architectures" in shown
    # The README shows exactly this output.
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    shown_in_readme = re.search(r"prints this and exits 1:\n\n```\n(.*?)```", readme, re.S)
    assert shown_in_readme and shown_in_readme.group(1) == piped.stdout
    # Piped output is never hard-wrapped: one finding is one line.
    assert all(FINDING.match(line) for line in piped.stdout.splitlines() if "EGL0" in line and ":309:" in line)


@pytest.mark.real
def test_show_context_and_all_bring_back_the_derivation(real_trees: object) -> None:
    root = real_trees.get("0.16.0")  # type: ignore[attr-defined]
    short = cli("check", str(root), "--arch", KIMI).stdout
    ctx = cli("check", str(root), "--arch", KIMI, "-v").stdout
    every = cli("check", str(root), "--arch", KIMI, "--all").stdout
    assert "contract:" not in short and "runner:" not in short
    assert ctx.splitlines()[0].startswith(f"{KIMI} on vLLM 0.16.0 (CUDA):") and "contract: SupportsEagle3" in ctx
    assert "more about other architectures" in ctx
    assert "vllm/model_executor/models/llama.py" in every and "more about other architectures" not in every


@pytest.mark.real
def test_a_finding_belongs_to_the_target_whose_path_runs_through_it(real_trees: object) -> None:
    root = real_trees.get("0.33.0")  # type: ignore[attr-defined]
    # MiniCPMForCausalLM runs MiniCPMModel.forward: its latent EGL005 is shown, and fails --fail-on warning.
    p = cli("check", str(root), "--arch", "MiniCPMForCausalLM", "--fail-on", "warning")
    assert p.returncode == 1, p.stdout + p.stderr
    lines = [ln for ln in p.stdout.splitlines() if FINDING.match(ln)]
    assert lines and all("minicpm.py" in ln and "EGL005" in ln for ln in lines), p.stdout
    # Qwen3ForCausalLM runs none of the 45 findings: with --fail-on warning it passes (main failed it on
    # warnings about other architectures).
    p = cli("check", str(root), "--arch", "Qwen3ForCausalLM", "--fail-on", "warning")
    assert p.returncode == 0, p.stdout + p.stderr
    assert not [ln for ln in p.stdout.splitlines() if FINDING.match(ln)]


# -- 2. formats ---------------------------------------------------------------------------------------
@pytest.mark.real
def test_concise_on_all_of_0_33_0_is_one_short_line_per_finding(real_trees: object) -> None:
    root = real_trees.get("0.33.0")  # type: ignore[attr-defined]
    _p, rep = cli_json("check", str(root), "--output-format", "json")
    p = cli("check", str(root), "--output-format", "concise", "-q", env={"COLUMNS": "80"})
    lines = p.stdout.splitlines()
    assert len(lines) == len(rep["findings"]) > 40
    assert all(FINDING.match(ln) for ln in lines), lines[:5]
    assert max(len(ln) for ln in lines) <= 200
    want = sorted((f["path"], f["line"], f["rule"]) for f in rep["findings"])
    got = sorted((m.group(1), int(m.group(2)), m.group(4)) for m in map(FINDING.match, lines) if m)
    assert got == want
    # JSON keeps the whole message and adds the short one as title.
    for f in rep["findings"]:
        assert f["title"] and "\n" not in f["title"] and len(f["title"]) <= 120
        assert len(f["message"]) >= len(f["title"])


def test_full_grouped_statistics_show_fixes_and_colour(tmp_path: Path) -> None:
    root = sample("slice-relative-aux-index/v016_islice", tmp_path / "t")
    full = cli("check", str(root), "--output-format", "full", env={"COLUMNS": "80"}).stdout
    assert "[slice-relative-aux-index]" in full and "start_layer" in full
    assert max(len(ln) for ln in full.splitlines()) > 80  # piped: not hard-wrapped
    grouped = cli("check", str(root), "--output-format", "grouped").stdout
    assert "vllm/model_executor/models/llama.py:\n  20:9: error: EGL005 [*] " in grouped
    stats = cli("check", str(root), "--statistics").stdout
    assert stats == "    3  EGL005  error    [*]  slice-relative-aux-index\n", stats
    fixes = cli("check", str(root), "-q", "--show-fixes").stdout
    assert fixes.count("    fix (safe): add start=self.start_layer to enumerate()") == 3
    assert fixes.splitlines()[0].startswith("vllm/model_executor/models/llama.py:20:9: error: EGL005 [*] ")
    assert "Found 1 error and 2 warnings (3 fixable with --fix)." in cli("check", str(root)).stdout
    assert "\x1b[" in cli("check", str(root), "--color", "always").stdout
    assert "\x1b[" in cli("check", str(root), env={"FORCE_COLOR": "1"}).stdout
    colour = re.compile(r"\x1b\[[0-9;]*3[0-7]m")  # a foreground colour (bold alone is not one)
    assert colour.search(in_terminal(["check", str(root), "--no-cache"], raw=True))
    assert not colour.search(in_terminal(["check", str(root), "--no-cache"], env={"NO_COLOR": "1"}, raw=True))
    p = cli("check", str(root), "--color", "never", env={"FORCE_COLOR": "1"})
    assert "\x1b[" not in p.stdout


# -- 3. the bugs of the issue -------------------------------------------------------------------------
@pytest.mark.real
def test_apply_refuses_a_fetched_release_and_into_writes_a_patched_copy(real_trees: object, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    rel = released_copy(real_trees, "0.16.0", cache)
    before = tree_hash(rel)
    args = ["check", "vllm==0.16.0", "--arch", KIMI, "--cache-dir", str(cache), "--unsafe-fixes"]
    p = cli(*args, "--fix", "--apply")
    assert p.returncode == 2 and p.stdout == "", p.stdout + p.stderr
    assert p.stderr.count("\n") == 1 and "downloaded release" in p.stderr and "--into DIR" in p.stderr, p.stderr
    assert tree_hash(rel) == before  # main wrote the fix into the cache: later runs saw a patched "0.16.0"
    out = tmp_path / "patched"
    p = cli(*args, "--fix", "--apply", "--into", str(out))
    assert tree_hash(rel) == before
    assert "fixed " in p.stderr and re.search(r"\(\d+ fixed, \d+ remaining\)", p.stderr), p.stderr
    assert "EGL001" not in cli("check", str(out), "--arch", KIMI, "--no-cache", "-q").stdout
    assert cli(*args, "--fix", "--apply", "--into", str(out)).returncode == 2  # not empty any more


def test_apply_that_fixed_everything_exits_0_and_counts(tmp_path: Path) -> None:
    root = sample("slice-relative-aux-index/v016_islice", tmp_path / "t")
    assert cli("check", str(root), "--no-cache").returncode == 1
    p = cli("check", str(root), "--fix", "--apply", "--no-cache")
    assert p.returncode == 0, p.stdout + p.stderr  # main: 1, although the re-check is clean
    assert "Found 3 findings (3 fixed, 0 remaining)." in p.stderr, p.stderr


@pytest.mark.real
def test_fix_with_only_unsafe_fixes_says_so(real_trees: object, tmp_path: Path) -> None:
    root = tmp_path / "t"
    shutil.copytree(real_trees.get("0.16.0"), root)  # type: ignore[attr-defined]
    args = ["check", str(root), "--arch", KIMI, "--no-cache"]
    for fix in ("--fix", "--diff"):
        p = cli(*args, fix)
        assert p.stdout == "" and "1 unsafe fix available with --unsafe-fixes" in p.stderr, p.stdout[:300] + p.stderr
        out = tmp_path / f"patch{fix}.diff"
        p = cli(*args, fix, "-o", str(out))
        assert not out.exists()  # main wrote a 0-byte file
    text = cli(*args).stdout
    assert "EGL001 [*]" not in text and "(1 unsafe fix available with --unsafe-fixes" in text
    assert "EGL001 [*]" in cli(*args, "--unsafe-fixes").stdout  # --fix would apply it now
    diff = cli(*args, "--diff", "--unsafe-fixes")
    assert diff.stdout.startswith("--- a/vllm/model_executor/models/")
    assert diff.stdout == cli(*args, "--fix", "--unsafe-fixes").stdout


def test_ci_stale_baseline_is_reported_in_every_format(tmp_path: Path) -> None:
    root = sample("slice-relative-aux-index/v016_islice", tmp_path / "t")
    base = tmp_path / "ci" / "eagle3-lint-baseline.json"
    assert cli("check", str(root), "--write-baseline", str(base), "--no-cache").returncode == 0
    assert cli("check", str(root), "--fix", "--apply", "--no-cache").returncode == 0  # the baseline is now stale
    ci = {"CI": "true"}
    gh = cli("check", str(root), "--baseline", str(base), "--output-format", "github", "--no-cache", env=ci)
    assert gh.returncode == 1
    assert gh.stdout.startswith("::error title=eagle3-lint baseline::baseline ") and "stale" in gh.stdout, gh.stdout
    p, sarif = cli_json("check", str(root), "--baseline", str(base), "--output-format", "sarif", "--no-cache", env=ci)
    notes = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert p.returncode == 1 and any(n["level"] == "error" and n["descriptor"]["id"] == "stale-baseline" for n in notes)
    p, rep = cli_json("check", str(root), "--baseline", str(base), "--output-format", "json", "--no-cache", env=ci)
    assert p.returncode == 1 and "stale" in rep["baseline"]["failure"]
    p, rep = cli_json("check", str(root), "--baseline", str(base), "--output-format", "json", "--no-cache")
    assert p.returncode == 0 and "failure" not in rep["baseline"]  # only CI fails on it
    assert cli("check", str(root), "--baseline", str(base), "--output-format", "github", "--no-cache").stdout == ""


def _docs_local_hook() -> dict[str, object]:
    text = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    for block in re.findall(r"```yaml\n(.*?)```", text, re.S):
        doc = yaml.safe_load(block)
        if isinstance(doc, dict) and doc.get("repos") and doc["repos"][0].get("repo") == "local":
            return doc["repos"][0]["hooks"][0]
    raise AssertionError("no local hook in docs/ci.md")


def test_hook_files_cover_the_configuration_and_the_baseline() -> None:
    (manifest,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    local = _docs_local_hook()
    assert local["files"] == manifest["files"] and local["entry"] == manifest["entry"]
    files = re.compile(str(manifest["files"]))
    for path in ("pyproject.toml", "eagle3-lint.toml", "ci/eagle3-lint-baseline.json", "eagle3-lint-baseline.json",
                 "vllm/model_executor/models/llama.py"):
        assert files.search(path), path
    for path in ("docs/pyproject.toml.md", "vllm/config.pyi", "package.json", "README.md"):
        assert not files.search(path), path


@pytest.mark.real
def test_matrix_columns_fit_their_content_and_missing_releases_are_named(real_trees: object, tmp_path: Path) -> None:
    # A private cache holding exactly two releases (the shared one gains releases as others fetch them).
    for v in ("0.11.0", "0.16.0"):
        released_copy(real_trees, v, tmp_path / "cache")
    cache = str(tmp_path / "cache")
    p = cli("matrix", "--releases", "0.11.0..0.16.0", "--arch", KIMI, "--arch", "LlamaForCausalLM",
            "--cache-dir", cache, env={"COLUMNS": "40"})
    assert p.returncode == 0, p.stderr
    assert "…" not in p.stdout and "0.11.0" in p.stdout and "0.16.0" in p.stdout and KIMI in p.stdout, p.stdout
    assert "none of 0.12.x, 0.13.x, 0.14.x, 0.15.x is in the cache" in p.stderr and "--index" in p.stderr, p.stderr
    assert "what that release's own supports_eagle3() says" in " ".join(p.stdout.split())


@pytest.mark.real
def test_rules_shows_the_severities_reports_use(real_trees: object) -> None:
    p, rules = cli_json("rules", "--output-format", "json")
    sev = {r["id"]: r["severities"] for r in rules}
    assert sev["EGL005"] == ["error", "warning"] and sev["EGL009"] == ["error", "note"]
    for v in ("0.16.0", "0.33.0"):
        root = real_trees.get(v)  # type: ignore[attr-defined]
        _p, rep = cli_json("check", str(root), "--arch", KIMI, "--output-format", "json")
        for f in rep["findings"]:
            assert f["severity"] in sev[f["rule"]], f
    table = cli("rules", env={"COLUMNS": "200"}).stdout
    assert re.search(r"EGL005 .*error/warning", table) and re.search(r"EGL009 .*error/note", table)


def test_checkout_version_from_setuptools_scm(tmp_path: Path) -> None:
    root = sample("workflow/clean_tree", tmp_path / "t")
    (root / "vllm" / "_version.py").write_text(
        "# file generated by setuptools_scm\n# don't change, don't track in version control\n"
        "__version__ = version = '0.11.1.dev238+ge2c6e0a82'\n"
        "__version_tuple__ = version_tuple = (0, 11, 1, 'dev238', 'ge2c6e0a82')\n", encoding="utf-8")
    _p, rep = cli_json("check", str(root), "--output-format", "json", "--no-cache")
    assert rep["target"]["vllm_version"] == "0.11.1.dev238+ge2c6e0a82"


@pytest.mark.real
def test_trace_takes_checks_argument_shape(real_trees: object) -> None:
    root = str(real_trees.get("0.16.0"))  # type: ignore[attr-defined]
    new = cli("trace", root, "--arch", KIMI)
    old = cli("trace", KIMI, root)
    assert new.returncode == old.returncode == 0 and new.stdout == old.stdout and "kimi_k25.py:309" in new.stdout
    p = cli("trace", root)
    assert p.returncode == 2 and "--arch ARCH" in p.stderr and p.stderr.count("\n") == 1


# -- 4. pre-commit and CI -----------------------------------------------------------------------------
@pytest.mark.real
def test_readme_hook_on_a_0_16_fork_is_short_and_reruns_on_config(real_trees: object, tmp_path: Path) -> None:
    from tests.test_ci_precommit import env_for, git, pre_commit

    env = env_for(tmp_path)
    repo = tmp_path / "fork"
    shutil.copytree(real_trees.get("0.16.0"), repo)  # type: ignore[attr-defined]
    (repo / "pyproject.toml").write_text('[project]\nname = "vllm"\n\n[tool.eagle3-lint]\n'
                                         f'architectures = ["{KIMI}"]\n', encoding="utf-8")
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{"repo": "local", "hooks": [
        _docs_local_hook()]}]}, sort_keys=False), encoding="utf-8")
    git(repo, env, "init", "-q", "-b", "main")
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-q", "-m", "vLLM 0.16.0", "--no-verify")
    assert subprocess.run([*pre_commit(), "install"], cwd=repo, env=env, capture_output=True).returncode == 0
    src = repo / "vllm/model_executor/models/kimi_k25.py"
    src.write_text(src.read_text() + "\n# fork change\n")
    git(repo, env, "add", "-A")
    c = git(repo, env, "commit", "-m", "touch kimi", check=False)
    out = c.stdout + c.stderr
    assert c.returncode != 0 and "EGL001" in out, out
    assert len(out.strip().splitlines()) <= 20, out
    # Changing the targeted architectures alone re-runs the hook (main's files: pattern skipped it).
    (repo / "pyproject.toml").write_text('[project]\nname = "vllm"\n\n[tool.eagle3-lint]\n'
                                         'architectures = ["LlamaForCausalLM"]\n', encoding="utf-8")
    git(repo, env, "add", "pyproject.toml")
    c = git(repo, env, "commit", "-m", "target llama", check=False)
    out = c.stdout + c.stderr
    # It ran ("Passed", not "Skipped"): Llama's one 0.16.0 defect, the slice-relative EGL005 loop, is latent there
    # (the drafter gets the target's PP size at speculative.py:645 and Eagle3LlamaForCausalLM does not support PP,
    # so EAGLE-3 never runs with PP), a warning that does not fail the hook.
    assert "eagle3-lint" in out and "Skipped" not in out and "Passed" in out and c.returncode == 0, out


def _action_steps() -> list[dict[str, Any]]:
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    return action["runs"]["steps"]


def _expand(value: str, ctx: dict[str, str]) -> str:
    return re.sub(r"\$\{\{\s*([^}]+?)\s*\}\}", lambda m: ctx[m.group(1)], value)


def test_action_steps_run(tmp_path: Path) -> None:
    """Every ``run:`` step of action.yml, with its env, as the runner would run it (bash), on a sample tree.

    ``uses:`` steps (setup-python, the SARIF upload) belong to GitHub; the install step runs into a
    fresh virtualenv that sees this interpreter's packages (pip and setuptools too), so the action's own pip
    command is tested. Offline: no index, and no isolated build environment, which would fetch setuptools
    (the test extra installs one that builds wheels itself)."""
    steps = _action_steps()
    tree = sample("slice-relative-aux-index/v016_islice", tmp_path / "tree")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python*/site-packages"))
    here = [p for p in sys.path if p.endswith("site-packages")]
    (site / "deps.pth").write_text("\n".join(here) + "\n")
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    ctx = {"github.action_path": str(REPO), "runner.temp": str(temp), "inputs.target": str(tree),
           "inputs.args": "--arch LlamaForCausalLM --no-cache", "inputs.sarif": "true", "inputs.python-version": "3.11"}
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
    # pip reads PIP_NO_BUILD_ISOLATION=0 as --no-build-isolation (its env var names the option, not its value).
    env.update({"PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0"})
    ran = []
    for step in steps:
        if "run" not in step:
            continue
        cond = str(step.get("if", "true"))
        if "inputs.sarif == 'true'" in cond and ctx["inputs.sarif"] != "true":
            continue
        e = dict(env, **{k: _expand(str(v), ctx) for k, v in (step.get("env") or {}).items()})
        p = subprocess.run(["bash", "-e", "-c", _expand(str(step["run"]), ctx)], env=e, capture_output=True, text=True,
                           timeout=900, cwd=tmp_path)
        ran.append((step.get("name"), p))
    names = [n for n, _ in ran]
    assert names[0] == "Install eagle3-lint" and ran[0][1].returncode == 0, ran[0][1].stderr
    assert (venv / "bin" / "eagle3-lint").exists()
    sarif = json.loads((temp / "eagle3-lint.sarif").read_text())
    assert sarif["version"] == "2.1.0" and any(r["ruleId"] == "EGL005" for r in sarif["runs"][0]["results"])
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif"))
    assert _expand(str(upload["with"]["sarif_file"]), ctx) == str(temp / "eagle3-lint.sarif")
    gh = ran[-1][1]
    assert gh.returncode == 1, gh.stdout + gh.stderr
    assert gh.stdout.startswith("::error file=vllm/model_executor/models/llama.py,line=20"), gh.stdout


@pytest.mark.real
def test_verdict_line_takes_the_serving_verdict_when_the_context_has_one(real_trees: object) -> None:
    """The lead's serving verdict (ctx.serving, the serving-verdict contract) replaces the class verdict
    on the first line: its outcome, and the failing steps' path:line in serving order."""
    import dataclasses
    from types import SimpleNamespace

    from eagle3_lint.app import CheckRequest, run_check
    from eagle3_lint.model import Location
    from eagle3_lint.report.headline import next_step, verdict_line

    ctx = run_check(CheckRequest(str(real_trees.get("0.16.0")), (KIMI,), no_cache=True))  # type: ignore[attr-defined]
    plain = verdict_line(ctx, KIMI)
    assert plain.startswith(f"{KIMI} on vLLM 0.16.0 (CUDA): ") and "refused at load" in plain
    step = SimpleNamespace
    ctx = dataclasses.replace(ctx, serving={KIMI: SimpleNamespace(  # type: ignore[dict-item]
        architecture=KIMI, outcome="refused-at-config", stage="config-gate", next_step="pass a drafter config",
        steps=(step(gate="registry", result="pass", message="",
                    location=Location("vllm/model_executor/models/registry.py", 1)),
               step(gate="config-gate", result="fail", message="",
                    location=Location("vllm/config/speculative.py", 698)),
               step(gate="runner-interface", result="fail", message="",
                    location=Location("vllm/v1/worker/gpu_model_runner.py", 4190))))})
    line = verdict_line(ctx, KIMI)
    assert line == (f"{KIMI} on vLLM 0.16.0 (CUDA): refused at config time (vllm/config/speculative.py:698) and at "
                    "load (vllm/v1/worker/gpu_model_runner.py:4190) -- 1 blocker")
    nxt = next_step(ctx, KIMI, ctx.findings, "eagle3-lint check X")
    assert nxt is not None and nxt.endswith("; pass a drafter config")


@pytest.mark.real
def test_one_gate_failing_twice_is_worded_once_on_vllm_0_16_0(real_trees: object) -> None:
    """Kimi-K2.5 with its SpecForge drafter and -pp 2 on vLLM 0.16.0 fails config-gate twice: the model_type
    'deepseek_v3' is not on eagle3_target_supported (vllm/config/speculative.py:689-709, ValueError at 698), and
    the drafter gets the target's PP size (speculative.py:645) while Eagle3LlamaForCausalLM does not support PP
    (config/model.py:1059-1066). The verdict line says "at config time" once, with both places."""
    from eagle3_lint.app import CheckRequest, run_check
    from eagle3_lint.report.headline import verdict_line

    cp = REPO / "sample_trees" / "_checkpoints"
    ctx = run_check(CheckRequest(str(real_trees.get("0.16.0")), (KIMI,),  # type: ignore[attr-defined]
                                 target_config=str(cp / "kimi-k2.5.json"),
                                 draft_config=str(cp / "specforge-kimi-k25-eagle3.json"), pipeline_parallel=2))
    line = verdict_line(ctx, KIMI)
    assert line.startswith(f"{KIMI} on vLLM 0.16.0 (CUDA): refused at config time "
                           "(vllm/config/speculative.py:698 and :645)"), line
    assert line.count("at config time") == 1


def test_fix_diff_is_coloured_only_for_a_terminal_or_when_asked(tmp_path: Path) -> None:
    root = sample("slice-relative-aux-index/v016_islice", tmp_path / "t")
    plain = cli("check", str(root), "--fix", "--no-cache").stdout
    assert plain.startswith("--- a/vllm/model_executor/models/llama.py") and "\x1b[" not in plain
    coloured = cli("check", str(root), "--fix", "--color", "always", "--no-cache").stdout
    assert "\x1b[32m+" in coloured and "\x1b[31m-" in coloured
    assert ANSI.sub("", coloured) == plain
    assert "\x1b[" not in in_terminal(["check", str(root), "--fix", "--no-cache"], env={"NO_COLOR": "1"}, raw=True)
    assert "\x1b[32m+" in in_terminal(["check", str(root), "--fix", "--no-cache"], raw=True)
