"""Edits to unified diffs, and atomic in-place application.

Diffs are relative to the tree root with ``a/`` and ``b/`` prefixes, so ``git apply`` and
``patch -p1`` run in the root accept them. Identical edits from several findings (the same import
added twice) are merged. A fix is whole or not at all: one whose edits overlap a fix already planned is
held back entire (``Plan.overlaps`` names both, the CLI says so), never applied in part and never mangled.
``apply`` writes a file only if its bytes still hash to what the analysis read, through a temp
file and ``os.replace`` with the original mode kept.
"""

from __future__ import annotations

import codecs
import contextlib
import difflib
import hashlib
import io
import os
import stat
import tempfile
import tokenize
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
    files: dict[str, tuple[str, str, str]] = field(default_factory=dict)  # path -> (old, new, sha of bytes read)
    # (the finding whose fix was held back, the finding whose planned fix it overlaps: itself when its own edits do)
    overlaps: list[tuple[Finding, Finding]] = field(default_factory=list)


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


_Span = tuple[int, int, str]  # (start offset, end offset, new text)


def _overlap(a: _Span, b: _Span) -> bool:
    """Two different edits that cannot both apply: their ranges share a character, or one inserts strictly inside
    the other's range. Insertions at one point, or at a range's edge, both apply (in the order planned)."""
    if a == b:
        return False
    (s0, e0, _), (s1, e1, _) = a, b
    return max(s0, s1) < min(e0, e1) or (s0 == e0 and s1 < s0 < e1) or (s1 == e1 and s0 < s1 < e0)


