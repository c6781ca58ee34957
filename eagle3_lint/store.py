"""Facts for every module, loaded lazily, with an optional on-disk cache keyed by content hash.

The cache is a layer under loading: a hit returns the same ``ModuleFacts`` that computing it would, so
no rule can tell the difference, and ``--no-cache`` runs exactly the same code minus this layer.

Each tree has one folder of the cache, ``<cache>/trees/<sha256(root)[:16]>/`` (``tree_folder``): this
pack, the answers of each set of options (queries.py: everything derived from the facts, the engine's
whole-tree derivations included, ``memo``) and the replayable reports (reportcache.py). The facts are
the one part shared by every set of options, since they are a function of a file's bytes alone.

Layout: ``facts.pack``::

    MAGIC | sha256(payload) | payload = pickle({"header", "files"})

- ``header`` is the tree's root, the tool version, ``FACTS_VERSION``, the Python version (``ast``
  differs between them) and a hash of this package's code. Any difference drops the whole pack,
  so a forgotten ``FACTS_VERSION`` bump cannot serve stale facts.
- ``files[rel] = (stat, sha256, blob)``: the file's content hash, its facts pickled when they were
  extracted (so nothing that mutates a ``ModuleFacts`` later can leak into the cache), and a stat
  memo ``(size, mtime_ns, ctime_ns, ino, dev)``. The blob is ``facts.facts_blob``: the fields a
  check reads for few modules (``facts.LAZY_FIELDS``: bindings, functions, dicts) are pickled apart
  and unpickled on first read (``facts.LazyModuleFacts``). A check of 0.33.0 reads ``functions`` in
  4 of the 978 files it loads and ``bindings`` in 599: loading the model files (``preload``) takes
  about half as long, and all unpickling in a one-edit check about an eighth less (cProfile, under
  load: ``pickle.loads`` 0.35 s -> 0.305 s; the bindings read later cost the rest).

Why a stat memo in front of the content hash: it is git's index. Reading and hashing the 3,200
files of vLLM 0.33.0 takes ~0.2 s, a fifth of a warm check; stat-ing them takes 15 ms. An entry
is keyed by content hash; the stat tuple only remembers "this file, unchanged since, hashed to X".
``ctime`` cannot be set from user space, so an edit that restores size and mtime still shows.
A stat is never recorded for a file changed within ``_RACY_NS`` of reading it (git's "racily
clean" case: a second write inside the same timestamp tick), so such files are hashed next time.

A check that changes a few entries writes them to a side file, ``facts.delta`` (same layout, payload
``{"header", "base", "files"}``: ``base`` is the checksum of the pack it applies to, ``files[rel]`` an
entry, or None for a deleted file), instead of rewriting the whole pack: the pack of vLLM 0.33.0 is 9 MB,
and rewriting it was 40 ms of a 0.7 s one-edit re-check. The delta folds into the pack once it holds
``_DELTA_MAX`` files. A delta whose base is not the pack on disk
is ignored (its entries are recomputed).

Damage of any kind (bad magic, checksum, header, unpicklable blob, wrong type) means: rebuild
that part, never trust it. A cache that cannot be written only costs time.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import pickle
import stat as stat_mod
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from eagle3_lint import FACTS_VERSION, __version__
from eagle3_lint.deps import LISTING, Answers
from eagle3_lint.source import DirSource, SourceTree, ZipSource

if TYPE_CHECKING:
    from eagle3_lint.facts import ModuleFacts

T = TypeVar("T")

MAGIC = b"E3LFACTS\x02"
_DIGEST_LEN = 32


def seal(payload: bytes) -> tuple[bytes, bytes, bytes]:
    """A cache file's chunks: ``MAGIC``, the payload's sha256, the payload (the facts pack, its delta, the answers
    table and its delta all use it; ``unseal`` reads it back)."""
    return MAGIC, hashlib.sha256(payload).digest(), payload


def unseal(raw: bytes) -> memoryview:
    """The payload of a sealed file; ValueError if it is not one, or truncated or corrupted."""
    head = len(MAGIC) + _DIGEST_LEN
    if raw[: len(MAGIC)] != MAGIC or len(raw) < head:
        raise ValueError("not a sealed cache file")
    payload = memoryview(raw)[head:]
    if hashlib.sha256(payload).digest() != raw[len(MAGIC): head]:
        raise ValueError("checksum mismatch (truncated or corrupted)")
    return payload
# A file whose mtime/ctime is this close to the moment it was hashed may still change within the
# same timestamp tick (coarse kernel clocks, 2 s on FAT); its stat is not trusted next time.
_RACY_NS = 2_000_000_000
# Parallel extraction only pays above this much work (fork + result transfer cost ~30 ms).
_DELTA_MAX = 64  # files a delta holds before it folds into the pack
_PARALLEL_MIN_FILES = 48
_PARALLEL_MIN_BYTES = 2 * 1024 * 1024
_PROGRESS_MIN_FILES = 100
_FREEZE_MIN_FILES = 100
JOBS_ENV = "EAGLE3_LINT_JOBS"
# The background derivation's niceness (memo_in_background): its weight is a tenth of the parse's, so it runs on
# what the parse leaves idle, and still moves on under other loads of the machine.
_BACKGROUND_NICE = 10
_CONTENDED_PCT = 50.0

StatKey = tuple[int, ...]
# (stat memo or None, sha256 digest, pickled ModuleFacts or None when only hashed)
FileEntry = tuple[StatKey | None, bytes, bytes | None]
Progress = Callable[..., None]


def _code_fingerprint() -> str:
    """The tool version, sharpened: a hash of every module of this package (about 1 ms).

    Hashing all of them, not a list of "the modules that matter", means no one has to remember
    to extend a list when extraction starts calling a new helper module.
    """
    h = hashlib.sha256(f"{__version__}|{FACTS_VERSION}|{sys.version_info[:2]}".encode())
    here = Path(__file__).resolve().parent
    try:
        files = sorted(here.rglob("*.py"))
    except OSError:
        files = []
    for f in files:
        try:
            h.update(f.relative_to(here).as_posix().encode() + b"\0" + f.read_bytes())
        except OSError:
            h.update(b"?")  # e.g. a zipapp: the version above still keys the pack
    return h.hexdigest()


_FINGERPRINT: str | None = None


def fingerprint() -> str:
    global _FINGERPRINT
    if _FINGERPRINT is None:
        _FINGERPRINT = _code_fingerprint()
    return _FINGERPRINT


_FROZE = False  # this module froze the heap (gc.freeze) and has not thawed it since


@contextmanager
def no_gc(keep: bool = False) -> Iterator[None]:
    """Pause the cyclic GC while building many acyclic objects (facts, AST nodes).

    Each collection walks every live container; during a cold parse or an unpickle of all facts
    that was the largest single cost of a warm check (about half of it). Facts and ASTs hold no
    cycles, so reference counting still frees them. With ``keep``, what is alive at the end (the
    loaded facts, which live as long as the check) is moved out of the collector's sight with
    ``gc.freeze()`` (an O(1) list splice), so later collections do not walk it again either.
    """
    global _FROZE
    if keep and _FROZE:
        # A second analysis in this process (tests, a sweep): what the first one froze may be
        # garbage by now, and a frozen cycle is never collected. Thaw and collect it first.
        gc.unfreeze()
        gc.collect()
        _FROZE = False
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if keep:
            gc.freeze()
            _FROZE = True
        if was:
            gc.enable()


def jobs() -> int:
    """Processes for a cold parse: ``EAGLE3_LINT_JOBS``, else the usable CPUs unless they are busy.

    Splitting the parse costs ~12% more CPU in total (pickling facts across the fork). With an
    idle second core that buys ~40% of the parse's wall time; with every core already busy it
    only adds the 12%, so a contended machine (Linux pressure stall information) parses serially.
    """
    env = os.environ.get(JOBS_ENV, "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        n = max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        n = max(1, os.cpu_count() or 1)
    return 1 if n > 1 and _cpu_contended() else n


def _cpu_contended() -> bool:
    """True if runnable tasks waited for a CPU most of the last 10 s (/proc/pressure/cpu)."""
    try:
        with open("/proc/pressure/cpu", encoding="ascii") as fh:
            first = fh.readline()  # "some avg10=1.23 avg60=... avg300=... total=..."
        return float(first.split("avg10=")[1].split()[0]) > _CONTENDED_PCT
    except (OSError, IndexError, ValueError):
        return False


def trusted_file(p: Path) -> bool:
    """A regular file owned by this user in a folder owned by this user, neither writable by others.

    The facts pack is a pickle, and loading a pickle can run code; a replayed report (reportcache)
    is shown as the tool's own verdict. Neither may come from a shared or world-writable cache
    folder (``XDG_CACHE_HOME=/tmp``, a restored CI cache). Checksums detect damage, not tampering."""
    if not hasattr(os, "geteuid"):
        return True  # no POSIX ownership to check (Windows): the user's profile folder protects it
    try:
        st, dst = os.lstat(p), os.stat(p.parent)
    except OSError:
        return False
    me = os.geteuid()
    return (stat_mod.S_ISREG(st.st_mode) and st.st_uid == me and not st.st_mode & 0o022
            and dst.st_uid == me and not dst.st_mode & 0o022)


def write_private(p: Path, chunks: Iterable[bytes]) -> None:
    """Write a cache file atomically (temp file, then rename) in a folder only this user may write,
    which is what ``trusted_file`` asks of it when the file is read back. Raises OSError."""
    p.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if hasattr(os, "geteuid") and os.stat(p.parent).st_uid == os.geteuid():
        os.chmod(p.parent, 0o700)  # whatever the umask or an older folder's mode
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.stem[:16]}-")
    try:
        with os.fdopen(fd, "wb") as fh:
            for c in chunks:
                fh.write(c)
        os.replace(tmp, p)
    except BaseException:
        os.unlink(tmp)
        raise


def tree_folder(cache_dir: Path, source: SourceTree) -> Path:
    """The tree's own folder of the cache: its facts pack (with its delta), the answers of each set of options
    (queries.table_path) and its replayable reports (reportcache.py). One folder per tree, named by its root."""
    return cache_dir / "trees" / hashlib.sha256(source.root_label.encode()).hexdigest()[:16]


class FactStore:
    def __init__(self, source: SourceTree, cache_dir: Path | None = None) -> None:
        self.source = source
        self.cache_dir = cache_dir
        self._facts: dict[str, ModuleFacts | None] = {}
        self._by_module: dict[str, ModuleFacts | None] = {}
        self._files: dict[str, FileEntry] = {}
        self._digests: dict[str, bytes | None] = {}  # this run's content hashes (None: unreadable)
        self._wheel_stat: tuple[int, ...] | None = None
        self._dirty = False
        # Since the pack was read: entries changed (None: deleted).
        self._delta: dict[str, FileEntry | None] = {}
        self._pack_sum: bytes | None = None  # the checksum of the pack on disk, which a delta applies to
        self.read_errors: dict[str, str] = {}
        self.hits = 0
        self.misses = 0
        self.derived_hits = 0
        self.rebuilt = False  # the pack existed but was damaged or stale and was dropped
        self._snapshot: dict[str, StatKey | None] | None = None  # ``snapshot``
        # The analysis reading through this store notes what each answer loads (deps.Answers, queries.Queries.watch).
        self.recorder: Answers | None = None
        if cache_dir is not None:
            self._load_pack()

    def _unrecorded(self) -> contextlib.AbstractContextManager[None]:
        return self.recorder.unrecorded() if self.recorder is not None else contextlib.nullcontext()

    # -- cache pack ------------------------------------------------------------------------------
    def pack_path(self) -> Path | None:
        if self.cache_dir is None:
            return None
        return tree_folder(self.cache_dir, self.source) / "facts.pack"

    def _load_pack(self) -> None:
        p = self.pack_path()
        assert p is not None
        if not trusted_file(p):
            return  # unpickling runs code: only a pack this user wrote and no one else can replace
        try:
            raw = p.read_bytes()
        except OSError:
            return  # no pack yet (or unreadable): start empty
        try:
            payload = unseal(raw)
            with no_gc():
                body = pickle.loads(payload)
            if not isinstance(body, dict) or body.get("header") != self._header():
                raise ValueError("stale header")
            files = body["files"]
            if not isinstance(files, dict):
                raise ValueError("bad body")
            self._files = files
            self._pack_sum = raw[len(MAGIC): len(MAGIC) + _DIGEST_LEN]
        except Exception:  # noqa: BLE001 - any damage to the pack means: rebuild it
            self._files = {}
            self.rebuilt = True
            self._dirty = True
            return
        self._load_delta(p.with_suffix(".delta"))

    def _load_delta(self, p: Path) -> None:
        if not trusted_file(p):
            return
        try:
            payload = unseal(p.read_bytes())
            with no_gc():
                body = pickle.loads(payload)
            if body.get("header") != self._header() or body.get("base") != self._pack_sum:
                return  # made for another pack: its entries are recomputed
            delta = body["files"]
            for rel, e in delta.items():
                if e is None:
                    self._files.pop(rel, None)
                else:
                    self._files[rel] = e
            self._delta = dict(delta)
        except Exception:  # noqa: BLE001 - a damaged delta costs a recomputation, nothing else
            return

    def _header(self) -> tuple[str, str, str]:
        return ("eagle3-lint-facts", self.source.root_label, fingerprint())

    def save(self) -> None:
        p = self.pack_path()
        if p is None or not self._dirty:
            return
        present = set(self.source.py_files())
        for rel in [rel for rel in self._files if rel not in present]:  # forget deleted files
            del self._files[rel]
            self._delta[rel] = None
        dp = p.with_suffix(".delta")
        if self._pack_sum is not None and len(self._delta) <= _DELTA_MAX:
            with no_gc():
                payload = pickle.dumps({"header": self._header(), "base": self._pack_sum, "files": self._delta},
                                       protocol=pickle.HIGHEST_PROTOCOL)
            try:
                write_private(dp, seal(payload))
                self._dirty = False
                return
            except OSError:
                pass  # then the whole pack
        with no_gc():
            payload = pickle.dumps({"header": self._header(), "files": self._files},
                                   protocol=pickle.HIGHEST_PROTOCOL)
        try:
            chunks = seal(payload)
            write_private(p, chunks)
            self._pack_sum = chunks[1]
            self._delta, self._dirty = {}, False
            with contextlib.suppress(OSError):
                dp.unlink()
        except OSError:
            pass  # a cache that cannot be written only costs time

    # -- content hashes --------------------------------------------------------------------------
    def _stat(self, rel: str) -> StatKey | None:
        """The stat memo of ``rel`` if it may be trusted later, else None (always hash)."""
        src = self.source
        if isinstance(src, DirSource):
            try:
                st = os.stat(os.path.join(src.root, rel))
            except OSError:
                return None
            if not stat_mod.S_ISREG(st.st_mode):
                return None
            key: StatKey = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
            newest = max(st.st_mtime_ns, st.st_ctime_ns)
        elif isinstance(src, ZipSource):
            # A member cannot change unless the wheel file does: the wheel's stat stands for it.
            try:
                if self._wheel_stat is None:
                    w = os.stat(src.wheel)
                    self._wheel_stat = (w.st_size, w.st_mtime_ns, w.st_ctime_ns, w.st_ino, w.st_dev)
            except OSError:
                return None
            key = self._wheel_stat
            newest = max(key[1], key[2])
        else:
            return None
        if time.time_ns() - newest < _RACY_NS:
            return None
        return key

    def snapshot(self) -> dict[str, StatKey | None]:
        """Every ``.py`` file's stat now (size, mtime, ctime, inode; None if it cannot be stat-ed), for a check that
        hashes the tree only at its end (a first check: reportcache.py, ``analysis.keep_answers``): ``unchanged``
        then tells whether the hashes taken by the end are those of what the check read. Taken once per store: the
        report cache and the answers both ask at the start of the check."""
        if self._snapshot is None:
            self._snapshot = self._stat_all()
        return self._snapshot

    def _stat_all(self) -> dict[str, StatKey | None]:
        src = self.source
        if not isinstance(src, DirSource):
            return {}  # a wheel's members cannot change while it is open; other sources are never cached
        out: dict[str, StatKey | None] = {}
        root = src.root
        for rel in src.py_files():
            try:
                st = os.stat(os.path.join(root, rel))
                out[rel] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
            except OSError:
                out[rel] = None
        return out

    def unchanged(self, snapshot: dict[str, StatKey | None]) -> bool:
        """Whether no ``.py`` file changed since ``snapshot`` was taken (``snapshot``)."""
        return self._stat_all() == snapshot

    def _read(self, rel: str) -> bytes | None:
        try:
            data = self.source.read_bytes(rel)
        except OSError as exc:
            self.read_errors[rel] = str(exc) or type(exc).__name__
            self._digests[rel] = None
            return None
        self._digests[rel] = hashlib.sha256(data).digest()
        return data

    def digest(self, rel: str) -> bytes | None:
        """sha256 of ``rel``'s bytes (None if unreadable); trusts an unchanged stat memo."""
        if rel in self._digests:
            return self._digests[rel]
        e = self._files.get(rel)
        if e is not None and e[0] is not None and e[0] == self._stat(rel):
            self._digests[rel] = e[1]
            return e[1]
        data = self._read(rel)
        if data is not None and self.cache_dir is not None:
            d = self._digests[rel]
            assert d is not None
            blob = e[2] if e is not None and e[1] == d else None
            self._remember(rel, d, blob)
        return self._digests[rel]

    def _remember(self, rel: str, digest: bytes, blob: bytes | None) -> None:
        new = (self._stat(rel), digest, blob)
        if self._files.get(rel) != new:
            self._files[rel] = new
            self._delta[rel] = new
            self._dirty = True

    # -- facts -----------------------------------------------------------------------------------
    def _cached_facts(self, rel: str) -> ModuleFacts | None:
        """Facts from the pack if they belong to ``rel``'s current content, else None."""
        e = self._files.get(rel)
        if e is None or e[2] is None:
            return None
        if self.digest(rel) != e[1]:
            return None
        e = self._files[rel]  # digest() may have refreshed the stat memo
        # only when facts are loaded: a replay reads hashes only
        from eagle3_lint.facts import ModuleFacts, facts_from_blob

        try:
            mf = facts_from_blob(e[2])  # type: ignore[arg-type]  # digest matched: the blob is kept
        except Exception:  # noqa: BLE001 - a damaged entry is rebuilt, not trusted
            mf = None
        if not isinstance(mf, ModuleFacts) or mf.path != rel:
            self._files[rel] = self._delta[rel] = (e[0], e[1], None)
            self._dirty = True
            return None
        return mf

    def _extract(self, rel: str) -> ModuleFacts | None:
        from eagle3_lint.facts import extract, facts_blob

        data = self._read(rel)
        if data is None:
            return None
        mf = extract(rel, self.source.path_module(rel), rel.endswith("/__init__.py"), data)
        if self.cache_dir is not None:
            d = self._digests[rel]
            assert d is not None
            self._remember(rel, d, facts_blob(mf))
        return mf

    def load_path(self, rel: str) -> ModuleFacts | None:
        r = self.recorder
        if r is not None and r.frame is not None:
            r.frame.atoms.add(rel)
        if rel in self._facts:
            return self._facts[rel]
        mf = self._cached_facts(rel) if self.cache_dir is not None else None
        if mf is not None:
            self.hits += 1
        else:
            mf = self._extract(rel)
            self.misses += 1
        self._facts[rel] = mf
        return mf

    def load(self, module: str) -> ModuleFacts | None:
        # The graph asks for the same modules tens of thousands of times; resolve each name once.
        r = self.recorder
        if r is not None and r.frame is not None:
            r.frame.atoms.add(module)  # present or missing: the answer rests on it either way
        try:
            return self._by_module[module]
        except KeyError:
            pass
        if r is None:
            rel = self.source.module_path(module)
            mf = None if rel is None else self.load_path(rel)
        else:
            # Not recorded (unrecorded(), spelled out: this runs once per module): the module's name stands for
            # its file (queries.changed_atoms).
            outer, r.frame = r.frame, None
            try:
                rel = self.source.module_path(module)
                mf = None if rel is None else self.load_path(rel)
            finally:
                r.frame = outer
        self._by_module[module] = mf
        return mf

    def loaded_facts(self, rel: str) -> ModuleFacts | None:
        """The facts of ``rel`` if this run has loaded them already (never loads)."""
        return self._facts.get(rel)

    def loaded(self) -> list[ModuleFacts]:
        return [mf for mf in self._facts.values() if mf is not None]

    def preload(self, rels: Iterable[str], progress: Progress | None = None) -> None:
        """Load many files at once: cache hits first, then the misses, in parallel where it pays."""
        rels = list(rels)
        # Freezing pays for a whole release (~1 CPU-s of a warm 0.33.0 check); for a handful of
        # files the thaw a later analysis in the same process needs would cost more than it saves.
        # Loading is not reading: an answer depends on the facts it asks for (load, load_path), not on these.
        with no_gc(keep=len(rels) >= _FREEZE_MIN_FILES), self._unrecorded():
            todo: list[str] = []
            for rel in rels:
                if rel in self._facts:
                    continue
                mf = self._cached_facts(rel) if self.cache_dir is not None else None
                if mf is not None:
                    self.hits += 1
                    self._facts[rel] = mf
                else:
                    todo.append(rel)
            if not todo:
                return
            # A bar only for a cold parse; an incremental re-check finishes before it could draw.
            if len(todo) < _PROGRESS_MIN_FILES:
                progress = None
            if progress:
                progress("parsing model files", 0, len(todo))
            results: Iterable[tuple[str, ModuleFacts | None]]
            n = min(jobs(), 8)
            sizes = self._sizes(todo) if n > 1 else None
            if sizes is not None:
                results = self._extract_parallel(todo, n, sizes)
            else:
                results = ((rel, self._extract(rel)) for rel in todo)
            got: dict[str, ModuleFacts | None] = {}
            for i, (rel, mf) in enumerate(results, 1):
                self.misses += 1
                got[rel] = mf
                if progress and (i % 25 == 0 or i == len(todo)):
                    progress("parsing model files", i, len(todo))
            for rel in todo:  # in the order asked, whichever process parsed what
                self._facts[rel] = got[rel]

    # -- parallel extraction ---------------------------------------------------------------------
    def _sizes(self, todo: list[str]) -> dict[str, int] | None:
        """File sizes if splitting the parse of ``todo`` over processes may pay, else None."""
        # fork is the only start method that does not re-import the world; a wheel's open zip
        # handle would be shared across the fork, so only folders are split.
        if len(todo) < _PARALLEL_MIN_FILES or sys.platform != "linux" or not isinstance(self.source, DirSource):
            return None
        sizes: dict[str, int] = {}
        for rel in todo:
            try:
                sizes[rel] = os.stat(os.path.join(self.source.root, rel)).st_size
            except OSError:
                sizes[rel] = 0
        return sizes if sum(sizes.values()) >= _PARALLEL_MIN_BYTES else None

    def _extract_parallel(self, todo: list[str], n: int, sizes: dict[str, int]
                          ) -> Iterator[tuple[str, ModuleFacts | None]]:
        """Share ``todo`` between the parent and ``n-1`` forked children, largest files first; children send pickles.

        Each process takes the next file from one shared counter when it is done with the last, so a process
        that is slowed down (by the runner's own child computing beside the parse, store.memo_in_background, or
        the parent adopting what the children send) takes fewer files, where a split by size fixed in advance
        waited for the slowest share. On an idle 2-CPU machine the two differ by noise (vLLM 0.33.0 cold: 1.43x
        against 1.45x of the floor); on a busy one the shares cannot fall behind. What each process takes varies
        from run to run; the results do not (preload files them in ``todo``'s order)."""
        import multiprocessing

        order = sorted(todo, key=lambda r: -sizes[r])
        ctx = multiprocessing.get_context("fork")
        global _WORKER_STORE, _WORKER_ORDER, _WORKER_NEXT
        try:
            counter = ctx.Value("i", 0)
            _WORKER_STORE, _WORKER_ORDER, _WORKER_NEXT = self, order, counter  # what the forked children inherit
            pool = ctx.Pool(n - 1)
        except (OSError, ValueError):
            _WORKER_STORE, _WORKER_ORDER, _WORKER_NEXT = None, [], None
            yield from ((rel, self._extract(rel)) for rel in order)
            return
        taken: set[str] = set()
        try:
            pending = [pool.apply_async(_worker_extract, ()) for _ in range(n - 1)]
            while (i := _next_file(counter)) < len(order):
                rel = order[i]
                taken.add(rel)
                yield rel, self._extract(rel)
            for job in pending:
                try:
                    packed = job.get()
                except Exception:  # noqa: BLE001 - a failed child costs time, not results
                    packed = []
                for rel, digest, blob, err in packed:
                    taken.add(rel)
                    yield rel, self._adopt(rel, digest, blob, err)
            # What a failed child had taken (or never sent): extracted here.
            yield from ((rel, self._extract(rel)) for rel in order if rel not in taken)
        finally:
            pool.terminate()
            _WORKER_STORE, _WORKER_ORDER, _WORKER_NEXT = None, [], None

    def _adopt(self, rel: str, digest: bytes | None, blob: bytes | None, err: str | None) -> ModuleFacts | None:
        """Take a child's result as if this process had extracted it."""
        if err is not None or digest is None or blob is None:
            self.read_errors[rel] = err or "cannot be read"
            self._digests[rel] = None
            return None
        self._digests[rel] = digest
        from eagle3_lint.facts import facts_from_blob

        mf = facts_from_blob(blob)
        if self.cache_dir is not None:
            self._remember(rel, digest, blob)
        return mf

    # -- derived whole-tree results -------------------------------------------------------------
    def memo(self, name: str, params: tuple[Any, ...], files: Iterable[str],
             compute: Callable[[SourceTree], T], hashing: bool = False) -> T:
        """``compute(tree)``, an answer of the analysis' queries that rests on ``files`` (the only files it reads)
        and on the tree's listing: kept between runs with the other answers (queries.py), so it is recomputed when
        one of them changes, or a file is added or removed. Without an analysis (``recorder``), computed.
        ``hashing``: ``compute`` reads the tree through ``_Reading``, as in the background child, so what it reads is
        hashed as it is read (the cache hashes every file by the end of a check: not reading them twice)."""
        q = self.recorder
        files = list(files)
        if q is None:
            return compute(self.source)
        key = ("derived", name, params)

        def run() -> T:
            q.note_all(files)
            q.note(LISTING)
            with q.unrecorded():  # ``files`` is what it rests on; what it happened to read is not recorded
                return compute(_Reading(self) if hashing and self.cache_dir is not None else self.source)

        value = q.get(key, run, persist=True)
        self.derived_hits += q.was_kept(key)
        return value

    def memo_in_background(self, name: str, params: tuple[Any, ...], files: Iterable[str],
                           compute: Callable[[SourceTree], T]) -> Callable[[], T]:
        """``memo(...)`` to be collected later: computed in a forked child while this process goes on
        (the cold parse), when it would be computed at all and a second CPU is free; else run in place.

        Only a cold run forks: an answer kept from the last check is checked in place. The child reads the tree
        through ``_Reading`` and sends back the pickled value and the content hashes of what it read; this process
        adopts both, so the answer and the stat memos are what ``memo`` makes. If the child fails in any way, the
        returned function computes in place, and an error of ``compute`` is raised from there.
        """
        files = list(files)
        q = self.recorder
        key = ("derived", name, params)

        def in_place() -> T:
            return self.memo(name, params, files, compute, hashing=True)

        if (q is None or self.cache_dir is None or q.valid(key) or sys.platform != "linux"
                or not isinstance(self.source, DirSource) or not hasattr(os, "fork") or jobs() < 2):
            return in_place
        try:
            r, w = os.pipe()
        except OSError:
            return in_place
        try:
            pid = os.fork()  # a bare fork: no thread of a pool may be running in the parent when it happens
        except OSError:
            os.close(r)
            os.close(w)
            return in_place
        if pid == 0:  # the child: compute, send, leave without running the parent's exit handlers
            code = 1
            try:
                os.close(r)
                gc.disable()
                # Forked before the parse, it yields the CPU to it (the parse keeps every CPU busy) and takes what
                # the parse leaves idle: where one share of it ends before the other.
                with contextlib.suppress(OSError):
                    os.nice(_BACKGROUND_NICE)
                known = set(self._digests)
                value = compute(_Reading(self))
                read = {rel: d for rel, d in self._digests.items() if rel not in known and d is not None}
                payload = pickle.dumps((pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL), read),
                                       protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(w, "wb") as fh:
                    fh.write(payload)
                code = 0
            finally:
                os._exit(code)
        os.close(w)

        def collect() -> T:
            try:
                with os.fdopen(r, "rb") as fh:
                    payload = fh.read()
                _, status = os.waitpid(pid, 0)
                if status != 0:
                    raise ValueError("the child failed")
                blob, read = pickle.loads(payload)
                value = pickle.loads(blob)
            except Exception:  # noqa: BLE001 - a failed child costs time, not results
                return in_place()
            for rel, d in read.items():
                if rel not in self._digests:
                    self._digests[rel] = d
                    e = self._files.get(rel)
                    self._remember(rel, d, e[2] if e is not None and e[1] == d else None)
            q.put(key, value, (*files, LISTING))
            return value

        return collect


