"""## What it does
For an architecture that passes ``supports_eagle3()``, follows the aux-state path to the object
that owns the decoder layers and flags the first broken link:

- the owner's ``forward`` never compares a layer index with the configured aux layers (nor calls
  the mixin's collector), so it never collects hidden states;
- it collects them but never returns them (``return hidden_states, aux_hidden_states``);
- the setter the runner calls writes an attribute that ``forward`` never reads, or writes it on an
  object other than the layer owner;
- the contract's default setter (0.18+) unwraps to a holder that is not the ``EagleModelMixin`` it
  asserts, so ``set_aux_hidden_state_layers`` raises at runtime.

On an engine whose decoders collect through a list attribute or per-layer flags (SGLang's
``layers_to_capture`` and ``_is_layer_to_capture``), the setter must feed, on the layer owner, the
mechanism its forward reads: a setter that writes the list while the decoder reads only the flags
captures nothing (SGLang 0.5.11 - 0.5.21 ``Qwen3_5ForConditionalGeneration``, PR #25408), and a
setter inherited from a base whose ``self.model`` is another decoder may reach one that never
collects (0.5.2 - 0.5.4 ``Glm4vForConditionalGeneration`` over ``Glm4Model``).

Checked for classes that pass the check, and for those whose EGL003/EGL002 fix would make them
pass (a partial class, a wrapper around a supporting inner model): their forward must work too.
Reported once where the defect is (the forward, the setter, or the holder class), with every
affected architecture listed. A wrapper whose inner model supports the contract is EGL002's; a
stub setter is EGL003's. Pooling models and drafters are out of scope.

## Why is this bad?
The runner accepts the model, the drafter then receives no aux hidden states (or the model's
output is not the ``(hidden_states, aux_hidden_states)`` pair it unpacks), and EAGLE-3 fails at
the first decoding step, or the setter's assertion fails at start-up.

## Example
```python
class MiMoModel(Qwen2Model):  # Qwen2ForCausalLM's setter writes self.model.aux_hidden_state_layers
    def forward(self, input_ids, positions, intermediate_tensors, inputs_embeds=None):
        for layer in islice(self.layers, self.start_layer, self.end_layer):  # never collects
            hidden_states, residual = layer(positions, hidden_states, residual)
        ...
        return hidden_states
```

## Fix safety
Unsafe: the fix adds a collection loop in ``forward`` at absolute layer indices
(``enumerate(..., start=self.start_layer)``) and the ``(hidden_states, aux_hidden_states)``
return, in the analysed version's idiom (an explicit ``idx in self.aux_hidden_state_layers`` test,
or the mixin's ``_maybe_add_hidden_state``), or makes the holder an ``EagleModelMixin``. A setter
that writes the wrong object or attribute gets no automatic fix. A setter feeding the list to a
flag-reading decoder gets the flags set as well: through the decoder's own DFlash setter where it
has one (else a ``setattr`` loop), in an override calling ``super()`` on each class inheriting it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from eagle3_lint import semantic as sem
from eagle3_lint.engine import Capability, Mechanism
from eagle3_lint.graph import ClassKey
from eagle3_lint.lazyimport import lazy
from eagle3_lint.model import (
    Applicability,
    Edit,
    Finding,
    Fix,
    Severity,
    Status,
    Step,
)
from eagle3_lint.rules import Found, RuleMeta, Scope, fit, make
from eagle3_lint.rules import _interface as shared

if TYPE_CHECKING:
    from eagle3_lint import fixgen
    from eagle3_lint.rules import Each
    from eagle3_lint.stages import Model
else:
    fixgen = lazy("eagle3_lint.fixgen")  # imported on first use (lazyimport.py)

META = RuleMeta(
    "EGL004",
    "aux-states-not-collected",
    Severity.ERROR,
    True,
    "The interface is claimed, but the layer owner's forward never collects or returns the aux hidden states.",
    needs=frozenset({Capability.AUX_COLLECTION}),
    scope=Scope.ARCH,
    asked_of_model=True,
)


def check(sm: Model, each: Each) -> Iterator[Found]:
    yield from shared.found(sm, _compute(sm, each), _finding, _fix)


def _compute(sm: Model, each: Each) -> shared.Groups:
    groups = shared.Groups()
    if sm.engine.collection is not None:
        return _compute_mechanisms(sm, each, groups)
    # One architecture's contribution: an answer kept between runs with the files it read (each_arch).
    def one(arch: str, key: ClassKey, groups: shared.Sink) -> None:
        # Supported classes, and those that claim the interface without passing yet: a partial
        # class (methods, no marker) or a wrapper around a supporting inner model. Their EGL003 /
        # EGL002 fixes make the runner accept them, so the forward they reach must work too.
        st = sem.status(sm, arch)
        if st not in (Status.SUPPORTED, Status.PARTIAL, Status.WRAPPER_GAP):
            return
        own = sem.owner(sm, key)
        if own is None:
            return
        inner = sem.supporting_inner(sm, key)
        wrapper_case = bool(inner)
        eff = sem.setter_effect(sm, key)
        if st is Status.WRAPPER_GAP:
            if not inner:
                return
            # The wrapper has no setter yet; the one its fix delegates to decides the attribute.
            sub = sem.setter_effect(sm, inner[0][-1].key)
            eff = sem.Effect("unknown", attr=sub.attr if sub.kind == "writes" else None)
        # The setter's own defects first: they decide which attribute the forward must read.
        if eff.kind in ("not-mixin", "no-holder") and not wrapper_case:
            mixin_key = sem.mixin_key(sm)
            holder = eff.hops[-1].key if eff.hops else key
            loc = sem.class_location(sm, holder)
            if loc is not None and eff.kind == "not-mixin" and mixin_key is not None:
                groups.get(loc, "not-mixin", arch, holder=holder, top=key, effect=eff, owner=own)
            return
        if eff.kind == "writes" and eff.path != own.path:
            if not wrapper_case and eff.method_owner is not None:
                loc = sem.method_location(sm, eff.method_owner, eff.line)
                groups.get(loc, "wrong-object", arch, top=key, effect=eff, owner=own)
            return
        fw = sem.forward_of(sm, own.key)
        if fw is None:
            return
        if not fw.collects:
            attr = eff.attr if eff.attr else _expected_attr(sm, own.key)
            groups.get(sem.method_location(sm, fw.owner, fw.line), "no-collect", arch,
                       top=key, owner=own, forward=fw, attr=attr, effect=eff)
        elif eff.kind == "writes" and eff.attr and eff.attr not in fw.attrs_read:
            if eff.method_owner is not None:
                loc = sem.method_location(sm, eff.method_owner, eff.line)
                groups.get(loc, "wrong-attr", arch, top=key, effect=eff, owner=own, forward=fw)
        elif not fw.returns_aux:
            groups.get(sem.method_location(sm, fw.owner, fw.line), "no-return", arch,
                       top=key, owner=own, forward=fw, effect=eff)
    shared.each_arch(each, groups, one, sem.scoped_archs(sm))
    return groups


def _compute_mechanisms(sm: Model, each: Each, groups: shared.Groups) -> shared.Groups:
    """Engines whose decoders collect through a list attribute or per-layer flags (``Engine.collection``): the
    setter must feed, on the layer owner, a mechanism its forward reads, and that forward must return the states.
    Wrapper gaps are EGL002's (their fix delegates to an inner model checked as its own architecture)."""
    # One architecture's contribution: an answer kept between runs with the files it read (each_arch).
    def one(arch: str, key: ClassKey, groups: shared.Sink) -> None:
        if sem.status(sm, arch) is not Status.SUPPORTED:
            return
        own = sem.owner(sm, key)
        eff = sem.setter_effect(sm, key)
        if own is None or eff.kind != "writes" or eff.method_owner is None:
            return
        fw = sem.forward_of(sm, own.key)
        if fw is None:
            return
        fed = eff.fed(own.path)
        setter_loc = sem.method_location(sm, eff.method_owner, eff.line)
        if not fw.mechanisms:
            groups.get(sem.method_location(sm, fw.owner, fw.line), "no-collect", arch,
                       top=key, owner=own, forward=fw, attr=eff.attr or _list_attr(sm), effect=eff)
            return
        if not fed & fw.mechanisms:
            kind = "wrong-mechanism" if fed else "wrong-object"
            groups.get(setter_loc, kind, arch, top=key, effect=eff, owner=own, forward=fw)
        # Reported as well: fixing the mechanism alone would leave states that never reach the caller.
        if not fw.returns_aux:
            groups.get(sem.method_location(sm, fw.owner, fw.line), "no-return", arch,
                       top=key, owner=own, forward=fw, effect=eff)
    shared.each_arch(each, groups, one, sem.scoped_archs(sm))
    return groups


