"""## What it does
Flags a decoder ``forward`` loop that enumerates a slice of its layer list without ``start=``,
``enumerate(islice(self.layers, self.start_layer, self.end_layer))`` or
``enumerate(self.layers[self.start_layer:self.end_layer])``, and then compares the index with
aux-layer ids: ``idx in self.aux_hidden_state_layers``, or ``idx`` / ``idx + 1`` passed to a
collector such as ``self._maybe_add_hidden_state``. It also flags the rebased variant: a loop that
does pass ``start=`` (the slice's own start, so the index is absolute) and then subtracts that
start again where it meets the aux ids, ``idx - self.start_layer + 1`` passed to the collector or
``idx - self.start_layer in self.aux_hidden_state_layers`` (``moss_audio.py`` in vLLM 0.33.0), and
the same subtraction in a ``for i in range(self.start_layer, self.end_layer)`` loop (SGLang's
decoders), whose index is absolute too. Every model class's ``forward`` in the tree is scanned;
each loop is reported once, wherever it is inherited from.

## Why is this bad?
``enumerate`` counts from 0 inside the slice, while the configured aux layers are absolute layer
ids; subtracting the slice start from an absolute index gives the same slice-relative count.
Under pipeline parallelism a rank holds layers ``[start_layer, end_layer)`` with
``start_layer != 0`` on every rank but the first, so it captures the wrong layers (or too few,
and the drafter's input projection fails on the shape).

Severity is read from the tree, along the serving chain. Where the runner has a pipeline-parallel
verifier (0.30+'s V2 runner: ``verify_supports_aux_hidden_states_over_pp``), EAGLE-3 runs with PP
only for decoders that set ``supports_aux_hidden_states_over_pp = True``: an error for those, a
warning (latent bug) otherwise, whose message says the V1 runner has no such verifier. Where the
drafter gets the target's pipeline-parallel size and no EAGLE-3 drafter class supports PP (0.10 to
0.29: ``SpeculativeConfig`` then refuses EAGLE-3 with PP at config time), the loop is latent: a
warning. Otherwise nothing refuses PP for EAGLE-3: an error when a registered architecture that
passes ``supports_eagle3()``, supports PP and is not refused by the config-time model_type gate runs
this ``forward``, a warning (latent) when none does. Under ``--arch``, a loop no named architecture
runs is at most a warning. A loop over a slice bound to a local first (``layers =
self.layers[s:e]``; ``enumerate(layers)``) counts too.

## Example
```python
for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer)):
    if idx in self.aux_hidden_state_layers:
        aux_hidden_states.append(hidden_states + residual)
```
Use instead:
```python
for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer), start=self.start_layer):
```
The rebased variant:
```python
for layer_idx, layer in enumerate(self.layers[self.start_layer : self.end_layer], start=self.start_layer):
    hidden_states, residual = layer(positions, hidden_states, residual)
    self._maybe_add_hidden_state(aux_hidden_states, layer_idx - self.start_layer + 1, hidden_states, residual)
```
Use instead:
```python
    self._maybe_add_hidden_state(aux_hidden_states, layer_idx + 1, hidden_states, residual)
```

## Fix safety
Safe: the fix adds ``start=<the slice's own start expression>`` to the ``enumerate`` call, a
one-line edit; for the rebased variant it deletes `` - <slice start>`` from each index that meets
the aux ids (keeping any ``+ 1``), and attaches no fix when parentheses or a comment sit inside
that span. With ``start_layer == 0`` (no pipeline parallelism) nothing changes; with PP the
index becomes the absolute layer id the aux list holds. Under ``--arch``, a loop that no named
architecture runs is a warning without a fix, so the patch stays about the targets.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from eagle3_lint import engine_hooks
from eagle3_lint import semantic as sem
from eagle3_lint.engine import Capability
from eagle3_lint.graph import ClassKey
from eagle3_lint.lazyimport import lazy
from eagle3_lint.model import (
    Applicability,
    Edit,
    Finding,
    Fix,
    Location,
    Severity,
    Step,
)
from eagle3_lint.rules import RuleMeta, Scope, fit, make
from eagle3_lint.runner import RunnerKind

if TYPE_CHECKING:
    from eagle3_lint import fixgen
    from eagle3_lint.rules import Each
    from eagle3_lint.stages import Model
else:
    fixgen = lazy("eagle3_lint.fixgen")  # imported on first use (lazyimport.py)

META = RuleMeta(
    "EGL005",
    "slice-relative-aux-index",
    Severity.ERROR,
    True,
    "A forward loop over a slice of the layers compares the slice-relative enumerate index with absolute "
    "aux-layer ids.",
    needs=frozenset({Capability.AUX_COLLECTION}),
    scope=Scope.ARCH,  # its answers are kept per file (the loops) and per architecture (the forwards it runs)
    asked_of_model=True,
)



@dataclass(frozen=True)
class _Runner:
    """An architecture whose runtime path runs a given ``forward``."""

    arch: str
    owner: ClassKey  # the class holding the layers (where the PP flag is read)
    pp: bool | None  # the architecture's class supports pipeline parallelism (None: cannot tell)


def _pp_marker(sm: Model) -> str | None:
    """The class-level marker of the tree's ``SupportsPP`` interface (``supports_pp``), read from interfaces.py."""
    r = sm.graph.resolve_name(sm.contract.module, sm.engine.pp_protocol)
    class_facts = sm.graph.class_facts(r.key) if r.kind == "class" and r.key is not None else None
    if class_facts is None:
        return None
    for m in class_facts.members.values():
        if m.kind in ("annassign", "assign") and m.value == "True":
            return m.name
    return None


