"""What a drafter's ``config.json`` means to the tree being checked, as data (EGL007's facts).

The engine works it out (``Engine.draft_analysis``): which fields hold aux ids and how they number
layers, the ids the runner will use, the model default, the capture points of the decoder's
``forward``, the drafter's fc width and the pipeline-parallel layout. Rules, the serving verdict and
the report read this data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eagle3_lint.model import Severity
from eagle3_lint.modeldata import Capture, Where
from eagle3_lint.runner import RunnerKind

INPUT, OUTPUT = 0, 1  # an id names the state entering layer k, or the state leaving layer k


@dataclass(frozen=True)
class Split:
    num_layers: int
    pp_size: int
    ranges: tuple[tuple[int, int], ...]  # [start, end) per rank
    source: str  # "tree" (evaluated from the tree) | "reference" (fallback arithmetic)
    path: str = ""  # where the tree's get_pp_indices lives
    line: int = 0
    reads_partition_env: bool = False  # the tree honours VLLM_PP_LAYER_PARTITION
    partition: str | None = None  # the override used, if any
    note: str = ""


def split_ranges(fn: Any, world: Any, num_layers: int, pp_size: int, name: str) -> list[tuple[int, int]]:
    """Each rank's ``[start, end)`` from the tree's own layer-split function ``fn`` (a ``minieval`` function
    value, called as ``name(num_layers, rank, pp_size)``, as both engines' ``get_pp_indices`` are), evaluated
    in ``world`` (what the engine's environment reads answer). Raises ``minieval.EvalRaise`` when the tree's
    code raises for this layout and ``minieval.Unsupported`` when it cannot be followed or returns no pair."""
    from eagle3_lint import minieval as me

    interp = me.Interpreter(world, strict=True)
    ranges: list[tuple[int, int]] = []
    for r in range(pp_size):
        res = interp.call(fn, [num_layers, r, pp_size])
        if not (isinstance(res, tuple) and len(res) == 2 and all(isinstance(x, int) for x in res)):
            raise me.Unsupported(f"{name} returned {res!r}")
        ranges.append((res[0], res[1]))
    return ranges


@dataclass(frozen=True)
class IdsField:
    path: tuple[str, ...]
    ids: tuple[Any, ...]
    convention: int | None
    origin: str
    meaning: str
    line: int

    @property
    def name(self) -> str:
        return ".".join(self.path)


@dataclass
class FcInfo:
    in_size: int | None
    where: Where | None
    drafter_class: str = ""
    note: str = ""


@dataclass
class PPLayout:
    split: Split
    rank_of_id: dict[int, int | None]  # the first rank that captures each id
    captures: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # rank -> [(id, layer it enters)]
    note: str = ""


@dataclass(frozen=True)
class IdIssue:
    """A problem with the drafter's ids that the engine judged itself, by its own numbering and collection (an
    engine whose id convention the neutral checks of EGL007 do not model hands its findings over as data)."""

    message: str
    where: Where
    severity: Severity = Severity.ERROR
    symbol: str = ""
    title: str = ""  # one short sentence (the finding's title); "" takes the message's first sentence


@dataclass(frozen=True)
class IgnoredKey:
    """A key the drafter config sets that this release's drafter code never reads, while another examined
    release's does (EGL011; ``engines/drafter_keys.py``)."""

    key: str  # dotted for a nested key: eagle_config.norm_before_fc
    line: int  # in the drafter config
    drafter_class: str  # the class this release builds, and its module
    module: str
    reader: str  # the first examined release after this one whose drafter code reads it ("" if none)
    reader_where: Where | None  # where that release reads it
    before: str = ""  # the examined release before ``reader``, which does not read it
    earlier: str = ""  # no later release reads it but this earlier one did (a key this release stopped reading)
    earlier_where: Where | None = None
    # A count of the fc's aux states (``drafter_keys.fc_states``) that gives the checkpoint's fc another in-width
    # than the fc this release builds: (the checkpoint's in-width, the built one). None: not such a key.
    fc: tuple[int, int] | None = None


@dataclass
class DraftAnalysis:
    draft_path: str
    arch: str | None
    runner: RunnerKind | None = None  # the model runner whose id reader and fallback were evaluated
    speculators: bool = False
    converted: dict[str, Any] | None = None
    conversion_error: str = ""
    conversion_where: Where | None = None
    # vLLM's own layout: the config class the engine builds from the file itself (EAGLEConfig), and where
    built_as: Where | None = None
    fields: list[IdsField] = field(default_factory=list)
    runner_ids: tuple[Any, ...] | None = None
    runner_where: Where | None = None
    runner_note: str = ""
    runner_reads: bool = False  # the tree has a config function at all
    used_field: IdsField | None = None
    transform: int | None = None  # runner id = field id + transform
    default_ids: tuple[Any, ...] | None = None
    default_where: Where | None = None
    default_note: str = ""
    effective_ids: tuple[Any, ...] | None = None
    effective_from: str = ""  # "config" | "default"
    num_layers: int | None = None
    target_hidden: int | None = None
    capture: Capture | None = None
    fc: FcInfo | None = None
    pp: PPLayout | None = None
    notes: list[str] = field(default_factory=list)
    conversion_key: str = ""  # the config key that selects the engine's format converter (EGL007's symbol)
    # None: EGL007's own checks apply (they model the state-entering-layer-k numbering and the forward's
    # capture points); a list: the engine judged the ids itself and these are its findings.
    issues: list[IdIssue] | None = None
    # Keys the drafter config sets that this release's drafter code never reads (EGL011); None: not examined.
    ignored_keys: list[IgnoredKey] | None = None

    def json_line(self, key: str) -> int:
        return json_line(self.draft_path, key)

    def default_minus_one(self, ids: tuple[Any, ...] | list[Any]) -> bool:
        """Whether ``ids`` are the model default minus one, element by element: ids in "output of layer k"
        numbering carried into a tree that numbers the state entering layer k (EGL007 warns; the serving verdict
        leaves the trained layers unchecked until the convention is stated)."""
        default = self.default_ids or ()
        return bool(default) and len(ids) == len(default) and all(
            isinstance(a, int) and isinstance(b, int) and a == b - 1 for a, b in zip(ids, default, strict=True))


def json_line(path: str, key: str) -> int:
    try:
        with open(path, encoding="utf-8") as fh:
            for i, line in enumerate(fh, 1):
                if f'"{key}"' in line:
                    return i
    except OSError:
        pass
    return 1