def _list_attr(sm: Model) -> str:
    idiom = sm.engine.collection
    return idiom.list_attrs[0] if idiom is not None and idiom.list_attrs else "aux_hidden_state_layers"


def _inherited(sm: Model, top: ClassKey, eff: sem.Effect | None) -> str:
    """`` (inherited from X)`` when the setter in effect is a base's."""
    if eff is None or eff.method_owner is None or eff.method_owner == top:
        return ""
    return f" ({top.name} inherits it from {eff.method_owner.name})"


def _expected_attr(sm: Model, owner: ClassKey) -> str:
    flavor = fixgen.flavor(sm)
    mixin_key = sem.mixin_key(sm)
    if mixin_key is not None and sm.graph.in_mro(owner, mixin_key) and flavor.mixin_attr:
        return flavor.mixin_attr
    return "aux_hidden_state_layers"


def _finding(sm: Model, g: shared.Group) -> Finding:
    own: sem.Owner = g.data["owner"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    top: ClassKey = g.data["top"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    where = "self." + ".".join(own.path) if own.path else "self"
    owner_txt = f"{own.key.name} (at {where} of {top.name})"
    related = [Step("layers", f"{own.key.name} owns self.layers"
                    + (f" (assigned in {own.where.name})" if own.where != own.key else ""), own.location(sm))]
    eff: sem.Effect | None = g.data.get("effect")  # type: ignore[assignment]  # Group.data: what _pairs stored
    if eff is not None and eff.method_owner is not None and eff.line:
        related.append(Step("setter", eff.detail, sem.method_location(sm, eff.method_owner, eff.line)))
    symbol = own.key.name
    idiom = sm.engine.collection
    if g.kind == "no-collect":
        fw: sem.Forward = g.data["forward"]  # type: ignore[assignment]  # Group.data: what _pairs stored
        symbol = f"{fw.owner.name}.forward"
        if idiom is not None and eff is not None:
            flags = " or ".join(f"`{f}`" for f in idiom.layer_flags)
            msg = (f"{eff.detail}{_inherited(sm, top, eff)}, but {fw.owner.name}.forward, the forward of the layer "
                   f"owner {owner_txt}, never collects hidden states (no `idx in self.{g.data['attr']}` test, no "
                   f"per-layer {flags} read), so the drafter gets none")
        else:
            msg = (f"{fw.owner.name}.forward, the forward of the layer owner {owner_txt}, never collects hidden "
                   f"states at the configured aux layers (no `idx in self.{g.data['attr']}` test, no "
                   f"{sm.contract.mixin_collector or 'collector'} call), so the drafter gets none")
    elif g.kind == "wrong-mechanism":
        fw = g.data["forward"]  # type: ignore[assignment]  # Group.data: what _pairs stored
        assert eff is not None and idiom is not None
        reads = " and ".join(f"per-layer `{idiom.layer_flags[0]}` flags" if m is Mechanism.FLAG
                             else f"`self.{_list_attr(sm)}`" for m in sorted(fw.mechanisms))
        fed = " and ".join("per-layer flags" if m is Mechanism.FLAG else f"the `{eff.attr or _list_attr(sm)}` list"
                           for m in sorted(eff.fed(own.path)))
        msg = (f"{eff.detail}{_inherited(sm, top, eff)}: it feeds {fed} of {owner_txt}, but "
               f"{fw.owner.name}.forward reads only {reads}, so it captures nothing")
        symbol = f"{top.name}.{sm.contract.setter}"
        related.append(Step("forward", f"{fw.owner.name}.forward reads {reads}",
                            sem.method_location(sm, fw.owner, fw.line)))
    elif g.kind == "no-return":
        fw = g.data["forward"]  # type: ignore[assignment]  # Group.data: what _pairs stored
        symbol = f"{fw.owner.name}.forward"
        msg = (f"{fw.owner.name}.forward collects aux hidden states but never returns them: "
               f"the runner expects (hidden_states, aux_hidden_states) from {owner_txt}")
    elif g.kind == "wrong-attr":
        fw = g.data["forward"]  # type: ignore[assignment]  # Group.data: what _pairs stored
        assert eff is not None
        read = ", ".join(sorted(fw.attrs_read)) or "nothing"
        msg = (f"{eff.detail}, but {fw.owner.name}.forward reads {read}: the configured layers never reach the loop")
        symbol = f"{top.name}.{sm.contract.setter}"
    elif g.kind == "wrong-object":
        assert eff is not None
        wrote = "self." + ".".join((*eff.path, eff.attr or "?"))
        msg = (f"{eff.detail}: it writes {wrote}, but the layers are owned by {owner_txt}, whose forward never sees it")
        symbol = f"{top.name}.{sm.contract.setter}"
    else:  # not-mixin
        holder: ClassKey = g.data["holder"]  # type: ignore[assignment]  # Group.data: what _pairs stored
        assert eff is not None
        msg = f"{eff.detail} ({top.name} inherits the default {sm.contract.setter}())"
        symbol = holder.name
    msg += f"; architectures: {shared.arch_list(g.archs)}" + shared.unreachable_note(sm, g.archs)
    arch = shared.primary_arch(sm, g.archs)
    who = arch or symbol
    owner = f" {symbol}" if symbol != arch else ""
    if g.kind == "wrong-mechanism":
        forms = [f"{who}: the setter feeds a collection mechanism the layer owner's forward does not read",
                 f"{who}: the setter feeds a mechanism the decoder does not read"]
    elif g.kind == "no-return":
        forms = [f"{who}:{owner} collects the aux hidden states but never returns them",
                 f"{who}: the aux hidden states are collected but never returned"]
    else:
        forms = [f"{who}: the layer owner{owner} never collects or returns the aux hidden states",
                 f"{who}:{owner} never collects the aux hidden states"]
    return make(META, msg, g.location, severity=shared.severity_for(sm, g.archs, META.severity),
                architecture=arch, architectures=tuple(sorted(g.archs)), symbol=symbol, related=tuple(related),
                title=fit(*forms, f"{who}: the aux hidden states are never collected"))


def _fix(sm: Model, g: shared.Group) -> Fix | None:
    if not shared.wants_fix(sm, g.archs):
        return None
    own: sem.Owner = g.data["owner"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    if g.kind == "no-collect":
        fw: sem.Forward = g.data["forward"]  # type: ignore[assignment]  # Group.data: what _pairs stored
        edits = collect_edits(sm, fw.owner, own.key, str(g.data["attr"]), ret=not fw.returns_aux)
        if not edits:
            return None
        return Fix(f"collect aux hidden states in {fw.owner.name}.forward", tuple(edits), Applicability.UNSAFE)
    if g.kind == "wrong-mechanism":
        return _feed_flags_fix(sm, g)
    if g.kind == "no-return":
        fw = g.data["forward"]  # type: ignore[assignment]  # Group.data: what _pairs stored
        ed = fixgen.collection(sm, fw.owner, "", collect=False, ret=True, mixin_idiom=False)
        if not ed:
            return None
        return Fix(f"return the aux hidden states from {fw.owner.name}.forward", tuple(ed), Applicability.UNSAFE)
    if g.kind == "not-mixin":
        holder: ClassKey = g.data["holder"]  # type: ignore[assignment]  # Group.data: what _pairs stored
        edits = list(fixgen.add_mixin(sm, holder))
        fw2 = sem.forward_of(sm, holder)
        if fw2 is not None and not fw2.collects:
            more = fixgen.collection(sm, fw2.owner, fixgen.flavor(sm).mixin_attr or "aux_hidden_state_layers",
                                     collect=True, ret=not fw2.returns_aux, mixin_idiom=True)
            if more is None:
                return None
            edits += more
        if not edits:
            return None
        return Fix(f"make {holder.name} an {sm.contract.mixin}", tuple(edits), Applicability.UNSAFE)
    return None


def _feed_flags_fix(sm: Model, g: shared.Group) -> Fix | None:
    """The setter in effect also sets the per-layer flags from the list it writes: through the decoder's own
    flag-setting method where it has one (SGLang's DFlash setter, ``set_dflash_layers_to_capture``), else with
    ``setattr`` on each listed layer. An override calling ``super()`` on each affected class that inherits the
    setter (a base's setter also serves decoders that read the list), the lines appended where the class owns it."""
    idiom = sm.engine.collection
    eff: sem.Effect = g.data["effect"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    setter = sem.setter_name(sm)
    if idiom is None or setter is None or eff.method_owner is None or not idiom.layer_flags:
        return None
    tops = [k for a in g.archs if (k := sm.keys.get(a)) is not None]
    # A class inheriting the setter through another affected class is fixed by that class's override.
    tops = sorted({t for t in tops if not any(o != t and sm.graph.in_mro(t, o) for o in tops)},
                  key=lambda k: (sm.graph.path_of(k), k.qualname))
    mh = fixgen.method_header(sm, eff.method_owner, setter)
    edits: list[Edit] = []
    for top in tops:
        own = sem.owner(sm, top)
        top_eff = sem.setter_effect(sm, top)
        if own is None or top_eff.method_owner != eff.method_owner or top_eff.fed(own.path) != {Mechanism.LIST}:
            return None
        p = fixgen.path_expr(own.path)
        attr = eff.attr or _list_attr(sm)
        ids = f"{p}.{attr}" if sem.attr_initialised(sm, own.key, attr) else f"getattr({p}, \"{attr}\", [])"
        feeder = sem.flag_feeder(sm, own.key)
        lines = [f"{p}.{feeder}({ids})"] if feeder else \
            [f"for layer_id in {ids}:", f"    setattr({p}.layers[layer_id], \"{idiom.layer_flags[0]}\", True)"]
        if top == eff.method_owner:
            more = fixgen.append_to_method(sm, top, setter, lines)
        elif mh is not None:
            more = fixgen.header_imports(sm, top, mh) + fixgen.add_method(
                sm, top, mh.header, [f"super().{setter}({', '.join(mh.params)})", *lines])
        else:
            more = []
        if not more:
            return None
        edits += more
    if not edits:
        return None
    return Fix(f"set the per-layer {idiom.layer_flags[0]} flags from {eff.attr or _list_attr(sm)} as well",
               tuple(edits), Applicability.UNSAFE)


def collect_edits(
    sm: Model, forward_owner: ClassKey, layer_owner: ClassKey, attr: str, *, ret: bool
) -> list[Edit] | None:
    """Collection in ``forward_owner.forward`` for the layers of ``layer_owner``, in the analysed version's idiom."""
    flavor = fixgen.flavor(sm)
    mixin_key = sem.mixin_key(sm)
    mixin = bool(
        mixin_key is not None
        and flavor.collector
        and sm.graph.in_mro(layer_owner, mixin_key)
        and attr == flavor.mixin_attr
    )
    edits = fixgen.collection(sm, forward_owner, attr, collect=True, ret=ret, mixin_idiom=mixin)
    if edits is None:
        return None
    if not mixin:
        # An engine with its own collection idiom initialises the list as its decoders do (``= []``).
        value = "[]" if sm.engine.collection is not None else None
        edits = fixgen.init_attr(sm, layer_owner, attr, value) + edits
    return edits
