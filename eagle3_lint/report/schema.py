"""The JSON report as one typed model, and the JSON Schema generated from it.

Every object of ``check --output-format json`` is a frozen dataclass below; ``report/build.py`` builds
the report as these objects and ``dump`` turns them into the JSON-shaped dict, so the keys, their
order and their types exist in one place. ``report_schema()`` generates the JSON Schema (draft
2020-12) from the same classes; ``eagle3_lint/data/report.schema.json`` (what ``eagle3-lint schema
json`` prints) is its output, regenerated with ``python scripts/report_schema.py --write`` and
checked by the tests, and ``tests/snapshots/report.schema.v<N>.json`` records what each
``schema_version`` promised.

How a field becomes schema:
- its JSON name is the field name, or ``fld(name=...)`` where the name is not an identifier;
- a field is required unless its default is ``ABSENT`` (then it is left out of the JSON when unset)
  or ``fld(required=False)`` says so;
- ``str``/``int``/``bool`` -> ``type``; ``X | None`` -> a nullable type (``oneOf`` with null for
  objects); ``list[X]`` -> ``array``; ``Literal[...]`` -> ``enum``; ``Engine`` -> the engines' names; the
  enums ``Severity`` and ``Status`` and the dataclasses that set ``DEF`` are shared through ``$defs``; ``Json`` is any
  value (the drafter section, whose shape is documented in report/draft.py);
- ``fld(minimum=, pattern=, const=, description=)`` add those keywords; a class's ``DESCRIPTION``
  describes the object, ``OPEN = True`` lets it carry properties it does not list.

Plain dataclasses with an own generator, not pydantic or msgspec: the tool produces this data, so it
needs no validation; no dependency is added; and owning the generator keeps the schema in the shape
consumers already had (README, "Design: the report's typed model", with the import-time figures).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import sys
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Union

from eagle3_lint.model import Applicability, Severity, Status
from eagle3_lint.report import SCHEMA_VERSION

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "report.schema.json"


class Absent:
    """The value of an optional field that is not in this report (the key is left out)."""

    _instance: ClassVar[Absent | None] = None

    def __new__(cls) -> Absent:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT = Absent()
Json = Any  # any JSON value; documented as {} in the schema



class Engine(str):
    """An engine's name: the schema's enum lists the engines this installation discovers (``engines.names()``), so a
    plugin engine's reports validate against the schema ``eagle3-lint schema json`` prints where it is installed."""


# The serving verdict's vocabulary (its contract; the verdict itself is built in eagle3_lint/serving.py).
ServingOutcome = Literal["unregistered", "unimportable", "refused-at-config", "drafter-unloadable", "refused-at-load",
                         "pp-refused", "crashes-at-warm-up", "drafter-shape-mismatch", "pp-loses-states",
                         "drafter-differs", "wrong-layers", "servable", "unknown", "unchecked"]
ServingGate = Literal["registry", "import", "config-gate", "drafter-class", "runner-interface", "pp-verifier",
                      "drafter-fc", "pp-relay", "target-forward", "trained-layers", "aux-ids", "capture"]
StepResult = Literal["pass", "fail", "unchecked", "unknown", "skipped"]

_ENUM_DEFS: dict[type[enum.Enum], str] = {Severity: "severity", Status: "status"}
_DEF_ORDER = ("severity", "status", "step", "edit", "fix", "finding", "suppressed_finding", "member", "runner_site",
              "gate", "architecture", "baseline", "baseline_entry")


def fld(*, name: str | None = None, required: bool | None = None, minimum: int | None = None,
        pattern: str | None = None, const: Any = None, description: str | None = None,
        default: Any = dataclasses.MISSING) -> Any:
    """A model field with its schema keywords (see the module docstring)."""
    meta = {k: v for k, v in (("name", name), ("required", required), ("minimum", minimum), ("pattern", pattern),
                              ("const", const), ("description", description)) if v is not None}
    return dataclasses.field(default=default, metadata=meta)


def opt(**kw: Any) -> Any:
    """An optional field: absent from the JSON unless set."""
    return fld(default=ABSENT, **kw)


# -- the model ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True, eq=False)
class Tool:
    name: Literal["eagle3-lint"]
    version: str


