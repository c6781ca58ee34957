"""Whole-report cache: a re-check of an unchanged tree with the same request replays the last report.

A layer over the pipeline, not a second path through it: the report is the last answer of a check, the one that
rests on everything, so it is kept with the tree's other answers (in the tree's folder, ``store.tree_folder``), but
it is looked up before the analysis is opened, and checked against all its inputs at once rather than through
edges, so that a replay stats the tree and reads one file. The key is everything a report is a function of:

- the tool's code fingerprint (``store.fingerprint``);
- the request and the resolved settings, the bytes of every file they name (``--target-config``,
  ``--draft-config``, ``--baseline``), and how the output is rendered (format, destination, and
  for text the console's width, colour system and terminal flag);
- the tree: which ``.py`` files exist under ``vllm/`` and the content hash of every one of them,
  plus the dist-info METADATA the version may come from. Hashes come from the facts store's stat
  memo, so an unchanged tree is only ``stat``-ed, never read.

Any difference is a miss, and a miss runs the whole analysis. Runs that write (``--fix``,
``--write-baseline``), read other trees (``--plugin``) or end in an internal error are never
stored. Entries are checked against their own key and checksum and kept only in a folder this user
owns (``store.trusted_file``); nothing is unpickled. Each tree keeps its ``MAX_PER_TREE`` newest
entries (a sweep over 40 releases must not evict itself), the folder its ``MAX_ENTRIES``.

An entry (``<cache>/trees/<tree>/<key>.report``) is one line of JSON, ``{"key", "stderr", "code", "sha256"}``,
then the report's own bytes (UTF-8, lone surrogates passed through). The checksum covers the raw bytes
(``_checksum``): a second JSON dump of a 1.3 MB report was ~30 ms of a replay.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from eagle3_lint.source import SourceTree
from eagle3_lint.store import FactStore, fingerprint, tree_folder, trusted_file, write_private

MAX_PER_TREE = 8  # distinct requests remembered per tree (a CI job runs a few formats)
MAX_ENTRIES = 256  # and per cache folder, all trees together
_VERSION = 2
SUFFIX = ".report"


@dataclass(frozen=True)
class Replay:
    """What a check printed: the report (stdout or ``--output``), its stderr lines, its exit code."""

    report: str
    stderr: tuple[str, ...]
    code: int


def file_token(path: str | None) -> str:
    """A named input file by content: its sha256, or why it has none (the run then fails the same way)."""
    if not path:
        return "-"
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        return f"unreadable:{type(exc).__name__}"


def tree_id(source: SourceTree) -> str:
    """Which tree (not what is in it): the kind of source, its label, its resolved root, and the prefix its
    paths are shown with (an SGLang checkout named by its top folder shows ``python/sglang/...``)."""
    h = hashlib.sha256(f"{type(source).__name__}\0{source.root_label}\0{source.display_prefix}\0".encode())
    root = getattr(source, "root", None)
    if root is not None:
        h.update(str(Path(root).resolve()).encode())
    return h.hexdigest()


def tree_token(source: SourceTree, store: FactStore) -> str:
    """What is in the tree: every ``.py`` file's name and content hash, and the dist-info METADATA."""
    h = hashlib.sha256(tree_id(source).encode())
    for rel in source.py_files():
        h.update(rel.encode() + b"\0" + (store.digest(rel) or b"-") + b"\0")
    for rel in source.other_files():
        try:
            data = source.read_bytes(rel)
        except OSError:
            data = b"-"
        h.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()


class ReportCache:
    """The tree's report entries. The key hashes every file of the tree, so it is made when first needed: a tree with
    no entry at all (its first check) is looked up without it, and its report is stored under a key made from the
    hashes the check took as it read the files, instead of reading every file once more before the analysis."""

    def __init__(self, cache_dir: Path, parts: Iterable[object], source: SourceTree, store: FactStore) -> None:
        h = hashlib.sha256(f"eagle3-lint-report\0{_VERSION}\0{fingerprint()}\0".encode())
        for p in parts:
            h.update(repr(p).encode() + b"\0")
        self._request = h
        self._source = source
        self._store = store
        self._key: str | None = None
        self.cache_dir = cache_dir
        self.folder = tree_folder(cache_dir, source)
        # With no entry to look up, the key waits for the report: the stats now tell then whether the tree stayed as
        # the check read it (a file edited meanwhile would put the report under its new content's key).
        self._snapshot = store.snapshot() if not self._any_entry() else None

    @property
    def key(self) -> str:
        if self._key is None:
            h = self._request.copy()
            h.update(tree_token(self._source, self._store).encode())
            self._key = h.hexdigest()
        return self._key

    @property
    def path(self) -> Path:
        return self.folder / f"{self.key[:32]}{SUFFIX}"

    def get(self) -> Replay | None:
        if self._snapshot is not None:
            return None  # nothing to replay: the key waits until the report is stored
        if not trusted_file(self.path):
            return None
        try:
            r = decode(self.path.read_bytes(), self.key)
        except OSError:
            r = None
        if r is None:
            self._drop(self.path)  # damaged or foreign: recomputed and rewritten
        return r

    def put(self, r: Replay) -> None:
        key = self.key
        if self._snapshot is not None and not self._store.unchanged(self._snapshot):
            return  # a file changed while the check ran: not stored (the next check runs afresh)
        try:
            write_private(self.path, (encode(key, r),))
            self._trim()
        except (OSError, UnicodeError):
            pass  # a cache that cannot be written only costs time

    def _trim(self) -> None:
        def newest_first(ps: Iterable[Path]) -> list[Path]:
            return sorted(ps, key=lambda p: p.stat().st_mtime_ns, reverse=True)

        mine = newest_first(self.folder.glob("*" + SUFFIX))
        every = newest_first(self.cache_dir.glob(f"trees/*/*{SUFFIX}"))
        for old in {*mine[MAX_PER_TREE:], *every[MAX_ENTRIES:]}:
            self._drop(old)

    def _any_entry(self) -> bool:
        try:
            with os.scandir(self.folder) as it:
                return any(e.name.endswith(SUFFIX) for e in it)
        except OSError:
            return False

    @staticmethod
    def _drop(p: Path) -> None:
        with contextlib.suppress(OSError):
            p.unlink()


def encode(key: str, r: Replay) -> bytes:
    """An entry: its JSON header line, then the report's bytes (see the module docstring)."""
    body = r.report.encode("utf-8", "surrogatepass")
    head = {"key": key, "stderr": list(r.stderr), "code": r.code, "sha256": _checksum(body, list(r.stderr), r.code)}
    return json.dumps(head).encode() + b"\n" + body


def decode(raw: bytes, key: str) -> Replay | None:
    """The replay an entry holds, or None if it is damaged, foreign (another key) or not an entry."""
    try:
        nl = raw.index(b"\n")
        head = json.loads(raw[:nl])
        body = raw[nl + 1:]
        stderr, code = head["stderr"], head["code"]
        ok = (head.get("key") == key and isinstance(code, int) and isinstance(stderr, list)
              and all(isinstance(s, str) for s in stderr) and head.get("sha256") == _checksum(body, stderr, code))
        report = body.decode("utf-8", "surrogatepass") if ok else ""
    except (UnicodeError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return Replay(report, tuple(stderr), code) if ok else None


def _checksum(body: bytes, stderr: list[str], code: int) -> str:
    h = hashlib.sha256(json.dumps([stderr, code]).encode())
    h.update(b"\0" + body)
    return h.hexdigest()
