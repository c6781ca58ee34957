"""The answer first: one verdict line per targeted architecture, its next step, and its findings.

``verdict_line(an, arch)`` is the single place the first line of a text report comes from. It
uses the serving verdict (``an.serving[arch]``, the ordered chain of gates ``vllm serve`` applies)
when the context carries one for ``arch``, and otherwise the class verdict (``an.verdicts[arch]``:
does the class the runner interrogates pass ``supports_eagle3()``, and what the runner does when it
does not) together with the config-time gate findings (EGL009).

A finding *concerns* a target when the target's serving path runs through it: it names that
architecture, or it names no architecture and sits on a class the target's object graph reaches
(the class, its MRO, the inner models it delegates to and theirs), or in a file every target runs
through (the registry, the interfaces, the runner, the config gates: anything outside the model
folders). EGL005 on a forward the target runs concerns it; on a forward it never runs, it does not.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from eagle3_lint import semantic as sem
from eagle3_lint.model import Applicability, Finding, Severity, Status
from eagle3_lint.rules import Role, with_role
from eagle3_lint.serving import PLATFORM_LABEL

if TYPE_CHECKING:
    from eagle3_lint.stages import Analysis

# Serving outcomes (the serving-verdict contract) in words for the verdict line.
_OUTCOME_WORDS = {
    "unregistered": "not registered, so the engine cannot load it",
    "unimportable": "cannot be imported",
    "refused-at-config": "refused at config time",
    "drafter-unloadable": "the drafter cannot be built",
    "refused-at-load": "refused at load",
    "pp-refused": "refused with pipeline parallelism",
    "crashes-at-warm-up": "loads, then the target's forward crashes at warm-up",
    "drafter-shape-mismatch": "the drafter's fc input does not match the captured states",
    "pp-loses-states": "aux states captured on earlier pipeline ranks never reach the drafter",
    "drafter-differs": "runs, but builds a different drafter than the one trained",
    "wrong-layers": "runs, but captures other layers than the drafter was trained on",
    "servable": "servable with EAGLE-3",
    "unknown": "unknown",
    "unchecked": "no serving step fails, but not every step could be checked",
}
# A failing serving step named by its gate, for the second and later failures on one line.
_STEP_WORDS = {
    "registry": "not registered", "import": "at import", "config-gate": "at config time",
    "drafter-class": "at drafter load",
    "runner-interface": "at load", "pp-verifier": "with pipeline parallelism", "drafter-fc": "at the drafter's fc",
    "pp-relay": "across pipeline ranks", "target-forward": "in the target's forward",
    "trained-layers": "trained layers differ",
}


def _value(x: Any) -> str:
    """A str-enum member or a plain string, as its string value."""
    return str(getattr(x, "value", x))


def _where(loc: Any) -> str:
    if loc is None:
        return ""
    path, line = getattr(loc, "path", None), getattr(loc, "line", None)
    return f"{path}:{line}" if path and line else (str(path) if path else "")


def serving_of(an: Analysis, arch: str) -> Any | None:
    """The serving verdict of ``arch``, when the analysis produced one."""
    serving = getattr(an, "serving", None)
    if not isinstance(serving, dict):
        return None
    return serving.get(arch)


# -- which findings concern a target -----------------------------------------------------------
def concerns(an: Analysis, f: Finding, arch: str) -> bool:
    """Whether ``arch``'s serving path runs through finding ``f`` (see the module docstring; semantic.concerns)."""
    return sem.concerns(an.model, f, arch)


def split(an: Analysis, findings: Iterable[Finding],
          targets: Sequence[str] | None = None) -> tuple[list[Finding], list[Finding]]:
    """(findings that concern a target, the rest); everything is "targeted" when there is no target."""
    archs = tuple(an.targeted if targets is None else targets)
    mine: list[Finding] = []
    rest: list[Finding] = []
    for f in findings:
        (mine if not archs or any(concerns(an, f, a) for a in archs) else rest).append(f)
    return mine, rest


