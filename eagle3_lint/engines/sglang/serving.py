"""The serving verdict on SGLang: does the target start with EAGLE-3, and does it capture the layers the drafter
was trained on?

The chain has the vLLM chain's shape (``serving.py``'s gates, outcomes and grading) with SGLang's own steps, in
the order ``sglang.launch_server`` meets them:

``registry`` (``EntryClass``) -> ``pp-verifier`` (only with ``--pipeline-parallel``: the launch-time refusal of
EAGLE-3 with PP, ``pp.refusal``, whose outcome is ``pp-refused``) -> ``runner-interface``
(``set_eagle3_layers_to_capture`` on the top-level class through its MRO, called after the weights load; and the
EAGLE worker's ``get_embed_and_head()`` on it, a second ``runner-interface`` step before or after that one as the
tree orders them, ``target_calls.py``) ->
``aux-ids`` (``eagle_config``'s ids as the runner reads them, else ``None`` and the setter's default) ->
``capture`` (the indices the setter stores, after its transform, against what the decoder's forward collects) ->
``pp-relay`` (ids on ranks before the last, with a last-rank-only setter) -> ``trained-layers`` (the captured
states against the layers the drafter was trained on).

With ``--draft-config`` naming a checkpoint folder, ``drafter-fc`` follows ``capture``: the safetensors headers
against the drafter class's fc width and decoder layers (``drafter_weights.py``) and the states captured.
``drafter-class`` appears only to fail, for a drafter config that sets keys the drafter class SGLang builds
never reads (EGL011, ``_ignored_keys``): SGLang's ``load_weights`` skips a tensor its class has no parameter for
(``if param_name in params_dict``, ``models/llama_eagle3.py``), so the part the key turns on is silently left
out and a different drafter than the trained one runs: ``drafter-differs``, unless a later step stops serving.
Not modelled for SGLang, so left out rather than guessed:
whether SGLang can build the drafter class otherwise, the fc width without a checkpoint; a model-side PP verifier
(SGLang has none: its refusal is the launch-time one above). Every fact
comes from ``drafter.py`` (the same analysis EGL007 reports) and the core's class verdicts.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from eagle3_lint import drafter_weights as dw
from eagle3_lint.engines import drafter_classes
from eagle3_lint.engines.sglang import drafter as sdr
from eagle3_lint.engines.sglang import pp as pp_mod
from eagle3_lint.engines.sglang.runner import IDS_KEY, SETTER
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

if TYPE_CHECKING:
    from eagle3_lint.drafter import IgnoredKey
    from eagle3_lint.model import Finding
    from eagle3_lint.stages import Model

ENGINE_NAME = "sglang"

HINTS = {
    Outcome.UNREGISTERED: "this SGLang does not know the architecture (no EntryClass names it): use a release that "
    "has it",
    Outcome.PP_REFUSED: "serve without pipeline parallelism: this SGLang refuses EAGLE-3 with it",
    # No hint of ours: the report then points at ``eagle3-lint trace`` (or the fix, when a rule holds one).
    Outcome.REFUSED_AT_LOAD: "",
    Outcome.DRAFTER_SHAPE_MISMATCH: f"choose eagle_config.{IDS_KEY} that this SGLang's setter turns into layers the "
    "decoder collects (0 … n-1 after the setter's shift)",
    Outcome.PP_LOSES_STATES: "serve without pipeline parallelism: the setter captures on the last rank only",
    Outcome.DRAFTER_DIFFERS: "serve this drafter with a release whose drafter code reads the keys EGL011 names, "
    "or use a drafter trained without them",
    Outcome.WRONG_LAYERS: f"set eagle_config.{IDS_KEY} so that this SGLang's setter stores the trained layers, or "
    "state the drafter's numbering with --drafter-convention if the tool assumed it",
}


def _loc(path: str | None, line: int | None) -> Location | None:
    return Location(path, line or 1) if path else None


def _ids(ids: Iterable[Any]) -> str:
    return "[" + ", ".join(str(i) for i in ids) + "]"


def verdict(sm: Model, arch: str) -> ServingVerdict:
    """EAGLE-3's chain; ``SglangEngine.serving_verdict`` sends the other methods to ``method_chain``."""
    return sm.memo.get(f"sglang:serving:{arch}", lambda: _verdict(sm, arch))


