"""## What it does
Checks an EAGLE-3 drafter's ``config.json`` (``--draft-config``) against the target model
(``--target-config``, its text config's ``num_hidden_layers`` and ``hidden_size``) and against the
vLLM tree being checked, and flags aux-layer ids that this vLLM would collect wrongly:

- ids **out of range** for the layers the target's ``forward`` can capture. vLLM numbers an aux id
  by the layer it *enters*: ``if idx in ids: append(h + residual)`` before layer ``idx`` runs, or
  ``_maybe_add_hidden_state(aux, idx + 1, ...)`` after layer ``idx``, which is the same point. The
  explicit form captures ``0 … n-1`` (and ``0`` only where the residual is not ``None`` before the
  first layer); the mixin form also captures ``n`` (the last layer's output) and ``0`` (the
  embeddings) through its call before the loop;
- **duplicate** ids: the forward tests membership once per layer, so ``[2, 2, 58]`` yields two
  states, not three;
- **unsorted** ids, only where the analyzed version relies on their order: a forward that hands the
  states over in the stored ids' order (iterating them) while the setter stores them unsorted.
  Most forwards test membership layer by layer, so states come out in layer order; the one family
  that iterates the ids (0.30+'s ``DeepseekV4Model``) sits behind ``EagleModelMixin``, whose setter
  stores ``tuple(sorted(set(layers)))``. Order is irrelevant there and the rule stays silent;
- a **count** that disagrees with the drafter's ``fc`` input: the drafter concatenates the
  collected states (``target hidden_size`` wide each), and its ``fc`` width is read from the
  tree's drafter class for this config (``3 * hidden_size`` fixed up to 0.21, then
  ``num_aux_hidden_states``, else the length of ``eagle_config``'s ids, else 3);
- a **capture convention** that differs from the analyzed model's forward: SpecForge/SGLang (and
  ModelOpt) number a layer's *output* (``eagle_config.eagle_aux_hidden_state_layer_ids``; SGLang
  adds 1 when capturing), vLLM the layer it *enters*. Ids taken over as-is are one layer early.
  The rule also flags ids that equal the model default minus one, the usual sign of a converted
  SGLang config, and a model forward whose own capture point is shifted (``idx`` after the layer,
  or ``idx + 1`` before it);
- ids the tree **never reads** (before 0.12 the runner always takes the model default; from 0.12
  to 0.21 it reads only the top-level key, not ``eagle_config``), when the default it uses instead
  differs from the layers the drafter names;
- a speculators-format config the tree's own converter rejects, or a tree without that converter.

Absent ids are not a finding: the runner then takes the model default, which the rule evaluates
from the method the runner calls (an override, a delegation, or the Protocol's default body
``(2, n // 2, n - 3)``) and checks like configured ids. With ``--pipeline-parallel N`` a note shows
the layer split computed with the tree's own ``get_pp_indices`` (honouring ``--pp-partition``, the
``VLLM_PP_LAYER_PARTITION`` override) and which rank captures each id; ids captured on a rank
whose states never reach the drafter (no pipeline relay), or a decoder the tree's PP verifier
refuses, are errors.

- the serving chain's blockers no check above names, as errors: a drafter vLLM cannot build
  (``EAGLEConfig`` renames its architectures to one the registry lacks), a config-time refusal of
  EAGLE-3 with pipeline parallelism (the drafter gets the target's PP size and its class does not
  support PP), and a runner that never reserves the pipeline relay slots a relaying decoder needs
  (0.33's V1); and a warning where the release's two runners read the drafter differently.
- with ``--draft-config`` naming a checkpoint folder, a tensor whose shape (read from the safetensors
  headers) does not fit: ``fc.weight`` against the states that arrive and the fc the drafter class
  builds, the decoder layers against the class's, ``d2t``/``t2d``/``lm_head``/``embed_tokens`` against
  the config (the serving chain's ``drafter-fc`` step; docs/drafter-checkpoints.md).

Ids that differ from the layers the drafter was trained on, when those are known (its ids' numbering
is known from where they sit, or stated with ``--drafter-convention``), are errors (the serving
verdict's ``wrong-layers``); otherwise a numbering mismatch is a warning.

On SGLang the engine judges the ids itself (``engines/sglang/drafter.py``): the runner reads only
``eagle_config.eagle_aux_hidden_state_layer_ids`` (else the setter's default), the model's setter shifts them
(``+1``, or by the ``layer_ids[0] == 1`` / ``max == n`` tests), and the decoder collects the state entering layers
``0 … n-1`` (and ``n`` only where it also collects the last layer's output). The rule reports ids that are never
collected (a drafter id ``n - 1`` becomes ``n``), a flag setter's ``IndexError`` past the last layer, ids that
capture other layers than the drafter was trained on (a drafter carried between the two numberings lands one
layer off), vLLM-format ids SGLang never reads, and with ``--pipeline-parallel`` the launch-time refusal or the
ids a last-rank-only setter loses.

## Why is this bad?
vLLM reads the drafter config only after loading both models. An id past the last layer, a
duplicate, or a count that does not fit ``fc`` fails at the first forward with a shape error or,
worse, serves silently with a drafter fed the wrong layers: every draft is rejected and the
speed-up is gone. A convention off by one does not crash at all.

## Example
```json
{"architectures": ["LlamaForCausalLMEagle3"],
 "eagle_aux_hidden_state_layer_ids": [2, 30, 61],
 "hidden_size": 7168}
```
against a 61-layer DeepSeek-V3 target: id 61 is never captured by ``DeepseekV2Model.forward``
(it collects before layers 0 … 60), so the drafter receives two states instead of three.

## Fix safety
No fix: the right ids depend on how the drafter was trained. The message gives the ids this vLLM
would use and the ones that would match the drafter's numbering.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from eagle3_lint import engine_hooks
from eagle3_lint.engine import Capability
from eagle3_lint.lazyimport import lazy
from eagle3_lint.model import Finding, Location, Severity, Step
from eagle3_lint.rules import RuleMeta, fit, make

if TYPE_CHECKING:
    from eagle3_lint import drafter as dr
    from eagle3_lint.stages import Model
else:
    dr = lazy("eagle3_lint.drafter")  # imported on first use (lazyimport.py): only with a drafter config

META = RuleMeta("EGL007", "draft-layer-ids-invalid", Severity.ERROR, False,
                "The drafter config's aux-layer ids do not fit the target model as this engine collects them.",
                needs=frozenset({Capability.DRAFTER_IDS}), asked_of_model=True)


def analysis(sm: Model) -> dr.DraftAnalysis | None:
    """The drafter analysis, computed once per context (the JSON and text reports reuse it)."""
    return engine_hooks.draft_analysis(sm)


def _ids(ids: Sequence[object] | None) -> str:
    return "(" + ", ".join(str(i) for i in (ids or ())) + ")"


def check(sm: Model) -> Iterator[Finding]:
    if sm.options.draft_config is None:
        return  # no drafter to check (and the drafter analysis need not even be imported)
    da = analysis(sm)
    if da is None:
        return
    arch = da.arch
    if da.issues is not None:
        # The engine judged the ids by its own numbering and collection (SGLang's setter transform): its findings.
        for issue in da.issues:
            yield make(META, issue.message, Location(issue.where.path, issue.where.line), severity=issue.severity,
                       architecture=arch, symbol=issue.symbol or None,
                       title=fit(f"{arch}: {issue.title}", issue.title) if issue.title else "")
        if arch is not None:
            yield from _checkpoint(sm, arch)
        return
    cfg_loc = Location(da.draft_path, 1)

    def at_cfg(key: str) -> Location:
        return Location(da.draft_path, da.json_line(key))

    def step(kind: str, text: str, w: dr.Where | None) -> Step:
        return Step(kind, text, Location(w.path, w.line) if w else None)

    # 1. The tree cannot read the config at all.
    if da.conversion_error:
        rel: tuple[Step, ...] = (
            (step("converter", f"{da.conversion_where.text}", da.conversion_where),) if da.conversion_where else ()
        )
        yield make(META, da.conversion_error, at_cfg(da.conversion_key), architecture=arch,
                   symbol=da.conversion_key, related=rel)
        return

    used = da.used_field
    ids = da.effective_ids
    n = da.num_layers
    runner_rel = (step("runner", f"the runner reads the ids in {da.runner_where.text}()", da.runner_where),) \
        if da.runner_where else ()
    default_rel = (step("default", f"model default from {da.default_where.text}()", da.default_where),) \
        if da.default_where else ()

    # Where findings about the effective ids point: the field the runner used, else the default method.
    ids_rel: tuple[Step, ...]
    if da.effective_from == "config" and used is not None:
        ids_loc = Location(da.draft_path, used.line)
        ids_what = f"{used.name} {_ids(ids)}"
        ids_rel = runner_rel
    elif da.effective_from == "default" and da.default_where is not None:
        ids_loc = Location(da.default_where.path, da.default_where.line)
        ids_what = f"the model default {_ids(ids)} (no ids in the drafter config this {sm.engine.display} reads)"
        ids_rel = default_rel
    else:
        ids_loc = cfg_loc
        ids_what = f"ids {_ids(ids)}"
        ids_rel = runner_rel

    # 2. Ids in the config that this vLLM never reads.
    if da.fields and da.runner_ids is None:
        f0 = da.fields[0]
        intended = (_intended(sm, da) or (None, ""))[0]
        if not da.runner_reads:
            why = da.runner_note
        else:
            why = (f"{da.runner_where.text}() ({da.runner_where.path}:{da.runner_where.line}) does not read "
                   f"{f0.name}" if da.runner_where else f"the runner does not read {f0.name}")
            if da.runner_note:
                why += f" ({da.runner_note})"
        if da.default_ids is not None and intended is not None and tuple(intended) == tuple(da.default_ids):
            pass  # the default the runner falls back to is what the drafter names: harmless
        else:
            uses = (f"it uses the model default {_ids(da.default_ids)} instead" if da.default_ids is not None
                    else "it falls back to the model default" + (f" ({da.default_note})" if da.default_note else ""))
            named = f"{f0.name} {_ids(f0.ids)}"
            if intended is not None and tuple(intended) != tuple(f0.ids):
                named += f" (layers {_ids(intended)} in vLLM's numbering)"
            fallback = "the model default" + (f" {_ids(da.default_ids)}" if da.default_ids is not None else "")
            yield make(META, f"{named} is ignored: {why}; {uses}", Location(da.draft_path, f0.line),
                       severity=_wrong_layers_severity(sm, arch), architecture=arch, symbol=f0.name,
                       related=runner_rel + default_rel,
                       title=fit(f"{arch}: the drafter's {f0.name} {_ids(f0.ids)} is ignored; {fallback} is used",
                                 f"{arch}: the drafter's {f0.name} is ignored; {fallback} is used",
                                 f"{arch}: the drafter's {f0.name} is ignored",
                                 f"the drafter's {f0.name} is ignored; {fallback} is used"))

    if ids is None:
        return
    int_ids = [i for i in ids if isinstance(i, int) and not isinstance(i, bool)]
    if len(int_ids) != len(ids):
        yield make(META, f"{ids_what}: aux layer ids must be integers", ids_loc, architecture=arch, related=ids_rel)
        return

    cap = da.capture
    # 3. Range, against what this forward can capture. Where the fc then gets the wrong width, this finding says so
    # and step 6 does not: one fact (the CPU oracle's (1, 4, 9) on 8 layers: 2 states, 512 inputs into a 768-wide fc),
    # as for duplicates in step 4.
    collected: list[int] = sorted(set(int_ids))
    valid = set(collected)
    if n is not None:
        valid = cap.valid_ids(n) if cap is not None and cap.sites else set(range(n))
        collected = sorted(set(int_ids) & valid)
    bad = [i for i in int_ids if i not in valid]
    fc = da.fc
    width = (da.target_hidden or _draft_width(da)) if fc is not None and fc.in_size is not None else None
    fc_misfits = bool(width) and fc is not None and fc.in_size != len(collected) * (width or 0)
    fc_src = "the target's hidden_size" if da.target_hidden else "the drafter's target_hidden_size/hidden_size"
    fc_rel = (step("fc", f"{fc.drafter_class} fc input = {fc.where.text if fc.where else '?'}", fc.where),) \
        if fc is not None and fc_misfits else ()

    def fc_text() -> str:
        assert fc is not None and fc.in_size is not None and width
        expect = fc.in_size / width
        exp_txt = str(int(expect)) if expect == int(expect) else f"{expect:.2f}"
        return (f"the drafter's fc takes {fc.in_size} inputs ({exp_txt} x {width}, {fc_src}), "
                f"but this {sm.engine.display} ")

    if n is not None and bad:
        how = (_capture_text(cap, n) if cap is not None and cap.sites
               else f"the target has {n} layers (0 … {n - 1})")
        parts = [f"{ids_what}: {_ids(bad)} cannot be captured: {how}"]
        if 0 in bad and cap is not None and cap.residual_none_at_start and 0 in range(n):
            parts.append(f"id 0 is the input of layer 0, where residual is still None, so "
                         f"h + residual at {cap.path}:{cap.residual_line} raises TypeError")
        received = f"the drafter receives {len(collected)} hidden states instead of {len(int_ids)}"
        parts.append(f"{received}: {fc_text()}hands it {len(collected) * (width or 0)} inputs; the first drafter "
                     "forward fails on the shape" if fc_misfits else received)
        rel = ids_rel + ((Step("forward", f"{cap.owner.name}.forward collects here",
                               Location(cap.path, cap.loop_line or cap.forward_line)),) if cap else ()) + fc_rel
        yield make(META, "; ".join(parts), ids_loc, architecture=arch, related=rel)

    # 4. Duplicates. Where the fc then gets the wrong width, step 6 says both in one finding: it is one fact (the
    # (2, 3, 3) drafter of the CPU oracle: 2 states, 512 inputs into a 768-wide fc), not two; unless an id out of
    # range already said the fc's part (step 3).
    dups = sorted({i for i in int_ids if int_ids.count(i) > 1})
    dup_text = (f"{ids_what} lists {_ids(dups)} more than once; the forward tests membership once per layer, "
                f"so it collects {len(set(int_ids))} hidden states, not {len(int_ids)}") if dups else ""
    if dups and (not fc_misfits or bad):
        yield make(META, dup_text, ids_loc, architecture=arch, related=ids_rel)

    # 5. Order, only where this version relies on it.
    if cap is not None and cap.order_dependent and list(int_ids) != sorted(int_ids):
        yield make(META, f"{ids_what} is not sorted and {cap.order_why}; a drafter trained on states in layer order "
                         f"gets them permuted", ids_loc, severity=Severity.WARNING, architecture=arch, related=ids_rel)

    # 6. Count against the drafter's fc (said by step 3 when an id out of range is why).
    if fc_misfits and width and not bad:
        k = len(collected)
        yield make(
            META,
            (f"{dup_text}: {fc_text()}hands it {k * width} inputs" if dups else
             f"{fc_text()}collects {k} hidden state(s) for {ids_what}: {k * width} inputs")
            + "; the first drafter forward fails on the shape",
            ids_loc,
            architecture=arch,
            related=ids_rel + fc_rel,
        )

    # 7. Capture conventions.
    if cap is not None and cap.shift not in (None, 0):
        site = cap.sites[0] if cap.sites else ("", 0, cap.loop_line)
        yield make(
            META,
            f"{cap.owner.name}.forward captures id k from the state entering layer k + {cap.shift} "
            f"({site[0]} the layer call with offset {site[1]}); vLLM's runner, its default ids and its "
            f"drafters number the state entering layer k (if idx in ids before the layer, or idx + 1 after it)",
            Location(cap.path, site[2]),
            severity=Severity.WARNING,
            architecture=arch,
            symbol=f"{cap.owner.name}.forward",
        )
    if da.effective_from == "config" and used is not None:
        shift = (da.transform or 0) + ((cap.shift or 0) if cap is not None else 0)
        known = _intended(sm, da)
        got = sorted({int(i) + shift for i in used.ids if isinstance(i, int) and not isinstance(i, bool)})
        if known is not None and got != sorted(set(known[0])):
            yield make(META, f"{used.name} {_ids(used.ids)}: the drafter was trained on the states entering layers "
                             f"{_ids(known[0])} ({known[1]}), but this vLLM captures the states entering layers "
                             f"{_ids(got)}. In vLLM's numbering the drafter's layers are {_ids(known[0])}; put those "
                             f"in eagle_aux_hidden_state_layer_ids",
                       Location(da.draft_path, used.line), severity=_wrong_layers_severity(sm, arch),
                       architecture=arch, symbol=used.name, related=runner_rel)
        elif used.convention == dr.INPUT and da.default_minus_one(int_ids):
            yield make(
                META,
                f"{used.name} {_ids(used.ids)} is this model's default {_ids(da.default_ids)} minus one: the "
                f"numbering SGLang, SpecForge and ModelOpt use for a layer's output. vLLM captures the state "
                f"entering layer k, so if the drafter was trained on the outputs of layers {_ids(used.ids)} "
                f"it gets states one layer early here; use {_ids(da.default_ids)} (or drop the key). Ignore "
                f"this if the ids were chosen in vLLM's numbering",
                Location(da.draft_path, used.line),
                severity=Severity.WARNING,
                architecture=arch,
                symbol=used.name,
                related=default_rel,
            )

    # 8. Pipeline parallelism.
    if da.pp is not None:
        yield from _pp(sm, da, collected, arch)

    # 9. The serving chain's blockers no check above names: the drafter class, a config-time PP refusal, a runner
    # whose drafter exists on the last PP rank only, the relay slots the runner never reserves; and the two
    # runners reading the drafter differently.
    if arch is not None:
        yield from _serving_blockers(sm, da, arch)


def _wrong_layers_severity(sm: Model, arch: str | None) -> Severity:
    """An error where the serving chain knows the drafter's trained layers and they are not what is captured."""
    if arch is None:
        return Severity.WARNING
    from eagle3_lint import serving

    sv = engine_hooks.serving_verdict(sm, arch)
    step = sv.step(serving.Gate.TRAINED_LAYERS) if sv is not None else None
    return Severity.ERROR if step is not None and step.result is serving.StepResult.FAIL else Severity.WARNING


