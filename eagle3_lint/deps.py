"""What a computation read: the dependency recorder behind results kept between runs (queries.py).

While a computation runs inside ``recording()``, every read of the analysed tree notes an *atom*:

- a file's path (``vllm/model_executor/models/llama.py``) when its bytes or its facts are read;
- a module's dotted name when the tree is asked for that module (present or not: a computation that
  found ``vllm.foo`` missing depends on it staying missing);
- ``LISTING`` when the list of the tree's files is read.

The hooks sit where the tree is read (``SourceTree`` implementations, ``FactStore.load``/``load_path``),
so a result's atoms are complete as long as nothing reads the tree around them. Recordings nest: what
an inner computation read is also what the outer one read.

Kept import-free and tiny: the hooks run tens of thousands of times per check.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

LISTING = "@listing"

# The innermost recording, None when nothing records (``note`` then costs one global read).
frame: set[str] | None = None


def note(atom: str) -> None:
    if frame is not None:
        frame.add(atom)


def note_all(atoms: Iterable[str]) -> None:
    if frame is not None:
        frame.update(atoms)


class recording:  # noqa: N801 - used as a function: ``with deps.recording() as read:``
    """Record the atoms read inside the block into a new set; on leaving, they join the enclosing recording
    too (also when the block raises: whoever catches the error read them). A class, not a generator: it runs
    for every answer an analysis computes."""

    __slots__ = ("mine", "outer")

    def __enter__(self) -> set[str]:
        global frame
        self.outer = frame
        self.mine: set[str] = set()
        frame = self.mine
        return self.mine

    def __exit__(self, *exc: object) -> None:
        global frame
        frame = self.outer
        if self.outer is not None:
            self.outer |= self.mine


@contextmanager
def unrecorded() -> Iterator[None]:
    """Reads the results do not depend on (bulk preloading of facts, writing caches)."""
    global frame
    outer = frame
    frame = None
    try:
        yield
    finally:
        frame = outer