@dataclass(frozen=True, kw_only=True, eq=False)
class Target:
    root: str
    vllm_version: str | Absent = opt(description="vLLM's version (vLLM trees only; engine_version for every engine).")
    engine: Engine | Absent = opt(description="The engine the tree belongs to.")
    engine_version: str | None | Absent = opt(description="The engine's version, when the tree says it.")


@dataclass(frozen=True, kw_only=True, eq=False)
class Member:
    DEF: ClassVar[str] = "member"
    OPEN: ClassVar[bool] = True
    name: str
    kind: Literal["method", "marker", "attribute"]
    protocol: str
    has_default: bool
    params: list[str]
    line: int = fld(minimum=0)


@dataclass(frozen=True, kw_only=True, eq=False)
class Contract:
    DESCRIPTION: ClassVar[str] = "The engine's EAGLE-3 contract, derived from the tree."
    found: bool
    protocol: str
    path: str
    line: int = fld(minimum=0)
    check: Literal["structural", "flag", "duck", "none", "unknown"]
    check_function: str
    runtime_checkable: bool
    members: list[Member]
    marker: str | None
    setter: str | None
    default_getter: str | None
    methods_have_defaults: bool
    mixin: str | None
    unwrap_attrs: list[str]
    notes: list[str]


@dataclass(frozen=True, kw_only=True, eq=False)
class RunnerSite:
    DEF: ClassVar[str] = "runner_site"
    OPEN: ClassVar[bool] = True
    path: str
    line: int = fld(minimum=0)
    function: str
    interrogated: str
    error: str
    error_line: int = fld(minimum=0)
    config_function: str | None
    config_line: int = fld(minimum=0)
    fallback: str | None
    fallback_line: int = fld(minimum=0)
    setter: str | None
    setter_line: int = fld(minimum=0)
    checked: bool
    negated: bool
    reserves_relay: bool | None = fld(required=False, description=(
        "The site's function calls the tree's pipeline relay set-up for aux states (null: the tree has none)."))
    kind: str = fld(required=False, description=(
        "Which of the engine's model runners the site belongs to (v1: the first runner; v2: a second one, "
        "where the release has two)."))
    setter_ids: str | None = fld(required=False, description=(
        "What the site hands the setter: drafter = the drafter config's ids (the model default when it names "
        "none), default = no ids (the model's own default layers until a later call sets others), "
        "captured-default = no ids and the function then captures, so the defaults persist in what it captured; "
        "null: the site calls no setter."))


@dataclass(frozen=True, kw_only=True, eq=False)
class Gate:
    DEF: ClassVar[str] = "gate"
    OPEN: ClassVar[bool] = True
    path: str
    line: int = fld(minimum=0)
    methods: list[str]
    allow_list: list[str]
    list_name: str | None
    list_line: int = fld(minimum=0)
    config_attr: str
    match: str
    error: str


@dataclass(frozen=True, kw_only=True, eq=False)
class Runner:
    sites: list[RunnerSite]
    config_key: str | None
    fallback: list[str]
    setter: list[str]
    pp_verifier: str | None
    pp_flag: str | None
    gates: list[Gate]
    notes: list[str]


@dataclass(frozen=True, kw_only=True, eq=False)
class Registry:
    path: str | None
    architectures: int = fld(minimum=0)
    note: str


@dataclass(frozen=True, kw_only=True, eq=False)
class StatusCounts:
    supported: int = fld(minimum=0)
    unsupported: int = fld(minimum=0)
    wrapper_gap: int = fld(name="wrapper-gap", minimum=0)
    partial: int = fld(minimum=0)
    unknown: int = fld(minimum=0)


@dataclass(frozen=True, kw_only=True, eq=False)
class SeverityCounts:
    error: int = fld(minimum=0)
    warning: int = fld(minimum=0)
    note: int = fld(minimum=0)


@dataclass(frozen=True, kw_only=True, eq=False)
class Summary:
    statuses: StatusCounts
    findings: SeverityCounts
    targeted: list[str]


@dataclass(frozen=True, kw_only=True, eq=False)
class Step:
    DEF: ClassVar[str] = "step"
    DESCRIPTION: ClassVar[str] = "One link of an evidence chain."
    kind: str
    text: str
    path: str | None
    line: int | None