def _serving_blockers(sm: Model, da: dr.DraftAnalysis, arch: str) -> Iterator[Finding]:
    from eagle3_lint import serving
    from eagle3_lint.runner import RunnerKind

    sv = engine_hooks.serving_verdict(sm, arch)
    if sv is None:
        return
    yield from _checkpoint(sm, arch)
    for st in sv.steps:
        if st.result is not serving.StepResult.FAIL:
            continue
        if st.gate is serving.Gate.DRAFTER_CLASS and da.ignored_keys:
            continue  # a class built without a key the config sets: EGL011 names each key
        if st.gate is serving.Gate.DRAFTER_CLASS:
            yield make(
                META,
                f"{sm.engine.display} cannot build this drafter: {st.message}",
                Location(da.draft_path, da.json_line("architectures")),
                architecture=arch,
                symbol="architectures",
                related=(Step("drafter", "EAGLEConfig / the registry", st.location),),
            )
        elif st.gate is serving.Gate.CONFIG_GATE and "pipeline_parallel_size" in st.message:
            yield make(META, f"{arch} with pipeline parallelism {sv.pipeline_parallel}: {st.message}",
                       st.location or Location(da.draft_path, 1), architecture=arch, symbol="pipeline_parallel_size")
        elif st.gate is serving.Gate.PP_VERIFIER and sm.runner.rank_guard is not None \
                and st.location == Location(sm.runner.rank_guard.path, sm.runner.rank_guard.read_line):
            # The runner itself never starts EAGLE-3 with PP (its drafter exists on the last rank only): no rule
            # about the model covers it, and the chain alone would leave the check passing.
            yield make(META, f"EAGLE-3 never starts with pipeline parallelism on the "
                             f"{sv.runner.value.upper() if sv.runner else ''} runner: {st.message}",
                       st.location, architecture=arch, symbol="pipeline_parallel_size")
        elif st.gate is serving.Gate.PP_RELAY and "never calls" in st.message:
            yield make(META, f"{arch} on the {sv.runner.value.upper() if sv.runner else ''} runner: {st.message}",
                       st.location or Location(da.draft_path, 1), architecture=arch, symbol="relay")
    # Where the release has two runners, say when they disagree about this drafter.
    if sv.runner is not None and len(sm.runner.kinds) == 2:
        other = engine_hooks.serving_verdict(sm, arch, RunnerKind.V2 if sv.runner is RunnerKind.V1 else RunnerKind.V1)
        if other is not None and (other.aux_layer_ids, other.outcome) != (sv.aux_layer_ids, sv.outcome):
            def says(v: serving.ServingVerdict) -> str:
                src = {"drafter-config": "from the drafter config", "model-default": "the model default"}
                ids = f"ids {_ids(v.aux_layer_ids)} ({src.get(v.aux_layer_ids_source or '', 'unknown source')})"
                return f"the {v.runner.value.upper() if v.runner else '?'} runner uses {ids} and ends {v.outcome.value}"

            yield make(
                META,
                f"the two runners of this {sm.engine.display} read this drafter differently: {says(sv)} "
                f"(the one modelled: {sv.runner_reason}); {says(other)}",
                Location(da.draft_path, da.fields[0].line if da.fields else 1),
                severity=Severity.WARNING,
                architecture=arch,
                symbol="runner",
            )


