"""The rule catalog: ``eagle3-lint rules``, ``eagle3-lint explain EGLnnn`` and the ``rules/`` pages.

Everything comes from the rule plugins: META, and the module docstring in ruff's shape (What it
does / Why is this bad? / Example / Fix safety, optionally References). Pages add the rule's
examples from ``sample_trees/`` (the lines carrying ``# expect: EGLnnn`` and the case's
``expected.diff``) when that folder is present, i.e. in a checkout, and ``--write-docs`` writes
one page per rule plus an index. A test regenerates the pages and fails on drift.

Rule pages have one stable address per release, used as SARIF ``helpUri``:
``https://github.com/eagle3-lint/eagle3-lint/blob/v<version>/rules/<ID>.md``; set
``EAGLE3_LINT_DOCS_URL`` (a template with ``{version}`` and ``{id}``) to point at a fork or mirror.
"""

from __future__ import annotations

import inspect
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eagle3_lint import __version__
from eagle3_lint.errors import UsageError
from eagle3_lint.model import Severity
from eagle3_lint.rules import Rule, all_rules

DOCS_URL = "https://github.com/eagle3-lint/eagle3-lint/blob/v{version}/rules/{id}.md"
DOCS_URL_ENV = "EAGLE3_LINT_DOCS_URL"
SECTION_ORDER = ("What it does", "Why is this bad?", "Example", "Fix safety", "References")
REQUIRED_SECTIONS = SECTION_ORDER[:4]
SAMPLES = Path(__file__).resolve().parent.parent / "sample_trees"
MAX_EXAMPLES = 2
MAX_DIFF_LINES = 60
_MARKER = re.compile(r"#\s*expect:\s*(EGL\d{3}(?:\s*,\s*EGL\d{3})*)")

INDEX_INTRO = """\
# Rule catalog

One page per eagle3-lint rule, generated from the rule modules' docstrings and their
`sample_trees/` examples (`eagle3-lint rules` lists them; `eagle3-lint explain EGLnnn` prints a page).
Regenerate after changing a rule or its examples: `eagle3-lint rules --write-docs rules/`.
"""


def help_uri(rule_id: str) -> str:
    template = os.environ.get(DOCS_URL_ENV) or DOCS_URL
    return template.format(version=__version__, id=rule_id)


def find_rule(name: str) -> Rule:
    want = name.strip()
    for r in all_rules():
        if want.upper() == r.meta.id or want.lower() == r.meta.name:
            return r
    raise UsageError(f"unknown rule {name!r} (known: {', '.join(r.meta.id for r in all_rules())})")


def sections(doc: str) -> dict[str, str]:
    """``## Title`` sections of a docstring, in order; headings inside code fences do not count."""
    out: dict[str, str] = {}
    title: str | None = None
    buf: list[str] = []
    fenced = False
    for line in doc.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            if title is not None:
                out[title] = "\n".join(buf).strip("\n")
            title, buf = line[3:].strip(), []
        elif title is not None:
            buf.append(line)
    if title is not None:
        out[title] = "\n".join(buf).strip("\n")
    return out


_SEVERITY_USE = re.compile(r"\bSeverity\.(ERROR|WARNING|NOTE)\b")


def severities(r: Rule) -> tuple[Severity, ...]:
    """Every severity the rule reports with, most severe first: its default, and those its own module
    sets on findings (EGL005 is a warning when latent, EGL009 a note without --target-config).
    Read from the rule's source text, so the list cannot drift from what the reports show."""
    found = {r.meta.severity}
    try:
        text = inspect.getsource(r.module)
    except (OSError, TypeError):
        text = ""
    found.update(Severity[m] for m in _SEVERITY_USE.findall(text))
    if "severity_for(" in text:
        # rules/_interface.severity_for: under --arch, an error that affects no target is a warning.
        found.add(Severity.WARNING)
    return tuple(sorted(found, key=lambda s: -s.rank))


def summary_json(r: Rule) -> dict[str, Any]:
    m = r.meta
    return {"id": m.id, "name": m.name, "severity": m.severity.value,
            "severities": [s.value for s in severities(r)], "fixable": m.fixable, "summary": m.summary,
            "url": help_uri(m.id)}


@dataclass(frozen=True)
class Example:
    case: str  # sample_trees/<group>/<case>, POSIX, relative to the repository
    file: str  # the flagged file, relative to the case's tree root
    line: int
    snippet: str
    first_line: int
    diff: str