def _flag_value(sm: Model, key: ClassKey, flag: str) -> tuple[bool, str]:
    """Whether ``key`` sets the PP flag to True, and where the effective value comes from."""
    hit = sm.graph.member_origin(key, flag)
    if hit is None:
        return False, f"{key.name} does not define {flag}"
    origin, m = hit
    where = f"{sm.graph.path_of(origin)}:{m.line}"
    if m.value == "True":
        return True, f"{origin.name} sets {flag} = True ({where})"
    return False, f"{flag} is {m.value or 'not a literal True'} for {key.name} (from {origin.name}, {where})"


def _runners(sm: Model, each: Each) -> dict[ClassKey, list[_Runner]]:
    """For each class defining a ``forward``: the EAGLE-3 architectures whose object graph runs it."""
    marker = _pp_marker(sm)
    out: dict[ClassKey, list[_Runner]] = {}
    archs = [(arch, key, marker) for arch, v in sorted(sm.verdicts.items())
             if (key := sm.keys.get(arch)) is not None and v.supports_eagle3 is True]
    for (arch, _key, _marker), runs, _source in each(_runs, archs):
        for owner, runner in runs:
            lst = out.setdefault(owner, [])
            if all(r.arch != arch for r in lst):
                lst.append(runner)
    return out


def _runs(sm: Model, item: tuple[str, ClassKey, str | None]) -> list[tuple[ClassKey, _Runner]]:
    """The forwards ``arch`` runs, each with its owner class. One answer per architecture, kept between runs."""
    arch, key, marker = item
    pp: bool | None = None
    if marker is not None:
        m = sm.graph.member_origin(key, marker)
        pp = m is not None and m[1].value == "True"
    out: list[tuple[ClassKey, _Runner]] = []
    for inner in sem.reached(sm, key):
        hit = sm.graph.method(inner, "forward")
        if hit is not None:
            out.append((hit[0], _Runner(arch, inner, pp)))
    return out


def _targeted_forwards(sm: Model) -> set[ClassKey]:
    """Classes whose ``forward`` an architecture named with ``--arch`` runs (whether or not it passes yet)."""
    out: set[ClassKey] = set()
    for arch in sm.targeted:
        key = sm.keys.get(arch)
        for inner in (sem.reached(sm, key) if key is not None else ()):
            hit = sm.graph.method(inner, "forward")
            if hit is not None:
                out.add(hit[0])
    return out


def _names(runners: list[_Runner]) -> str:
    head = ", ".join(r.arch for r in runners[:4])
    return head + (f" and {len(runners) - 4} more" if len(runners) > 4 else "")


