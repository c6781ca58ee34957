"""The steps of a serving chain that read the semantic model, the same for every engine: the registry and import
steps at a model file the engine cannot read, the one next step of a chain, and the blockers no rule reported.

The chain's data (``ServingVerdict``, its steps and outcomes) is serving.py's and reads nothing; the engines' chain
builders (``engines/<engine>/serving.py``) call these with the model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from eagle3_lint import engine_hooks
from eagle3_lint.model import Location
from eagle3_lint.serving import LOAD_FIRST, RUNS, Gate, Outcome, ServingStep, StepResult

if TYPE_CHECKING:
    from eagle3_lint.model import Finding
    from eagle3_lint.modeldata import Broken
    from eagle3_lint.stages import Model


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
        sv = engine_hooks.serving_verdict(sm, arch)
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
