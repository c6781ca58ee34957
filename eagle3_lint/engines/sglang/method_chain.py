"""The serving chain on SGLang for ``--method DFLASH`` or ``DSPARK``: EAGLE-3's gates and outcome words, each step
read for the method from the tree (``methods.py``).

In the order SGLang meets them:

- ``registry``, then ``pp-verifier`` with ``--pipeline-parallel``: the launch-time refusal (``pp.refusal``)
  evaluated for the method (0.5.23 allows DSPARK with PP under prefill disaggregation only and refuses every other
  algorithm but EAGLE, ``arg_groups/validation_hook.py:124-138``);
- ``drafter-class``: keys of the drafter config the drafter class SGLang builds for it never reads (EGL011, read
  off that class's module and its bases' as for EAGLE-3), a failure serving runs on after (``drafter-differs``);
  then the runner's selection of the target layers raises for this drafter config while
  the model runner is set up, before the weights load; SGLang refuses the drafter, so ``drafter-unloadable``;
- ``runner-interface``: the setter the runner calls for the method on this class, or its ``ValueError`` when the
  class has none of them, after the weights load (``refused-at-load``);
- ``aux-ids``: the ids the runner selects, the drafter config's or its own for the target's and drafter's layer
  counts;
- ``capture``: what that setter stores, read as EAGLE-3's setters are (``drafter.setter_chain``), against what the
  decoder collects; then ``drafter-fc`` (with a checkpoint) and ``pp-relay``;
- ``trained-layers``: the config's ids number layer outputs, so the drafter was trained on the states entering
  ``id + 1`` (``build_target_layer_ids``'s docstring, "DFlash uses hidden states after each selected target layer
  (HF-style). SGLang captures 'before layer i', so the model hook will typically add +1", 0.5.23
  ``speculative/dflash_utils.py:359-361``). Without ids in the config the runner's own selection is captured, and
  which layers the drafter was trained on is written nowhere: the step stays unchecked.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from eagle3_lint import engine_hooks
from eagle3_lint.drafter import DraftAnalysis, IdIssue
from eagle3_lint.drafter_fields import id_fields
from eagle3_lint.engines.sglang import drafter as sdr
from eagle3_lint.engines.sglang import methods
from eagle3_lint.engines.sglang import pp as pp_mod
from eagle3_lint.engines.sglang import serving as ssv
from eagle3_lint.model import Location
from eagle3_lint.modeldata import Where
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
    from collections.abc import Sequence

    from eagle3_lint.graph import ClassKey
    from eagle3_lint.model import Finding
    from eagle3_lint.stages import Model

HINTS = {
    Outcome.UNREGISTERED: ssv.HINTS[Outcome.UNREGISTERED],
    Outcome.PP_REFUSED: "serve without pipeline parallelism: this SGLang refuses speculative decoding with it",
    Outcome.DRAFTER_UNLOADABLE: "fix the drafter config as SGLang's error says (see the drafter-class step)",
    Outcome.REFUSED_AT_LOAD: "serve this method with a model class whose SGLang code has the setter the runner "
    "calls (see the runner-interface step)",
    Outcome.DRAFTER_SHAPE_MISMATCH: "choose target_layer_ids that this SGLang's setter turns into layers the "
    "decoder collects",
    Outcome.PP_LOSES_STATES: ssv.HINTS[Outcome.PP_LOSES_STATES],
    Outcome.WRONG_LAYERS: "the setter does not capture the layers the config's target_layer_ids name (see the "
    "capture step)",
}


def _ids(ids: tuple[int, ...] | list[int] | None) -> str:
    return "[" + ", ".join(str(i) for i in ids or ()) + "]"


def _loc(w: Where | None) -> Location | None:
    return Location(w.path, w.line or 1) if w is not None and w.path else None


def verdict(sm: Model, arch: str, method: str) -> ServingVerdict:
    """The chain of ``arch`` for ``method`` with the check's drafter config."""
    return sm.memo.get(f"sglang:serving:{method}:{arch}", lambda: chain_for(
        sm, arch, method, sm.options.draft_config, sm.options.draft_config_path))


def with_next_step(sm: Model, sv: ServingVerdict, findings: Sequence[Finding]) -> ServingVerdict:
    """The next step once the findings are known: ``verdict``'s own already, but where the runner refuses the class
    for want of the method's setter the findings' fixes add that setter (the contract is the method's,
    ``SglangEngine.for_method``), so "patch it" where one has a fix."""
    if sv.outcome is not Outcome.REFUSED_AT_LOAD:
        return sv
    nxt = next_step(sm, sv.architecture, sv.outcome, sv.stage, list(sv.steps), HINTS, findings)
    return sv if nxt == sv.next_step else dataclasses.replace(sv, next_step=nxt)