def _verdict(sm: Model, arch: str) -> ServingVerdict:
    pp = sm.options.pipeline_parallel or 1
    steps: list[ServingStep] = []
    entry = sm.registry.entries.get(arch)
    sd = sdr.analyze(sm, arch) if sm.options.draft_config is not None else None
    if entry is None:
        steps.append(unregistered_step(sm, arch, _loc(sm.registry.path, 1)))
        return _finish(sm, arch, steps, sd, None)
    steps.append(ServingStep(Gate.REGISTRY, StepResult.PASS, f"{arch} -> {entry.module}.{entry.class_name}",
                             _loc(getattr(entry, "path", "") or sm.registry.path, entry.line)))
    imported = import_step(sm, arch)
    if imported is not None:
        steps.append(imported)
        return _finish(sm, arch, steps, sd, None)
    if pp > 1:
        steps.append(_pp_refusal(sm, pp))
    if sd is not None and sd.da.ignored_keys:
        steps.append(_ignored_keys(sm, sd))
    # The EAGLE worker's get_embed_and_head() on the target, where the tree orders it against the setter check
    # (before it from 0.5.15: the drafter's memory pools are allocated before the attention backends).
    embed = _embed_head(sm, arch)
    pair = [embed[0], _interface(sm, arch)] if embed is not None and embed[1] else \
        [_interface(sm, arch), *([embed[0]] if embed is not None else [])]
    steps.extend(_after_refusal(pair))
    captured: tuple[int, ...] | None = None
    if sd is None:
        site = sm.runner.primary
        steps.append(ServingStep(Gate.AUX_IDS, StepResult.UNCHECKED,
                                 "no drafter config (--draft-config): which ids the runner hands the setter is not "
                                 "known", _loc(site.path, site.line) if site else None))
        for g in (Gate.CAPTURE, Gate.PP_RELAY, Gate.TRAINED_LAYERS):
            if g is Gate.PP_RELAY and pp <= 1:
                continue
            steps.append(ServingStep(g, StepResult.UNCHECKED, "needs the drafter config"))
    elif not sd.read.use_aux:
        steps.append(ServingStep(Gate.AUX_IDS, StepResult.PASS, "eagle_config.use_aux_hidden_state is false: the "
                                 f"runner does not call {SETTER}() and the drafter gets no aux states",
                                 _loc(sd.read.where.path, sd.read.where.line) if sd.read.where else None))
        for g in (Gate.CAPTURE, Gate.PP_RELAY, Gate.TRAINED_LAYERS):
            if g is not Gate.PP_RELAY or pp > 1:
                steps.append(ServingStep(g, StepResult.SKIPPED, "no aux hidden states are asked for"))
    else:
        steps.append(_aux_ids(sd))
        cap, captured = capture_step(sd)
        steps.append(cap)
        if sm.options.draft_weights is not None:
            steps.append(weights_step(sm, sd, captured))
        if pp > 1:
            steps.append(relay_step(sd))
        steps.append(trained_step(sd, captured))
    return _finish(sm, arch, steps, sd, captured)


def _finish(sm: Model, arch: str, steps: list[ServingStep], sd: sdr.SglDraft | None,
            captured: tuple[int, ...] | None) -> ServingVerdict:
    outcome, stage = outcome_of(steps)
    source = None
    ids = None
    if sd is not None and sd.stored is not None:
        ids = sd.stored
        source = "model-default" if sd.stored_default else "drafter-config"
    tr = sd.trained if sd is not None else None
    return ServingVerdict(
        architecture=arch, engine=ENGINE_NAME, engine_version=sm.version, runner=None,
        runner_reason="SGLang has one model runner", outcome=outcome, stage=stage, aux_layer_ids=ids,
        aux_layer_ids_source=source, drafter_trained_ids=tr.layers if tr is not None else None,
        drafter_architecture=None, steps=tuple(steps),
        next_step=next_step(sm, arch, outcome, stage, steps, _hints(stage), ()), captured_layers=captured,
        pipeline_parallel=sm.options.pipeline_parallel or 1, tensor_parallel=sm.options.tensor_parallel,
        trained_convention=tr.convention if tr is not None else None, platform=sm.options.platform)


def _hints(stage: Gate | None) -> dict[Outcome, str]:
    """A shape mismatch the checkpoint decided (the drafter-fc step) is not repaired by choosing other ids."""
    if stage is Gate.DRAFTER_FC:
        return {**HINTS, Outcome.DRAFTER_SHAPE_MISMATCH: "see the drafter-fc step: the checkpoint's tensor does not "
                "fit what this SGLang builds and captures"}
    return HINTS


