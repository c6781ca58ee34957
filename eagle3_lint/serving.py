"""The serving verdict, as data: will this release serve this target with this EAGLE-3 drafter, and
capture the layers the drafter was trained on?

Per targeted architecture, the engine (``Engine.serving_verdict``) builds a chain of steps in serving
order, each with the file:line it comes from and a result (pass, fail, unchecked, unknown, skipped).
The outcome is the first step that fails (or that the tree leaves unknown), in that order; when every
step that could be checked passes and some could not, the outcome is ``unchecked`` with those steps
named, never ``servable``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from eagle3_lint.model import Location
from eagle3_lint.runner import RunnerKind

if TYPE_CHECKING:
    from eagle3_lint.model import Finding
    from eagle3_lint.semantic import Broken
    from eagle3_lint.stages import Model


# How the verdict line and trace name the platform a chain was evaluated for (--platform).
PLATFORM_LABEL = {"cuda": "CUDA", "rocm": "ROCm", "cpu": "CPU", "xpu": "XPU", "unspecified": "no accelerator"}


class Outcome(str, Enum):
    UNREGISTERED = "unregistered"
    UNIMPORTABLE = "unimportable"
    REFUSED_AT_CONFIG = "refused-at-config"
    DRAFTER_UNLOADABLE = "drafter-unloadable"
    REFUSED_AT_LOAD = "refused-at-load"
    PP_REFUSED = "pp-refused"
    CRASHES_AT_WARM_UP = "crashes-at-warm-up"  # loads, then the target's own forward raises on its first run
    DRAFTER_SHAPE_MISMATCH = "drafter-shape-mismatch"
    PP_LOSES_STATES = "pp-loses-states"
    DRAFTER_DIFFERS = "drafter-differs"  # loads and runs, but a different drafter than the one trained (EGL011)
    WRONG_LAYERS = "wrong-layers"
    SERVABLE = "servable"
    UNKNOWN = "unknown"
    UNCHECKED = "unchecked"


class StepResult(str, Enum):
    PASS = "pass"
    FAIL = "fail"
    UNCHECKED = "unchecked"  # an input the user did not give (a config), so the tool could not check it
    UNKNOWN = "unknown"  # the tree does not say
    SKIPPED = "skipped"  # does not apply (pipeline steps without pipeline parallelism)


class Gate(str, Enum):
    REGISTRY = "registry"
    IMPORT = "import"  # the engine imports the model module (and what it imports) to load the class
    CONFIG_GATE = "config-gate"
    DRAFTER_CLASS = "drafter-class"
    RUNNER_INTERFACE = "runner-interface"
    PP_VERIFIER = "pp-verifier"
    AUX_IDS = "aux-ids"
    CAPTURE = "capture"
    TARGET_FORWARD = "target-forward"  # the target's forward with the aux ids set, first run at warm-up
    DRAFTER_FC = "drafter-fc"
    PP_RELAY = "pp-relay"
    TRAINED_LAYERS = "trained-layers"


# What failing each gate means for serving (the order of ``Gate`` is vLLM's serving order).
FAILS_AS = {
    Gate.REGISTRY: Outcome.UNREGISTERED,
    Gate.IMPORT: Outcome.UNIMPORTABLE,
    Gate.CONFIG_GATE: Outcome.REFUSED_AT_CONFIG,
    Gate.DRAFTER_CLASS: Outcome.DRAFTER_UNLOADABLE,
    Gate.RUNNER_INTERFACE: Outcome.REFUSED_AT_LOAD,
    Gate.PP_VERIFIER: Outcome.PP_REFUSED,
    Gate.AUX_IDS: Outcome.DRAFTER_SHAPE_MISMATCH,
    Gate.CAPTURE: Outcome.DRAFTER_SHAPE_MISMATCH,
    Gate.TARGET_FORWARD: Outcome.CRASHES_AT_WARM_UP,
    Gate.DRAFTER_FC: Outcome.DRAFTER_SHAPE_MISMATCH,
    Gate.PP_RELAY: Outcome.PP_LOSES_STATES,
    Gate.TRAINED_LAYERS: Outcome.WRONG_LAYERS,
}


@dataclass(frozen=True)
class ServingStep:
    gate: Gate
    result: StepResult
    message: str
    location: Location | None = None
    # A failure after which serving goes on (the drafter loads, but is not the one trained): its outcome, which
    # decides only when no later step stops serving (``outcome_of``). None: the gate's FAILS_AS, which stops it.
    runs_on: Outcome | None = None
    # What the engine hits at a failing step, in a few words (``get_embed_and_head() raises AttributeError``), for
    # a title that names it ("": the gate and outcome say it).
    hit: str = ""


@dataclass(frozen=True)
class ServingVerdict:
    architecture: str
    engine: str
    engine_version: str
    runner: RunnerKind | None
    runner_reason: str
    outcome: Outcome
    stage: Gate | None
    aux_layer_ids: tuple[int, ...] | None
    aux_layer_ids_source: str | None  # "drafter-config" | "model-default"
    drafter_trained_ids: tuple[int, ...] | None  # vLLM's numbering: the state entering layer k
    drafter_architecture: str | None
    steps: tuple[ServingStep, ...]
    next_step: str | None = None
    captured_layers: tuple[int, ...] | None = None  # the layers whose entering state is collected, absolute
    pipeline_parallel: int = 1
    tensor_parallel: int | None = None
    trained_convention: str | None = None  # how the drafter's ids were read: "vllm" | "sglang" (assumed or stated)
    platform: str = "cuda"  # what the chain was evaluated for (--platform)

    @property
    def blockers(self) -> tuple[ServingStep, ...]:
        return tuple(s for s in self.steps if s.result is StepResult.FAIL)

    def step(self, gate: Gate) -> ServingStep | None:
        return next((s for s in self.steps if s.gate is gate), None)


def import_step(sm: Model, arch: str) -> ServingStep | None:
    """The engine's import of the model module, failing at the first file on ``arch``'s import path that cannot be
    read or parsed (semantic.broken_on_path); None when every such file parses (the step is shown only failing)."""
    from eagle3_lint import semantic as sem

    broken = sem.broken_on_path(sm, arch)
    if not broken:
        return None
    more = f" (and {len(broken) - 1} more file{'s' if len(broken) > 2 else ''})" if len(broken) > 1 else ""
    said, where = _broken_file(broken[0], "")
    return ServingStep(Gate.IMPORT, StepResult.FAIL, f"loading {arch} imports {said}{more}: the import fails, so "
                       f"{sm.engine.display} cannot load the model", where)


def unregistered_step(sm: Model, arch: str, registry: Location | None) -> ServingStep:
    """The registry step of an architecture no entry names: at the broken model file that names it, if one does
    (its entry could not be read from there), else at the registry."""
    from eagle3_lint import semantic as sem

    broken = sem.broken_on_path(sm, arch)
    head = f"{arch} is not in this {sm.engine.display}'s model registry"
    if broken:
        said, where = _broken_file(broken[0], "names it, ")
        return ServingStep(Gate.REGISTRY, StepResult.FAIL, f"{head}: {said}", where)
    return ServingStep(Gate.REGISTRY, StepResult.FAIL, head, registry)


def _broken_file(b: Broken, what_it_does: str) -> tuple[str, Location]:
    """``<path>, which <what_it_does>does not parse (...)`` (or ``cannot be read``) for the broken file ``b``
    (semantic.broken_on_path), and its place: the one wording of the import and registry steps."""
    words = b.why if b.why.startswith("cannot ") else f"does not parse ({b.why})"
    return f"{b.path}, which {what_it_does}{words}", Location(b.path, b.line)


def outcome_of(steps: Iterable[ServingStep]) -> tuple[Outcome, Gate | None]:
    """The first step that fails or that the tree leaves unknown decides; a failure serving runs on after
    (``runs_on``) only when no later one stops it; else unchecked steps; else servable."""
    steps = list(steps)
    soft: ServingStep | None = None
    for s in steps:
        if s.result is StepResult.FAIL and s.runs_on is not None:
            soft = soft or s
            continue
        if s.result is StepResult.FAIL:
            return FAILS_AS[s.gate], s.gate
        if s.result is StepResult.UNKNOWN:
            return Outcome.UNKNOWN, s.gate
    if soft is not None and soft.runs_on is not None:
        return soft.runs_on, soft.gate
    for s in steps:
        if s.result is StepResult.UNCHECKED:
            return Outcome.UNCHECKED, s.gate
    return Outcome.SERVABLE, None


# Outcomes where the engine never gets the model: its next step is the only one (report.headline.next_step puts no
# fix command before it), since no fix of the rules reaches past a model that does not load.
LOAD_FIRST = frozenset({Outcome.UNIMPORTABLE, Outcome.UNREGISTERED})


def next_step(sm: Model, arch: str, outcome: Outcome, stage: Gate | None, steps: list[ServingStep],
              hints: Mapping[Outcome, str], findings: Sequence[Finding]) -> str | None:
    """The one thing to do next: pass the configs an unchecked step needs, apply the fix ``findings`` hold for a
    step a fix repairs, or the engine's hint for the outcome (None for an empty one)."""
    unchecked = [s.gate.value for s in steps if s.result is StepResult.UNCHECKED]
    if outcome is Outcome.SERVABLE:
        return None
    if outcome is Outcome.UNCHECKED:
        needs = []
        if sm.options.target_config is None:
            needs.append("--target-config <model>/config.json")
        if sm.options.draft_config is None:
            needs.append("--draft-config <drafter>/config.json")
        return (f"pass {' and '.join(needs)} to check {', '.join(unchecked)}" if needs
                else f"not checked: {', '.join(unchecked)}")
    if outcome in LOAD_FIRST:
        from eagle3_lint import semantic as sem

        broken = sem.broken_on_path(sm, arch)
        if broken:
            return f"repair {broken[0].path}:{broken[0].line} by hand (no automatic fix), then check again"
    fixable = [f for f in findings if f.architecture == arch and f.fix is not None]
    if fixable and stage in (Gate.CONFIG_GATE, Gate.RUNNER_INTERFACE, Gate.CAPTURE, Gate.AUX_IDS):
        unsafe = any(f.fix is not None and f.fix.applicability.value == "unsafe" for f in fixable)
        # The method's own fixes (Engine.for_method): the command names it, as the check did.
        method = f" --method {sm.options.method}" if sm.options.method else ""
        return "patch it: eagle3-lint check TREE --arch " + arch + method + " --fix" + \
            (" --unsafe-fixes" if unsafe else "")
    # An empty hint: the engine has nothing better than what the report offers by itself (the trace).
    return hints.get(outcome, f"see the {stage.value if stage else ''} step") or None