def chain_for(sm: Model, arch: str, method: str, draft: dict[str, Any] | None,
              draft_path: str | None) -> ServingVerdict:
    """The chain of ``arch`` for ``method`` and drafter config ``draft`` (the check's, or another one on the same
    analysis: nothing the chain reads from the tree depends on the drafter); the checkpoint step only for the
    check's own drafter, whose folder ``--draft-config`` named."""
    opts = sm.options
    pp = opts.pipeline_parallel or 1
    steps: list[ServingStep] = []
    entry = sm.registry.entries.get(arch)
    if entry is None:
        steps.append(unregistered_step(sm, arch, Location(sm.registry.path, 1) if sm.registry.path else None))
        return _finish(sm, arch, steps, None, None, None)
    steps.append(ServingStep(Gate.REGISTRY, StepResult.PASS, f"{arch} -> {entry.module}.{entry.class_name}",
                             Location(getattr(entry, "path", "") or sm.registry.path, entry.line or 1)))
    imported = import_step(sm, arch)
    if imported is not None:
        steps.append(imported)
        return _finish(sm, arch, steps, None, None, None)
    if pp > 1:
        steps.append(_pp_refusal(sm, pp, method))
    key = sm.keys.get(arch)
    # Keys the drafter class SGLang builds for this config never reads (EGL011): its load_weights skips their
    # tensors (0.5.23 dflash.py:943-945), so serving goes on with another drafter.
    iks = sdr.ignored_keys(sm, draft, draft_path or "<draft config>") if draft is not None else None
    if iks:
        steps.append(ssv.ignored_keys_step(sm, iks, draft_path or "<draft config>"))
    ids = methods.target_ids(sm, method, draft, opts.target_config) \
        if draft is not None and opts.target_config is not None else None
    if ids is not None and ids.raised:
        # The runner resolves the layers while the model runner is set up, before any weight loads.
        steps.append(ServingStep(Gate.DRAFTER_CLASS, StepResult.FAIL,
                                 f"with --speculative-algorithm {method}, SGLang's selection of the target layers "
                                 f"({ids.where.path}:{ids.where.line}) raises {ids.raised} for this drafter config, "
                                 "while the model runner is set up" if ids.where else ids.raised,
                                 _loc(ids.raised_where)))
        return _finish(sm, arch, steps, None, None, None)
    iface, call = _interface(sm, arch, key, method)
    steps.append(iface)
    if call is None or iface.result is not StepResult.PASS:
        for g in (Gate.AUX_IDS, Gate.CAPTURE, Gate.PP_RELAY, Gate.TRAINED_LAYERS):
            if g is not Gate.PP_RELAY or pp > 1:
                steps.append(ServingStep(g, StepResult.SKIPPED, "no capture setter is called"))
        return _finish(sm, arch, steps, None, None, None)
    if draft is None or ids is None:
        need = "the drafter config (--draft-config)" if draft is None else "the target config (--target-config)"
        steps.append(ServingStep(Gate.AUX_IDS, StepResult.UNCHECKED, f"which layers the runner selects for "
                                 f"{method} needs {need}", _loc(call.where)))
        for g in (Gate.CAPTURE, Gate.PP_RELAY, Gate.TRAINED_LAYERS):
            if g is not Gate.PP_RELAY or pp > 1:
                steps.append(ServingStep(g, StepResult.UNCHECKED, f"needs {need}"))
        return _finish(sm, arch, steps, None, None, None)
    sd = _draft(sm, key, call, ids, method, draft, draft_path)
    steps.append(_aux_ids(ids, method, sd.da.num_layers))
    if ids.ids is None:
        for g in (Gate.CAPTURE, Gate.PP_RELAY, Gate.TRAINED_LAYERS):
            if g is not Gate.PP_RELAY or pp > 1:
                steps.append(ServingStep(g, StepResult.UNKNOWN, "the ids the runner hands the setter are not known"))
        return _finish(sm, arch, steps, sd, None, ids)
    cap, captured = ssv.capture_step(sd)
    steps.append(cap)
    if opts.draft_weights is not None and draft is opts.draft_config:
        steps.append(ssv.weights_step(sm, sd, captured))
    if pp > 1:
        steps.append(ssv.relay_step(sd))
    steps.append(_trained(sd, ids, captured))
    return _finish(sm, arch, steps, sd, captured, ids)


