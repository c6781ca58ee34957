"""Output that says what it is (issue 21, item 3): the severity on every text line, an ``architectures`` list on
every finding, machine formats scoped like the text, ``next:`` repeating the whole invocation, conflicting options
refused, colour per NO_COLOR/FORCE_COLOR, ``--version``, ``rules`` at 80 columns, the ``trace`` argument errors,
one spelling per option, and ``# noqa: EGLnnn`` answered by EGL100. docs/output.md says why each choice."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from eagle3_lint.model import Finding, Location, Severity
from eagle3_lint.rules import default_title, fit
from eagle3_lint.rules.egl007_draft_layer_ids_invalid import META as EGL007
from tests.cihelp import REPO, cli, cli_json, sample
from tests.test_output import ANSI, in_terminal, in_tmux

CKPT = REPO / "sample_trees" / "_checkpoints"
KIMI = "KimiK25ForConditionalGeneration"
LINE = re.compile(r"^(\S+?):(\d+):(\d+): (error|warning|note): (EGL\d{3}) ")


# -- 1. the severity on every line -------------------------------------------------------------------------------
def test_every_concise_and_grouped_line_says_its_severity(tmp_path: Path) -> None:
    """v016_islice (case.toml): LlamaModel's loop runs under PP for LlamaForCausalLM, an error; the other two
    architectures never reach PP with EAGLE-3, warnings. Piped, with NO_COLOR, the word is on the line, as mypy's
    ``path:line:col: error: ...``; it agrees with the JSON, the github command and the SARIF level."""
    root = sample("slice-relative-aux-index/v016_islice", tmp_path / "t")
    text = cli("check", str(root), env={"NO_COLOR": "1"}).stdout
    lines = [m for m in map(LINE.match, text.splitlines()) if m]
    assert len(lines) == 3 and "\x1b[" not in text
    assert [m.group(4) for m in lines].count("error") == 1 and [m.group(4) for m in lines].count("warning") == 2
    assert "vllm/model_executor/models/llama.py:20:9: error: EGL005 [*] " in text
    grouped = cli("check", str(root), "--output-format", "grouped").stdout
    assert "vllm/model_executor/models/llama.py:\n  20:9: error: EGL005 [*] " in grouped
    _, rep = cli_json("check", str(root), "--output-format", "json")
    assert sorted((m.group(1), int(m.group(2)), m.group(4)) for m in lines) == \
        sorted((f["path"], f["line"], f["severity"]) for f in rep["findings"])
    gh = cli("check", str(root), "--output-format", "github").stdout.splitlines()
    assert sorted(g.split(" ", 1)[0] for g in gh) == ["::error", "::warning", "::warning"]
    _, sarif = cli_json("check", str(root), "--output-format", "sarif")
    assert sorted(r["level"] for r in sarif["runs"][0]["results"]) == ["error", "warning", "warning"]


# -- 2. titles: whole sentences -----------------------------------------------------------------------------------
def test_a_title_is_never_cut() -> None:
    """fit() keeps the first form that fits and else the shortest, whole; a finding made without a title gets the
    message's first sentence, or the rule's summary when that sentence is too long, never a clipped one."""
    long_name = "X" * 130
    assert fit(f"{long_name} is wrong in a long way", f"{long_name} is wrong") == f"{long_name} is wrong"
    f = Finding("EGL007", EGL007.name, Severity.ERROR, "a" * 200 + " b. More.", Location("d.json", 1),
                architecture="LlamaForCausalLM")
    t = default_title(EGL007, f)
    assert not t.endswith("...") and t in (f"LlamaForCausalLM: {EGL007.summary[0].lower()}{EGL007.summary[1:-1]}",
                                           EGL007.summary[:-1])


# -- 4. machine formats scoped like the text ---------------------------------------------------------------------
@pytest.mark.real
def test_json_and_github_hold_what_the_text_shows(real_trees: object, tmp_path: Path) -> None:
    """vLLM 0.16.0 with --arch Kimi: the text shows Kimi's findings and counts the rest; github gave 31
    annotations and the JSON every architecture's row (858 KB). Now both hold the target's, and say so."""
    tree = str(real_trees.get("0.16.0"))  # type: ignore[attr-defined]  # conftest accessor
    text = cli("check", tree, "--arch", KIMI, cwd=tmp_path).stdout
    shown = [ln for ln in text.splitlines() if LINE.match(ln)]
    more = int(re.search(r"; (\d+) more about other architectures", text).group(1))  # type: ignore[union-attr]
    gh = cli("check", tree, "--arch", KIMI, "--output-format", "github", cwd=tmp_path).stdout.splitlines()
    assert len([g for g in gh if "title=EGL" in g]) == len(shown) >= 1
    p, rep = cli_json("check", tree, "--arch", KIMI, "--output-format", "json", cwd=tmp_path)
    assert len(rep["findings"]) == len(shown) and [a["name"] for a in rep["architectures"]] == [KIMI]
    assert rep["scope"] == {"targets": [KIMI], "complete": False, "findings_left_out": more,
                            "architectures_left_out": rep["registry"]["architectures"] - 1}
    assert len(p.stdout) < 100_000
    _, whole = cli_json("check", tree, "--arch", KIMI, "--all", "--output-format", "json", cwd=tmp_path)
    assert whole["scope"]["complete"] and len(whole["findings"]) == len(shown) + more


# -- 5. next: ---------------------------------------------------------------------------------------------------
@pytest.mark.real
def test_next_repeats_the_whole_invocation(real_trees: object, tmp_path: Path) -> None:
    """The next step keeps the drafter, the pipeline size and the target config the user gave (each changes the
    findings), in the one spelling of each option."""
    tree = str(real_trees.get("0.16.0"))  # type: ignore[attr-defined]  # conftest accessor
    tc, dc = str(CKPT / "kimi-k2.5.json"), str(CKPT / "specforge-kimi-k25-eagle3.json")
    text = cli("check", tree, "--arch", KIMI, "--target-config", tc, "--draft-config", dc, "-pp", "2",
               "--runner", "v1", "-q", cwd=tmp_path).stdout
    nxt = cli("check", tree, "--arch", KIMI, "--target-config", tc, "--draft-config", dc, "-pp", "2",
              "--runner", "v1", cwd=tmp_path).stdout.splitlines()[1]
    assert nxt.startswith("  next: eagle3-lint check ")
    for part in (tree, f"--arch {KIMI}", f"--target-config {tc}", f"--draft-config {dc}",
                 "--pipeline-parallel-size 2", "--runner v1"):
        assert part in nxt, nxt
    assert "-q" not in nxt.split() and text  # how the report is shown is not repeated


@pytest.mark.real
def test_next_does_not_offer_a_notes_unsafe_fix(real_trees: object, tmp_path: Path) -> None:
    """vLLM 0.33.0 DeepseekV3ForCausalLM: its one finding is EGL006's note on DeepseekV2ForCausalLM's dead
    get_eagle3_aux_hidden_state_layers override; nothing blocks, so the next step is not --fix --unsafe-fixes."""
    tree = str(real_trees.get("0.33.0"))  # type: ignore[attr-defined]  # conftest accessor
    out = cli("check", tree, "--arch", "DeepseekV3ForCausalLM", cwd=tmp_path).stdout
    rows = [ln for ln in out.splitlines() if LINE.match(ln)]
    assert rows and all(": note: " in r for r in rows), out
    assert "--fix" not in out.splitlines()[1] and "unsafe fix available with --unsafe-fixes" in out


# -- 6. conflicting options, colour, --version, rules, trace ----------------------------------------------------
@pytest.mark.parametrize("args", [("-q", "-v"), ("-q", "--show-context"), ("--statistics", "--output-format", "json"),
                                  ("--show-fixes", "--output-format", "sarif"), ("-v", "--output-format", "github"),
                                  ("--statistics", "--show-fixes"), ("--fix", "--statistics")])
def test_conflicting_options_are_refused(tmp_path: Path, args: tuple[str, ...]) -> None:
    root = sample("slice-relative-aux-index/v016_islice", tmp_path / "t")
    p = cli("check", str(root), *args)
    assert p.returncode == 2 and p.stderr.startswith("eagle3-lint: error: ") and not p.stdout, (p.stdout, p.stderr)
    assert len(p.stderr.splitlines()) == 1


def test_colour_follows_no_color_and_force_color(tmp_path: Path) -> None:
    """no-color.org: NO_COLOR (non-empty) means no ANSI styling, bold and dim included, even with FORCE_COLOR.
    force-color.org: FORCE_COLOR set to any non-empty value forces colour, "0" included (docs/output.md)."""
    root = sample("slice-relative-aux-index/v016_islice", tmp_path / "t")
    plain = in_terminal(["check", str(root), "--no-cache"], env={"NO_COLOR": "1"}, raw=True)
    assert "error: EGL005" in plain and "\x1b[" not in ANSI.sub("", plain) and not re.search(r"\x1b\[[0-9;]*m", plain)
    assert not re.search(r"\x1b\[[0-9;]*m", cli("check", str(root), env={"NO_COLOR": "1", "FORCE_COLOR": "1"}).stdout)
    assert "\x1b[" in cli("check", str(root), env={"FORCE_COLOR": "0"}).stdout
    assert "\x1b[" in cli("check", str(root), "--color", "always", env={"NO_COLOR": "1"}).stdout


def test_version_on_the_command_and_on_check(tmp_path: Path) -> None:
    from eagle3_lint import __version__

    for args in (("--version",), ("-V",), ("check", "--version"), ("check", "-V")):
        p = cli(*args, cwd=tmp_path)
        assert p.returncode == 0 and p.stdout == f"eagle3-lint, version {__version__}\n", (args, p.stdout)


def test_rules_fits_80_columns(tmp_path: Path) -> None:
    """Five columns at 80 wrapped each summary to a word per line; every rule is now two or three rows."""
    from eagle3_lint.rules import all_rules

    shown = [r for r in in_tmux(["rules"], tmp_path) if r.strip()]
    assert all(len(r) <= 80 for r in shown) and len(shown) <= 3 * len(all_rules()), shown
    single = [len(r.split()) == 1 for r in shown]  # a wrapped summary may end in one word, never a column of them
    assert not any(a and b for a, b in zip(single, single[1:], strict=False)), shown
    for r in all_rules():
        assert any(row.startswith(f"{r.meta.id}  {r.meta.name} ") for row in shown), r.meta.id


def test_trace_arguments_are_read_as_what_they_are(tmp_path: Path) -> None:
    root = sample("slice-relative-aux-index/v016_islice", tmp_path / "tree")
    p = cli("trace", "tree", cwd=tmp_path)  # a folder without a slash: a target, not a class name
    assert p.returncode == 2 and "--arch" in p.stderr and "no vLLM" not in p.stderr, p.stderr
    p = cli("trace", "./tree", "LlamaForCausalLM", cwd=tmp_path)  # the old ARCH TARGET order, swapped
    assert p.returncode == 2 and "'./tree' is not an architecture" in p.stderr, p.stderr
    ok = cli("trace", "LlamaForCausalLM", str(root), cwd=tmp_path)  # the old form still works
    assert ok.returncode == 0 and "LlamaForCausalLM" in ok.stdout, ok.stderr


# -- 7. one spelling per option -----------------------------------------------------------------------------------
def test_old_spellings_work_hidden_with_a_deprecation_note(tmp_path: Path) -> None:
    root = sample("slice-relative-aux-index/v016_islice", tmp_path / "t")
    helptext = cli("check", "--help").stdout
    for old in ("--output-format", "--diff", "--pipeline-parallel "):
        assert old not in helptext.replace("--output-format", "").replace("--pipeline-parallel-size", ""), old
    assert "--output-format" in helptext and "--pipeline-parallel-size" in helptext and "--fix" in helptext
    new, dep = cli("check", str(root), "--output-format", "json"), cli("check", str(root), "--format", "json")
    assert json.loads(dep.stdout)["findings"] == json.loads(new.stdout)["findings"] and not new.stderr
    assert "eagle3-lint: warning: --format is deprecated; use --output-format" in dep.stderr
    diff, fix = cli("check", str(root), "--diff"), cli("check", str(root), "--fix")
    assert diff.stdout == fix.stdout and "--diff is deprecated; use --fix" in diff.stderr
    pp = cli("check", str(root), "--pipeline-parallel", "2", "--output-format", "json")
    assert "--pipeline-parallel is deprecated" in pp.stderr and pp.returncode in (0, 1)
    assert cli("check", str(root), "--pipeline-parallel", "2", "-pp", "4").returncode == 2


# -- 8. # noqa ----------------------------------------------------------------------------------------------------
def test_noqa_is_answered_by_egl100(tmp_path: Path) -> None:
    """``# noqa: EGL005`` on the line of EGL005 does not silence it (ruff --fix would delete the unknown code):
    EGL100 says to write ``# eagle3-lint: ignore[EGL005]``, and its fix rewrites the comment into that."""
    root = sample("slice-relative-aux-index/v016_islice", tmp_path / "t")
    llama = root / "vllm/model_executor/models/llama.py"
    lines = llama.read_text().splitlines(keepends=True)
    lines[19] = lines[19].rstrip("\n") + "  # noqa: EGL005\n"
    llama.write_text("".join(lines))
    _, rep = cli_json("check", str(root), "--output-format", "json", "--no-cache")
    rules = [(f["rule"], f["line"]) for f in rep["findings"] if f["path"].endswith("llama.py")]
    assert ("EGL005", 20) in rules and ("EGL100", 20) in rules, rules
    egl100 = next(f for f in rep["findings"] if f["rule"] == "EGL100")
    assert "# eagle3-lint: ignore[EGL005]" in egl100["title"] and egl100["fix"]["applicability"] == "safe"
    edit = egl100["fix"]["edits"][0]
    assert edit["new_text"] == "# eagle3-lint: ignore[EGL005]" and edit["line"] == 20
    fixed = lines[19][: edit["col"]] + edit["new_text"] + lines[19][edit["end_col"]:]
    llama.write_text("".join([*lines[:19], fixed, *lines[20:]]))
    _, after = cli_json("check", str(root), "--output-format", "json", "--no-cache")
    assert not [f for f in after["findings"] if f["path"].endswith("llama.py") and f["line"] == 20]
    assert [s["rule"] for s in after["suppressed"]] == ["EGL005"]


# -- --help: the first screen says what each command answers ------------------------------------------------------
def test_help_lists_each_command_whole_and_check_says_what_it_answers() -> None:
    """The top-level list gave ``Check TARGET: a site-packages or vllm/ folder, a...`` (click cuts the first
    sentence): each command's summary is now whole, and ``check --help`` opens with the question it answers."""
    top = cli("--help").stdout
    commands = top.split("Commands:", 1)[1]
    assert "..." not in commands and "Will an architecture serve with EAGLE-3 on vLLM or SGLang?" in commands
    assert len(top.splitlines()) <= 24
    head = "\n".join(cli("check", "--help").stdout.splitlines()[:10])
    assert "serve with EAGLE-3" in head and "sglang==X.Y.Z" in head and "exit 1" in head
