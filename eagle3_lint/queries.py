"""The query framework: every derived answer of a check, its dependencies, its persistence, and early cutoff.

Every memoised answer of an analysis (the engine's whole-tree derivations, ``FactStore.memo``; a class's MRO,
its delegations, its check against the contract; an architecture's verdict; a rule's contribution for one
architecture or one file; a fix; a row of the JSON report) is computed through ``Queries.get`` under a key, or
is a declared query (``query``: the framework keys it by the function and its arguments, so its caller names no
cache). While an answer is computed, the recorder (deps.py; ``Queries`` is one, handed to the tree and the
facts store) notes the atoms it reads itself: files, modules, the tree's listing. Reading another answer notes
an *edge* to it when that answer is kept between runs (``persist``), and otherwise what that answer read.

The kept answers are saved with the check (``save``), in the tree's folder, one table per set of options. The
next check loads them (``load``) and reuses an answer when none of its own atoms changed and every answer it
read has, now, the fingerprint (a hash of the pickle) it had then: still valid itself, or recomputed to an equal
value. That last case is salsa's early cutoff: an edit that leaves an answer as it was stops there, and what
read it is kept. The answers an answer read are checked first, each once; a declared one the framework can
recompute on its own, another is found when its reader is recomputed and asks for it. The table is dropped,
and everything recomputed, when anything the answers rest on without reading it changes:

- the tool (its code fingerprint), the engine, the release, the request's options (the table's key);
- what the engine derived before the first answer (registry, contract, runner path, gates): its value, not
  the files it was read from (``derived_digest``), so an edit that leaves the registry as it was keeps the
  answers; SGLang's registry is read from every model file (the derivations themselves stay: they rest on
  their own files);
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
check without any cache prints; an edit recomputes only the answers that read the edited file and, of
those that read them, the ones whose inputs came out different.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import io
import os
import pickle
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from eagle3_lint import deps
from eagle3_lint.deps import Answers, Frame
from eagle3_lint.store import fingerprint, no_gc, seal, tree_folder, trusted_file, unseal, write_private

if TYPE_CHECKING:
    from eagle3_lint.source import SourceTree
    from eagle3_lint.store import FactStore

T = TypeVar("T")

_VERSION = 4  # 2: sealed files (store.seal); 3: edges between answers, with their fingerprints; 4: own atoms apart
_MISSING: Any = object()
# Answers common enough that recognising their bytes beats unpickling them (a fresh list each time: values are
# not shared between answers).
_CONSTANTS: dict[bytes, Any] = {pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL): v for v in (None, True, False, ())}
_BLOBS = {v: b for b, v in _CONSTANTS.items()}
_EMPTY_LIST = pickle.dumps([], protocol=pickle.HIGHEST_PROTOCOL)
_FP = 8  # bytes of an answer's fingerprint (blake2b of its pickle)
_NO_FP = b"\0" * _FP  # an edge to an answer that could not be kept: never matches, so its reader is recomputed
# Declared queries (``query``): name -> the function, so that an answer one of them made can be recomputed when a
# kept answer that read it is checked (early cutoff without waiting for someone to ask).
_DECLARED: dict[str, Callable[..., Any]] = {}


def fingerprint_of(blob: bytes) -> bytes:
    return hashlib.blake2b(blob, digest_size=_FP).digest()


def blob_of(value: Any) -> bytes | None:
    """An answer's pickle (None when it cannot be pickled: it is then recomputed next time)."""
    if value is None or value is True or value is False or (type(value) in (list, tuple) and not value):
        return _EMPTY_LIST if type(value) is list else _BLOBS[value]  # most answers: nothing found
    try:
        return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - an answer that cannot be pickled is recomputed next time
        return None


def _same(blob: bytes, value: Any) -> bool:
    """Whether the answer pickled in ``blob`` equals ``value``, field for field: their pickles without the memo
    (``Pickler.fast``) agree. Two pickles of equal values differ where one shares an object the other repeats (an
    answer built from answers just unpickled, against the same answer computed in a cold run); ``==`` would not do,
    as a ``Finding`` leaves its title and architectures out of it."""
    try:
        return _flat(pickle.loads(blob)) == _flat(value)
    except Exception:  # noqa: BLE001 - a value that does not pickle this way (one that holds itself) is not the same
        return False


def _flat(value: Any) -> bytes:
    buf = io.BytesIO()
    p = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    p.fast = True  # no memo: a shared object is written out each time it is met, as a repeated one is
    p.dump(value)
    return buf.getvalue()


