"""Edits to unified diffs, and atomic in-place application.

Diffs are relative to the tree root with ``a/`` and ``b/`` prefixes, so ``git apply`` and
``patch -p1`` run in the root accept them. Identical edits from several findings (the same import
added twice) are merged; an edit overlapping an earlier one is dropped and counted, never mangled.
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