def with_next_step(sm: Model, sv: ServingVerdict, findings: Sequence[Finding]) -> ServingVerdict:
    """EAGLE-3's next step; the other methods' is ``method_chain.with_next_step``."""
    hints = _hints(sv.stage)
    sd = sdr.analyze(sm, sv.architecture) if sv.outcome is Outcome.WRONG_LAYERS else None
    if sd is not None and sd.want_ids is not None:
        # The ids that make this release's setter store the trained layers: the one thing to set.
        want = ", ".join(str(i) for i in sd.want_ids)
        hints = {**HINTS, Outcome.WRONG_LAYERS: f"set eagle_config.{IDS_KEY} = [{want}] (this SGLang's setter then "
                 "stores the trained layers), or state the drafter's numbering with --drafter-convention if the tool "
                 "assumed it"}
    nxt = next_step(sm, sv.architecture, sv.outcome, sv.stage, list(sv.steps), hints, findings)
    return sv if nxt == sv.next_step else dataclasses.replace(sv, next_step=nxt)


def _ignored_keys(sm: Model, sd: sdr.SglDraft) -> ServingStep:
    return ignored_keys_step(sm, sd.da.ignored_keys or [], sd.da.draft_path)


def ignored_keys_step(sm: Model, iks: list[IgnoredKey], draft_path: str) -> ServingStep:
    """The drafter-class step of a drafter config with keys the drafter class SGLang builds never reads (EGL011):
    EAGLE-3's, or a method's own (DFlash's ``dflash.py``, whose ``load_weights`` skips them too)."""
    from eagle3_lint.rules.egl011_drafter_key_ignored import message

    # A count of fc's aux states this release ignores, giving the checkpoint another fc than the one it builds, is
    # the one it meets first: fc.weight has a parameter, so it is loaded, and refused (drafter_keys.json fc_states).
    iks = sorted(iks, key=lambda k: k.fc is None)
    ik = iks[0]
    e = sm.registry.entries[ik.drafter_class]
    more = f" (and {len(iks) - 1} more ignored key(s), EGL011)" if len(iks) > 1 else ""
    if ik.fc is not None:
        return ServingStep(Gate.DRAFTER_CLASS, StepResult.FAIL,
                           f"{ik.drafter_class} -> {e.module}.{e.class_name}; but {message(sm, ik)}{more}; its "
                           "load_weights hands the checkpoint's fc.weight, a parameter the class has, to "
                           "default_weight_loader, whose size assert refuses it (drafter_keys.json fc_states)",
                           Location(draft_path, ik.line))
    # SGLang's load_weights loads only the tensors the class has parameters for (0.5.16 llama_eagle3.py:334-349,
    # ``if param_name in params_dict``): the checkpoint loads and the other drafter runs.
    return ServingStep(Gate.DRAFTER_CLASS, StepResult.FAIL,
                       f"{ik.drafter_class} -> {e.module}.{e.class_name}; but {message(sm, ik)}{more}; its "
                       "load_weights skips the tensors it has no parameter for, so the checkpoint loads and that "
                       "drafter runs", Location(draft_path, ik.line), runs_on=Outcome.DRAFTER_DIFFERS)


def _pp_refusal(sm: Model, pp: int) -> ServingStep:
    r = pp_mod.refusal(sm)
    if r is not None:
        # A refusal because of pipeline parallelism is the pp-refused outcome, whatever stage of the launch makes it.
        return ServingStep(Gate.PP_VERIFIER, StepResult.FAIL,
                           f"pipeline_parallel_size={pp} with EAGLE-3: {r.text} at launch"
                           + (f" (in {r.via}())" if r.via else "") + ", before any weight loads", _loc(r.path, r.line))
    return ServingStep(Gate.PP_VERIFIER, StepResult.PASS,
                       f"no launch-time refusal of EAGLE-3 with pipeline_parallel_size={pp} in this tree")