def most_severe_first(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (-f.severity.rank, *f.sort_key()))


# -- the verdict line --------------------------------------------------------------------------
def _class_phrases(an: Analysis, arch: str, findings: Sequence[Finding]) -> list[str]:
    """What refuses (or lets through) ``arch``, in serving order: the config gate, then the runner."""
    v = an.verdicts[arch]
    out: list[str] = []
    gate_rule = with_role(Role.CONFIG_GATE).id
    gate = [f for f in findings if f.rule == gate_rule and f.architecture == arch]
    gates = [g for g in an.runner.gates if "eagle3" in g.methods]
    if any(f.severity is Severity.ERROR for f in gate):
        g = gates[0] if gates else None
        out.append(f"refused at config time ({g.path}:{g.line})" if g else "refused at config time")
    elif gate and gates:
        g = gates[0]
        out.append(f"config gate ({g.path}:{g.line}) unchecked")
    site = an.runner.primary
    where = f" ({site.path}:{site.line})" if site is not None else ""
    if v.status is Status.SUPPORTED:
        out.append(f"passes {an.contract.check_name}{where}")
    elif v.status is Status.UNKNOWN:
        out.append(f"unknown: {v.reason}")
    elif site is not None and site.checked and not site.negated:
        out.append(f"fails {an.contract.check_name}: aux layers silently not set{where}")
    else:
        out.append(f"refused at load{where}")
    return out


def _serving_phrase(sv: Any, method: str | None = None) -> str:
    outcome = _value(getattr(sv, "outcome", "unknown"))
    steps = list(getattr(sv, "steps", ()) or ())
    failing = [s for s in steps if _value(getattr(s, "result", "")) == "fail"]
    words = _OUTCOME_WORDS.get(outcome, outcome)
    if outcome == "servable" and method and method.upper() != "EAGLE3":
        words = f"servable with {method}"  # --method: the chain was that method's
    if outcome in ("unknown", "unchecked"):
        step = next((s for s in steps if _value(getattr(s, "result", "")) == "unchecked"), None)
        if step is not None:
            loc = _where(getattr(step, "location", None))
            return f"{words} ({_value(step.gate)}{': ' + loc if loc else ''})"
        return words
    if not failing:
        return words
    # The step that decided: a failure serving runs on after (``runs_on``) may come before it.
    stage = _value(getattr(sv, "stage", None) or "")
    first = next((s for s in failing if _value(s.gate) == stage), failing[0])
    loc = _where(getattr(first, "location", None))
    nxt = next((s for s in failing if s is not first), None)
    nloc = _where(getattr(nxt, "location", None)) if nxt is not None else ""
    if nxt is not None and loc and nloc and _value(nxt.gate) == _value(first.gate):
        # The same gate twice (0.16.0's model_type allow-list and its PP check, both at config time): its words once,
        # with both places.
        path, _, line = nloc.rpartition(":")
        loc += f" and :{line}" if path == loc.rpartition(":")[0] else f" and {nloc}"
        nxt = None
    text = f"{words} ({loc})" if loc else words
    # A gate before the first failure that could not be checked would refuse it earlier still: say so.
    before = steps[: steps.index(first)]
    gate = next((s for s in before if _value(getattr(s, "result", "")) == "unchecked"
                 and _value(getattr(s, "gate", "")) == "config-gate"), None)
    if gate is not None:
        gloc = _where(getattr(gate, "location", None))
        text = f"config gate{f' ({gloc})' if gloc else ''} unchecked and {text}"
    if nxt is not None:
        said = "a different drafter runs" if getattr(nxt, "runs_on", None) else \
            _STEP_WORDS.get(_value(nxt.gate), _value(nxt.gate))
        text += f" and {said}" + (f" ({nloc})" if nloc else "")
    return text


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def verdict_line(an: Analysis, arch: str, findings: Sequence[Finding] | None = None) -> str:
    """``ARCH on <engine> X: what stops it (path:line) -- N blockers``, from the serving verdict when present."""
    fs = list(an.findings if findings is None else findings)
    mine = [f for f in fs if concerns(an, f, arch)]
    blockers = sum(1 for f in mine if f.severity is Severity.ERROR)
    sv = serving_of(an, arch)
    if sv is not None:
        what = _serving_phrase(sv, an.options.method)
    elif arch in an.verdicts:
        phrases = _class_phrases(an, arch, fs)
        if len(phrases) == 2 and phrases[0].startswith("refused ") and phrases[1].startswith("refused "):
            phrases[1] = phrases[1][len("refused "):]  # "refused at config time (...) and at load (...)"
        what = " and ".join(phrases)
    else:
        what = "not in this tree's registry"
    failing = sum(1 for st in (getattr(sv, "steps", ()) or ()) if _value(getattr(st, "result", "")) == "fail")
    if blockers and sv is not None and not failing:
        # The rules found what the chain could not see from here (no drafter config, a step it does not model).
        rules = ", ".join(sorted({f.rule for f in mine if f.severity is Severity.ERROR}))
        tail = f" -- {_count(blockers, 'blocker')} the rules found ({rules})"
    elif blockers:
        tail = f" -- {_count(blockers, 'blocker')}"
    elif failing:
        # The chain fails but no error finding is shown: the rules that report it were left out or silenced, or no
        # rule covers the step (the platform's runner refusing speculative decoding).
        tail = (f" -- {_count(failing, 'blocker')} no finding reports (a rule ignored, suppressed or in the baseline, "
                "or a step no rule covers)")
    else:
        tail = " -- no blocker found"
    return f"{arch} on {an.engine.display} {an.version} ({PLATFORM_LABEL[an.options.platform]}): {what}{tail}"