class _Text:
    """One file's text, and an edit's (line, col) span in it as offsets: a column past a line's end is its end."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines(keepends=True) or [""]
        self.offs = _offsets(self.lines)
        self.newline = "\r\n" if self.lines[0].endswith("\r\n") else "\n"

    def _pos(self, line: int, col: int) -> int:
        if line - 1 >= len(self.lines):
            return len(self.text)
        return self.offs[line - 1] + min(col, len(self.lines[line - 1].rstrip("\r\n")) if col > 0 else 0)

    def span(self, e: Edit) -> _Span:
        new = e.new_text.replace("\n", self.newline) if self.newline != "\n" else e.new_text
        return (self._pos(e.line, e.col), self._pos(e.end_line, e.end_col), new)

    def apply(self, spans: list[_Span]) -> str:
        out = self.text
        # Stable by start: insertions at one point land in the order they were planned.
        for start, end, new in reversed(sorted(spans, key=lambda s: (s[0], s[1]))):
            out = out[:start] + new + out[end:]
        return out


def apply_edits(text: str, edits: list[Edit]) -> tuple[str, int]:
    """Apply edits; returns the new text and how many were dropped for overlapping one earlier in the list."""
    t = _Text(text)
    kept: list[_Span] = []
    dropped = 0
    for e in edits:
        s = t.span(e)
        if s in kept:
            continue  # the same edit twice (one import for two fixes)
        if any(_overlap(s, k) for k in kept):
            dropped += 1
            continue
        kept.append(s)
    return t.apply(kept), dropped


def plan(source: SourceTree, findings: Iterable[Finding], unsafe: bool) -> Plan:
    chosen, held = select(findings, unsafe)
    p = Plan(held_back_unsafe=held)
    texts: dict[str, tuple[bytes, _Text]] = {}
    planned: dict[str, list[tuple[_Span, Finding]]] = {}  # path -> the spans of the fixes planned so far
    for f, fx in chosen:
        mine: list[tuple[str, _Span]] = []
        clash: Finding | None = None
        for e in fx.edits:
            if e.path not in texts:
                data = source.read_bytes(e.path)
                texts[e.path] = (data, _Text(decode_source(data)))
            s = texts[e.path][1].span(e)
            if (e.path, s) in mine:
                continue
            if any(p_ == e.path and _overlap(s, o) for p_, o in mine):
                clash = f
            clash = clash or next((g for o, g in planned.get(e.path, ()) if _overlap(s, o)), None)
            mine.append((e.path, s))
        if clash is not None:
            p.overlaps.append((f, clash))
            continue
        p.fixes.append((f, fx))
        for path, s in mine:
            planned.setdefault(path, []).append((s, f))
    for path in sorted(planned):
        data, t = texts[path]
        spans = list(dict.fromkeys(s for s, _f in planned[path]))  # one import that two fixes add, once
        new = t.apply(spans)
        if new != t.text:
            p.files[path] = (t.text, new, hashlib.sha256(data).hexdigest())
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


def _encoding(raw: bytes) -> str:
    """The encoding the file was decoded with (decode_source): BOM, PEP 263 cookie, else UTF-8."""
    if raw.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if b"coding" in raw[:256]:
        return tokenize.detect_encoding(io.BytesIO(raw).readline)[0]
    return "utf-8"


def _write_temp(folder: str, name: str, data: bytes, like: os.stat_result) -> str:
    """A new file in ``folder`` holding ``data``, with the mode (and, as root, the owner) of ``like``."""
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".e3l-tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(like.st_mode))
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            # ``sudo eagle3-lint --apply`` must not hand the user's files over to root.
            with contextlib.suppress(OSError):
                os.chown(tmp, like.st_uid, like.st_gid)
    except BaseException:
        _unlink(tmp)
        raise
    return tmp


def _unlink(path: str | None) -> None:
    if path:
        with contextlib.suppress(OSError):
            os.unlink(path)


def apply(root: Path | None, p: Plan, backup: bool = False) -> list[str]:
    """Write the planned files atomically; returns the paths written.

    Three phases, so a refusal or a full disk leaves the tree as it was: check every file (still the
    bytes the analysis read, inside the tree, writable, encodable), stage every new file (and
    backup) as a temp file beside its target, then rename each into place. A file reached through a
    symlink is written where the link points, if that is inside the tree; the link stays.
    """
    if root is None:
        raise ApplyError("--apply needs a folder target; a wheel cannot be written to")
    root_real = os.path.realpath(root)
    checked: list[tuple[str, str, bytes, bytes]] = []  # (path, real file, bytes read, bytes to write)
    for path, (_old, new, sha) in p.files.items():
        real = os.path.realpath(os.path.join(root, path))
        if os.path.commonpath([root_real, real]) != root_real:
            raise ApplyError(f"{path} resolves outside the tree ({real}); refusing to write through it")
        try:
            raw = Path(real).read_bytes()
        except OSError as exc:
            raise ApplyError(f"cannot read {path}: {exc.strerror or exc}") from None
        if hashlib.sha256(raw).hexdigest() != sha:
            raise ApplyError(f"{path} changed since it was analyzed; re-run eagle3-lint before --apply")
        if not os.access(real, os.W_OK) or not os.access(os.path.dirname(real), os.W_OK):
            raise ApplyError(f"{path} is not writable")
        try:
            enc = _encoding(raw)
            data = new.encode(enc)
        except (UnicodeError, LookupError, SyntaxError) as exc:
            raise ApplyError(f"the fix for {path} cannot be written in the file's encoding: {exc}") from None
        checked.append((path, real, raw, data))
    staged: list[tuple[str, str, str, str | None]] = []  # (path, real file, temp, backup temp)
    try:
        for path, real, raw, data in checked:
            st = os.stat(real)
            folder, name = os.path.split(real)
            tmp = _write_temp(folder, name, data, st)
            staged.append((path, real, tmp, None))
            if backup:
                staged[-1] = (path, real, tmp, _write_temp(folder, name + ".orig", raw, st))
    except OSError as exc:
        for _path, _real, tmp, btmp in staged:
            _unlink(tmp)
            _unlink(btmp)
        raise ApplyError(f"cannot write {path}: {exc.strerror or exc}") from None
    written: list[str] = []
    for i, (path, real, tmp, btmp) in enumerate(staged):
        try:
            if btmp is not None:
                os.replace(btmp, real + ".orig")
            os.replace(tmp, real)
        except OSError as exc:
            for _path, _real, t, b in staged[i:]:
                _unlink(t)
                _unlink(b)
            done = f" ({len(written)} file(s) already fixed: {', '.join(written)})" if written else ""
            raise ApplyError(f"cannot write {path}: {exc.strerror or exc}{done}") from None
        written.append(path)
    return written