@dataclass(frozen=True, kw_only=True, eq=False)
class Architecture:
    DEF: ClassVar[str] = "architecture"
    name: str
    module: str
    class_: str = fld(name="class")
    supports_eagle3: bool | None = fld(description="Whether the class passes the engine's own EAGLE-3 check (the "
                                       "one `contract` describes); null when the tool cannot tell.")
    status: Status
    reason: str
    path: str | None
    line: int | None
    inner: list[str]
    evidence: list[Step]


@dataclass(frozen=True, kw_only=True, eq=False)
class Edit:
    DEF: ClassVar[str] = "edit"
    DESCRIPTION: ClassVar[str] = ("Replace the text between (line, col) and (end_line, end_col), 1-based lines and "
                                  "0-based character columns, with new_text; an insertion has an empty span.")
    path: str
    line: int = fld(minimum=1)
    col: int = fld(minimum=0)
    end_line: int = fld(minimum=1)
    end_col: int = fld(minimum=0)
    new_text: str


@dataclass(frozen=True, kw_only=True, eq=False)
class Fix:
    DEF: ClassVar[str] = "fix"
    title: str
    applicability: Applicability
    edits: list[Edit]


_FINGERPRINT_DOC = ("Stable across line shifts: rule, architecture, qualified symbol and the normalized flagged line; "
                    ":N numbers identical ones in location order.")


@dataclass(frozen=True, kw_only=True, eq=False)
class Finding:
    DEF: ClassVar[str] = "finding"
    rule: str = fld(pattern="^EGL[0-9]{3}$")
    name: str
    severity: Severity
    message: str
    path: str = fld(description="Relative to the tree root (after --path-prefix).")
    line: int = fld(minimum=1)
    column: int = fld(minimum=1)
    end_line: int = fld(minimum=1)
    end_column: int = fld(minimum=1)
    architecture: str | None
    architectures: list[str] | Absent = opt(
        description="Every architecture the finding concerns, sorted; architecture is one of them. Empty when it "
                    "concerns no architecture in particular (a file every target runs through).")
    symbol: str | None
    related: list[Step]
    fix: Fix | None
    fingerprint: str | Absent = opt(pattern="^[0-9a-f]{32}:[1-9][0-9]*$", description=_FINGERPRINT_DOC)
    title: str | Absent = opt(description="The finding in short: the first sentence of its message.")
    engine: Engine | Absent = opt(description="The engine whose tree the finding is about.")


@dataclass(frozen=True, kw_only=True, eq=False)
class Suppression:
    kind: Literal["inSource", "external"] = fld(
        description="inSource: an # eagle3-lint: ignore[...] comment; external: the baseline.")
    justification: str
    path: str | None
    line: int | None


@dataclass(frozen=True, kw_only=True, eq=False)
class SuppressedFinding(Finding):
    DEF: ClassVar[str] = "suppressed_finding"
    DESCRIPTION: ClassVar[str] = "A finding that was not reported, and why."
    suppression: Suppression


@dataclass(frozen=True, kw_only=True, eq=False)
class ErrorEntry:
    where: str
    message: str


@dataclass(frozen=True, kw_only=True, eq=False)
class BaselineEntry:
    """One entry of a baseline file. The report passes stale entries on as the file has them (it is
    the user's file), so ``Baseline.stale`` holds mappings documented by this class."""

    DEF: ClassVar[str] = "baseline_entry"
    OPEN: ClassVar[bool] = True
    fingerprint: str
    rule: str
    architecture: str | None
    symbol: str
    path: str
    snippet: str


@dataclass(frozen=True, kw_only=True, eq=False)
class Baseline:
    DEF: ClassVar[str] = "baseline"
    DESCRIPTION: ClassVar[str] = ("The baseline (--baseline / --write-baseline): entries it holds, how many current "
                                  "findings it matched, how many are new, and the entries nothing matched any more.")
    ITEMS: ClassVar[dict[str, type]] = {"stale": BaselineEntry}  # mappings read from the file, documented so
    path: str
    written: bool
    entries: int = fld(minimum=0)
    matched: int = fld(minimum=0)
    new: int = fld(minimum=0)
    stale: list[Mapping[str, Json]]
    failure: str | Absent = opt(
        description="With CI=true and stale entries: why the run fails although no finding is new."
    )


