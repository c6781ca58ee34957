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

- the tool (its code fingerprint), the engine, the release, the request's options (the table's key);
- what the engine derived before the first answer (registry, contract, runner path, gates): its value, not
  the files it was read from (``derived_digest``), so an edit that leaves the registry as it was keeps the
  answers; SGLang's registry is read from every model file;
- a check that ended with an internal error is not saved.

A file the tree gains or loses changes the module it would define and the listing of the tree, so answers
that looked a module up (even one that was missing) or listed the tree are recomputed.

What this cannot see, and so must not happen: an answer that depends on the order answers are asked in.
Two guards of the class graph could make one: the MRO's depth limit (an inheritance chain deeper than
``graph._MAX_MRO_DEPTH`` is cut where the walk started) and the guard against circular name resolution. A
no-cache run asks in one fixed order, a re-check in the same order minus what it reuses, so the two agree
unless an edit breaks a cycle of imports or a chain that deep; no released tree has either.

``tests/test_queries.py``, ``tests/test_cache_incremental.py`` and ``tests/test_incremental_mutations.py``
are the tests of this: after edits of every kind, a check that reuses answers prints byte for byte what a
check without any cache prints, and reuses exactly the answers whose files did not change.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from eagle3_lint import deps
from eagle3_lint.store import fingerprint, no_gc, seal, trusted_file, unseal, write_private

if TYPE_CHECKING:
    from eagle3_lint.source import SourceTree
    from eagle3_lint.store import FactStore

T = TypeVar("T")

_VERSION = 2  # 2: sealed files (store.seal)
_MISSING: Any = object()
# Answers common enough that recognising their bytes beats unpickling them (a fresh list each time: values are
# not shared between answers).
_CONSTANTS: dict[bytes, Any] = {pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL): v for v in (None, True, False, ())}
_BLOBS = {v: b for b, v in _CONSTANTS.items()}
_EMPTY_LIST = pickle.dumps([], protocol=pickle.HIGHEST_PROTOCOL)


class _Entry:
    """One answer: its value, what it read (atom names, or their ids in the table for an answer of an earlier
    check, turned into names only when someone records), its pickled value once it has one, and where an
    earlier check's answer was found (``Layer``)."""

    __slots__ = ("_atoms", "blob", "ids", "layer", "names", "persist", "value")

    def __init__(self, value: Any, atoms: frozenset[str] | None, ids: tuple[int, ...] | None, names: list[str],
                 blob: bytes | None, persist: bool, layer: Layer | None = None) -> None:
        self.value = value
        self._atoms = atoms
        self.ids = ids
        self.names = names
        self.blob = blob
        self.persist = persist
        self.layer = layer

    @property
    def atoms(self) -> frozenset[str]:
        if self._atoms is None:
            self._atoms = frozenset(self.names[i] for i in self.ids or ())
        return self._atoms


Entries = dict[Hashable, tuple[tuple[int, ...], bytes]]


class Layer:
    """Answers of earlier checks, all made on one state of the tree, and the atoms changed since that state."""

    def __init__(self, entries: Entries | None = None, changed: Iterable[int] = ()) -> None:
        self.entries: Entries = entries or {}
        self.changed = frozenset(changed)

    def valid(self, ids: tuple[int, ...]) -> bool:
        return self.changed.isdisjoint(ids)