def _interface(sm: Model, arch: str) -> ServingStep:
    site = sm.runner.primary
    v = sm.verdicts.get(arch)
    if site is None:
        return ServingStep(Gate.RUNNER_INTERFACE, StepResult.UNKNOWN, f"no runner call of {SETTER}() found")
    where = _loc(site.path, site.line)
    call = f"{site.interrogated}.{SETTER}()"
    if v is None or v.supports_eagle3 is None:
        return ServingStep(Gate.RUNNER_INTERFACE, StepResult.UNKNOWN,
                           f"{call}: {v.reason if v is not None else 'the class cannot be resolved'}", where)
    if not v.supports_eagle3:
        error = site.error.replace(MODEL_CLASS, v.class_name)  # the message names the model's class
        return ServingStep(Gate.RUNNER_INTERFACE, StepResult.FAIL,
                           f"{call}: {v.class_name} has no {SETTER} ({v.reason}): {error}, after the weights load",
                           where)
    key = sm.keys.get(arch)
    hit = sm.graph.member_origin(key, SETTER) if key is not None else None
    how = f" ({hit[0].name}.{SETTER}, {sm.graph.path_of(hit[0])}:{hit[1].line})" if hit is not None else ""
    return ServingStep(Gate.RUNNER_INTERFACE, StepResult.PASS, f"{call} exists on {v.class_name}{how}", where)


def _after_refusal(pair: list[ServingStep]) -> list[ServingStep]:
    """The two load-time checks in the order the engine makes them; the second is not reached when the first
    raises (0.5.10 stops at ``model_runner.py:668`` before the EAGLE worker exists), so it is shown skipped, with
    what it would find next."""
    first, second = pair[0], pair[1:]
    if first.result is not StepResult.FAIL or not second or second[0].result is not StepResult.FAIL:
        return pair
    s = second[0]
    return [first, dataclasses.replace(s, result=StepResult.SKIPPED,
                                       message=f"not reached: the check before it raises first; then: {s.message}")]


def _embed_head(sm: Model, arch: str) -> tuple[ServingStep, bool] | None:
    """The runner-interface step of the EAGLE worker's ``get_embed_and_head()`` on the top-level class (or a
    method it tries first, ``get_embed_and_head_for_draft``), and whether it comes before the setter check; None
    when the tree has no such call. A class without it raises ``AttributeError`` there (0.5.23
    ``pp_draft_embedding.py:95``, re-raised at :97-98 unless a pipeline stage lacks the embedding; 0.5.10
    ``eagle_worker.py:158``)."""
    calls = sm.runner.target_calls
    if not calls:
        return None
    orders = {c.before_setter for c in calls if c.before_setter is not None}
    # Every call site the tree orders agrees in the releases read (0.4.7-0.5.23); the first ordered one is cited.
    call = next((c for c in calls if c.before_setter is not None), calls[0])
    before = orders == {True}
    where = _loc(call.path, call.line)
    v = sm.verdicts.get(arch)
    key = sm.keys.get(arch)
    what = f"{call.receiver}.{call.method}()"
    order = (f"; {call.order_why}" if call.before_setter is not None and len(orders) == 1 else
             f"; whether before or after the setter check is not known ({call.order_why})")
    if key is None or v is None:
        return ServingStep(Gate.RUNNER_INTERFACE, StepResult.UNKNOWN,
                           f"{what}: the class cannot be resolved", where), before
    for m in (*call.alternatives, call.method):
        hit = sm.graph.member_origin(key, m)
        if hit is not None:
            return ServingStep(Gate.RUNNER_INTERFACE, StepResult.PASS,
                               f"the EAGLE worker calls {call.receiver}.{m}(), which {v.class_name} has "
                               f"({hit[0].name}.{m}, {sm.graph.path_of(hit[0])}:{hit[1].line}){order}", where), before
    if v.supports_eagle3 is None:  # the class verdict could not read its MRO either
        return ServingStep(Gate.RUNNER_INTERFACE, StepResult.UNKNOWN,
                           f"{what}: whether {v.class_name} has {call.method} is not known ({v.reason})", where), before
    tried = f" (nor {', '.join(call.alternatives)}, tried first)" if call.alternatives else ""
    return ServingStep(Gate.RUNNER_INTERFACE, StepResult.FAIL,
                       f"the EAGLE worker calls {what} to share the target's embedding and LM head with the drafter, "
                       f"and {v.class_name} has no {call.method}{tried}: AttributeError: '{v.class_name}' object has "
                       f"no attribute '{call.method}'{order}", where,
                       hit=f"{call.method}() raises AttributeError"), before