# An answer as kept on disk: the ids of every atom it rests on, however reached (its own and those of every answer
# it read, transitively), the answers it read, their fingerprints then (``_FP`` bytes each), its pickle, and the ids
# of the atoms it read itself.
Record = tuple[tuple[int, ...], tuple[Hashable, ...], bytes, bytes, tuple[int, ...]]
Entries = dict[Hashable, Record]


class _Entry:
    """One answer of this run: its value (``_MISSING`` until a kept answer is first read: it is unpickled then),
    the atoms it read itself and the answers it read (``edges``), or, for a kept answer, its record; its pickle and
    fingerprint once someone needs them; and the layer a kept answer came from."""

    __slots__ = ("_blob", "_every", "_fp", "atoms", "edges", "layer", "names", "persist", "record", "refreshed",
                 "value")

    def __init__(self, value: Any, atoms: frozenset[str], edges: tuple[Hashable, ...], persist: bool,
                 layer: Layer | None = None, record: Record | None = None, every: frozenset[str] | None = None,
                 names: list[str] | None = None) -> None:
        self.value = value
        self.atoms = atoms
        self.edges = edges
        self.persist = persist
        self.layer = layer
        self.record = record
        self._blob: bytes | None | Any = _MISSING if record is None else record[3]
        self._fp: bytes | None = None
        self._every = every
        self.names = names
        # A kept answer found valid through the answers it read, resting now on atoms its record does not name: kept
        # anew (``_kept``).
        self.refreshed = False

    @property
    def every(self) -> frozenset[str]:
        """Every atom the answer rests on, however reached (a kept one's, named when someone records it)."""
        if self._every is None:
            ids = self.record[0] if self.record is not None else ()
            self._every = frozenset(self.names[i] for i in ids) if self.names is not None else frozenset()
        return self._every

    @property
    def blob(self) -> bytes | None:
        if self._blob is _MISSING:
            self._blob = blob_of(self.value)
        return self._blob

    @property
    def fp(self) -> bytes:
        if self._fp is None:
            b = self.blob
            self._fp = _NO_FP if b is None else fingerprint_of(b)
        return self._fp


class Layer:
    """Answers of earlier checks, all made on one state of the tree, and the atoms changed since that state."""

    def __init__(self, entries: Entries | None = None, changed: Iterable[int] = ()) -> None:
        self.entries: Entries = entries or {}
        self.changed = frozenset(changed)

    def valid(self, ids: tuple[int, ...]) -> bool:
        return self.changed.isdisjoint(ids)