def analysis(sm: Model, arch: str | None) -> DraftAnalysis | None:
    """EGL007's findings under the method: the chain's failing id steps (``capture``, ``trained-layers``), as data
    (``DraftAnalysis.issues``); the checkpoint's ``drafter-fc`` failure EGL007 finds from the chain itself."""
    if sm.options.draft_config is None:
        return None
    arch = arch or (sm.targeted[0] if sm.targeted else None)
    sv = engine_hooks.serving_verdict(sm, arch) if arch is not None else None
    da = DraftAnalysis(sm.options.draft_config_path or "<draft config>", arch, issues=[])
    # EGL011's keys: read off the drafter class SGLang builds for the config, as for EAGLE-3 (drafter.ignored_keys).
    da.ignored_keys = sdr.ignored_keys(sm, sm.options.draft_config, da.draft_path)
    if sv is None:
        return da
    da.effective_ids = sv.aux_layer_ids
    da.effective_from = {"drafter-config": "config", "model-default": "default"}.get(sv.aux_layer_ids_source or "", "")
    assert da.issues is not None
    for st in sv.steps:
        if st.result is StepResult.FAIL and st.gate in (Gate.CAPTURE, Gate.TRAINED_LAYERS):
            loc = st.location
            da.issues.append(IdIssue(st.message, Where(loc.path, loc.line) if loc else Where(da.draft_path, 1),
                                         symbol="target_layer_ids"))
    return da


def _interface(sm: Model, arch: str, key: ClassKey | None,
               method: str) -> tuple[ServingStep, methods.SetterCall | None]:
    v = sm.verdicts.get(arch)
    if key is None or v is None:
        return ServingStep(Gate.RUNNER_INTERFACE, StepResult.UNKNOWN, f"{arch}: the class cannot be resolved"), None
    names = sorted({s.setter for s in methods.call_sites(sm)})
    has = {n: sm.graph.member_origin(key, n) is not None for n in names}
    route = methods.route(sm, method, has)
    if route.refusal is not None:
        msg = route.refusal.text.replace("<model class>", v.class_name)
        return ServingStep(Gate.RUNNER_INTERFACE, StepResult.FAIL,
                           f"{v.class_name} has none of the setters this SGLang calls for {method} "
                           f"({', '.join(n for n in names if n.startswith(('set_dflash', 'set_dspark')))}): {msg}, "
                           "after the weights load", _loc(route.refusal)), None
    if route.unknown:
        return ServingStep(Gate.RUNNER_INTERFACE, StepResult.UNKNOWN, route.unknown), None
    calls = [c for c in route.calls if c.setter != sdr.SETTER]
    if not calls:
        return ServingStep(Gate.RUNNER_INTERFACE, StepResult.PASS,
                           f"this SGLang's runner calls no capture setter for {method}: the target is asked for no "
                           "aux hidden states"), None
    c = calls[0]
    hit = sm.graph.member_origin(key, c.setter)
    how = f" ({hit[0].name}.{c.setter}, {sm.graph.path_of(hit[0])}:{hit[1].line})" if hit is not None else ""
    return ServingStep(Gate.RUNNER_INTERFACE, StepResult.PASS,
                       f"for {method} the runner calls {c.where.text}, which {v.class_name} has{how}",
                       _loc(c.where)), c


def _pp_refusal(sm: Model, pp: int, method: str) -> ServingStep:
    r = pp_mod.refusal(sm, method)
    if r is None:
        return ServingStep(Gate.PP_VERIFIER, StepResult.PASS, f"no launch-time refusal of {method} with "
                           f"pipeline_parallel_size={pp} in this tree")
    return ServingStep(Gate.PP_VERIFIER, StepResult.FAIL, f"pipeline_parallel_size={pp} with {method}: {r.text} at "
                       "launch" + (f" (in {r.via}())" if r.via else "") + ", before any weight loads",
                       Location(r.path, r.line))