def fixable(findings: Iterable[Finding], unsafe: bool) -> tuple[int, int]:
    """(fixes ``--fix`` applies with these settings, unsafe fixes it holds back)."""
    now = later = 0
    for f in findings:
        if f.fix is None:
            continue
        if f.fix.applicability is Applicability.SAFE or unsafe:
            now += 1
        else:
            later += 1
    return now, later


def next_step(an: Analysis, arch: str, findings: Sequence[Finding], invocation: str,
              unsafe: bool = False) -> str | None:
    """The one command to run next for ``arch`` (a patch, a config to pass), or None when done."""
    sv = serving_of(an, arch)
    hint = getattr(sv, "next_step", None) if sv is not None else None
    from eagle3_lint.serving import LOAD_FIRST

    if hint and getattr(sv, "outcome", None) in LOAD_FIRST:
        return str(hint)  # serving_steps.next_step's: nothing else matters until the engine can load the model
    mine = [f for f in findings if concerns(an, f, arch)]
    # A note's fix is there for who wants it (the summary line counts it); it is not the next thing to do.
    now, later = fixable([f for f in mine if f.severity is not Severity.NOTE], unsafe)
    parts: list[str] = []
    if now or later:
        flag = " --fix" + (" --unsafe-fixes" if later else "")
        parts.append(f"{invocation}{flag}")
    if hint and not ((now or later) and "--fix" in str(hint)):  # the command above already says it
        parts.append(str(hint))
    elif any(f.rule == with_role(Role.CONFIG_GATE).id and f.severity is Severity.NOTE for f in mine):
        parts.append("--target-config config.json checks the gate")
    elif not parts and any(f.severity is Severity.ERROR for f in mine) and invocation.startswith("eagle3-lint check"):
        # A blocker with no fix and no serving chain to say more: the trace shows the classes the runner reaches.
        parts.append(invocation.replace("eagle3-lint check", "eagle3-lint trace", 1)
                     + " shows what the runner reaches (no automatic fix)")
    return "; ".join(parts) if parts else None