@dataclass(frozen=True, kw_only=True, eq=False)
class Draft:
    DESCRIPTION: ClassVar[str] = (
        "With --draft-config: the drafter analysis behind EGL007 (report/draft.py): the aux layer ids the runner "
        "would use and where they come from, the model default, the capture points in the decoder loop, the "
        "drafter's fc width and, with --pipeline-parallel, the layer split per rank.")
    OPEN: ClassVar[bool] = True
    path: Json
    architecture: Json
    speculators_format: Json
    conversion_error: Json
    fields: Json
    runner: Json
    default: Json
    effective_ids: Json
    effective_from: Json
    target: Json
    capture: Json
    fc: Json
    pipeline_parallel: Json
    notes: Json


@dataclass(frozen=True, kw_only=True, eq=False)
class EntryPoint:
    name: str
    value: str
    source: str


@dataclass(frozen=True, kw_only=True, eq=False)
class Registration:
    OPEN: ClassVar[bool] = True
    architecture: str = fld(required=False)
    module: str = fld(required=False)
    class_: str = fld(name="class", required=False)
    path: str = fld(required=False)
    line: int = fld(required=False)
    form: str = fld(required=False, description="How the class is named in the register call: string or class.")
    conditional: bool = fld(required=False, description="The register call sits behind a guard (if, try, early "
                                                         "return); the guard is not evaluated.")
    conditions: list[Condition] = fld(required=False)
    overrides: str | None = fld(required=False, description="The built-in (or earlier plugin's) class it replaces.")
    via: list[str] = fld(required=False, description="The helper calls from the entry point to the register call.")


@dataclass(frozen=True, kw_only=True, eq=False)
class Condition:
    kind: str
    text: str
    path: str
    line: int


@dataclass(frozen=True, kw_only=True, eq=False)
class Unresolved:
    path: str
    line: int
    reason: str
    conditional: bool
    conditions: list[Condition]
    via: list[str]


@dataclass(frozen=True, kw_only=True, eq=False)
class Unreached:
    path: str
    line: int


@dataclass(frozen=True, kw_only=True, eq=False)
class Plugin:
    OPEN: ClassVar[bool] = True
    name: str
    root: str = fld(required=False, description="The plugin's folder on disk.")
    prefix: str = fld(required=False)
    kind: str
    files: int = fld(required=False, minimum=0)
    entry_points: list[EntryPoint] = fld(required=False)
    registrations: list[Registration]
    unresolved: list[Unresolved] = fld(required=False, description="Register calls the tool could not resolve.")
    unreached: list[Unreached] = fld(required=False, description="Register calls no entry point reaches.")
    notes: list[str]


@dataclass(frozen=True, kw_only=True, eq=False)
class ServingStep:
    DEF: ClassVar[str] = "serving_step"
    DESCRIPTION: ClassVar[str] = "One gate the engine applies when it serves the target with the drafter, in order."
    gate: ServingGate
    result: StepResult
    path: str | None
    line: int | None
    message: str


@dataclass(frozen=True, kw_only=True, eq=False)
class ServingVerdict:
    DEF: ClassVar[str] = "serving_verdict"
    DESCRIPTION: ClassVar[str] = ("Whether serving with an EAGLE-3 drafter gets this architecture to run: the "
                                  "first step that fails, in serving order, decides the outcome.")
    architecture: str
    engine: Engine
    engine_version: str
    runner: Literal["v1", "v2"] | None
    runner_reason: str = fld(description="Why this runner: the release's own choice, or --runner.")
    outcome: ServingOutcome
    stage: ServingGate | None = fld(description="The step that decided the outcome; null when servable.")
    aux_layer_ids: list[int] | None
    aux_layer_ids_source: Literal["drafter-config", "model-default"] | None
    captured_layers: list[int] | None = fld(
        description="Absolute layers whose entering hidden state is collected (vLLM numbering), per the PP split.")
    drafter_trained_ids: list[int] | None = fld(
        description="The layers the drafter was trained on, in vLLM numbering (the state entering layer k).")
    drafter_convention: Literal["vllm", "sglang"] | None = fld(
        description="How the drafter config's ids were read: assumed from where they sit, or --drafter-convention.")
    drafter_architecture: str | None
    pipeline_parallel: int = fld(minimum=1)
    tensor_parallel: int | None = fld(description="Recorded from -tp; it does not change what is captured.")
    platform: Literal["cuda", "rocm", "cpu", "xpu", "unspecified"] = fld(required=False, description=(
        "The platform the chain was evaluated for (--platform): the runner vLLM picks there and the model classes "
        "a platform dispatch in the tree resolves to."))
    steps: list[ServingStep]
    next_step: str | None


