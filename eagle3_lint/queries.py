"""Results of the semantic model, kept between runs with the files each one read (incremental re-checks).

Every memoised answer of an analysis (a class's MRO, its delegations, its check against the contract, an
architecture's verdict, a rule's contribution for one architecture or one file, a fix) is computed through
``Queries.get`` under a key. While it is computed, ``deps.recording`` notes what it read of the tree; an
answer found in the memo adds what *it* read to whoever asked, so every answer knows every file it rests on,
however it was reached. This is the query model of salsa and rust-analyzer, on files rather than on
fine-grained inputs.

The answers marked ``persist`` are saved with the check (``save``). The next check of the same tree loads
them (``load``) and reuses each one whose files all kept their content hash, and recomputes the others. The
whole table is dropped, and everything recomputed, when anything the answers rest on without reading it
changes:

- the tool (its code fingerprint), the engine, the release, the request's options;
- what the engine derived before the first answer (registry, contract, runner path, gates): the files that
  derivation read are the table's *global* atoms;
- a check that ended with an internal error is not saved.

A file the tree gains or loses changes the module it would define and the listing of the tree, so answers
that looked a module up (even one that was missing) or listed the tree are recomputed.

``tests/test_cache_incremental.py`` and ``tests/test_incremental_mutations.py`` are the differential
tests of this: after edits of every kind, a check that reuses answers prints byte for byte what a check
without any cache prints.
"""

from __future__ import annotations

import contextlib
import hashlib
import pickle
from collections.abc import Callable, Hashable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from eagle3_lint import deps
from eagle3_lint.store import fingerprint, no_gc, trusted_file, write_private

if TYPE_CHECKING:
    from eagle3_lint.source import SourceTree
    from eagle3_lint.store import FactStore

T = TypeVar("T")

_VERSION = 1
_MISSING: Any = object()
# Answers common enough that recognising their bytes beats unpickling them (a fresh list each time: values are
# not shared between answers).
_CONSTANTS: dict[bytes, Any] = {pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL): v for v in (None, True, False, ())}
_EMPTY_LIST = pickle.dumps([], protocol=pickle.HIGHEST_PROTOCOL)


class _Entry:
    """One answer: its value, what it read (atom names, or their ids in the table for an answer of the previous
    run, turned into names only when someone records), and its pickled value once it has one."""

    __slots__ = ("_atoms", "blob", "ids", "names", "persist", "value")

    def __init__(self, value: Any, atoms: frozenset[str] | None, ids: tuple[int, ...] | None, names: list[str],
                 blob: bytes | None, persist: bool) -> None:
        self.value = value
        self._atoms = atoms
        self.ids = ids
        self.names = names
        self.blob = blob
        self.persist = persist

    @property
    def atoms(self) -> frozenset[str]:
        if self._atoms is None:
            self._atoms = frozenset(self.names[i] for i in self.ids or ())
        return self._atoms


# Answers no check asked for this many checks in a row are dropped (fixes of findings that went away).
MAX_AGE = 8


class Queries:
    """The memo of one analysis, seeded with the answers of the previous one that are still valid.

    Values are shared, never copied: whoever gets one must not change it (it is pickled when the check ends).
    """

    def __init__(self, previous: dict[Hashable, tuple[tuple[int, ...], bytes, int]] | None = None,
                 names: list[str] | None = None, changed: Iterable[int] = ()) -> None:
        self._run: dict[Hashable, _Entry] = {}
        self._prev = previous or {}
        self.names = names if names is not None else []
        self._changed = frozenset(changed)
        self._busy: set[Hashable] = set()
        self.reused = 0
        self.computed = 0

    @property
    def seeded(self) -> bool:
        """Whether answers of a previous check may be reused (facts then load only when read)."""
        return bool(self._prev)

    def note_answer(self, key: Hashable) -> None:
        """Add what the answer under ``key`` read to the computation running now (ctx.verdicts reads)."""
        e = self._run.get(key)
        if e is not None and deps.frame is not None:
            deps.frame.update(e.atoms)

    def hit(self, key: Hashable) -> Any:
        """This run's answer under ``key`` (noting what it read), or None if there is none yet."""
        e = self._run.get(key)
        if e is None:
            return None
        if deps.frame is not None:
            deps.frame.update(e.atoms)
        return e.value

    def has(self, key: Hashable) -> bool:
        """Whether this run has the answer already (the previous run's do not count)."""
        return key in self._run

    def get(self, key: Hashable, compute: Callable[[], T], *, persist: bool = False, cycle: Any = _MISSING) -> T:
        """The answer under ``key``: this run's, a still-valid one of the previous run's (``persist`` only), or
        ``compute()``. ``cycle`` is what a computation that asks for its own key gets (the MRO's guard)."""
        e = self._run.get(key)
        if e is not None:
            if deps.frame is not None:
                deps.frame.update(e.atoms)
            return e.value
        if key in self._busy:
            if cycle is _MISSING:
                raise RecursionError(f"query {key!r} asks for itself")
            return cycle
        if persist and self._prev:
            old = self._prev.pop(key, None)
            if old is not None and self._changed.isdisjoint(old[0]):
                blob = old[1]
                if blob in _CONSTANTS:
                    value = _CONSTANTS[blob]  # most answers are "nothing here": no unpickling for those
                elif blob == _EMPTY_LIST:
                    value = []
                else:
                    try:
                        value = pickle.loads(blob)
                    except Exception:  # noqa: BLE001 - a damaged answer is recomputed
                        value = _MISSING
                if value is not _MISSING:
                    e = _Entry(value, None, old[0], self.names, old[1], True)
                    self._run[key] = e
                    if deps.frame is not None:
                        deps.frame.update(e.atoms)
                    self.reused += 1
                    return value
        self._busy.add(key)
        try:
            with deps.recording() as got:
                value = compute()
        finally:
            self._busy.discard(key)
        self._run[key] = _Entry(value, frozenset(got), None, self.names, None, persist)
        self.computed += 1
        return value

    def kept(self, ids: Callable[[frozenset[str]], tuple[int, ...]]
             ) -> Iterator[tuple[Hashable, tuple[tuple[int, ...], bytes, int]]]:
        """The answers to save, as table entries: this run's persisted ones (pickled now, unless reused), then the
        previous run's that nobody asked for and that are still valid, one check older."""
        for key, e in self._run.items():
            if not e.persist:
                continue
            blob = e.blob
            if blob is None:
                try:
                    blob = pickle.dumps(e.value, protocol=pickle.HIGHEST_PROTOCOL)
                except Exception:  # noqa: BLE001 - an answer that cannot be pickled is recomputed next time
                    continue
            yield key, (e.ids if e.ids is not None else ids(e.atoms), blob, 0)
        for key, (old_ids, blob, age) in self._prev.items():
            if age < MAX_AGE and self._changed.isdisjoint(old_ids):
                yield key, (old_ids, blob, age + 1)


