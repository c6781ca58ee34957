"""Configuration (``[tool.eagle3-lint]`` / ``eagle3-lint.toml``), rule selection and exit codes
(issue 5), through the real CLI on small vLLM-shaped trees."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle3_lint import config
from eagle3_lint.errors import UsageError
from eagle3_lint.model import Severity
from eagle3_lint.rules import all_rules
from tests.cihelp import broken, cli, cli_json, tree

BAD = "BadForCausalLM"


@pytest.fixture()
def bad_tree(tmp_path: Path) -> Path:
    """A tree whose BadForCausalLM fails the EAGLE-3 check (EGL001 when targeted); cwd is tmp_path/work."""
    root = tree(tmp_path / "tree", {"bad": broken(BAD, "OtherForCausalLM")})
    (tmp_path / "work").mkdir()
    return root


def rules_of(rep: dict) -> list[tuple[str, str | None]]:
    return sorted((f["rule"], f["architecture"]) for f in rep["findings"])


def check(root: Path, cwd: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict, str]:
    p, rep = cli_json("check", str(root), "--output-format", "json", "--no-cache", *args, cwd=cwd, env=env)
    return p.returncode, rep, p.stderr


def test_discovery_from_cwd_upward(bad_tree: Path, tmp_path: Path) -> None:
    work = tmp_path / "work" / "sub" / "dir"
    work.mkdir(parents=True)
    code, rep, _ = check(bad_tree, work, "--select", "EGL001")
    assert code == 0 and rep["findings"] == [] and rep["config"] is None
    # A pyproject.toml without our table does not stop the walk.
    (tmp_path / "work" / "sub" / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.ruff]\nline-length = 1\n')
    (tmp_path / "work" / "pyproject.toml").write_text(
        f'[tool.eagle3-lint]\narchitectures = ["{BAD}"]\nselect = ["EGL001"]\n')
    code, rep, _ = check(bad_tree, work)
    assert code == 1 and rules_of(rep) == [("EGL001", BAD)]
    assert rep["config"] == str(tmp_path / "work" / "pyproject.toml")
    # eagle3-lint.toml wins over pyproject.toml in the same folder; it has no [tool] table.
    (tmp_path / "work" / "eagle3-lint.toml").write_text('architectures = ["OtherForCausalLM"]\nselect = ["EGL001"]\n')
    code, rep, _ = check(bad_tree, work)
    assert rules_of(rep) == [("EGL001", "OtherForCausalLM")]
    # --config names a file; --no-config ignores them all; --arch replaces architectures.
    code, rep, _ = check(bad_tree, work, "--config", str(tmp_path / "work" / "pyproject.toml"))
    assert rules_of(rep) == [("EGL001", BAD)]
    code, rep, _ = check(bad_tree, work, "--no-config", "--select", "EGL001")
    assert code == 0 and rep["findings"] == []
    code, rep, _ = check(bad_tree, work, "--arch", BAD)
    assert rules_of(rep) == [("EGL001", BAD)]


@pytest.mark.parametrize("text, message", [
    ('selct = ["EGL001"]', "unknown key 'selct' (did you mean 'select'?)"),
    ('select = ["EGL999"]', "select: unknown rule id or prefix 'EGL999'"),
    ('ignore = ["E5"]', "ignore: unknown rule id or prefix 'E5'"),
    ('extend-select = ["EGL9"]', "extend-select: unknown rule id or prefix 'EGL9'"),
    ('[per-file-ignores]\n"*.py" = ["EGL777"]', "per-file-ignores.*.py: unknown rule id or prefix 'EGL777'"),
    ('[per-arch-ignores]\nBad = "EGL001"', "per-arch-ignores.Bad: expected a list, found \"EGL001\""),
    ('[severity]\nEGL001 = "fatal"', "severity.EGL001 must be one of error, warning, note, not 'fatal'"),
    ('[severity]\nEGL998 = "note"', "severity: unknown rule id or prefix 'EGL998'"),
    ('fail-on = "info"', "fail-on must be one of error, warning, note, not 'info'"),
    ("unsafe-fixes = 1", "unsafe-fixes: expected true or false, found 1"),
    ('architectures = "Bad"', "architectures: expected a list, found \"Bad\""),
    ("select = [", "invalid TOML"),
])
def test_bad_config_is_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    cfg = tmp_path / "eagle3-lint.toml"
    cfg.write_text(text + "\n")
    with pytest.raises(UsageError) as exc:
        config.resolve(cwd=tmp_path)
    assert str(exc.value).startswith(str(cfg)) and message in str(exc.value) and "\n" not in str(exc.value)


def test_bad_config_exits_2_with_one_line(bad_tree: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "work" / "pyproject.toml"
    cfg.write_text('[tool.eagle3-lint]\nselect = ["EGL001"]\nper-arch-ignore = {}\n')
    p = cli("check", str(bad_tree), "--no-cache", cwd=tmp_path / "work")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == (f"eagle3-lint: error: {cfg} [tool.eagle3-lint]: unknown key 'per-arch-ignore' "
                        "(did you mean 'per-arch-ignores'?)\n")


def test_bad_cli_selectors_exit_2(bad_tree: Path, tmp_path: Path) -> None:
    for flag in ("--select", "--ignore", "--extend-select"):
        p = cli("check", str(bad_tree), flag, "EGL001,EGLX", cwd=tmp_path / "work")
        known = ", ".join(r.meta.id for r in all_rules())
        want = f"eagle3-lint: error: {flag}: unknown rule id or prefix 'EGLX' (known: {known})"
        assert p.returncode == 2 and p.stderr.strip() == want
    p = cli("check", str(bad_tree), "--config", str(tmp_path / "missing.toml"), cwd=tmp_path / "work")
    assert p.returncode == 2 and "config file not found" in p.stderr
    p = cli("check", str(bad_tree), "--path-prefix", "vllm/", cwd=tmp_path / "work")
    assert p.returncode == 2 and "--path-prefix expects FROM=TO" in p.stderr


def test_selection_by_prefix_and_specificity(bad_tree: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "work" / "eagle3-lint.toml"
    arch = f'architectures = ["{BAD}"]\n'
    for body, expect in [
        ('select = ["EGL00"]', True),
        ('select = ["EGL1"]', False),
        ('select = ["EGL"]\nignore = ["EGL001"]', False),
        ('select = ["EGL001"]\nignore = ["EGL00"]', True),  # the more specific selector wins
        ('select = ["EGL00"]\nignore = ["EGL00"]', False),  # a tie goes to ignore
        ('select = ["EGL1"]\nextend-select = ["EGL001"]', True),
    ]:
        cfg.write_text(arch + body + "\n")
        code, rep, _ = check(bad_tree, tmp_path / "work")
        assert (("EGL001", BAD) in rules_of(rep)) is expect, body
    # CLI: --select replaces the file's select, --ignore adds to its ignore.
    cfg.write_text(arch + 'select = ["EGL1"]\n')
    assert ("EGL001", BAD) in rules_of(check(bad_tree, tmp_path / "work", "--select", "EGL001")[1])
    cfg.write_text(arch + 'select = ["EGL001"]\n')
    assert rules_of(check(bad_tree, tmp_path / "work", "--ignore", "EGL001")[1]) == []


def test_per_arch_per_file_ignores_and_severity(bad_tree: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "work" / "eagle3-lint.toml"
    head = f'architectures = ["{BAD}", "OtherForCausalLM"]\nselect = ["EGL001"]\n'
    cfg.write_text(head + f'[per-arch-ignores]\n{BAD} = ["EGL00"]\n')
    assert rules_of(check(bad_tree, tmp_path / "work")[1]) == [("EGL001", "OtherForCausalLM")]
    for glob in ("vllm/model_executor/models/bad.py", "bad.py", "**/models/*.py", "vllm/model_executor/", "b?d.py"):
        cfg.write_text(head + f'[per-file-ignores]\n"{glob}" = ["EGL001"]\n')
        assert rules_of(check(bad_tree, tmp_path / "work")[1]) == [], glob
    for glob in ("good.py", "vllm/*.py", "models/bad.py"):
        cfg.write_text(head + f'[per-file-ignores]\n"{glob}" = ["EGL001"]\n')
        assert len(rules_of(check(bad_tree, tmp_path / "work")[1])) == 2, glob
    # With --path-prefix the rewritten path matches too (vendoring repositories write those).
    cfg.write_text(head + '[per-file-ignores]\n"third_party/**/bad.py" = ["EGL001"]\n')
    assert rules_of(check(bad_tree, tmp_path / "work", "--path-prefix", "vllm/=third_party/vllm/")[1]) == []

    # Severity overrides change the reported severity and so the exit code; fail-on from the file,
    # then overridden by --fail-on.
    cfg.write_text(head + '[severity]\nEGL001 = "warning"\n')
    code, rep, _ = check(bad_tree, tmp_path / "work")
    assert code == 0 and {f["severity"] for f in rep["findings"]} == {"warning"}
    assert rep["summary"]["findings"] == {"error": 0, "warning": 2, "note": 0}
    cfg.write_text(head + 'fail-on = "warning"\n[severity]\nEGL001 = "warning"\n')
    assert check(bad_tree, tmp_path / "work")[0] == 1
    assert check(bad_tree, tmp_path / "work", "--fail-on", "error")[0] == 0
    cfg.write_text(head + '[severity]\nEGL = "note"\nEGL001 = "warning"\n')  # the longest key wins
    assert {f["severity"] for f in check(bad_tree, tmp_path / "work")[1]["findings"]} == {"warning"}


def test_exit_codes(bad_tree: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    args = ("--arch", BAD, "--select", "EGL001,EGL100")
    assert check(bad_tree, work, *args)[0] == 1
    assert check(bad_tree, work, *args, "--exit-zero")[0] == 0
    assert check(bad_tree, work, "--select", "EGL001")[0] == 0  # no architecture targeted: nothing flagged
    # --fix without --apply prints the patch and still exits 1 when there are findings.
    (bad_tree / "vllm/model_executor/models/good.py").open("a").write("X = 1  # eagle3-lint: ignore[EGL001]\n")
    p = cli("check", str(bad_tree), "--fix", "--no-cache", *args, cwd=work)
    assert p.returncode == 1 and p.stdout.startswith("--- a/vllm/model_executor/models/good.py"), p.stderr
    # Without --arch EGL001 runs and reports nothing, so the comment is unused: a warning only.
    p = cli("check", str(bad_tree), "--fix", "--no-cache", "--select", "EGL001,EGL100", cwd=work)
    assert p.returncode == 0 and "+X = 1\n" in p.stdout, p.stderr
    # A deselected rule is never called unused: it did not run.
    assert check(bad_tree, work, "--select", "EGL100")[1]["findings"] == []
    # --fail-on: warnings fail at warning and note, not at error.
    for level, want in (("error", 0), ("warning", 1), ("note", 1)):
        assert check(bad_tree, work, "--select", "EGL001,EGL100", "--fail-on", level)[0] == want, level
    # Usage errors and unreadable targets: 2.
    assert cli("check", str(bad_tree), "--apply", cwd=work).returncode == 2
    assert cli("check", str(tmp_path / "nope"), cwd=work).returncode == 2
    p = cli("check", str(bad_tree), "--arch", "BadForCausalLMX", cwd=work)
    assert p.returncode == 2 and "did you mean BadForCausalLM" in p.stderr


def test_unsafe_fixes_and_baseline_keys_resolve(tmp_path: Path) -> None:
    cfg = tmp_path / "proj" / "eagle3-lint.toml"
    cfg.parent.mkdir()
    cfg.write_text('unsafe-fixes = true\nbaseline = "ci/baseline.json"\nfail-on = "note"\n')
    s = config.resolve(cwd=tmp_path / "proj")
    assert (s.unsafe_fixes is True and s.baseline == str(tmp_path / "proj" / "ci" / "baseline.json")
            and s.fail_on == "note")
    s = config.resolve(cwd=tmp_path / "proj", unsafe_fixes=False, baseline="other.json", fail_on="error")
    assert s.unsafe_fixes is False and s.baseline == "other.json" and s.fail_on == "error"
    with pytest.raises(UsageError, match="mutually exclusive"):
        config.resolve(config=str(cfg), no_config=True)


def test_rule_ids_come_from_the_plugins() -> None:
    ids = config.rule_ids()
    assert ids == tuple(r.meta.id for r in all_rules()) and "EGL100" in ids
    assert config.check_selectors(["egl00", "ALL", " EGL100 "], "x", ids) == ("EGL00", "ALL", "EGL100")


def _blocks(text: str, lang: str) -> list[str]:
    import re

    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def _check_action_workflow(workflow: dict) -> None:
    """A workflow using the composite action pins this release and passes only inputs action.yml declares."""
    import yaml

    from tests.cihelp import REPO

    action = yaml.safe_load((REPO / "action.yml").read_text())
    uses = [st for st in workflow["jobs"]["eagle3-lint"]["steps"] if st.get("uses", "").startswith("eagle3-lint/")]
    assert uses, workflow
    for st in uses:
        assert st["uses"] == f"eagle3-lint/eagle3-lint@v{__import__('eagle3_lint').__version__}"
        assert set(st.get("with", {})) <= set(action["inputs"])


def test_readme_examples_are_valid(tmp_path: Path) -> None:
    """The configuration examples load (docs/configuration.md, and the README's), the workflows use the action's
    real inputs and commands (docs/ci.md, and the README's), and the local pre-commit hook matches the manifest."""
    import yaml

    from tests.cihelp import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    docs_config = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    docs_ci = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    (toml_block,) = _blocks(docs_config, "toml")
    (tmp_path / "pyproject.toml").write_text(toml_block)
    s = config.resolve(cwd=tmp_path)
    assert s.archs == ("Qwen3ForCausalLM", "MyModelForCausalLM") and s.severity_for("EGL005") is Severity.WARNING
    assert not s.selection.enabled("EGL006") and s.selection.enabled("EGL001")
    assert s.baseline == str(tmp_path / "ci" / "eagle3-lint-baseline.json")
    (readme_toml,) = _blocks(readme, "toml")
    (tmp_path / "pyproject.toml").write_text(readme_toml)
    assert config.resolve(cwd=tmp_path).archs == ("MyModelForCausalLM",)

    version = __import__("eagle3_lint").__version__
    (manifest,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    for text in (readme, docs_ci):
        blocks = [yaml.safe_load(b) for b in _blocks(text, "yaml")]
        hooks = [b for b in blocks if "repos" in b]
        workflows = [b for b in blocks if "jobs" in b]
        # The composite action (action.yml) ...
        (action_flow,) = [w for w in workflows if any(st.get("uses", "").startswith("eagle3-lint/eagle3-lint@")
                                                      for st in w["jobs"]["eagle3-lint"]["steps"])]
        _check_action_workflow(action_flow)
        published = next(h for h in hooks if h["repos"][0]["repo"].startswith("https://"))["repos"][0]
        assert published["rev"] == f"v{version}" and published["hooks"][0]["id"] == manifest["id"]
    # ... and, in docs/ci.md, the same steps by hand and the hook declared locally.
    blocks = [yaml.safe_load(b) for b in _blocks(docs_ci, "yaml")]
    by_hand = [w["jobs"]["eagle3-lint"]["steps"] for w in blocks if "jobs" in w]
    (steps,) = [s for s in by_hand if not any(st.get("uses", "").startswith("eagle3-lint/") for st in s)]
    assert any(st.get("uses", "").startswith("github/codeql-action/upload-sarif@") for st in steps)
    commands = {"eagle3-lint check --output-format github",
                "eagle3-lint check --output-format sarif --output eagle3-lint.sarif --exit-zero"}
    assert commands <= {st.get("run") for st in steps}
    local = next(h for h in blocks if "repos" in h and h["repos"][0]["repo"] == "local")["repos"][0]["hooks"][0]
    for key in ("id", "entry", "pass_filenames", "require_serial", "files"):
        assert local[key] == manifest[key], key


def test_ci_runs_the_readme_test_command() -> None:
    """``.ci/run`` runs the README's test command (Set-up, second code block) verbatim: ruff, mypy and vulture
    before the tests (issue 15)."""
    import re

    from tests.cihelp import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    setup = readme.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)\n```", setup, flags=re.S)
    command = blocks[1].strip()
    assert "ruff check ." in command and "mypy eagle3_lint tests" in command and "pytest" in command
    assert "vulture eagle3_lint vulture_whitelist.py" in command
    assert all(command.index(tool) < command.index("pytest") for tool in ("ruff", "mypy", "vulture"))
    run = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    marker = run.index("# --- the README's test command, verbatim ---")
    assert run[marker + 1] == command
    assert run[marker + 2:] == []  # nothing after it: its exit status is the job's
    testing = (REPO / "docs" / "testing.md").read_text(encoding="utf-8")
    assert re.findall(r"```bash\n(.*?)\n```", testing, flags=re.S)[0].strip() == command  # the page says the same