def _aux_ids(sd: sdr.SglDraft) -> ServingStep:
    r = sd.read
    loc = _loc(r.where.path, r.where.line) if r.where is not None else None
    if r.ids is not None:
        return ServingStep(Gate.AUX_IDS, StepResult.PASS,
                           f"the runner reads eagle_config.{IDS_KEY} = {_ids(r.ids)} from the drafter config", loc)
    ignored = f"; it does not read {', '.join(f.name for f in sd.da.fields)}" if sd.da.fields else ""
    why = f" ({r.note})" if r.note else ""
    return ServingStep(Gate.AUX_IDS, StepResult.PASS,
                       f"the drafter config gives no eagle_config.{IDS_KEY}, so the runner passes None and the setter "
                       f"uses its default{why}{ignored}", loc)


def capture_step(sd: sdr.SglDraft) -> tuple[ServingStep, tuple[int, ...] | None]:
    n = sd.da.num_layers
    hop = sd.hops[0] if sd.hops else None
    sloc = _loc(hop.path, hop.transform.line) if hop is not None else None
    if sd.stored is None:
        res = StepResult.UNCHECKED if n is None and sd.hops else StepResult.UNKNOWN
        return ServingStep(Gate.CAPTURE, res, sd.stored_note or "what the setter stores is not known", sloc), None
    coll = sd.coll
    chain = " -> ".join(f"{h.owner.name}.{h.setter}" for h in sd.hops)
    stored = f"{chain} stores {_ids(sd.stored)}" + (" (its default)" if sd.stored_default else "")
    if n is None:
        return ServingStep(Gate.CAPTURE, StepResult.UNCHECKED,
                           f"{stored}; which of them the decoder collects needs the target's num_hidden_layers",
                           sloc), None
    if coll is None or coll.decoder is None or coll.note:
        note = coll.note if coll is not None else "no setter"
        return ServingStep(Gate.CAPTURE, StepResult.UNKNOWN, f"{stored}; {note}", sloc), None
    cloc = _loc(coll.path, coll.site_line or coll.line)
    if coll.flags_index_error and any(i >= n for i in sd.stored):
        return ServingStep(Gate.CAPTURE, StepResult.FAIL,
                           f"{stored}: index {max(sd.stored)} is past the last of {n} layers and the setter's "
                           f"self.layers[i] raises IndexError at start-up", _loc(sd.hops[-1].path, coll.flags_line)), ()
    ok = coll.collects(n)
    # The decoder walks its layers once and tests each against the list (or a per-layer flag), so a repeated id
    # is collected once, in layer order (0.5.23 llama.py:486-492, seen on CPU: [3, 4, 4] gave 2 states).
    got = tuple(sorted({i + coll.shift for i in sd.stored if i in ok}))
    missing = [i for i in sd.stored if i not in ok]
    if sd.lost_pp:
        got = tuple(sorted({i + coll.shift for i in sd.stored if i in ok and i not in sd.lost_pp}))
    dups = sorted({i for i in sd.stored if sd.stored.count(i) > 1})
    if dups and not missing:
        return ServingStep(Gate.CAPTURE, StepResult.FAIL,
                           f"{stored}, but {coll.decoder.name}.forward tests each layer once: {_ids(dups)} "
                           f"repeated, the drafter receives {len(got)} of {len(sd.stored)} states", cloc), got
    if missing:
        return ServingStep(Gate.CAPTURE, StepResult.FAIL,
                           f"{stored}, but {coll.decoder.name}.forward never collects {_ids(missing)} ({n} layers: "
                           f"indices {min(ok)} … {max(ok)}): the drafter receives {len(got)} of {len(sd.stored)} "
                           "states", cloc), got
    return ServingStep(Gate.CAPTURE, StepResult.PASS,
                       f"{stored}; {coll.decoder.name}.forward collects the states entering layers "
                       f"{_ids(i + coll.shift for i in sd.stored)}", cloc), got


