"""ToyServe's serving chain, in the order ``toyserve.worker.load`` meets it: ``registry`` (a CATALOG entry) ->
``import`` (only failing) -> ``runner-interface`` (``hasattr(model, "tap_layers")``, else ``RuntimeError``) ->
``aux-ids`` (the drafter config's ``tap_ids``) -> ``capture`` -> ``trained-layers``. The drafter is not modelled:
with a drafter config the last three are unknown, without one unchecked. Built from the core's neutral pieces
(``eagle3_lint.serving``) and the class verdicts; nothing here reads a file.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from eagle3_lint.model import Location
from eagle3_lint.runner import MODEL_CLASS
from eagle3_lint.serving import (
    Gate,
    Outcome,
    ServingStep,
    ServingVerdict,
    StepResult,
    outcome_of,
)
from eagle3_lint.serving_steps import import_step, next_step, unregistered_step
from eagle3_lint_toyengine import IDS_KEY, SETTER

if TYPE_CHECKING:
    from collections.abc import Sequence

    from eagle3_lint.model import Finding
    from eagle3_lint.stages import Model

HINTS = {
    Outcome.UNREGISTERED: "this ToyServe has no CATALOG entry for the architecture: use a release that has it",
    Outcome.REFUSED_AT_LOAD: "",  # the fix the findings hold, or the trace
}


def verdict(sm: Model, arch: str) -> ServingVerdict:
    return sm.memo.get(f"toyserve:serving:{arch}", lambda: _verdict(sm, arch))


def _verdict(sm: Model, arch: str) -> ServingVerdict:
    steps: list[ServingStep] = []
    entry = sm.registry.entries.get(arch)
    if entry is None:
        steps.append(unregistered_step(sm, arch, Location(sm.registry.path, 1) if sm.registry.path else None))
        return _finish(sm, arch, steps)
    steps.append(ServingStep(Gate.REGISTRY, StepResult.PASS, f"{arch} -> {entry.module}.{entry.class_name}",
                             Location(sm.registry.path, entry.line)))
    imported = import_step(sm, arch)
    if imported is not None:
        steps.append(imported)
        return _finish(sm, arch, steps)
    steps.append(_interface(sm, arch))
    site = sm.runner.primary
    where = Location(site.path, site.line) if site is not None else None
    if sm.options.draft_config is None:
        steps.append(ServingStep(Gate.AUX_IDS, StepResult.UNCHECKED,
                                 f"no drafter config (--draft-config): the {IDS_KEY} the worker passes are not known",
                                 where))
        steps += [ServingStep(g, StepResult.UNCHECKED, "needs the drafter config")
                  for g in (Gate.CAPTURE, Gate.TRAINED_LAYERS)]
    else:
        steps += [ServingStep(g, StepResult.UNKNOWN, "ToyServe's drafter is not modelled", where)
                  for g in (Gate.AUX_IDS, Gate.CAPTURE, Gate.TRAINED_LAYERS)]
    return _finish(sm, arch, steps)


def _interface(sm: Model, arch: str) -> ServingStep:
    site = sm.runner.primary
    v = sm.verdicts.get(arch)
    if site is None:
        return ServingStep(Gate.RUNNER_INTERFACE, StepResult.UNKNOWN, f"no worker call of {SETTER}() found")
    where = Location(site.path, site.line)
    call = f"{site.interrogated}.{SETTER}()"
    if v is None or v.supports_eagle3 is None:
        return ServingStep(Gate.RUNNER_INTERFACE, StepResult.UNKNOWN,
                           f"{call}: {v.reason if v is not None else 'the class cannot be resolved'}", where)
    if not v.supports_eagle3:
        return ServingStep(Gate.RUNNER_INTERFACE, StepResult.FAIL,
                           f"{call}: {v.class_name} has no {SETTER} ({v.reason}): "
                           f"{site.error.replace(MODEL_CLASS, v.class_name)}", Location(site.path, site.error_line))
    return ServingStep(Gate.RUNNER_INTERFACE, StepResult.PASS, f"{call} exists on {v.class_name}", where)


def _finish(sm: Model, arch: str, steps: list[ServingStep]) -> ServingVerdict:
    outcome, stage = outcome_of(steps)
    return ServingVerdict(
        architecture=arch, engine=sm.engine.name, engine_version=sm.version, runner=None,
        runner_reason="ToyServe has one worker", outcome=outcome, stage=stage, aux_layer_ids=None,
        aux_layer_ids_source=None, drafter_trained_ids=None, drafter_architecture=None, steps=tuple(steps),
        next_step=next_step(sm, arch, outcome, stage, steps, HINTS, ()), pipeline_parallel=1,
        tensor_parallel=sm.options.tensor_parallel, platform=sm.options.platform)


def with_next_step(sm: Model, sv: ServingVerdict, findings: Sequence[Finding]) -> ServingVerdict:
    nxt = next_step(sm, sv.architecture, sv.outcome, sv.stage, list(sv.steps), HINTS, findings)
    return sv if nxt == sv.next_step else dataclasses.replace(sv, next_step=nxt)