@dataclass(frozen=True, kw_only=True, eq=False)
class Scope:
    DESCRIPTION: ClassVar[str] = (
        "What the report holds. With --arch (and no --all) findings and architectures are those of the targets, "
        "as in the text report: a finding is kept when a target's serving path runs through it.")
    targets: list[str] = fld(description="The targeted architectures; empty: the whole tree.")
    complete: bool = fld(description="Every finding and every architecture of the tree is in the report.")
    findings_left_out: int = fld(minimum=0, description="Findings about other architectures only, not listed.")
    architectures_left_out: int = fld(minimum=0, description="Architecture rows not listed (not targeted).")


@dataclass(frozen=True, kw_only=True, eq=False)
class Report:
    """The whole report; the order of the fields is the order of the keys."""

    schema_version: int = fld(const=SCHEMA_VERSION)
    tool: Tool
    target: Target
    contract: Contract
    runner: Runner
    registry: Registry
    summary: Summary
    architectures: list[Architecture]
    findings: list[Finding] = fld(description="Reported findings (not suppressed); they decide the exit code.")
    errors: list[ErrorEntry]
    draft: Draft | Absent = opt()
    plugins: list[Plugin] | Absent = opt(
        description="With --plugin: each plugin's entry points and the architectures it registers (plugins.py).")
    suppressed: list[SuppressedFinding] | Absent = opt(
        description="Findings silenced by an inline comment or the baseline; they do not count.")
    baseline: Baseline | None | Absent = opt()
    config: str | None | Absent = opt(description="The configuration file used, if any.")
    serving: list[ServingVerdict] | Absent = opt(
        description="The serving verdict of every targeted architecture (eagle3_lint/serving.py).")
    scope: Scope | Absent = opt()


# -- building and dumping -------------------------------------------------------------------------------------------
def from_mapping(cls: type[Any], data: Mapping[str, Any]) -> Any:
    """``cls`` from a JSON-shaped mapping (by JSON names); a key the model does not declare is an error, so a
    section's builder cannot grow the report past its schema."""
    names = {_json_name(f): f.name for f in dataclasses.fields(cls)}
    unknown = [k for k in data if k not in names]
    if unknown:
        raise TypeError(f"report model {cls.__name__} has no field {unknown}: "
                        "declare it in eagle3_lint/report/schema.py")
    return cls(**{names[k]: v for k, v in data.items()})