class _Reading(SourceTree):
    """The store's tree, seen by a memoized computation: reads record their content hash."""

    def __init__(self, store: FactStore) -> None:
        self._store = store
        self._src = store.source
        self.root_label = self._src.root_label

    def py_files(self) -> list[str]:
        return self._src.py_files()

    def other_files(self) -> list[str]:
        return self._src.other_files()

    def exists(self, rel: str) -> bool:
        return self._src.exists(rel)

    def module_path(self, module: str) -> str | None:
        return self._src.module_path(module)

    def read_bytes(self, rel: str) -> bytes:
        data = self._src.read_bytes(rel)
        st = self._store
        if rel not in st._digests:
            d = hashlib.sha256(data).digest()
            st._digests[rel] = d
            e = st._files.get(rel)
            st._remember(rel, d, e[2] if e is not None and e[1] == d else None)
        return data


_WORKER_STORE: FactStore | None = None
_WORKER_ORDER: list[str] = []  # the files of the parallel parse, largest first (_extract_parallel)
_WORKER_NEXT: Any = None  # the shared counter: the index in _WORKER_ORDER of the next file to take


def _next_file(counter: Any) -> int:
    """The index of the next file to take (it moves the shared counter on)."""
    with counter.get_lock():
        i: int = counter.value
        counter.value = i + 1
    return i


def _worker_extract() -> list[tuple[str, bytes | None, bytes | None, str | None]]:
    """In a forked child: extract files taken from the shared counter until none is left, each result pickled
    (the parent unpickles)."""
    from eagle3_lint.facts import extract, facts_blob

    store, order, counter = _WORKER_STORE, _WORKER_ORDER, _WORKER_NEXT
    assert store is not None and counter is not None
    out: list[tuple[str, bytes | None, bytes | None, str | None]] = []
    gc.disable()
    while (i := _next_file(counter)) < len(order):
        rel = order[i]
        try:
            data = store.source.read_bytes(rel)
        except OSError as exc:
            out.append((rel, None, None, str(exc) or type(exc).__name__))
            continue
        mf = extract(rel, store.source.path_module(rel), rel.endswith("/__init__.py"), data)
        out.append((rel, hashlib.sha256(data).digest(), facts_blob(mf), None))
    return out