class Queries:
    """The memo of one analysis, seeded with the answers of earlier ones that are still valid.

    Earlier answers come in two layers (``Table``): the table, made on one state of the tree, and the delta
    of the checks since, made on the state of the last check. An answer in the delta supersedes the table's.
    Values are shared, never copied: whoever gets one must not change it (it is pickled when the check ends).
    """

    def __init__(self, table: Layer | None = None, delta: Layer | None = None,
                 names: list[str] | None = None) -> None:
        self._run: dict[Hashable, _Entry] = {}
        self.table = table or Layer()
        self.delta = delta or Layer()
        self.names = names if names is not None else []
        self._busy: set[Hashable] = set()
        self.reused = 0
        self.computed = 0
        # Whether answers of earlier checks may be reused (facts then load only when read); fixed at the start,
        # as answers are taken out of the layers when they are reused.
        self.seeded = bool(self.table.entries or self.delta.entries)

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
        """Whether this run has the answer already (earlier checks' do not count)."""
        return key in self._run

    def _earlier(self, key: Hashable) -> _Entry | None:
        """A still-valid answer of an earlier check under ``key``, unpickled (None if there is none)."""
        layer = self.delta
        old = layer.entries.pop(key, None)
        if old is None:
            layer = self.table
            old = layer.entries.pop(key, None)
        else:
            self.table.entries.pop(key, None)  # superseded: the delta's answer was made after it
        if old is None or not layer.valid(old[0]):
            return None
        blob = old[1]
        if blob in _CONSTANTS:
            value = _CONSTANTS[blob]  # most answers are "nothing here": no unpickling for those
        elif blob == _EMPTY_LIST:
            value = []
        else:
            try:
                value = pickle.loads(blob)
            except Exception:  # noqa: BLE001 - a damaged answer is recomputed
                return None
        return _Entry(value, None, old[0], self.names, blob, True, layer)

    def get(self, key: Hashable, compute: Callable[[], T], *, persist: bool = False, cycle: Any = _MISSING) -> T:
        """The answer under ``key``: this run's, a still-valid one of an earlier check (``persist`` only), or
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
        if persist and deps.frame is None:
            # Asked outside any computation (a rule's loop), so no one records what it read: an earlier answer
            # that found nothing is returned as it is, left where it was (it is kept, see ``kept``).
            old = self.delta.entries.get(key)
            layer = self.delta
            if old is None:
                old = self.table.entries.get(key)
                layer = self.table
            if old is not None and layer.valid(old[0]) and (old[1] == _EMPTY_LIST or old[1] in _CONSTANTS):
                self.reused += 1
                nothing: Any = [] if old[1] == _EMPTY_LIST else _CONSTANTS[old[1]]
                return nothing
        if persist:
            e = self._earlier(key)
            if e is not None:
                self._run[key] = e
                if deps.frame is not None:
                    deps.frame.update(e.atoms)
                self.reused += 1
                return e.value
        self._busy.add(key)
        try:
            with deps.recording() as got:
                value = compute()
        finally:
            self._busy.discard(key)
        self._run[key] = _Entry(value, frozenset(got), None, self.names, None, persist)
        self.computed += 1
        return value

    def computed_entries(self, ids: Callable[[frozenset[str]], tuple[int, ...]]) -> Entries:
        """This run's persisted answers that were computed, not reused, as table entries (pickled now)."""
        out: Entries = {}
        for key, e in self._run.items():
            if e.persist and e.layer is None:
                v = e.value
                if v is None or v is True or v is False or (type(v) in (list, tuple) and not v):
                    blob = _EMPTY_LIST if type(v) is list else _BLOBS[v]  # most answers: nothing found
                else:
                    try:
                        blob = pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL)
                    except Exception:  # noqa: BLE001 - an answer that cannot be pickled is recomputed next time
                        continue
                out[key] = (ids(e.atoms), blob)
        return out

    def kept(self, layer: Layer) -> Entries:
        """``layer``'s answers that stay valid: reused by this run, or not asked for and unaffected."""
        out: Entries = {k: v for k, v in layer.entries.items() if layer.valid(v[0])}
        for key, e in self._run.items():
            if e.layer is layer and e.ids is not None and e.blob is not None:
                out[key] = (e.ids, e.blob)
        return out


# -- the table on disk ---------------------------------------------------------------------------------
MAX_PER_TREE = 4  # tables kept per tree (one per set of options: a hook's, a CI job's, a --arch run's)
# A delta folds into its table when it holds more answers than this (or a quarter of the table).
_DELTA_MAX = 2000


def table_path(cache_dir: Path, source: SourceTree, head: str) -> Path:
    tag = hashlib.sha256(source.root_label.encode()).hexdigest()[:16]
    return cache_dir / "queries" / f"{tag}-{head[:16]}.pickle"


def _trim(p: Path) -> None:
    tree = p.name.split("-", 1)[0]
    try:
        mine = sorted(p.parent.glob(f"{tree}-*.pickle"), key=lambda q: q.stat().st_mtime_ns, reverse=True)
        for old in mine[MAX_PER_TREE:]:
            old.unlink()
            old.with_suffix(".delta").unlink(missing_ok=True)
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