# Outcomes a failing step decides under which serving goes on: the drafter loads and runs (EGL011 reports why).
RUNS = frozenset({Outcome.DRAFTER_DIFFERS})


def unreported_blockers(sm: Model, findings: Sequence[Finding]) -> list[Finding]:
    """A finding for each targeted architecture whose serving chain stops at a failing step that no error in
    ``findings`` (the rules that ran, before suppressions) reports on: the check must not exit 0 on a target the
    engine refuses (the rule declaring ``Role.UNREPORTED_BLOCKER``)."""
    from eagle3_lint import semantic as sem
    from eagle3_lint.model import Severity
    from eagle3_lint.rules import Role, fit, make, with_role

    meta = with_role(Role.UNREPORTED_BLOCKER)
    errors = [f for f in findings if f.severity is Severity.ERROR]
    method = sm.options.method or (sm.engine.spec_methods[0] if sm.engine.spec_methods else "")
    out: list[Finding] = []
    for arch in sm.targeted:
        sv = sm.engine.serving_verdict(sm, arch)
        if sv is None or sv.stage is None or sv.outcome in RUNS:
            continue
        step = next((s for s in sv.steps if s.gate is sv.stage and s.result is StepResult.FAIL), None)
        if step is None or any(sem.concerns(sm, f, arch) for f in errors):
            continue
        where = step.location or Location(sm.registry.path or "<registry>", 1)
        out.append(make(meta, f"{arch} does not serve with {method} on {sm.engine.display} {sm.version}: its serving "
                              f"chain stops at the {step.gate.value} step ({sv.outcome.value}), which no rule that "
                              f"ran reports: {step.message}", where, architecture=arch, symbol=step.gate.value,
                        title=fit(*([f"{arch}: {step.hit} under {method} ({sv.outcome.value} at the "
                                      f"{step.gate.value} step)", f"{arch}: {step.hit} under {method}",
                                      f"{arch}: {step.hit}"] if step.hit else []),
                                  f"{arch}: {sv.outcome.value} at the {step.gate.value} step under {method}",
                                  f"{arch}: {sv.outcome.value} at the {step.gate.value} step",
                                  f"{sv.outcome.value} at the {step.gate.value} step")))
    return out
