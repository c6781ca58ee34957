"""The text report's options, apart from the renderer so the command line can build them (and key the
report cache with them) without importing rich's tables and the class graph on a replayed run."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class OutputFormat(str, Enum):
    """How findings are printed in the text report (ruff's names)."""

    CONCISE = "concise"  # path:line:col: EGLnnn [*] one sentence
    FULL = "full"  # today's evidence paragraphs
    GROUPED = "grouped"  # concise lines under one heading per file


@dataclass(frozen=True)
class TextOptions:
    fmt: OutputFormat = OutputFormat.FULL
    show_all: bool = False  # every architecture and every finding, even with targets
    show_context: bool = False  # the contract / runner / gate preamble and the status table
    quiet: bool = False  # diagnostics only
    statistics: bool = False  # one line per rule instead of one per finding
    show_fixes: bool = False  # each fix's title under its finding
    wrap: bool = True  # hard-wrap at the console width (only on a terminal)
    unsafe_fixes: bool = False  # whether --fix would apply unsafe fixes too (the [*] mark)
    headline: tuple[tuple[str, str | None], ...] = ()  # (verdict line, next step) per target
    targets: tuple[str, ...] = ()
