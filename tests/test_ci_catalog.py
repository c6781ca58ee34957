"""The rule catalog (issue 5): ``eagle3-lint rules``, ``eagle3-lint explain`` and the generated
``rules/`` pages, which must not drift from the rule modules and their sample trees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagle3_lint import catalog
from eagle3_lint.rules import all_rules
from tests.cihelp import REPO, cli

RULE_IDS = [r.meta.id for r in all_rules()]


def test_rules_json_and_table(tmp_path: Path) -> None:
    p = cli("rules", "--output-format", "json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [r["id"] for r in rows] == RULE_IDS
    for r, rule in zip(rows, all_rules(), strict=True):
        assert r == {"id": rule.meta.id, "name": rule.meta.name, "severity": rule.meta.severity.value,
                     "severities": [s.value for s in catalog.severities(rule)],
                     "fixable": rule.meta.fixable, "summary": rule.meta.summary, "url": catalog.help_uri(rule.meta.id)}
        assert r["severities"][0] == r["severity"] or rule.meta.severity.value in r["severities"]
        assert r["url"] == f"https://github.com/eagle3-lint/eagle3-lint/blob/v{__import__('eagle3_lint').__version__}/rules/{r['id']}.md"
    table = cli("rules", cwd=tmp_path, env={"COLUMNS": "200"}).stdout
    for rule in all_rules():
        assert rule.meta.id in table and rule.meta.name in table
    p = cli("rules", "--output-format", "json", cwd=tmp_path, env={"EAGLE3_LINT_DOCS_URL": "https://docs.example/{version}/{id}"})
    assert json.loads(p.stdout)[0]["url"].startswith("https://docs.example/")


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.meta.id)
def test_every_rule_is_documented(rule: object) -> None:
    """Each rule module's docstring has the sections its page and `explain` are made of."""
    secs = catalog.sections(rule.doc)  # type: ignore[attr-defined]
    missing = [s for s in catalog.REQUIRED_SECTIONS if not secs.get(s, "").strip()]
    assert not missing, f"{rule.meta.id} docstring lacks: {missing}"  # type: ignore[attr-defined]


def test_explain(tmp_path: Path) -> None:
    p = cli("explain", "EGL001", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    heads = [ln for ln in p.stdout.splitlines() if ln.startswith("## ")]
    assert heads[:4] == ["## What it does", "## Why is this bad?", "## Example", "## Fix safety"]
    assert p.stdout.startswith("# EGL001: missing-eagle3-interface\n")
    assert p.stdout == catalog.rule_page(catalog.find_rule("EGL001"))
    # By name, any case; the page is the file in rules/.
    assert cli("explain", "unused-suppression", cwd=tmp_path).stdout == (REPO / "rules" / "EGL100.md").read_text()
    assert cli("explain", "egl100", cwd=tmp_path).returncode == 0
    p = cli("explain", "EGL999", cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.startswith("eagle3-lint: error: unknown rule 'EGL999' (known: EGL000")


def test_egl100_page_shows_its_sample_tree() -> None:
    page = (REPO / "rules" / "EGL100.md").read_text()
    assert "### From `sample_trees/workflow/inline_suppression`" in page
    assert "# eagle3-lint: ignore[EGL001]  # expect: EGL100" in page
    assert "```diff\n--- a/vllm/model_executor/models/silenced.py" in page
    assert "## References" in page and "(../sample_trees/workflow/inline_suppression/)" in page


def test_rule_docs_do_not_drift(tmp_path: Path) -> None:
    """rules/ is generated: regenerate into a temporary folder and compare every file."""
    p = cli("rules", "--write-docs", str(tmp_path / "rules"), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    fresh = {f.name: f.read_text() for f in (tmp_path / "rules").iterdir()}
    committed = {f.name: f.read_text() for f in (REPO / "rules").iterdir() if f.suffix == ".md"}
    assert set(fresh) == {"README.md", *(f"{i}.md" for i in RULE_IDS)}
    stale = sorted(n for n in set(fresh) | set(committed) if fresh.get(n) != committed.get(n))
    assert not stale, f"rules/ is out of date ({', '.join(stale)}): run `eagle3-lint rules --write-docs rules/`"


def test_write_docs_removes_pages_of_deleted_rules(tmp_path: Path) -> None:
    (tmp_path / "EGL999.md").write_text("old")
    (tmp_path / "notes.txt").write_text("keep")
    names = catalog.write_docs(tmp_path)
    assert not (tmp_path / "EGL999.md").exists() and (tmp_path / "notes.txt").exists()
    assert names == sorted(["README.md", *(f"{i}.md" for i in RULE_IDS)])
    index = (tmp_path / "README.md").read_text()
    assert all(f"[{i}]({i}.md)" in index for i in RULE_IDS)