# -- the table on disk ---------------------------------------------------------------------------------
MAX_PER_TREE = 4  # tables kept per tree (one per set of options: a hook's, a CI job's, a --arch run's)


def table_path(cache_dir: Path, source: SourceTree, head: str) -> Path:
    tag = hashlib.sha256(source.root_label.encode()).hexdigest()[:16]
    return cache_dir / "queries" / f"{tag}-{head[:16]}.pickle"


def _trim(p: Path) -> None:
    tree = p.name.split("-", 1)[0]
    try:
        mine = sorted(p.parent.glob(f"{tree}-*.pickle"), key=lambda q: q.stat().st_mtime_ns, reverse=True)
        for old in mine[MAX_PER_TREE:]:
            old.unlink()
    except OSError:
        pass


def header(source: SourceTree, engine: str, version: str, options: tuple[object, ...]) -> str:
    """Everything the answers rest on without reading it from the tree (see the module docstring)."""
    h = hashlib.sha256(f"eagle3-lint-queries\0{_VERSION}\0{fingerprint()}\0{source.root_label}\0{engine}\0"
                       f"{version}\0".encode())
    h.update(repr(options).encode())
    return h.hexdigest()


def file_digests(source: SourceTree, store: FactStore) -> dict[str, bytes | None]:
    return {rel: store.digest(rel) for rel in source.py_files()}


def changed_atoms(source: SourceTree, old: dict[str, bytes | None], new: dict[str, bytes | None]) -> set[str]:
    """The atoms an edit from ``old`` to ``new`` (file -> content hash) invalidates."""
    out: set[str] = set()
    for rel in old.keys() | new.keys():
        if old.get(rel) != new.get(rel) or new.get(rel) is None:
            out.add(rel)
            out.add(source.path_module(rel))
    if old.keys() != new.keys():
        out.add(deps.LISTING)
    return out


def load(cache_dir: Path | None, source: SourceTree, head: str,
         files: dict[str, bytes | None]) -> tuple[Queries, set[str]]:
    """The previous check's answers that may be reused, and the atoms changed since (empty without a table)."""
    if cache_dir is None:
        return Queries(), set()
    p = table_path(cache_dir, source, head)
    if not trusted_file(p):
        return Queries(), set()  # unpickling runs code: only a table this user wrote
    try:
        with no_gc():
            body = pickle.loads(p.read_bytes())
        if not isinstance(body, dict) or body.get("header") != head:
            return Queries(), set()
        names: list[str] = body["names"]
        changed = changed_atoms(source, body["files"], files)
        if any(names[i] in changed for i in body["global"]):
            return Queries(), changed  # the registry, contract, runner or gates may differ: start afresh
        ids = [i for i, n in enumerate(names) if n in changed]
        return Queries(body["entries"], names, ids), changed
    except Exception:  # noqa: BLE001 - a damaged or foreign table costs a full analysis, nothing else
        return Queries(), set()


def save(cache_dir: Path | None, source: SourceTree, head: str, files: dict[str, bytes | None],
         global_atoms: Iterable[str], queries: Queries | None) -> None:
    """Keep this check's answers for the next one (``queries`` None: drop the table, nothing may be reused)."""
    if cache_dir is None:
        return
    p = table_path(cache_dir, source, head)
    if queries is None:
        with contextlib.suppress(OSError):
            p.unlink()
        return
    # Atom ids only grow: the answers of earlier checks keep theirs, so only new answers are mapped.
    names = queries.names
    index = {n: i for i, n in enumerate(names)}

    def ids(atoms: Iterable[str]) -> tuple[int, ...]:
        out = []
        for a in atoms:
            i = index.get(a)
            if i is None:
                i = index[a] = len(names)
                names.append(a)
            out.append(i)
        return tuple(out)

    with no_gc():
        entries = dict(queries.kept(ids))
        body = {"header": head, "files": files, "global": ids(global_atoms), "names": names, "entries": entries}
        try:
            payload = pickle.dumps(body, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - a key that cannot be pickled: no table, a full analysis next time
            return
    try:
        write_private(p, (payload,))
        _trim(p)
    except OSError:
        pass  # a cache that cannot be written only costs time