def derived_digest(value: object) -> str:
    """A digest of what an engine derived (``engine.Derived``): its ``repr``, which is the same in every process
    for the same value as long as it holds no set (a set's order follows the string hash seed).
    ``tests/test_queries.py`` checks that across hash seeds on both engines' trees; a set creeping in would cost
    reuse (every check would start afresh), never a wrong answer."""
    return hashlib.sha256(repr(value).encode()).hexdigest()


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


class Table:
    """The answers on disk: a table, and a delta of the checks since it was written.

    Each check's answers differ from the last one's in the few it recomputed, so a check writes only the
    answers made since the table (with this check's digests and atom names) to ``<table>.delta``: rewriting the
    whole table (3.5 MB for vLLM 0.33.0) was 45 ms of a 0.5 s one-edit re-check. Answers of the table are
    checked against the files changed since the table was made, those of the delta against the files changed
    since the last check, so neither file has to be rewritten to drop an answer an edit invalidated. The delta
    folds into the table once it holds ``_DELTA_MAX`` answers or a quarter of the table. The delta names the
    table it belongs to (``base``); a delta for another table is ignored, and its answers are recomputed.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.delta_path = path.with_suffix(".delta")
        self.base = ""  # the id of the table on disk, "" when there is none
        self.files: dict[str, bytes | None] = {}  # the digests the table was made on
        self.derived = ""  # derived_digest of the last check's derivations


def _read(p: Path, head: str) -> dict[str, Any] | None:
    if not trusted_file(p):
        return None  # unpickling runs code: only a table this user wrote
    with no_gc():
        body = pickle.loads(unseal(p.read_bytes()))  # a flipped byte inside an answer is caught here
    return body if isinstance(body, dict) and body.get("header") == head else None


def load(cache_dir: Path | None, source: SourceTree, head: str,
         files: dict[str, bytes | None]) -> tuple[Queries, set[str], Table | None]:
    """Earlier checks' answers that may be reused, the atoms changed since the last check, and the table."""
    if cache_dir is None:
        return Queries(), set(), None
    table = Table(table_path(cache_dir, source, head))
    try:
        main = _read(table.path, head)
        if main is None:
            return Queries(), set(), table
        table.base, table.files = main["id"], main["files"]
        last, delta_entries = main, {}
        delta = _read(table.delta_path, head) if table.delta_path.exists() else None
        if delta is not None and delta["base"] == table.base:
            last, delta_entries = delta, delta["entries"]
        names: list[str] = last["names"]
        table.derived = last["derived"]
        changed = changed_atoms(source, last["files"], files)
        since_table = changed if last is main else changed_atoms(source, main["files"], files)
        return (Queries(Layer(main["entries"], (i for i, n in enumerate(names) if n in since_table)),
                        Layer(delta_entries, (i for i, n in enumerate(names) if n in changed)), names),
                changed, table)
    except Exception:  # noqa: BLE001 - a damaged or foreign table costs a full analysis, nothing else
        return Queries(), set(), table


def save(table: Table | None, head: str, files: dict[str, bytes | None], derived: str,
         queries: Queries | None) -> None:
    """Keep this check's answers for the next one (``queries`` None: drop the table, nothing may be reused)."""
    if table is None:
        return
    if queries is None:
        for p in (table.path, table.delta_path):
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
        new = queries.computed_entries(ids)
        if not new and queries.seeded and not queries.delta.changed and not queries.table.changed:
            return  # nothing was recomputed and no file changed: what is on disk is this check's table
        try:
            delta = queries.kept(queries.delta)
            delta.update(new)
            if queries.seeded and table.base and len(delta) <= max(_DELTA_MAX, len(queries.table.entries) // 4):
                body: dict[str, Any] = {"header": head, "base": table.base, "files": files, "derived": derived,
                                        "names": names, "entries": delta}
                target = table.delta_path
            else:
                entries = queries.kept(queries.table)
                entries.update(delta)
                body = {"header": head, "id": os.urandom(16).hex(), "files": files, "derived": derived,
                        "names": names, "entries": entries}
                target = table.path
            payload = pickle.dumps(body, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - a key that cannot be pickled: no table, a full analysis next time
            return
    try:
        write_private(target, seal(payload))
        if target == table.path:
            table.delta_path.unlink(missing_ok=True)
            _trim(table.path)
    except OSError:
        pass  # a cache that cannot be written only costs time
