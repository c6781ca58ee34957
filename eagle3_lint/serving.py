"""The serving verdict, as data: will this release serve this target with this EAGLE-3 drafter, and
capture the layers the drafter was trained on?

Per targeted architecture, the engine (``Engine.serving_verdict``) builds a chain of steps in serving
order, each with the file:line it comes from and a result (pass, fail, unchecked, unknown, skipped).
The outcome is the first step that fails (or that the tree leaves unknown), in that order; when every
step that could be checked passes and some could not, the outcome is ``unchecked`` with those steps
named, never ``servable``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from eagle3_lint.model import Location
from eagle3_lint.runner import RunnerKind

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


# Outcomes a failing step decides under which serving goes on: the drafter loads and runs (EGL011 reports why).
RUNS = frozenset({Outcome.DRAFTER_DIFFERS})
