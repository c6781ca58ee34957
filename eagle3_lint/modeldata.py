"""What the semantic model answers with, as plain data apart from the queries that make it (semantic.py): the
drafter's analysis (drafter.py) and the engines' hooks name these types without reaching the model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eagle3_lint.graph import ClassKey


@dataclass(frozen=True)
class Broken:
    """A model file the engine imports to serve an architecture that cannot be read or parsed."""

    path: str
    line: int
    why: str  # "does not parse: invalid syntax" | "cannot be read: [Errno 13] Permission denied"


@dataclass(frozen=True)
class Where:
    path: str
    line: int
    text: str = ""


@dataclass
class Capture:
    """How the target decoder's forward collects aux hidden states."""

    owner: ClassKey
    path: str
    forward_line: int
    loop_line: int = 0
    idiom: str = "none"  # explicit | mixin | none
    shift: int | None = None  # id k -> state entering layer k + shift
    # (before|after|pre-loop|post-loop, offset, line): a test or collector call in the loop before or after the
    # layer call, a collector call before the loop, a membership test after it (the last layer's output).
    sites: tuple[tuple[str, int, int], ...] = ()
    # In-loop reads of the engine's per-layer capture flags (``layer._is_layer_to_capture``), as sites: the
    # layers collected are those the setter flags, not an index compared with ids.
    flag_sites: tuple[tuple[str, int, int], ...] = ()
    absolute: bool = True  # enumerate(..., start=self.start_layer), range(start, end), islice(enumerate(...))
    residual_none_at_start: bool = False  # explicit ``h + residual`` while residual is None before layer 0
    residual_line: int = 0
    order_dependent: bool = False
    order_why: str = ""
    relays_pp: bool | None = None
    relay_why: str = ""
    note: str = ""
    # No capture point, but the forward reads the configured layers some other way: what it collects is unknown.
    unread: bool = False

    def valid_ids(self, n: int) -> set[int]:
        """Ids this forward can capture with ``n`` layers (PP-independent, absolute indices)."""
        out: set[int] = set()
        for pos, off, _line in (*self.sites, *self.flag_sites):
            if pos == "pre-loop":
                out.add(0)
            elif pos == "post-loop":
                out.add(n)
            elif pos in ("before", "after"):
                out.update(range(off, n + off))
        if self.residual_none_at_start:
            out.discard(0)
        return out