def _draft(sm: Model, key: ClassKey | None, call: methods.SetterCall, ids: methods.Ids, method: str,
           draft: dict[str, Any], draft_path: str | None) -> sdr.SglDraft:
    """The EAGLE-3 chain's picture (``drafter.SglDraft``) for the method's setter and ids, so its capture, checkpoint
    and PP steps read them the same way."""
    opts = sm.options
    raw = draft
    path = draft_path or "<draft config>"
    da = DraftAnalysis(path, None, issues=[])
    tcfg = opts.target_config or {}
    text = tcfg.get("text_config") if isinstance(tcfg.get("text_config"), dict) else tcfg
    n = text.get("num_hidden_layers") if isinstance(text, dict) else None
    da.num_layers = n if isinstance(n, int) and not isinstance(n, bool) and 0 < n <= sdr.MAX_LAYERS else None
    h = text.get("hidden_size") if isinstance(text, dict) else None
    da.target_hidden = h if isinstance(h, int) and not isinstance(h, bool) else None
    da.converted = raw
    da.fields = id_fields(raw, path)
    hops = sdr.setter_chain(sm, key, setter=call.setter) if key is not None else []
    stored, is_default, why = sdr.stored_indices(hops, ids.ids, da.num_layers) if hops and ids.ids is not None \
        else (None, False, "no setter" if not hops else "the ids are not known")
    coll = sdr.collection(sm, hops) if hops else None
    read = sdr.IdRead(ids.where, ids.ids)
    trained = sdr.Trained(tuple(i + 1 for i in ids.named) if ids.named else None, "sglang" if ids.named else None,
                          "the drafter config's target_layer_ids, which number layer outputs (dflash_utils.py's "
                          "build_target_layer_ids)" if ids.named else "")
    sd = sdr.SglDraft(da, read, hops, stored, is_default, why, coll, trained)
    pp = opts.pipeline_parallel or 1
    sd.pp_size = pp
    if pp > 1:
        sd.pp_refusal = pp_mod.refusal(sm, method)
        if da.num_layers is not None:
            sd.split = pp_mod.split(sm.source, da.num_layers, pp, opts.pp_partition)
        sdr._pp(sm, sd)
    return sd


def _aux_ids(ids: methods.Ids, method: str, n: int | None) -> ServingStep:
    loc = _loc(ids.where)
    if ids.ids is None:
        return ServingStep(Gate.AUX_IDS, StepResult.UNKNOWN, ids.note or "the runner's selection is not known", loc)
    if ids.named is not None:
        return ServingStep(Gate.AUX_IDS, StepResult.PASS, f"the runner hands the setter {_ids(ids.ids)}, the drafter "
                           f"config's target_layer_ids {_ids(ids.named)}", loc)
    return ServingStep(Gate.AUX_IDS, StepResult.PASS,
                       f"the drafter config names no target layers: the runner selects {_ids(ids.ids)} itself for "
                       f"{n} target layers and {ids.draft_layers} drafter layers", loc)


def _trained(sd: sdr.SglDraft, ids: methods.Ids, captured: tuple[int, ...] | None) -> ServingStep:
    if ids.named is None:
        return ServingStep(Gate.TRAINED_LAYERS, StepResult.UNCHECKED,
                           f"the drafter config names no target layers: SGLang captures its own selection "
                           f"{_ids(ids.ids)}, and which layers the drafter was trained on is not written in it")
    return ssv.trained_step(sd, captured)


def _finish(sm: Model, arch: str, steps: list[ServingStep], sd: sdr.SglDraft | None,
            captured: tuple[int, ...] | None, ids: methods.Ids | None) -> ServingVerdict:
    outcome, stage = outcome_of(steps)
    tr = sd.trained if sd is not None else None
    aux = sd.stored if sd is not None else None
    if outcome in (Outcome.SERVABLE, Outcome.UNCHECKED, Outcome.UNREGISTERED, Outcome.UNIMPORTABLE, Outcome.UNKNOWN):
        nxt = next_step(sm, arch, outcome, stage, steps, HINTS, ())
    else:
        # Before the findings are known: the hint; with_next_step adds "patch it" where the runner refuses
        # the class and a finding's fix adds the method's setter.
        nxt = HINTS.get(outcome) or (f"see the {stage.value} step" if stage else None)
    return ServingVerdict(
        architecture=arch, engine=ssv.ENGINE_NAME, engine_version=sm.version, runner=None,
        runner_reason="SGLang has one model runner", outcome=outcome, stage=stage, aux_layer_ids=aux,
        aux_layer_ids_source=None if ids is None or ids.ids is None else (
            "drafter-config" if ids.named is not None else "model-default"),
        drafter_trained_ids=tr.layers if tr is not None else None, drafter_architecture=None, steps=tuple(steps),
        next_step=nxt, captured_layers=captured, pipeline_parallel=sm.options.pipeline_parallel or 1,
        tensor_parallel=sm.options.tensor_parallel, trained_convention=tr.convention if tr is not None else None,
        platform=sm.options.platform)