def _severity(sm: Model, key: ClassKey, runners: list[_Runner]) -> tuple[Severity, str, list[Step]]:
    """Error when this tree runs EAGLE-3 with pipeline parallelism through this forward, else a latent warning."""
    runner = sm.runner
    related: list[Step] = []
    if runner.pp_verifier and runner.pp_flag:
        vloc = Location(runner.pp_verifier_path, runner.pp_verifier_line)
        related.append(
            Step(
                "runner",
                f"{runner.pp_verifier} refuses PP for EAGLE-3 unless the decoder sets {runner.pp_flag} = True",
                vloc,
            )
        )
        flagged: list[str] = []
        own_true, own_why = _flag_value(sm, key, runner.pp_flag)
        if own_true:
            flagged.append(own_why)
        for r in runners:
            t, why = _flag_value(sm, r.owner, runner.pp_flag)
            if t and why not in flagged:
                flagged.append(why)
        if flagged:
            msg = (f"this {sm.engine.display} runs EAGLE-3 with pipeline parallelism here: {flagged[0]}, "
                   f"so {runner.pp_verifier} "
                   f"({vloc}) lets PP through and start_layer != 0 on every rank but the first")
            return Severity.ERROR, msg, related
        v1_site = runner.site_for(RunnerKind.V1) if runner.site_for(RunnerKind.V2) is not None else None
        other = (
            f"; the V1 runner ({v1_site.path}) has no such verifier, so with {sm.engine.runner_switch} the index "
            "is wrong under PP already"
            if v1_site is not None and v1_site.path != runner.pp_verifier_path
            else ""
        )
        runner_txt = "the V2 runner's " if other else ""
        msg = (
            f"latent: {runner_txt}{runner.pp_verifier} ({vloc}) refuses pipeline parallelism for EAGLE-3 unless the "
            f"decoder sets {runner.pp_flag} = True, and {own_why}, so on that runner start_layer is 0 whenever this "
            f"runs; the index is wrong as soon as the flag is set{other}"
        )
        return Severity.WARNING, msg, related
    refused = engine_hooks.pp_refused(sm)
    if refused is not None:
        msg = f"latent: {refused}, so start_layer is 0 whenever this runs with EAGLE-3"
        return Severity.WARNING, msg, related
    for r in runners[:4]:
        k = sm.keys.get(r.arch)
        class_facts = sm.graph.class_facts(k) if k is not None else None
        if class_facts is not None and k is not None:
            related.append(Step("architecture", f"{r.arch} passes {sm.contract.check_name} and runs this forward",
                                Location(sm.graph.path_of(k), class_facts.line)))
    pp_runners = [r for r in runners if r.pp is not False]
    live = [r for r in pp_runners if engine_hooks.config_refusal(sm, r.arch) is None]
    if pp_runners and not live:
        g, _mt = engine_hooks.config_refusal(sm, pp_runners[0].arch) or (None, "")
        msg = (f"latent: {_names(pp_runners)} run{'s' if len(pp_runners) == 1 else ''} this forward, "
               f"but this {sm.engine.display} "
               f"refuses EAGLE-3 for their model_type at config time ({g.path}:{g.line})" if g else "latent")
        return Severity.WARNING, msg, related
    pp_runners = live
    one = len(pp_runners) == 1
    if pp_runners:
        msg = ("nothing in this tree refuses pipeline parallelism for EAGLE-3 (the runner has no PP verifier), and "
               f"{_names(pp_runners)} pass{'es' if one else ''} {sm.contract.check_name} "
               f"and run{'s' if one else ''} this "
               "forward: with PP the drafter's rank has start_layer != 0 and captures the wrong layers")
        return Severity.ERROR, msg, related
    one = len(runners) == 1
    if runners:
        msg = (
            f"latent: {_names(runners)} run{'s' if one else ''} this forward with EAGLE-3 but do{'es' if one else ''} "
            f"not implement {sm.engine.pp_protocol}, so {sm.engine.display} refuses pipeline parallelism "
            f"for {'it' if one else 'them'} "
            "and start_layer is 0"
        )
        return Severity.WARNING, msg, related
    msg = (f"latent: no registered architecture that passes {sm.contract.check_name} runs this forward, "
           "so the runner never "
           "configures aux layers on it; the index is wrong as soon as one does, under pipeline parallelism")
    return Severity.WARNING, msg, related