class Queries(Answers):
    """The memo of one analysis and its dependency recorder, seeded with the answers of earlier checks.

    An answer records the atoms it read itself (deps.py) and the answers it read (edges). Reading an answer that
    is kept between runs (``persist``) records an edge to it; reading one that is not records what *it* read, so
    such answers are transparent. An earlier check's answer is reused when none of its own atoms changed and every
    answer it read has, now, the fingerprint it had then: recomputed to an equal value (early cutoff, as in salsa),
    or itself still valid. The answers it read are checked first, each once: kept ones recursively, declared ones
    (``query``) recomputed if they must be, others found in this run already; an answer read that is none of these
    makes its reader be recomputed, which asks for it, so the next reader finds it.

    Earlier answers come in two layers (``Table``): the table, made on one state of the tree, and the delta
    of the checks since, made on the state of the last check. An answer in the delta supersedes the table's.
    Values are shared, never copied: whoever gets one must not change it (it is pickled when the check ends).
    """

    def __init__(self, table: Layer | None = None, delta: Layer | None = None,
                 names: list[str] | None = None) -> None:
        super().__init__()
        self._run: dict[Hashable, _Entry] = {}
        self.table = table or Layer()
        self.delta = delta or Layer()
        self.names = names if names is not None else []
        self._busy: set[Hashable] = set()
        self._checking: set[Hashable] = set()
        # Kept answers found invalid, until recomputed: one recomputed to an equal value keeps the kept pickle.
        self._stale: dict[Hashable, Record] = {}
        self.db: Any = None  # what declared queries are computed on (``bind``)
        self.reused = 0
        self.computed = 0
        self.cutoff = 0  # kept answers found valid through an answer that was recomputed to the same value
        # Whether answers of earlier checks may be reused (facts then load only when read); fixed at the start,
        # as answers are taken out of the layers when they are reused.
        self.seeded = bool(self.table.entries or self.delta.entries)

    # -- recording ---------------------------------------------------------------------------------------
    def watch(self, *readers: Any) -> None:
        """Record what ``readers`` (the tree, the facts store: whatever has a ``recorder`` slot) are asked."""
        for r in readers:
            r.recorder = self

    def bind(self, db: Any) -> None:
        """What declared queries (``query``) take as their first argument when the framework computes one."""
        self.db = db

    def _read(self, key: Hashable, e: _Entry) -> None:
        f = self.frame
        if f is None:
            return
        # An answer read again adds nothing: its reads are in already (a verdict's answers ask the same MROs, checks
        # and delegations thousands of times; merging its atoms again each time was most of this function).
        if e.persist:
            if key in f.edges:
                return
            f.edges[key] = None
        else:
            if key in f.seen:
                return
            f.seen.add(key)
            f.atoms |= e.atoms
            if e.edges:
                f.edges.update(dict.fromkeys(e.edges))
        f.every |= e.every

    def note_answer(self, key: Hashable) -> None:
        """The computation running now read the answer under ``key`` (ctx.verdicts reads, a fix's group)."""
        e = self._run.get(key)
        if e is not None and self.frame is not None:
            self._read(key, e)

    def hit(self, key: Hashable) -> Any:
        """This run's answer under ``key`` (noting the read), or None if there is none yet."""
        e = self._run.get(key)
        if e is None:
            return None
        v = e.value
        if v is _MISSING:
            v = self._unpickle(key, e)
            if v is _MISSING:
                return None
        if self.frame is not None:
            self._read(key, e)
        return v

    def has(self, key: Hashable) -> bool:
        """Whether this run has the answer already (earlier checks' do not count)."""
        return key in self._run

    def was_kept(self, key: Hashable) -> bool:
        """Whether this run's answer under ``key`` is an earlier check's."""
        e = self._run.get(key)
        return e is not None and e.layer is not None

    def drop_kept(self) -> None:
        """Forget the kept answers not used yet (what they rest on without reading it changed: the engine derived
        another registry, contract or runner path); the engine's own answers, already used, stay."""
        self.table.entries.clear()
        self.delta.entries.clear()
        self._stale.clear()
        self.seeded = False

    def valid(self, key: Hashable) -> bool:
        """Whether this run has the answer, or a kept one is still valid (checked now, never computed)."""
        return key in self._run or self._kept(key) is not None

    # -- answers -----------------------------------------------------------------------------------------
    def get(self, key: Hashable, compute: Callable[[], T], *, persist: bool = False, cycle: Any = _MISSING) -> T:
        """The answer under ``key``: this run's, a still-valid one of an earlier check (``persist`` only), or
        ``compute()``. ``cycle`` is what a computation that asks for its own key gets (the MRO's guard)."""
        e = self._run.get(key)
        if e is not None:
            v = e.value
            if v is _MISSING:
                v = self._unpickle(key, e)
            if v is not _MISSING:
                if self.frame is not None:
                    self._read(key, e)
                return v
        if key in self._busy:
            if cycle is _MISSING:
                raise RecursionError(f"query {key!r} asks for itself")
            return cycle
        if persist:
            e = self._kept(key)
            if e is not None:
                v = self._unpickle(key, e)
                if v is not _MISSING:
                    self.reused += 1
                    if self.frame is not None:
                        self._read(key, e)
                    return v
        return self._compute(key, compute, persist)

    def _compute(self, key: Hashable, compute: Callable[[], T], persist: bool) -> T:
        outer = self.frame
        mine = self.frame = Frame()
        self._busy.add(key)
        try:
            value = compute()
        except BaseException:
            if outer is not None:
                outer.absorb(mine)  # whoever catches the error read what the computation read
            raise
        finally:
            self.frame = outer
            self._busy.discard(key)
        atoms = frozenset(mine.atoms)
        e = _Entry(value, atoms, tuple(mine.edges), persist, every=atoms.union(mine.every))
        old = self._stale.pop(key, None) if persist else None
        if old is not None and e.blob is not None and e.blob != old[3] and _same(old[3], value):
            e._blob = old[3]  # equal to the kept answer: its readers, checked against that one's fingerprint, hold
        self._run[key] = e
        self.computed += 1
        if outer is not None:
            self._read(key, e)
        return value

    def put(self, key: Hashable, value: Any, atoms: Iterable[str]) -> None:
        """An answer computed elsewhere (a forked child), resting on ``atoms``: kept like a computed one."""
        self.delta.entries.pop(key, None)  # superseded, whatever it was
        self.table.entries.pop(key, None)
        own = frozenset(atoms)
        self._run[key] = _Entry(value, own, (), True, every=own)
        self.computed += 1

    def _unpickle(self, key: Hashable, e: _Entry) -> Any:
        """A kept answer's value (``_MISSING``, and the answer dropped, if its pickle is damaged)."""
        blob = e.record[3] if e.record is not None else None
        if blob is None:
            return _MISSING
        if blob in _CONSTANTS:
            v = _CONSTANTS[blob]  # most answers are "nothing here": no unpickling for those
        elif blob == _EMPTY_LIST:
            v = []
        else:
            try:
                v = pickle.loads(blob)
            except Exception:  # noqa: BLE001 - a damaged answer is recomputed
                del self._run[key]
                return _MISSING
        e.value = v
        return v

    def _kept(self, key: Hashable) -> _Entry | None:
        """A still-valid answer of an earlier check under ``key``, not yet unpickled (None if there is none).
        Its edges are checked with nothing recording: checking reads nothing on behalf of the asker."""
        layer = self.delta
        rec = layer.entries.pop(key, None)
        if rec is None:
            layer = self.table
            rec = layer.entries.pop(key, None)
        else:
            self.table.entries.pop(key, None)  # superseded: the delta's answer was made after it
        if rec is None:
            return None
        if layer.valid(rec[0]):
            # Nothing it rests on changed, however it was reached: valid as it is (the common case; a C loop).
            e = _Entry(_MISSING, frozenset(), rec[1], True, layer, rec, names=self.names)
            self._run[key] = e
            return e
        if not layer.valid(rec[4]):
            self._stale[key] = rec  # a file it read itself changed
            return None
        # Only what answers it read rested on changed: valid if each of those is, now, what it read then.
        edges, fps = rec[1], rec[2]
        if edges:
            outer, self.frame = self.frame, None
            self._checking.add(key)
            run = self._run
            try:
                for i, d in enumerate(edges):
                    de = run.get(d)  # the common case, inline: most edges go to answers this run has already
                    now = (de._fp or de.fp) if de is not None else self._fp_now(d)
                    if now != fps[i * _FP:(i + 1) * _FP]:
                        self._stale[key] = rec
                        return None
            except RecursionError:
                return None  # a chain deeper than the stack: recompute rather than check
            finally:
                self._checking.discard(key)
                self.frame = outer
        # Valid, but what it rests on, however reached, is now what the answers it read rest on: one of them,
        # recomputed to the same value, may have read other files this time. It is kept anew with those, unless they
        # are all among what its record names already: the record, checked the same way next time, stays as it is
        # (rewriting it was most of saving a one-edit re-check of SGLang: 138 answers, 31,000 edges, none changed).
        names = self.names
        own = frozenset(names[i] for i in rec[4])
        every = set(own)
        for d in edges:
            every |= self._run[d].every
        e = _Entry(_MISSING, own, edges, True, layer, rec, every=frozenset(every), names=names)
        e.refreshed = not every.issubset([names[i] for i in rec[0]])
        self._run[key] = e
        return e

    def _fp_now(self, key: Hashable) -> bytes | None:
        """The fingerprint the answer under ``key`` has in this run, None when it cannot be known without its
        reader being recomputed."""
        e = self._run.get(key)
        if e is not None:
            return e.fp
        if key in self._busy or key in self._checking:
            return None
        e = self._kept(key)
        if e is not None:
            return e.fp
        fn = _declared(key[0]) if type(key) is tuple and key and type(key[0]) is str and self.db is not None else None
        if fn is None:
            return None
        db = self.db
        args = key[1:]  # type: ignore[index]  # a declared query's key: (name, *args)
        try:
            self._compute(key, lambda: fn(db, *args), True)
        except Exception:  # noqa: BLE001 - its reader is recomputed and meets the error where it always did
            return None
        self.cutoff += 1
        return self._run[key].fp

    # -- keeping -------------------------------------------------------------------------------------
    def computed_entries(self, ids: Callable[[Iterable[str]], tuple[int, ...]]) -> Entries:
        """This run's persisted answers that were computed, not reused, as records (pickled now). An edge to an
        answer that cannot be kept (its value does not pickle) is replaced by what that answer read; an answer with
        an edge to one this run does not know (its pickle was damaged) is not kept."""
        out: Entries = {}
        for key, e in self._run.items():
            if e.persist and (e.layer is None or e.refreshed) and e.blob is not None:
                x = self._edges_of(e, 0)
                if x is not None:
                    own, edges = x
                    out[key] = (ids(e.every), tuple(edges), b"".join(edges.values()), e.blob, ids(own))
        return out

    def _edges_of(self, e: _Entry, depth: int) -> tuple[set[str], dict[Hashable, bytes]] | None:
        """``e``'s own atoms and its edges with the fingerprints of their answers, an answer that cannot be kept
        replaced by what it read; None if an answer it read is unknown (or the chain is absurdly deep)."""
        own = set(e.atoms)
        edges: dict[Hashable, bytes] = {}
        for d in e.edges:
            de = self._run.get(d)
            if de is None or depth > 50:
                return None
            if de.blob is not None:
                edges[d] = de.fp
                continue
            sub = self._edges_of(de, depth + 1)
            if sub is None:
                return None
            own |= sub[0]
            edges.update(sub[1])
        return own, edges

    def kept(self, layer: Layer) -> Entries:
        """``layer``'s answers that stay valid: reused by this run, or not asked for and unaffected."""
        out: Entries = {k: v for k, v in layer.entries.items() if layer.valid(v[0])}
        for key, e in self._run.items():
            if e.layer is layer and e.record is not None and not e.refreshed:
                out[key] = e.record
        return out


