"""## What it does
Flags the top-level class the runner interrogates when it fails ``supports_eagle3()``, or passes
it with a setter that never reaches the object owning the decoder layers, while an inner model it
delegates to (``self.language_model``, ``self.model``) supports the contract.

## Why is this bad?
The runner asks the *top-level* object (``supports_eagle3(self.get_model())``) and calls
``set_aux_hidden_state_layers`` on it. A multimodal wrapper around a decoder that implements
EAGLE-3 gets ``RuntimeError: Model does not support EAGLE3 interface`` after the whole model has
loaded; a wrapper that inherits the Protocol's stub setter passes the check, sets nothing, and the
drafter receives no aux hidden states. This is the Kimi-K2.5 shape.

## Example
```python
class WrapForConditionalGeneration(nn.Module, SupportsMultiModal, SupportsPP):
    def __init__(self, vllm_config, prefix=""):
        self.language_model = init_vllm_registered_model(..., architectures=["InnerForCausalLM"])
# InnerForCausalLM implements SupportsEagle3; the wrapper does not.
```

Use instead (stub-bodied Protocol, vLLM 0.10-0.17):
```python
class WrapForConditionalGeneration(nn.Module, SupportsMultiModal, SupportsPP, SupportsEagle3):
    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.language_model.set_aux_hidden_state_layers(layers)

    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
        return self.language_model.get_eagle3_aux_hidden_state_layers()
```
With real default bodies (0.18+) adding the base is enough when the defaults' unwrap
(``get_language_model()`` / ``language_model``, then ``.model``) reaches an ``EagleModelMixin``.

On an engine whose runner asks the top-level model only for its setter (SGLang), the "passes but
does not reach" half is a setter whose body does nothing while the wrapper's ``forward`` runs the
inner model, directly or handed to a helper (``general_mm_embed_routine(language_model=...)``): the
inner model returns aux hidden states only once its own setter is called. The inner model may be
one the forward hands to such a helper (``self.llm``), or one ``__init__`` imports itself.

Severity: error when the architecture is targeted (``--arch``), warning otherwise. Reported once,
on the class whose ``__init__`` builds the inner model, with every architecture that inherits the
gap (Tarsier2 subclasses Qwen2-VL: one finding). Pooling models and drafters are out of scope:
the runner never interrogates them as EAGLE-3 targets.

## Fix safety
Adding the interface base (and its import) is safe when the contract's default bodies already
reach the inner model. New delegating methods are unsafe. A wrapper that overrides the setter with
a body reaching the wrong object gets no automatic fix. When a subclass holds an inner model of its own without
the contract (vLLM 0.11.0 Qwen3-VL-MoE under Qwen3-VL), the fix also writes the contract on that inner model, or
is not offered: the subclass would inherit the wrapper's methods and pass the check without working.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from eagle3_lint import semantic as sem
from eagle3_lint.engine import Capability
from eagle3_lint.graph import ClassKey
from eagle3_lint.lazyimport import lazy
from eagle3_lint.model import Applicability, Edit, Finding, Fix, Severity, Status, Step
from eagle3_lint.rules import Found, RuleMeta, Scope, fit, make
from eagle3_lint.rules import _interface as shared

if TYPE_CHECKING:
    from eagle3_lint import fixgen
    from eagle3_lint.rules import Each
    from eagle3_lint.stages import Model
else:
    fixgen = lazy("eagle3_lint.fixgen")  # imported on first use (lazyimport.py)

META = RuleMeta(
    "EGL002",
    "wrapper-not-delegating",
    Severity.ERROR,
    True,
    "The top-level class fails the contract (or does not reach the layers) while its inner model supports it.",
    scope=Scope.ARCH,
    asked_of_model=True,
)


def check(sm: Model, each: Each) -> Iterator[Found]:
    heirs = functools.cache(functools.partial(_failing_heirs, sm))  # asked for gap groups only, once
    yield from shared.found(sm, _compute(sm, each), lambda sm, g: _finding(sm, g, heirs), _fix)


def _compute(sm: Model, each: Each) -> shared.Groups:
    groups = shared.Groups()
    # Targeted architectures first: a group shared by several (one wrapper class, subclasses with other inner
    # models) names the inner model of the one the user asked about.
    # One architecture's contribution: an answer kept between runs with the files it read (each_arch).
    def one(arch: str, key: ClassKey, groups: shared.Sink) -> None:
        st = sem.status(sm, arch)
        if st is Status.WRAPPER_GAP:
            inner = sem.supporting_inner(sm, key)
            where = _definer(sm, key, inner)
            loc = sem.class_location(sm, where)
            if loc is not None:
                groups.get(loc, "gap", arch, key=where, inner=inner)
        elif st is Status.SUPPORTED and (sm.engine.has(Capability.AUX_PLUMBING) or sm.engine.collection):
            inner = sem.supporting_inner(sm, key)
            if not inner:
                return
            eff = sem.setter_effect(sm, key)
            if eff.kind in ("missing", "unknown"):
                return
            own = sem.owner(sm, key)
            if eff.kind == "writes" and (own is None or eff.path == own.path):
                return
            ran = sem.runs(sm, key, inner[0][0].attr)
            if not sm.engine.has(Capability.AUX_PLUMBING) and (eff.kind != "stub" or ran is None):
                # An engine that collects through lists or flags: a setter writing another object is EGL004's
                # (wrong-object); here, a setter whose body does nothing while the forward runs the inner model
                # (directly, or handed to a helper such as SGLang's general_mm_embed_routine) that only its setter
                # would configure.
                return
            loc = sem.class_location(sm, key)
            if loc is not None:
                groups.get(loc, "no-reach", arch, key=key, inner=inner, effect=eff, owner=own, runs=ran)
    shared.each_arch(each, groups, one,
                     sorted(sem.scoped_archs(sm), key=lambda ak: not sm.is_targeted(ak[0])))
    return groups


def _failing_heirs(sm: Model) -> dict[ClassKey, list[tuple[str, ClassKey]]]:
    """For each class, the scoped architectures that fail the check and whose class inherits it (in scope order):
    worked out once, not once per wrapper."""
    def compute() -> dict[ClassKey, list[tuple[str, ClassKey]]]:
        out: dict[ClassKey, list[tuple[str, ClassKey]]] = {}
        for a, k in sem.scoped_archs(sm):
            if sem.status(sm, a) is Status.UNSUPPORTED:
                for e in sm.graph.mro(k).entries:
                    if isinstance(e, ClassKey):
                        out.setdefault(e, []).append((a, k))
        return out

    return compute()


def _definer(sm: Model, key: ClassKey, inner: list[tuple[sem.Hop, ...]]) -> ClassKey:
    """The class whose ``__init__`` builds the inner model: a subclass that only inherits the
    wrapper (Tarsier2 from Qwen2-VL) is the same gap, reported and fixed once, on that class."""
    return sem.builder_of(sm, key, inner[0][0].attr) if inner else key


def _finding(sm: Model, g: shared.Group,
             heirs: Callable[[], dict[ClassKey, list[tuple[str, ClassKey]]]]) -> Finding:
    key: ClassKey = g.data["key"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    inner: list[tuple[sem.Hop, ...]] = g.data["inner"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    targeted = shared.any_targeted(sm, g.archs)
    sev = Severity.ERROR if targeted else Severity.WARNING
    check_fn = sm.contract.check_name
    related: list[Step] = []
    for p in inner:
        loc = sem.class_location(sm, p[-1].key)
        related.append(Step("inner", f"{_dotted(p)} -> {p[-1].key.name} supports the contract", loc))
    inner_txt = ", ".join(f"{_dotted(p)} -> {p[-1].key.name}" for p in inner) or "an inner model"
    if g.kind == "gap":
        chk = sm.judge.check_class(key)
        fails = f"fails {check_fn}" if sm.contract.found else "lacks the methods the runner calls"
        msg = (f"{key.name} {fails} ({chk.reason}), but the inner model it delegates to "
               f"({inner_txt}) supports the contract; the runner asks the wrapper")
        exposed = [a for a, k in heirs().get(key, ()) if a not in g.archs and k != key]
        if exposed:
            msg += (
                f" (note: {shared.arch_list(exposed)} {'inherits' if len(exposed) == 1 else 'inherit'} {key.name} "
                f"but build{'s' if len(exposed) == 1 else ''} an inner model without the "
                f"contract; once {key.name} implements it they pass the check without working"
                + (", and EGL004/EGL006 report them)" if sm.engine.has(Capability.AUX_PLUMBING) else ")")
            )
    else:
        eff: sem.Effect = g.data["effect"]  # type: ignore[assignment]  # Group.data: what _pairs stored
        own: sem.Owner | None = g.data["owner"]  # type: ignore[assignment]  # Group.data: what _pairs stored
        where = f"self.{'.'.join(own.path)}" if own is not None and own.path else "the layer owner"
        if eff.kind == "stub" and not sm.engine.has(Capability.AUX_PLUMBING) and eff.method_owner is not None:
            where_def = sem.method_location(sm, eff.method_owner, eff.line)
            how = f"its {sm.contract.setter}() ({where_def}) does nothing"
        elif eff.kind == "stub":
            how = f"its {sm.contract.setter}() is {eff.detail.split(' has ')[0]}'s stub, which does nothing"
        elif eff.kind == "writes":
            how = f"its setter writes self.{'.'.join((*eff.path, eff.attr or '?'))}, not {where}"
        else:
            how = eff.detail
        msg = (f"{key.name} passes {check_fn} but does not delegate to the inner model ({inner_txt}): {how}; "
               f"the decoder at {where} never gets the aux layers")
        ran: tuple[str, ClassKey, int] | None = g.data.get("runs")  # type: ignore[assignment]  # Group.data
        if ran is not None and not sm.engine.has(Capability.AUX_PLUMBING):
            # Where the runner asks the wrapper for nothing but the setter, what makes this a defect is that the
            # wrapper's forward runs the inner model, whose states only its own setter would turn on.
            ran_at = sem.method_location(sm, ran[1], ran[2])
            msg += f", though {ran[0]} ({ran_at}), so it returns no aux hidden states"
            related.append(Step("forward", ran[0], ran_at))
    msg += f"; architectures: {shared.arch_list(g.archs)}"
    who = shared.primary_arch(sm, g.archs) or key.name
    # One wording for every EGL002 line (the check's name dropped only for the longest class names).
    # The short form names the method checked (``--method``): DSPARK's check names two setters.
    title = fit(f"{who} fails {check_fn}; its inner model passes",
                f"{who} fails {sm.contract.short_check}; its inner model passes")
    if g.kind != "gap":
        title = fit(f"{key.name} passes {check_fn} but never hands the aux layers to its inner model",
                    f"{key.name} passes {check_fn} but does not delegate to its inner model")
    return make(META, msg, g.location, severity=sev, architecture=shared.primary_arch(sm, g.archs),
                architectures=tuple(sorted(g.archs)),
                symbol=key.name, related=tuple(related), title=title)


def _fix(sm: Model, g: shared.Group) -> Fix | None:
    if not shared.wants_fix(sm, g.archs):
        return None
    key: ClassKey = g.data["key"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    inner: list[tuple[sem.Hop, ...]] = g.data["inner"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    if not inner:
        return None
    if not sm.engine.has(Capability.AUX_PLUMBING):
        return idiom_fix(sm, key, inner[0]) if g.kind == "gap" else None
    path = _dotted(inner[0])[5:]
    if g.kind == "gap":
        return wrapper_fix(sm, key, path)
    eff: sem.Effect = g.data["effect"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    if eff.kind == "writes" or (eff.kind == "stub" and not eff.from_protocol):
        return None  # an override with the wrong body needs a human
    flavor = fixgen.flavor(sm)
    if flavor.setter is None:
        return None
    edits = fixgen.add_setter(sm, key, fixgen.setter_delegate(path, flavor.setter, fixgen.setter_param(sm)))
    if not edits:
        return None
    return Fix(f"delegate {flavor.setter}() to self.{path}", tuple(edits), Applicability.UNSAFE)


def idiom_fix(sm: Model, key: ClassKey, path: tuple[sem.Hop, ...]) -> Fix | None:
    """For an engine whose aux plumbing the tool does not model: the tree's own delegating setter copied onto the
    wrapper, only where delegating is all it takes: the inner model is a whole registered model that passes the
    check (its own forward returns the aux states), one attribute away, and no architecture inheriting the wrapper
    holds an inner model without the method (it would pass the check and capture nothing)."""
    if len(path) != 1 or path[0].key not in set(sm.keys.values()):
        return None
    if _failing_heirs(sm).get(key):
        return None
    setter = sem.setter_for(sm, path[0].key)
    made = fixgen.add_delegating_setter(sm, key, path[0].attr, setter)
    if made is None or not made[0]:
        return None
    edits, idiom = made
    return Fix(f"delegate {setter}() to self.{path[0].attr} as {idiom.key.name} does "
               f"({idiom.path}:{idiom.line})", tuple(edits), Applicability.UNSAFE)


def exposed_wrapper_edits(sm: Model, inner: ClassKey) -> list[Edit]:
    """For a fix that gives ``inner`` the setter (EGL003 on SGLang): the delegating setter, as ``idiom_fix`` writes
    it, on each failing wrapper holding an ``inner`` one hop away, which the new setter would turn into a wrapper
    gap (SGLang 0.5.23 ``BailingMoeV3VLForConditionalGeneration`` over ``BailingMoeV3ForCausalLM``). Without it a
    second --fix found the gap. A wrapper with a failing heir that holds another inner model gets nothing, as in
    ``idiom_fix``."""
    held: dict[ClassKey, str] = {}  # the wrapper class whose __init__ builds the inner model -> its attribute
    archs: set[str] = set()
    registered = set(sm.keys.values())
    for a, k in sem.scoped_archs(sm):
        if k == inner:
            continue
        hit = next(((attr, where) for attr, target, where in sem.held_models(sm, a)
                    if target in registered and sm.graph.in_mro(target, inner)), None)
        if hit is not None:
            held.setdefault(hit[1], hit[0])
            archs.add(a)
    edits: list[Edit] = []
    for where, attr in sorted(held.items(), key=lambda kv: str(kv[0])):
        if any(a not in archs for a, _k in _failing_heirs(sm).get(where, ())):
            continue
        made = fixgen.add_delegating_setter(sm, where, attr)
        if made is not None:
            edits += made[0]
    return edits


def _dotted(path: tuple[sem.Hop, ...]) -> str:
    return "self." + ".".join(h.attr for h in path)


def wrapper_fix(sm: Model, key: ClassKey, attr: str) -> Fix | None:
    """Interface base (+ import) on the wrapper, and delegating methods where the contract's bodies do not reach."""
    flavor = fixgen.flavor(sm)
    edits: list[Edit] = list(fixgen.add_protocol(sm, key))
    methods: list[Edit] = []
    param = fixgen.setter_param(sm)
    if flavor.setter and _needs_setter(sm, key):
        methods += fixgen.add_setter(sm, key, fixgen.setter_delegate(attr, flavor.setter, param))
    if flavor.getter and _needs_getter(sm, key, flavor.getter):
        methods += fixgen.add_getter(sm, key, fixgen.getter_delegate(attr, flavor.getter))
    edits += methods
    if not edits:
        return None
    # A subclass whose own inner model lacks the contract (Qwen3VLMoe under Qwen3VL, vLLM 0.11.0) would inherit
    # the new base and methods and pass the check without working: the fix writes the contract on that inner
    # model too (EGL001's chain edits; the delegating methods it inherits then reach it), or is not offered.
    # Without this a second --fix found the subclass, through EGL004 and EGL006.
    from eagle3_lint.rules.egl001_missing_eagle3_interface import chain_edits

    heirs = sorted({k for _a, k in _failing_heirs(sm).get(key, ()) if k != key}, key=str)
    inners: list[ClassKey] = []
    for heir in heirs:
        own = sem.owner(sm, heir)
        if own is None or not own.hops or own.hops[0].attr != attr:
            return None
        more = chain_edits(sm, own.hops[0].key)
        if not more:
            return None
        inners.append(own.hops[0].key)
        methods += more
        edits += more
    app = Applicability.UNSAFE if methods else Applicability.SAFE
    what = f"add {flavor.protocol}" if flavor.protocol else "add the EAGLE-3 methods"
    if methods:
        what += f" and methods delegating to self.{attr}"
    if heirs:
        what += f", and the contract on {', '.join(sorted({k.name for k in inners}))}, the inner model of " \
                f"{', '.join(k.name for k in heirs)}"
    return Fix(what, tuple(edits), app)


def _needs_setter(sm: Model, key: ClassKey) -> bool:
    """After the base is added, would the setter the runner calls still not reach the layers?"""
    name = sem.setter_name(sm)
    if name is None:
        return False
    hit = sem.method_of(sm, key, name)
    if hit is not None and not sem.is_protocol_method(sm, hit[0]):
        return False  # the class has its own (EGL002 reports it if it does not reach)
    if not sm.contract.methods_have_defaults:
        return True
    eff = sem.default_setter_effect(sm, key)
    own = sem.owner(sm, key)
    return not (eff.kind == "writes" and own is not None and eff.path == own.path)


def _needs_getter(sm: Model, key: ClassKey, name: str) -> bool:
    hit = sem.method_of(sm, key, name)
    if hit is not None and not sem.is_protocol_method(sm, hit[0]):
        return False
    if sm.graph.member_origin(key, name) is not None and hit is None:
        return False
    if not sm.contract.methods_have_defaults:
        return True
    return sem.default_getter_state(sm, key).kind == "broken-default"