def examples(rule_id: str, samples: Path | None = None) -> list[Example]:
    """Every sample-tree case with a ``# expect: <rule_id>`` marker, first marker per case."""
    root = SAMPLES if samples is None else samples
    if not root.is_dir():
        return []
    out: list[Example] = []
    for case in sorted(p.parent for p in root.glob("*/*/case.toml") if not p.parent.parent.name.startswith("_")):
        hit = _first_marker(case, rule_id)
        if hit is None:
            continue
        rel, line, lines = hit
        lo, hi = max(1, line - 3), min(len(lines), line + 3)
        diff_file = case / "expected.diff"
        diff = diff_file.read_text(encoding="utf-8") if diff_file.is_file() else ""
        out.append(Example(f"{root.name}/{case.relative_to(root).as_posix()}", rel, line,
                           "\n".join(lines[lo - 1: hi]), lo, diff))
    return out


def _first_marker(case: Path, rule_id: str) -> tuple[str, int, list[str]] | None:
    for f in sorted(case.rglob("*.py")):
        lines = f.read_text(encoding="utf-8", errors="replace").splitlines()
        for i, text in enumerate(lines, 1):
            m = _MARKER.search(text)
            if m and rule_id in re.split(r"\s*,\s*", m.group(1)):
                return f.relative_to(case).as_posix(), i, lines
    return None


def _clip(diff: str) -> str:
    lines = diff.splitlines()
    if len(lines) <= MAX_DIFF_LINES:
        return diff.rstrip("\n")
    return "\n".join(lines[:MAX_DIFF_LINES] + [f"... ({len(lines) - MAX_DIFF_LINES} more lines)"])


def rule_page(r: Rule, samples: Path | None = None) -> str:
    """The Markdown page of one rule (also what ``explain`` prints)."""
    m = r.meta
    sec = sections(r.doc)
    exs = examples(m.id, samples)
    parts = [f"# {m.id}: {m.name}", "",
             f"**Severity:** {m.severity.value} · **Fixable:** {'yes' if m.fixable else 'no'}", "", m.summary, ""]
    for title in SECTION_ORDER:
        body = sec.get(title, "")
        extra: list[str] = []
        if title == "Example":
            for ex in exs[:MAX_EXAMPLES]:
                extra += [
                    f"### From `{ex.case}`",
                    "",
                    f"`{ex.file}`, line {ex.line} (lines {ex.first_line}-{ex.first_line + ex.snippet.count(chr(10))}):",
                    "",
                    "```python",
                    ex.snippet,
                    "```",
                    "",
                ]
                if ex.diff:
                    extra += [
                        "The fix (`--fix`, from the case's `expected.diff`):",
                        "",
                        "```diff",
                        _clip(ex.diff),
                        "```",
                        "",
                    ]
        if title == "References" and exs:
            extra += ["Test cases exercising this rule:", ""]
            extra += [f"- [`{ex.case}`](../{ex.case}/)" for ex in exs]
            extra.append("")
        if not body and not extra:
            continue
        parts += [f"## {title}", ""]
        if body:
            parts += [body, ""]
        parts += extra
    for title, body in sec.items():  # sections a rule adds beyond the standard ones, after them
        if title not in SECTION_ORDER:
            parts += [f"## {title}", "", body, ""]
    return "\n".join(parts).rstrip("\n") + "\n"


def index_page(rules: tuple[Rule, ...]) -> str:
    rows = ["| id | name | severity | fixable | summary |", "|---|---|---|---|---|"]
    for r in rules:
        m = r.meta
        rows.append(f"| [{m.id}]({m.id}.md) | {m.name} | {m.severity.value} | {'yes' if m.fixable else 'no'} | "
                    f"{m.summary.replace('|', '&#124;')} |")
    return INDEX_INTRO + "\n" + "\n".join(rows) + "\n"


def render_docs(samples: Path | None = None) -> dict[str, str]:
    """File name -> content for the ``rules/`` folder."""
    rules = all_rules()
    out = {"README.md": index_page(rules)}
    for r in rules:
        out[f"{r.meta.id}.md"] = rule_page(r, samples)
    return out


def write_docs(dest: Path, samples: Path | None = None) -> list[str]:
    """Write the pages into ``dest`` and delete pages of rules that no longer exist; returns file names written."""
    docs = render_docs(samples)
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("EGL*.md"):
        if old.name not in docs:
            old.unlink()
    for name, text in docs.items():
        p = dest / name
        if not p.is_file() or p.read_text(encoding="utf-8") != text:
            p.write_text(text, encoding="utf-8")
    return sorted(docs)