def _declared(name: str) -> Callable[..., Any] | None:
    """The declared query ``name`` names (``module:qualname``), importing its module if no one has yet: fix
    generation is imported on first use (lazyimport.py), and checking a kept fix may need one of its queries."""
    fn = _DECLARED.get(name)
    module, sep, _ = name.partition(":")
    if fn is None and sep and module.startswith("eagle3_lint."):
        try:
            importlib.import_module(module)
        except ImportError:
            return None
        fn = _DECLARED.get(name)
    return fn


def query(fn: Callable[..., T]) -> Callable[..., T]:
    """Declare ``fn(db, *args)`` a query whose answers are kept between runs: the framework keys each answer by the
    function's name and ``args`` (hashable and picklable), records what it reads, and may recompute it to check an
    answer that read it (early cutoff). ``db`` is the analysis (anything with ``queries``), the same for every call
    of one run; ``fn`` must be a function of ``db`` and ``args`` only. Nothing calling it names a cache."""
    name = f"{fn.__module__}:{fn.__qualname__}"
    _DECLARED[name] = fn

    @functools.wraps(fn)
    def asked(db: Any, *args: Any) -> T:
        q: Queries = db.queries
        if q.db is None:
            q.db = db
        return q.get((name, *args), lambda: fn(db, *args), persist=True)

    return asked


