"""A bug of ours inside one rule, one file's fact extraction, one architecture's verdict or one
whole-tree derivation becomes an ``errors[]`` entry and exit 2, while everything else is still
reported; ``--debug`` adds the traceback. Bugs are injected in-process with monkeypatch."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from eagle3_lint import cli, facts
from eagle3_lint import rules as rules_mod
from eagle3_lint.engines.vllm import contract as contract_mod
from eagle3_lint.engines.vllm import runner as runner_mod
from eagle3_lint.model import Finding, Severity
from eagle3_lint.rules import Rule, RuleMeta
from eagle3_lint.verdict import Judge
from tests.hostile import small_tree

PLAIN = "vllm/model_executor/models/plain.py"


def broken_rule() -> Rule:
    def check(sm: object) -> Iterator[Finding]:
        raise ValueError("boom in a rule")
        yield  # pragma: no cover - makes this a generator like real rules

    r = Rule.__new__(Rule)
    r.module = None  # type: ignore[assignment]
    r.meta = RuleMeta("EGL998", "broken-for-tests", Severity.ERROR, False, "always raises")
    r.doc = ""
    r._check = check  # noqa: SLF001
    r._fix = None  # noqa: SLF001
    return r


def run(root: Path, *extra: str) -> tuple[Result, dict]:
    res = CliRunner().invoke(cli.main, ["check", str(root), "--output-format", "json", "--no-cache",
                                        "--arch", "PlainForCausalLM", "--all", *extra])  # every row
    return res, json.loads(res.stdout)


def error_lines(res: Result) -> list[str]:
    return [ln for ln in res.stderr.splitlines() if ln.strip()]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return small_tree(tmp_path / "t")


def baseline(root: Path) -> dict:
    res, rep = run(root)
    assert res.exit_code == 1 and rep["errors"] == [] and rep["findings"], res.output
    return rep


def test_broken_rule(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    want = baseline(tree)
    real = rules_mod.all_rules()
    monkeypatch.setattr(rules_mod, "all_rules", lambda: (*real, broken_rule()))
    res, rep = run(tree)
    assert res.exit_code == 2
    assert [e["where"] for e in rep["errors"]] == ["rule EGL998"]
    assert "ValueError: boom in a rule" in rep["errors"][0]["message"]
    # Every other rule's findings are still there.
    assert [f["rule"] for f in rep["findings"]] == [f["rule"] for f in want["findings"]]
    assert error_lines(res) == ["eagle3-lint: internal error in rule EGL998: ValueError: boom in a rule"]
    assert "Traceback" not in res.stderr
    res, _ = run(tree, "--debug")
    assert "Traceback" in res.stderr and "boom in a rule" in res.stderr


def test_internal_error_is_never_replayed(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = rules_mod.all_rules()
    monkeypatch.setattr(rules_mod, "all_rules", lambda: (*real, broken_rule()))
    cache = tmp_path / "cache"
    args = ["check", str(tree), "--output-format", "json", "--cache-dir", str(cache), "--arch", "PlainForCausalLM"]
    assert CliRunner().invoke(cli.main, args).exit_code == 2
    assert not list(cache.glob("trees/*/*.report"))  # no entry
    monkeypatch.setattr(rules_mod, "all_rules", lambda: real)  # the bug is fixed: the run is clean again
    res = CliRunner().invoke(cli.main, args)
    assert res.exit_code == 1 and json.loads(res.stdout)["errors"] == []


def test_exception_in_one_files_fact_extraction(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = facts._Extractor.run  # noqa: SLF001

    def flaky(self: facts._Extractor, tree_: ast.Module) -> facts.ModuleFacts:  # noqa: SLF001
        if self.path == PLAIN:
            raise KeyError("boom in facts")
        return real(self, tree_)

    monkeypatch.setattr(facts._Extractor, "run", flaky)  # noqa: SLF001
    res, rep = run(tree)
    assert res.exit_code == 2
    assert [e["where"] for e in rep["errors"]] == [f"facts {PLAIN}"]
    assert "boom in facts" in rep["errors"][0]["message"]
    arch = {a["name"]: a for a in rep["architectures"]}
    assert arch["GoodForCausalLM"]["status"] == "supported"
    assert arch["PlainForCausalLM"]["status"] == "unknown"
    # Not blamed on the file: no EGL000 "unparsable" finding for a bug of ours.
    assert not [f for f in rep["findings"] if f["rule"] == "EGL000"]
    res, _ = run(tree, "--debug")
    assert "Traceback" in res.stderr and "flaky" in res.stderr


def test_exception_in_one_architectures_verdict(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = Judge.verdict

    def flaky(self: Judge, entry: object, *a: object, **k: object) -> object:
        if getattr(entry, "arch", "") == "PlainForCausalLM":
            raise AttributeError("boom in a verdict")
        return real(self, entry, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(Judge, "verdict", flaky)
    res, rep = run(tree)
    assert res.exit_code == 2
    assert rep["errors"][0]["where"] == "verdict PlainForCausalLM"
    arch = {a["name"]: a for a in rep["architectures"]}
    assert arch["GoodForCausalLM"]["status"] == "supported"
    assert arch["PlainForCausalLM"]["status"] == "unknown"
    assert "internal error" in arch["PlainForCausalLM"]["reason"]
    assert error_lines(res)[0].startswith("eagle3-lint: internal error in verdict PlainForCausalLM:")


@pytest.mark.parametrize("where", ["contract", "runner"])
def test_exception_in_a_whole_tree_derivation(where: str, tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*a: object, **k: object) -> object:
        raise RuntimeError(f"boom in {where}")

    monkeypatch.setattr(contract_mod if where == "contract" else runner_mod, "derive", boom)
    res, rep = run(tree)
    assert res.exit_code == 2 and "Traceback" not in res.stderr
    assert where in [e["where"] for e in rep["errors"]]
    assert {a["name"] for a in rep["architectures"]} == {"GoodForCausalLM", "PlainForCausalLM"}


def test_unexpected_exception_outside_analysis_is_one_line(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The last line of defence in the CLI: anything else is one line, exit 2; --debug shows it."""
    def boom(*a: object, **k: object) -> object:
        raise TypeError("boom in the report")

    monkeypatch.setattr(cli, "_render", boom)
    res = CliRunner().invoke(cli.main, ["check", str(tree), "--output-format", "json", "--no-cache"])
    assert res.exit_code == 2
    lines = error_lines(res)
    assert len(lines) == 1 and lines[0].startswith("eagle3-lint: error: internal error: TypeError: boom in the report")
    res = CliRunner().invoke(cli.main, ["check", str(tree), "--output-format", "json", "--no-cache", "--debug"])
    assert res.exit_code == 2 and "Traceback" in res.stderr


def test_internal_error_with_fix_is_reported_on_stderr(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = rules_mod.all_rules()
    monkeypatch.setattr(rules_mod, "all_rules", lambda: (*real, broken_rule()))
    res = CliRunner().invoke(cli.main, ["check", str(tree), "--fix", "--no-cache", "--arch", "PlainForCausalLM"])
    assert res.exit_code == 2
    assert "eagle3-lint: internal error in rule EGL998: ValueError: boom in a rule" in error_lines(res)