def dump(obj: Any) -> Any:
    """The model as JSON-shaped values: dataclasses to dicts in field order (``ABSENT`` fields left out), enums
    to their values, tuples to lists."""
    cls = type(obj)
    if cls in _PLAIN:
        return obj
    plan = _PLANS.get(cls)
    if plan is None and dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        plan = _PLANS[cls] = tuple((f.name, _json_name(f)) for f in dataclasses.fields(obj))
    if plan is not None:
        out: dict[str, Any] = {}
        for attr, key in plan:
            v = getattr(obj, attr)
            if v is not ABSENT:
                out[key] = dump(v)
        return out
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, Mapping):
        return {k: dump(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [dump(v) for v in obj]
    return obj


_PLANS: dict[type, tuple[tuple[str, str], ...]] = {}  # per model class: (attribute, JSON key) in field order
_PLAIN = frozenset({str, int, float, bool, type(None)})


def dump_object(obj: Any) -> dict[str, Any]:
    """``dump`` of a model object (a dict)."""
    out = dump(obj)
    assert isinstance(out, dict), type(obj)
    return out


# -- the generator --------------------------------------------------------------------------------------------------
def _json_name(f: dataclasses.Field[Any]) -> str:
    return str(f.metadata.get("name", f.name))


_SCALARS: dict[Any, str] = {str: "string", int: "integer", bool: "boolean", float: "number"}


class _Generator:
    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}

    def type_schema(self, tp: Any, item_hint: type | None = None) -> dict[str, Any]:
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin in (Union, types.UnionType):
            members = [a for a in args if a is not Absent]
            nullable = type(None) in members
            rest = [a for a in members if a is not type(None)]
            if len(rest) != 1:
                raise TypeError(f"unsupported union {tp!r}")
            inner = self.type_schema(rest[0], item_hint)
            return self._nullable(inner) if nullable else inner
        if origin is Literal:
            return {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
        if tp is Engine:
            from eagle3_lint import engines

            return {"enum": list(engines.names())}
        if origin in (list, tuple):
            return {"type": "array", "items": self.type_schema(args[0], item_hint)}
        if tp is Json:
            return {}
        if origin is not None and issubclass(origin, Mapping):  # a mapping documented by a model class
            if item_hint is None:
                raise TypeError(f"mapping {tp!r} without a documenting class")
            return self.type_schema(item_hint)
        if tp in _SCALARS:
            return {"type": _SCALARS[tp]}
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            schema = {"enum": [m.value for m in tp]}
            name = _ENUM_DEFS.get(tp)
            if name is None:
                return schema
            self.defs.setdefault(name, schema)
            return {"$ref": f"#/$defs/{name}"}
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            name = tp.__dict__.get("DEF")
            if name is None:
                return self.object_schema(tp)
            if name not in self.defs:
                self.defs[name] = None  # reserve the slot (and stop recursion)
                self.defs[name] = self.object_schema(tp)
            return {"$ref": f"#/$defs/{name}"}
        raise TypeError(f"no schema for {tp!r}")

    @staticmethod
    def _nullable(inner: dict[str, Any]) -> dict[str, Any]:
        if isinstance(inner.get("type"), str):
            return {**inner, "type": [inner["type"], "null"]}
        if "enum" in inner:
            return {**inner, "enum": [*inner["enum"], None]}
        return {"oneOf": [{"type": "null"}, inner]}

    def object_schema(self, cls: type[Any]) -> dict[str, Any]:
        hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
        items: dict[str, type] = getattr(cls, "ITEMS", {})
        props: dict[str, Any] = {}
        required: list[str] = []
        for f in dataclasses.fields(cls):
            name = _json_name(f)
            meta = f.metadata
            schema = self.type_schema(hints[f.name], items.get(f.name))
            if "const" in meta:
                schema = {"const": meta["const"]}
            for key in ("pattern", "minimum", "description"):
                if key in meta:
                    schema[key] = meta[key]
            props[name] = schema
            if meta.get("required", f.default is not ABSENT):
                required.append(name)
        out: dict[str, Any] = {"type": "object"}
        if cls.__dict__.get("DESCRIPTION"):
            out["description"] = cls.__dict__["DESCRIPTION"]
        if required:
            out["required"] = required
        out["properties"] = props
        if getattr(cls, "OPEN", False):
            out["additionalProperties"] = True
        return out


def report_schema() -> dict[str, Any]:
    """The JSON Schema of the report, generated from ``Report``."""
    gen = _Generator()
    body = gen.object_schema(Report)
    # $defs in a fixed reading order (the order of schema_version 1's hand-written file), new ones after.
    rank = {name: i for i, name in enumerate(_DEF_ORDER)}
    defs = dict(sorted(gen.defs.items(), key=lambda kv: rank.get(kv[0], len(rank))))
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://github.com/eagle3-lint/eagle3-lint/blob/main/eagle3_lint/data/report.schema.json",
        "title": "eagle3-lint JSON report (eagle3-lint check --format json)",
        "description": ("Fields are only ever added within a schema_version; a breaking change bumps schema_version. "
                        "Consumers should ignore fields they do not know."),
        **body,
        "$defs": defs,
    }


def schema_text() -> str:
    """The schema as the data file and ``eagle3-lint schema json`` hold it."""
    return json.dumps(report_schema(), indent=2) + "\n"
