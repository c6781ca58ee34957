"""Plain, frozen data types shared by every stage: no parser nodes, so JSON and SARIF are trivial."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"

    @property
    def rank(self) -> int:
        return {"error": 3, "warning": 2, "note": 1}[self.value]


class Applicability(str, Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"


class Status(str, Enum):
    SUPPORTED = "supported"
    UNSUPPORTED = "unsupported"
    WRAPPER_GAP = "wrapper-gap"
    PARTIAL = "partial"
    UNKNOWN = "unknown"


@dataclass(frozen=True, order=True)
class Location:
    """A span in a file; ``path`` is relative to the tree root, lines are 1-based, columns 0-based."""

    path: str
    line: int
    col: int = 0
    end_line: int | None = None
    end_col: int | None = None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class Edit:
    """Replace the text between (line, col) and (end_line, end_col) with ``new_text``.

    An insertion has an empty span. Columns count characters, not bytes.
    """

    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    new_text: str


@dataclass(frozen=True)
class Fix:
    title: str
    edits: tuple[Edit, ...]
    applicability: Applicability = Applicability.SAFE


@dataclass(frozen=True)
class Step:
    """One link of an evidence chain: what was found, and where."""

    kind: str
    text: str
    location: Location | None = None


# The longest title a finding gets (concise lines, JSON ``title``); longer forms fall back to shorter ones.
MAX_TITLE = 120


@dataclass(frozen=True)
class Finding:
    rule: str
    name: str
    severity: Severity
    message: str
    location: Location
    architecture: str | None = None
    symbol: str | None = None
    related: tuple[Step, ...] = ()
    fix: Fix | None = None
    # Set by ``Rule.run`` from the analysed tree; not part of a finding's identity.
    engine: str | None = field(default=None, compare=False)  # the engine whose tree it is about
    check: str = field(default="", compare=False)  # the engine's EAGLE-3 check as messages name it
    # One sentence the rule chose when it made the finding (``rules.fit``); "" lets report/title.py take the
    # message's first sentence. Not part of a finding's identity.
    title: str = field(default="", compare=False)
    # Every architecture the finding concerns, sorted (``architecture`` is the one the report leads with: a
    # targeted one when any is). One class or method can be on several targets' path: SGLang 0.5.19's inherited
    # Qwen3-VL setter is one EGL004 finding about four. Empty for a finding on no particular architecture.
    architectures: tuple[str, ...] = field(default=(), compare=False)

    def sort_key(self) -> tuple[Any, ...]:
        return (self.location.path, self.location.line, self.location.col, self.rule, self.architecture or "")


@dataclass(frozen=True)
class Suppression:
    """Why a finding is not reported: ``inSource`` (a comment) or ``external`` (a baseline)."""

    kind: str
    justification: str = ""
    location: Location | None = None


@dataclass(frozen=True)
class Verdict:
    architecture: str
    module: str
    class_name: str
    supports_eagle3: bool | None
    status: Status
    reason: str
    evidence: tuple[Step, ...] = ()
    location: Location | None = None
    inner: tuple[str, ...] = field(default_factory=tuple)


def to_jsonable(obj: Any) -> Any:
    """Dataclasses and enums to plain JSON values, keeping field order."""
    if isinstance(obj, Enum):
        return obj.value
    if hasattr(obj, "__dataclass_fields__"):
        return {k: to_jsonable(v) for k, v in asdict(obj).items()}
    if isinstance(obj, dict):
        return {k: to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    return obj