def weights_step(sm: Model, sd: sdr.SglDraft, captured: tuple[int, ...] | None) -> ServingStep:
    """Only with a checkpoint folder: its headers against the drafter class this SGLang builds (its fc width and
    decoder layers, evaluated from the class's ``__init__``) and the states the capture step hands it."""
    ck = sm.options.draft_weights
    cfg = sd.da.converted or {}
    archs = cfg.get("architectures")
    arch = next((a for a in archs if isinstance(a, str) and a in sm.registry.entries), None) \
        if isinstance(archs, list) else None
    built = drafter_classes.built(sm, arch, cfg) if arch is not None else None
    states = len(captured) if captured else (len(set(sd.stored)) if sd.stored else None)
    rep = dw.check(ck, cfg, built, states, sd.da.target_hidden)
    where = built.fc_where if built is not None else None
    loc = _loc(where.path, where.line) if where is not None else None
    if rep.mismatches:
        m, text, differs = dw.failure(rep)
        path = os.path.join(ck.folder, m.file or (ck.index or (ck.files[0] if ck.files else "")))
        # Dropped tensors only: SGLang's load_weights skips them and the drafter runs without them.
        return ServingStep(Gate.DRAFTER_FC, StepResult.FAIL, text, _loc(path, 1),
                           runs_on=Outcome.DRAFTER_DIFFERS if differs else None)
    text = dw.summary(rep, ck)
    if built is None or built.fc_in is None:
        why = built.note if built is not None else f"no registered drafter class among {archs!r}"
        return ServingStep(Gate.DRAFTER_FC, StepResult.UNKNOWN, f"{text}; the drafter class's fc width is not "
                           f"known ({why})", loc)
    if states is None or sd.da.target_hidden is None:
        return ServingStep(Gate.DRAFTER_FC, StepResult.UNCHECKED, f"{text}; how many states arrive is not known",
                           loc)
    return ServingStep(Gate.DRAFTER_FC, StepResult.PASS, f"{built.drafter_class}'s fc takes {built.fc_in} = "
                       f"{states} x {sd.da.target_hidden}; {text}", loc)


def relay_step(sd: sdr.SglDraft) -> ServingStep:
    if sd.pp_refusal is not None:
        return ServingStep(Gate.PP_RELAY, StepResult.SKIPPED, "refused at launch")
    sp = sd.split
    if sp is None:
        return ServingStep(Gate.PP_RELAY, StepResult.UNCHECKED, "needs the target config to split the layers")
    if not sp.ranges or sd.stored is None:
        return ServingStep(Gate.PP_RELAY, StepResult.UNKNOWN, sp.note or "which ranks hold the ids is not known",
                           _loc(sp.path, sp.line))
    s, e = sp.ranges[-1]
    if sd.lost_pp:
        h = next(h for h in sd.hops if h.transform.pp_last_rank_only)
        return ServingStep(Gate.PP_RELAY, StepResult.FAIL,
                           f"indices {_ids(sd.lost_pp)} sit on ranks before the last (which runs layers "
                           f"{s} … {e - 1}), and {h.owner.name}.{h.setter} returns unless on the last rank: never "
                           "captured",
                           _loc(h.path, h.transform.line))
    early = [i for i in sd.stored if not s <= i < e]
    if early:
        return ServingStep(Gate.PP_RELAY, StepResult.UNKNOWN,
                           f"indices {_ids(early)} sit on ranks before the last; whether they reach the drafter is not "
                           "modelled for this setter", _loc(sp.path, sp.line))
    return ServingStep(Gate.PP_RELAY, StepResult.PASS, f"every index is on the last rank (layers {s} … {e - 1})",
                       _loc(sp.path, sp.line))


def trained_step(sd: sdr.SglDraft, captured: tuple[int, ...] | None) -> ServingStep:
    tr = sd.trained
    da = sd.da
    loc = Location(da.draft_path, da.fields[0].line) if da.fields else None
    if tr.layers is None:
        return ServingStep(Gate.TRAINED_LAYERS, StepResult.UNCHECKED, tr.why, loc)
    if captured is None:
        return ServingStep(Gate.TRAINED_LAYERS, StepResult.UNCHECKED,
                           f"trained on the states entering layers {_ids(tr.layers)} ({tr.why}); what is captured is "
                           "unknown", loc)
    if sorted(set(captured)) != sorted(set(tr.layers)) and len(captured) == len(sd.stored or ()):
        return ServingStep(Gate.TRAINED_LAYERS, StepResult.FAIL,
                           f"captures the states entering layers {_ids(captured)}, but the drafter was trained on "
                           f"{_ids(tr.layers)} ({tr.why}): it runs and accepts fewer tokens", loc)
    if sorted(set(captured)) != sorted(set(tr.layers)):
        return ServingStep(Gate.TRAINED_LAYERS, StepResult.UNCHECKED,
                           f"trained on {_ids(tr.layers)} ({tr.why}); fewer states than the ids are captured", loc)
    return ServingStep(Gate.TRAINED_LAYERS, StepResult.PASS,
                       f"captures the layers the drafter was trained on, {_ids(tr.layers)} ({tr.why})", loc)