def _loops_in(sm: Model, rel: str) -> list[tuple[ClassKey, sem.Loop, str]]:
    """The file's ``forward`` loops that compare a slice-relative index with aux-layer ids, with what the message
    says about each. One answer per file, kept between runs: an unchanged file's facts are not loaded."""
    out: list[tuple[ClassKey, sem.Loop, str]] = []
    mf = sm.store.load_path(rel)
    if mf is None or mf.error:
        return out
    seen: set[int] = set()
    for qn, cf in mf.classes.items():
        if cf.nested_in is not None:
            continue
        key = ClassKey(mf.module, qn)
        class_facts = sm.graph.class_facts(key)
        method_facts = class_facts.methods.get("forward") if class_facts is not None else None
        if not isinstance(method_facts, sem.Method):
            continue
        for loop in sem.slice_relative_loops(method_facts):
            if loop.line in seen:
                continue
            start = sem.rebased_start(loop)
            walk = f"{key.name}.forward {sem.index_walk(loop)}"
            if start is not None:
                # The index is absolute already; ``idx - start`` undoes that (moss_audio in vLLM 0.33.0; on SGLang a
                # ``range(self.start_layer, self.end_layer)`` loop, whose ids the setter stores absolute).
                uses = [t for _u, t in sem.aux_uses(sm, loop, loop.rebased)]
                head = (
                    f"{walk}, so {loop.index_var} is already the absolute layer id, but subtracting "
                    f"{'the slice start' if loop.slice_lower is not None else start} makes it "
                    f"{'slice' if loop.slice_lower is not None else 'rank'}-relative again, and that is compared "
                    f"with absolute aux-layer ids: {'; '.join(uses)}."
                )
            elif loop.start_text is None:
                uses = [t for _u, t in sem.aux_uses(sm, loop, loop.uses)]
                head = (
                    f"{walk}, so {loop.index_var} counts "
                    f"from 0 inside the slice, yet it is compared with absolute aux-layer ids: {'; '.join(uses)}."
                )
            else:
                continue
            if not uses:
                continue
            seen.add(loop.line)
            out.append((key, loop, head))
    return out


def check(sm: Model, each: Each) -> Iterator[Finding]:
    runners: dict[ClassKey, list[_Runner]] | None = None
    targeted = _targeted_forwards(sm) if sm.targeted else set()
    for rel, loops, _source in each(_loops_in, sm.model_files()):
        for key, loop, head in loops:
            if runners is None:
                runners = _runners(sm, each)
            sev, why, related = _severity(sm, key, runners.get(key, []))
            if sm.targeted and key not in targeted:
                # Under --arch, a loop no target runs is reported as a warning, without a fix.
                sev = Severity.WARNING
                why += " (no architecture named with --arch runs this forward, so no fix is attached)"
            msg = f"{head} {why[0].upper()}{why[1:]}."
            sym = f"{key.name}.forward"
            risk, short = (("wrong layers with pipeline parallelism", "wrong layers under PP")
                           if sev is Severity.ERROR else ("latent", "latent"))
            yield make(
                META,
                msg,
                Location(rel, loop.line, loop.col, loop.end_line, loop.end_col),
                severity=sev,
                symbol=sym,
                related=tuple(related),
                title=fit(f"{sym} compares a slice-relative index with absolute aux-layer ids ({risk})",
                          f"{sym} compares a slice-relative index with absolute aux-layer ids ({short})",
                          f"{sym}: slice-relative index vs absolute aux-layer ids ({short})"),
            )


def fix(sm: Model, finding: Finding) -> Fix | None:
    rel, line = finding.location.path, finding.location.line
    mf = sm.store.load_path(rel)
    if mf is None:
        return None
    for class_facts in mf.classes.values():
        method_facts = class_facts.methods.get("forward")
        loop = sem.loop_at(method_facts, line) if isinstance(method_facts, sem.Method) else None
        if loop is not None:
            if sm.targeted and ClassKey(mf.module, class_facts.qualname) not in _targeted_forwards(sm):
                return None
            rebased = sem.rebased_start(loop)
            if rebased is not None:
                return _unrebase_fix(sm, rel, loop, rebased)
            start = loop.slice_lower
            if start is None or loop.start_text is not None:
                return None
            pt = fixgen.enumerate_start_point(sm, rel, loop)
            if pt is None:
                return None
            ln, col = pt
            t = fixgen.text_of(sm, rel)
            if t is None:
                return None
            # Right after the first argument: ``islice(...), start=X`` keeps any trailing comma after it.
            return Fix(f"add start={start} to enumerate()",
                       (Edit(rel, ln, col, ln, col, fixgen.start_kwarg(t, pt, start)),), Applicability.SAFE)
    return None


def _unrebase_fix(sm: Model, rel: str, loop: sem.Loop, start: str) -> Fix | None:
    """Delete `` - <start>`` from every rebased index that meets aux ids (``idx - s + 1`` -> ``idx + 1``).

    All or nothing: a use whose subtraction cannot be cut cleanly (parentheses around an operand)
    gets no fix, and a partial one would leave a wrong index behind.
    """
    uses = [u for u, _t in sem.aux_uses(sm, loop, loop.rebased)]
    if not uses or any(u.cut == (0, 0, 0, 0) for u in uses):
        return None
    edits = tuple(Edit(rel, *u.cut, "") for u in uses)
    counter = "enumerate" if loop.slice_lower is not None else "range"
    return Fix(f"drop ` - {start}` from the aux index ({counter} already starts at {start})", edits,
               Applicability.SAFE)