def _checkpoint(sm: Model, arch: str) -> Iterator[Finding]:
    """The serving chain's ``drafter-fc`` failure that the checkpoint's headers decided (its location is a file of
    the checkpoint folder), as an error at that file."""
    from eagle3_lint import serving

    ck = sm.options.draft_weights
    sv = engine_hooks.serving_verdict(sm, arch) if ck is not None else None
    st = sv.step(serving.Gate.DRAFTER_FC) if sv is not None else None
    if st is None or st.result is not serving.StepResult.FAIL or st.location is None \
            or not st.location.path.startswith(ck.folder):
        return
    yield make(META, f"the drafter checkpoint does not fit what this {sm.engine.display} builds and hands it: "
                     f"{st.message}", st.location, architecture=arch, symbol="checkpoint",
               title=fit(f"{arch}: the drafter checkpoint's shapes do not fit", "the drafter checkpoint's shapes "
                         "do not fit"))


def _intended(sm: Model, da: dr.DraftAnalysis) -> tuple[list[int], str] | None:
    """The layers the drafter was trained on in vLLM's numbering (the state entering layer k) and how that was
    decided, when its ids say: the one reading of a drafter config the serving chains and ``layers`` use
    (``drafter_fields.trained``)."""
    from eagle3_lint.drafter_fields import trained

    tr = trained(da.fields, sm.options.drafter_convention, da.num_layers)
    return (list(tr.layers), tr.why) if tr.layers is not None and tr.convention is not None else None


