"""Edits to unified diffs, and atomic in-place application.

Diffs are relative to the tree root with ``a/`` and ``b/`` prefixes, so ``git apply`` and
``patch -p1`` run in the root accept them. Identical edits from several findings (the same import
added twice) are merged; an edit overlapping an earlier one is dropped and counted, never mangled.
``apply`` writes a file only if its bytes still hash to what the analysis read, through a temp
file and ``os.replace`` with the original mode kept.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from eagle3_lint.facts import decode_source
from eagle3_lint.model import Applicability, Edit, Finding, Fix
from eagle3_lint.source import SourceTree


class ApplyError(Exception):
    """A fix could not be written (changed file, read-only tree, wheel target)."""


@dataclass
class Plan:
    """The fixes chosen for one run, grouped per file."""

    fixes: list[tuple[Finding, Fix]] = field(default_factory=list)
    held_back_unsafe: int = 0
    conflicts: int = 0
    files: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # path -> (old, new, sha of bytes read)


def select(findings: Iterable[Finding], unsafe: bool) -> tuple[list[tuple[Finding, Fix]], int]:
    chosen: list[tuple[Finding, Fix]] = []
    held = 0
    for f in findings:
        if f.fix is None:
            continue
        if f.fix.applicability is Applicability.UNSAFE and not unsafe:
            held += 1
            continue
        chosen.append((f, f.fix))
    return chosen, held


def _offsets(lines: list[str]) -> list[int]:
    offs = [0]
    for ln in lines:
        offs.append(offs[-1] + len(ln))
    return offs


def apply_edits(text: str, edits: list[Edit]) -> tuple[str, int]:
    """Apply non-overlapping edits; returns the new text and how many edits were dropped as conflicts."""
    lines = text.splitlines(keepends=True)
    if not lines:
        lines = [""]
    offs = _offsets(lines)
    newline = "\r\n" if lines[0].endswith("\r\n") else "\n"

    def pos(line: int, col: int) -> int:
        if line - 1 >= len(lines):
            return len(text)
        return offs[line - 1] + min(col, len(lines[line - 1].rstrip("\r\n")) if col > 0 else 0)

    spans: list[tuple[int, int, str]] = []
    seen: set[tuple[int, int, str]] = set()
    for e in edits:
        start, end = pos(e.line, e.col), pos(e.end_line, e.end_col)
        s = (start, end, e.new_text.replace("\n", newline) if newline != "\n" else e.new_text)
        if s not in seen:
            seen.add(s)
            spans.append(s)
    spans.sort(key=lambda s: (s[0], s[1]))
    kept: list[tuple[int, int, str]] = []
    dropped = 0
    last_end = -1
    for s in spans:
        if s[0] < last_end or (kept and s[0] == kept[-1][0] and s[1] > s[0] and kept[-1][1] > kept[-1][0]):
            dropped += 1
            continue
        kept.append(s)
        last_end = max(last_end, s[1])
    out = text
    for start, end, new in reversed(kept):
        out = out[:start] + new + out[end:]
    return out, dropped


def plan(source: SourceTree, findings: Iterable[Finding], unsafe: bool) -> Plan:
    chosen, held = select(findings, unsafe)
    p = Plan(fixes=chosen, held_back_unsafe=held)
    per_file: dict[str, list[Edit]] = {}
    for _f, fx in chosen:
        for e in fx.edits:
            per_file.setdefault(e.path, []).append(e)
    for path in sorted(per_file):
        data = source.read_bytes(path)
        old = decode_source(data)
        new, dropped = apply_edits(old, per_file[path])
        p.conflicts += dropped
        if new != old:
            p.files[path] = (old, new, hashlib.sha256(data).hexdigest())
    return p


def unified_diff(p: Plan) -> str:
    chunks: list[str] = []
    for path, (old, new, _sha) in p.files.items():
        diff = difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}", n=3,
        )
        for line in diff:
            if not line.endswith("\n"):
                line += "\n\\ No newline at end of file\n"
            chunks.append(line)
    return "".join(chunks)


def apply(root: Path | None, p: Plan, backup: bool = False) -> list[str]:
    """Write the planned files atomically; returns the paths written."""
    if root is None:
        raise ApplyError("--apply needs a folder target; a wheel cannot be written to")
    # Check everything first, so a refusal leaves the tree untouched.
    for path, (_old, _new, sha) in p.files.items():
        full = root / path
        try:
            current = hashlib.sha256(full.read_bytes()).hexdigest()
        except OSError as exc:
            raise ApplyError(f"cannot read {path}: {exc.strerror or exc}") from None
        if current != sha:
            raise ApplyError(f"{path} changed since it was analyzed; re-run eagle3-lint before --apply")
        if not os.access(full, os.W_OK) or not os.access(full.parent, os.W_OK):
            raise ApplyError(f"{path} is not writable")
    written: list[str] = []
    for path, (old, new, _sha) in p.files.items():
        full = root / path
        raw = full.read_bytes()
        bom = raw.startswith(b"\xef\xbb\xbf")
        data = (b"\xef\xbb\xbf" if bom else b"") + new.encode("utf-8")
        mode = stat.S_IMODE(os.stat(full).st_mode)
        if backup:
            Path(str(full) + ".orig").write_bytes(raw)
        fd, tmp = tempfile.mkstemp(dir=full.parent, prefix=f".{full.name}.")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.chmod(tmp, mode)
            os.replace(tmp, full)
        except OSError as exc:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise ApplyError(f"cannot write {path}: {exc.strerror or exc}") from None
        written.append(path)
    return written
