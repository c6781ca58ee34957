"""What a computation read: the dependency recorder of the query framework (queries.py).

While an answer is computed (``Queries.get``), every read of the analysed tree notes an *atom* into the
recorder's current ``Frame``:

- a file's path (``vllm/model_executor/models/llama.py``) when its bytes or its facts are read;
- a module's dotted name when the tree is asked for that module (present or not: a computation that
  found ``vllm.foo`` missing depends on it staying missing);
- ``LISTING`` when the list of the tree's files is read.

Reading another answer notes an *edge* to it instead (queries.py decides which). The hooks sit where the tree is
read: ``SourceTree`` implementations (``SourceTree.recorder``) and ``FactStore.load``/``load_path``
(``FactStore.recorder``), so a result's atoms are complete as long as nothing reads the tree around them.

The recorder belongs to one analysis (``Queries`` is one), not to the process: the tree and the store are handed it
when the analysis starts (``Queries.watch``), and two analyses in one process never see each other's reads. A tree
with no recorder, or a recorder with no frame (outside any computation), notes nothing.

Kept import-free and tiny: the hooks run tens of thousands of times per check.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

LISTING = "@listing"


class Frame:
    """What one computation read so far: atoms itself, the answers it read (ordered, as asked), and the atoms those
    rest on, however reached (``every``); ``seen``, the answers kept for this run only whose reads it took in already
    (an answer read again adds nothing: queries.Queries._read)."""

    __slots__ = ("atoms", "edges", "every", "seen")

    def __init__(self) -> None:
        self.atoms: set[str] = set()
        self.edges: dict[Hashable, None] = {}
        self.every: set[str] = set()
        self.seen: set[Hashable] = set()

    def absorb(self, other: Frame) -> None:
        self.atoms |= other.atoms
        self.edges.update(other.edges)
        self.every |= other.every


class Recorder:
    """The innermost ``Frame`` of one analysis, None when nothing records (``note`` then costs one attribute read)."""

    __slots__ = ("frame",)

    def __init__(self) -> None:
        self.frame: Frame | None = None

    def note(self, atom: str) -> None:
        f = self.frame
        if f is not None:
            f.atoms.add(atom)

    def note_all(self, atoms: Iterable[str]) -> None:
        f = self.frame
        if f is not None:
            f.atoms.update(atoms)

    @contextmanager
    def unrecorded(self) -> Iterator[None]:
        """Reads the results do not depend on (bulk preloading of facts, writing caches, a lookup whose answer
        is recorded more narrowly by hand)."""
        outer = self.frame
        self.frame = None
        try:
            yield
        finally:
            self.frame = outer


class Answers(Recorder, ABC):
    """A recorder that also keeps answers: what the facts store asks of the analysis' queries (``FactStore.memo``).
    ``Queries`` (queries.py) is the one implementation; declared here so the store, below the queries, names it
    without importing them."""

    __slots__ = ()

    @abstractmethod
    def get(self, key: Hashable, compute: Callable[[], T], *, persist: bool = False, cycle: Any = ...) -> T:
        """The answer under ``key``, computed by ``compute()`` unless this run or a still-valid earlier one has it."""

    @abstractmethod
    def put(self, key: Hashable, value: Any, atoms: Iterable[str]) -> None:
        """An answer computed elsewhere (a forked child), resting on ``atoms``."""

    @abstractmethod
    def valid(self, key: Hashable) -> bool:
        """Whether this run has the answer under ``key``, or a kept one is still valid."""

    @abstractmethod
    def was_kept(self, key: Hashable) -> bool:
        """Whether this run's answer under ``key`` is an earlier check's."""