def _draft_width(da: dr.DraftAnalysis) -> int | None:
    cfg = da.converted or {}
    for key in ("target_hidden_size", "hidden_size"):
        v = cfg.get(key)
        if isinstance(v, int):
            return v
    return None


def _capture_text(cap: dr.Capture, n: int) -> str:
    valid = sorted(cap.valid_ids(n))
    rng = f"{valid[0]} … {valid[-1]}" if valid else "none"
    kinds = []
    for pos, off, line in cap.sites:
        if pos == "pre-loop":
            kinds.append(f"id 0 before the loop (line {line})")
        else:
            idx = "idx" if off == 0 else f"idx {'+' if off > 0 else '-'} {abs(off)}"
            kinds.append(f"{idx} {pos} layer idx (line {line})")
    return (
        f"{cap.owner.name}.forward ({cap.path}:{cap.forward_line}) captures {rng} for {n} layers ({'; '.join(kinds)})"
    )


def _pp(sm: Model, da: dr.DraftAnalysis, collected: list[int], arch: str | None) -> Iterator[Finding]:
    assert da.pp is not None
    sp = da.pp.split
    cap = da.capture
    where = Location(sp.path, sp.line) if sp.path else Location(da.draft_path, 1)
    if not sp.ranges:
        yield make(META, f"--pipeline-parallel {sp.pp_size}: {sp.note}", where, architecture=arch)
        return
    ranks = "; ".join(f"rank {r}: layers {s} … {e - 1}" if e > s else f"rank {r}: no layers"
                      for r, (s, e) in enumerate(sp.ranges))
    parts = []
    for r in sorted(da.pp.captures):
        items = []
        for k, layer in da.pp.captures[r]:
            items.append(
                str(k) if layer == k + (cap.shift or 0 if cap else 0) else f"{k} (as the state entering layer {layer})"
            )
        parts.append(f"rank {r} captures {', '.join(items)}")
    missing = [k for k in collected if da.pp.rank_of_id.get(k) is None]
    if missing:
        parts.append(f"no rank captures {_ids(missing)}")
    cap_txt = "; ".join(parts) or "no rank captures any"
    src = (f"get_pp_indices at {sp.path}:{sp.line}" if sp.source == "tree" else "the reference arithmetic")
    extra = []
    if sp.partition is not None:
        extra.append(f"{sm.engine.pp_partition_env}={sp.partition}")
    if sp.note:
        extra.append(sp.note)
    if cap is not None and not cap.absolute:
        extra.append(f"{cap.owner.name}.forward enumerates a slice without start= (line {cap.loop_line}): on rank r it "
                     f"compares slice-relative indices, so id k is captured at layer start_r + k there (see EGL005)")
    loc = Location(cap.path, cap.loop_line or cap.forward_line) if cap is not None else where
    rel = (Step("split", src, where),)
    yield make(META, f"--pipeline-parallel {sp.pp_size} over {sp.num_layers} layers ({src}): {ranks}. "
                     f"Aux ids {_ids(collected)}: {cap_txt}" + (f". {'; '.join(extra)}" if extra else ""),
               loc, severity=Severity.NOTE, architecture=arch, related=rel)
    if cap is None:
        return
    last = len(sp.ranges) - 1
    verifier = sm.runner.pp_verifier
    if verifier and cap.relays_pp is False:
        # The tree's runner checks the decoder whenever pipeline parallelism is on, whatever the ids.
        yield make(
            META,
            f"with --pipeline-parallel {sp.pp_size} this {sm.engine.display} refuses EAGLE-3 for this model: "
            f"{cap.relay_why}, "
            f"and {verifier}() ({sm.runner.pp_verifier_path}:{sm.runner.pp_verifier_line}) requires it "
            f"to relay aux states between ranks",
            loc,
            architecture=arch,
            related=(Step("verifier", verifier, Location(sm.runner.pp_verifier_path, sm.runner.pp_verifier_line)),),
        )
        return
    if cap.relays_pp is not False:
        return
    delivered = da.pp.captures.get(last, [])
    early = sorted(
        {k for r, items in da.pp.captures.items() if r != last for k, _l in items} - {k for k, _l in delivered}
    )
    if len(delivered) < len(collected):
        lost = f"ids {_ids(early)} are captured on earlier ranks, but " if early else ""
        yield make(
            META,
            f"with --pipeline-parallel {sp.pp_size}, {lost}{cap.relay_why}: the drafter (on the last rank) "
            f"receives {len(delivered)} of {len(collected)} hidden states and its fc fails on the shape",
            loc,
            architecture=arch,
        )
