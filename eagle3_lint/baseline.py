"""Finding fingerprints, and baseline files built from them.

A fingerprint identifies a finding across edits that only move it: the sha256 of the rule, the
architecture, the qualified symbol (module of the file + the finding's symbol) and the normalized
text of the flagged line (whitespace kept only between two words, any ``# eagle3-lint:`` comment
dropped). No line numbers, no column, no message (messages quote line numbers). Identical fingerprints in one run are
numbered in location order (``<hash>:1``, ``<hash>:2``), as GitHub numbers its own line hashes, so a
second copy of a baselined problem still shows up as new.

A baseline file (``--write-baseline FILE``) records the fingerprints of the current findings; with
``--baseline FILE`` those findings are reported as suppressed (kind ``external``) and only new ones
count. Entries no current finding matches are stale: the problem was fixed or its line changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle3_lint import __version__
from eagle3_lint.errors import UsageError
from eagle3_lint.jsonfile import read_json
from eagle3_lint.model import Finding
from eagle3_lint.source import SourceTree

BASELINE_VERSION = 1
_DIRECTIVE = re.compile(r"#\s*eagle3-lint\s*:.*$")
_WS = re.compile(r"\s+")
_PUNCT_WS = re.compile(r" ?([^\w ]) ?")


def normalized_snippet(line_text: str) -> str:
    """The line without our directive comment, with whitespace kept only between two words, so
    re-indenting or reformatting (``f( a, b )`` vs ``f(a, b)``) keeps the fingerprint."""
    text = _WS.sub(" ", _DIRECTIVE.sub("", line_text)).strip()
    return _PUNCT_WS.sub(r"\1", text)


class SnippetReader:
    """Reads flagged lines from the tree once per file; unreadable files give empty snippets."""

    def __init__(self, read_text: Callable[[str], str]) -> None:
        self._read = read_text
        self._lines: dict[str, list[str]] = {}

    def line(self, path: str, line: int) -> str:
        lines = self._lines.get(path)
        if lines is None:
            try:
                lines = self._read(path).splitlines()
            except (OSError, UnicodeError, LookupError, SyntaxError):
                lines = []
            self._lines[path] = lines
        return lines[line - 1] if 0 < line <= len(lines) else ""


def qualified_symbol(f: Finding) -> str:
    module = SourceTree.path_module(f.location.path)
    return f"{module}:{f.symbol}" if f.symbol else module


def fingerprint_hash(f: Finding, snippet: str) -> str:
    key = "\x1f".join((f.rule, f.architecture or "", qualified_symbol(f), normalized_snippet(snippet)))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def fingerprints(findings: Sequence[Finding], reader: SnippetReader) -> list[str]:
    """One fingerprint per finding, aligned with ``findings``; numbered in location order."""
    hashes = [fingerprint_hash(f, reader.line(f.location.path, f.location.line)) for f in findings]
    seen: dict[str, int] = {}
    out = [""] * len(findings)
    for i in sorted(range(len(findings)), key=lambda i: findings[i].sort_key()):
        seen[hashes[i]] = seen.get(hashes[i], 0) + 1
        out[i] = f"{hashes[i]}:{seen[hashes[i]]}"
    return out


@dataclass
class Baseline:
    path: str
    entries: list[dict[str, Any]] = field(default_factory=list)

    @property
    def fingerprints(self) -> set[str]:
        return {e["fingerprint"] for e in self.entries}


@dataclass
class BaselineStatus:
    """How the current findings compare to a baseline file."""

    path: str
    entries: int
    matched: int
    new: int
    stale: list[dict[str, Any]]
    written: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "written": self.written, "entries": self.entries, "matched": self.matched,
                "new": self.new, "stale": self.stale}


def entry(f: Finding, fp: str, snippet: str) -> dict[str, Any]:
    return {"fingerprint": fp, "rule": f.rule, "architecture": f.architecture, "symbol": qualified_symbol(f),
            "path": f.location.path, "snippet": normalized_snippet(snippet)}


def read(path: str) -> Baseline:
    data = read_json(path, "baseline file", f" (create it with --write-baseline {path})")
    if (not isinstance(data, dict) or data.get("eagle3_lint_baseline") != BASELINE_VERSION
            or not isinstance(data.get("findings"), list)
            or not all(isinstance(e, dict) and isinstance(e.get("fingerprint"), str) for e in data["findings"])):
        raise UsageError(f"{path} is not an eagle3-lint baseline (version {BASELINE_VERSION})")
    return Baseline(path, list(data["findings"]))


def write(path: str, findings: Sequence[Finding], fps: Sequence[str], reader: SnippetReader, vllm_version: str) -> int:
    rows = sorted((entry(f, fp, reader.line(f.location.path, f.location.line))
                   for f, fp in zip(findings, fps, strict=True)),
                  key=lambda e: (e["path"], e["rule"], e["symbol"], e["fingerprint"]))
    doc = {"eagle3_lint_baseline": BASELINE_VERSION, "tool_version": __version__, "vllm_version": vllm_version,
           "findings": rows}
    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, p)
    except OSError as exc:
        raise UsageError(f"cannot write baseline {path}: {exc.strerror or exc}") from None
    return len(rows)


def compare(b: Baseline, fps: Sequence[str]) -> tuple[list[bool], BaselineStatus]:
    """Which of the current fingerprints the baseline holds, and the baseline's stale entries."""
    known = b.fingerprints
    current = set(fps)
    hit = [fp in known for fp in fps]
    stale = [e for e in b.entries if e["fingerprint"] not in current]
    return hit, BaselineStatus(b.path, len(b.entries), sum(hit), len(hit) - sum(hit), stale)


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")