# -- the table on disk ---------------------------------------------------------------------------------
MAX_PER_TREE = 4  # tables kept per tree (one per set of options: a hook's, a CI job's, a --arch run's)
# A delta folds into its table when it holds more answers than this (or a quarter of the table).
_DELTA_MAX = 2000


def table_path(cache_dir: Path, source: SourceTree, head: str) -> Path:
    return tree_folder(cache_dir, source) / f"{head[:16]}{SUFFIX}"


SUFFIX = ".answers"


def _trim(p: Path) -> None:
    try:
        mine = sorted(p.parent.glob(f"*{SUFFIX}"), key=lambda q: q.stat().st_mtime_ns, reverse=True)
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
         digests: Callable[[], dict[str, bytes | None]]) -> tuple[Queries, set[str], Table | None]:
    """Earlier checks' answers that may be reused, the atoms changed since the last check, and the table.
    ``digests`` gives the tree's content hashes (``file_digests``): asked only when there is a table to compare
    them with, so a first check hashes no file before it reads it (``Keep.files``)."""
    if cache_dir is None:
        return Queries(), set(), None
    table = Table(table_path(cache_dir, source, head))
    try:
        main = _read(table.path, head)
        if main is None:
            return Queries(), set(), table
        files = digests()
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


class Memo:
    """Per-analysis answers, so ``fix(sm, finding)`` and the serving verdict reuse what a rule computed.

    A view of the analysis' queries: an answer found here adds the files it read to whoever
    asks, so answers kept between runs know what they rest on. These are not kept between runs themselves.
    """

    def __init__(self, queries: Queries | None = None) -> None:
        self._queries = queries if queries is not None else Queries()

    def get(self, name: str, compute: Callable[[], T]) -> T:
        return self._queries.get(("memo", name), compute)
