"""## What it does
Flags a class that carries part of the EAGLE-3 contract but not all of it:

- the methods without the ``SupportsEagle3`` marker: under a ``@runtime_checkable`` Protocol the
  check is structural, so ``supports_eagle3()`` is False even though the methods exist;
- ``supports_eagle3 = True`` set by hand without inheriting the Protocol (its other members, such
  as ``has_own_lm_head``, are then missing, so the structural check still says False);
- the marker (the Protocol inherited) without a real setter in versions whose Protocol bodies are
  stubs: the check passes, the runner's ``set_aux_hidden_state_layers(...)`` does nothing.

The fallback getter the runner calls is EGL006's business; a wrapper whose inner model supports
the contract is EGL002's.

On an engine whose models collect through a list or per-layer flags and whose runner checks only
for the setter (SGLang): a class without the setter whose ``forward`` unpacks
``(hidden_states, aux_hidden_states)`` behind the capture flag has the plumbing and lacks the
setter (SGLang 0.4.10 - 0.5.23 ``ArceeForCausalLM``; 0.5.19 ``LagunaForCausalLM`` with only a
DFlash setter).

## Why is this bad?
The runner refuses the model after it has loaded (``RuntimeError: Model does not support EAGLE3
interface``), or accepts it and then the drafter gets no aux hidden states.

## Example
```python
class ApertusForCausalLM(nn.Module, SupportsLoRA, SupportsPP):  # no SupportsEagle3
    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.model.aux_hidden_state_layers = layers

    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
        ...
```

Scope: reported once, on the class that defines the partial contract (the class with the methods,
the hand-set marker, or the Protocol base), not on each subclass or architecture that inherits
it; the message lists the affected architectures. Pooling models and drafters are out of scope.

## Fix safety
Adding the marker base (and its import) where every method exists is safe. Adding methods is
unsafe: their bodies follow the analysed version (explicit ``self.model.aux_hidden_state_layers =
layers`` with stub-bodied Protocols, the mixin setter with default bodies). On SGLang the new
setter is written in the release's own style (the default layers, else the drafter's ids + 1, and
the capture flag), or hands the ids to the class's DFlash setter where it has one; wrappers holding
the class one attribute away (which the new setter would make EGL002 gaps) get the release's
delegating setter in the same fix. Under a method whose runner always hands the setter ids
(``--method DFLASH``/``DSPARK``: ``Contract.ids_always_given``, read from the tree, 0.5.23
``spec_aux_hidden_state.py:279-283``) the setter has no ``None`` -> default branch.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING

from eagle3_lint import semantic as sem
from eagle3_lint.contract import CheckKind
from eagle3_lint.engine import Capability, Mechanism
from eagle3_lint.graph import ClassKey
from eagle3_lint.lazyimport import lazy
from eagle3_lint.model import Applicability, Edit, Finding, Fix, Severity, Status, Step
from eagle3_lint.rules import Found, RuleMeta, Scope, fit, make
from eagle3_lint.rules import _interface as shared
from eagle3_lint.runner import SetterIds

if TYPE_CHECKING:
    from eagle3_lint import fixgen
    from eagle3_lint.rules import Each
    from eagle3_lint.stages import Model
else:
    fixgen = lazy("eagle3_lint.fixgen")  # imported on first use (lazyimport.py)

META = RuleMeta("EGL003", "incomplete-eagle3-interface", Severity.ERROR, True,
                "A class carries part of the EAGLE-3 contract but not all of it.",
                needs=frozenset({Capability.AUX_COLLECTION}), scope=Scope.ARCH, asked_of_model=True)


def check(sm: Model, each: Each) -> Iterator[Found]:
    groups = list(_compute(sm, each))
    every = tuple(q for o in groups for q in o.sources)
    for f, g in [(_finding(sm, g), g) for g in groups]:
        # A missing setter's fix looks at the other classes missing one (a base's new setter is inherited): it rests
        # on what every group was made from.
        yield Found(f, functools.partial(_fix, sm, g, groups), every if g.kind == "no-setter" else tuple(g.sources))


def _compute(sm: Model, each: Each) -> shared.Groups:
    groups = shared.Groups()
    if sm.engine.collection is not None:
        return _compute_plumbing(sm, each, groups)
    # One architecture's contribution: an answer kept between runs with the files it read (each_arch).
    def one(arch: str, key: ClassKey, groups: shared.Sink) -> None:
        st = sem.status(sm, arch)
        if st is Status.PARTIAL:
            chk = sm.judge.check_class(key)
            definer = _definer(sm, key, chk.own_present)
            loc = sem.class_location(sm, definer) if definer else None
            if loc is not None:
                groups.get(loc, "partial", arch, key=definer, top=key, missing=chk.missing, present=chk.own_present)
        elif st is Status.SUPPORTED and not sm.contract.methods_have_defaults:
            eff = sem.setter_effect(sm, key)
            if eff.kind != "stub" or sem.supporting_inner(sm, key):
                return
            where = sem.claimer(sm, key) if eff.from_protocol else eff.method_owner
            loc = sem.class_location(sm, where) if where else None
            if loc is not None:
                groups.get(loc, "stub-setter", arch, key=where, top=key, effect=eff)
    shared.each_arch(each, groups, one, sem.scoped_archs(sm))
    return groups


def _compute_plumbing(sm: Model, each: Each, groups: shared.Groups) -> shared.Groups:
    """Engines that collect through lists or per-layer flags (``Engine.collection``) and check only for the setter:
    a class without the setter whose ``forward`` unpacks ``(hidden, aux)`` behind the capture flag lacks the setter
    (and, where its layer owner's ``forward`` does not collect, the collection too). Reported on the class."""
    idiom = sm.engine.collection
    assert idiom is not None
    # One architecture's contribution: an answer kept between runs with the files it read (each_arch).
    def one(arch: str, key: ClassKey, groups: shared.Sink) -> None:
        if sem.status(sm, arch) is not Status.UNSUPPORTED or sem.setter_effect(sm, key).kind != "missing":
            return
        own = sem.owner(sm, key)
        top_fw = sem.forward_of(sm, key)
        unpacks = top_fw is not None and f"self.{idiom.capture_flag}" in top_fw.method.reads
        fw = sem.forward_of(sm, own.key) if own is not None else None
        collects = fw is not None and bool(fw.mechanisms)
        if not unpacks:
            return  # a decoder that collects under a head that never unpacks (a pooling model) is not plumbing
        loc = sem.class_location(sm, key)
        if loc is not None:
            groups.get(loc, "no-setter", arch, key=key, top=key, owner=own, forward=fw, top_forward=top_fw,
                       unpacks=unpacks, collects=collects)
    shared.each_arch(each, groups, one, sem.scoped_archs(sm))
    return groups


def _definer(sm: Model, key: ClassKey, own_present: tuple[str, ...]) -> ClassKey | None:
    """The most derived class in the MRO that defines one of the contract members present."""
    origins = {}
    for name in own_present:
        hit = sm.graph.member_origin(key, name)
        if hit is not None and not sem.is_interface_class(sm, hit[0]):
            origins[hit[0]] = name
    for e in sm.graph.mro(key).entries:
        if isinstance(e, ClassKey) and e in origins:
            return e
    return None


def _finding(sm: Model, g: shared.Group) -> Finding:
    key: ClassKey = g.data["key"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    c = sm.contract
    if g.kind == "no-setter":
        return _plumbing_finding(sm, g, key)
    if g.kind == "partial":
        missing: tuple[str, ...] = g.data["missing"]  # type: ignore[assignment]  # Group.data: what _pairs stored
        present: tuple[str, ...] = g.data["present"]  # type: ignore[assignment]  # Group.data: what _pairs stored
        why = "the Protocol is structural, so every member must be present" if c.check is CheckKind.STRUCTURAL else \
            "the runner calls every one of them"
        msg = (f"{key.name} defines {', '.join(present)} but not {', '.join(missing)}: "
               f"{c.check_function}() is False ({why})")
        title = fit(f"{key.name} carries part of the EAGLE-3 interface but not all of it, so {c.check_name} is False",
                    f"{key.name} carries part of the EAGLE-3 interface, so {c.check_name} is False")
    else:
        eff: sem.Effect = g.data["effect"]  # type: ignore[assignment]  # Group.data: what _pairs stored
        msg = (f"{key.name} inherits {c.protocol} but not a real {c.setter}(): {eff.detail}, and the Protocol's "
               f"bodies are stubs in this version, so {c.check_function}() passes and the runner's "
               f"{c.setter}(...) sets nothing")
        # The check passes here: what is wrong is that the setter it finds is the Protocol's stub.
        title = fit(f"{key.name} passes {c.check_name} with the Protocol's stub {c.setter}(), which sets nothing",
                    f"{key.name}: the Protocol's stub {c.setter}() sets nothing")
    msg += f"; architectures: {shared.arch_list(g.archs)}"
    return make(META, msg, g.location, severity=shared.severity_for(sm, g.archs, META.severity, past_interface=False),
                architecture=shared.primary_arch(sm, g.archs),
                architectures=tuple(sorted(g.archs)), symbol=key.name, title=title)


def _plumbing_finding(sm: Model, g: shared.Group, key: ClassKey) -> Finding:
    idiom = sm.engine.collection
    assert idiom is not None
    own: sem.Owner | None = g.data["owner"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    fw: sem.Forward | None = g.data["forward"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    top_fw: sem.Forward | None = g.data["top_forward"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    have: list[str] = []
    related: list[Step] = []
    if g.data["unpacks"] and top_fw is not None:
        have.append(f"{top_fw.owner.name}.forward unpacks (hidden_states, aux_hidden_states) when "
                    f"self.{idiom.capture_flag} is set")
        related.append(Step("forward", "unpacks the aux hidden states", sem.method_location(sm, top_fw.owner,
                                                                                            top_fw.line)))
    if g.data["collects"] and fw is not None and own is not None:
        how = " and ".join(f"per-layer `{idiom.layer_flags[0]}` flags" if m is Mechanism.FLAG
                           else f"`idx in self.{idiom.list_attrs[0]}`" for m in sorted(fw.mechanisms))
        have.append(f"its layer owner {own.key.name}.forward collects them ({how})")
        related.append(Step("forward", f"collects through {how}", sem.method_location(sm, fw.owner, fw.line)))
    site = sm.runner.primary
    fails = f" ({site.error or 'an error'} at {site.path}:{site.line})" if site is not None else ""
    msg = (f"{key.name} has the EAGLE-3 plumbing but not {sm.contract.setter}(): {'; '.join(have)}, yet nothing "
           f"sets the layers to capture, so {sm.contract.check_name} fails at start-up{fails}; "
           f"architectures: {shared.arch_list(g.archs)}")
    check = sm.contract.check_name
    # Under another method (``--method DFLASH``) the plumbing is the same lists and flag, and the setter missing is
    # that method's: the title names it.
    c = sm.contract
    if not c.method:
        forms = [f"{key.name} has the EAGLE-3 plumbing but no setter, so {check} fails",
                 f"{key.name} has the EAGLE-3 plumbing but no setter"]
    else:
        named = [f"{key.name} has the aux-state plumbing but no {c.setter}()"] if c.setter and not c.one_of else []
        forms = [f"{key.name} has the aux-state plumbing but no {c.label} setter, so {check} fails", *named,
                 f"{key.name} has the aux-state plumbing but no {c.label} setter"]
    return make(META, msg, g.location, severity=shared.severity_for(sm, g.archs, META.severity, past_interface=False),
                architecture=shared.primary_arch(sm, g.archs),
                architectures=tuple(sorted(g.archs)), symbol=key.name, related=tuple(related), title=fit(*forms))


def _plumbing_fix(sm: Model, g: shared.Group) -> Fix | None:
    """A setter in the engine's own style (``CollectionIdiom.setter_body``) writing the list on the layer owner,
    plus the per-layer flags where the owner's forward reads those (through its own flag-setting method, SGLang's
    DFlash setter, where it has one). Only when both halves of the plumbing are there: the top-level forward
    unpacks the states and the owner's forward collects them."""
    idiom = sm.engine.collection
    key: ClassKey = g.data["key"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    own: sem.Owner | None = g.data["owner"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    fw: sem.Forward | None = g.data["forward"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    setter = sm.contract.setter
    if idiom is None or not setter or own is None or fw is None or not (g.data["unpacks"] and g.data["collects"]):
        return None
    mh = _setter_header(sm, key, setter)
    if mh is None or len(mh.params) != 1:
        return None
    p = fixgen.path_expr(own.path)
    attr = idiom.list_attrs[0]
    param = mh.params[0]
    # The wrappers holding ``key`` would become wrapper gaps: their delegating setters come with it.
    from eagle3_lint.rules.egl002_wrapper_not_delegating import exposed_wrapper_edits

    wrappers = exposed_wrapper_edits(sm, key)
    also = " and setters delegating to it on the wrappers holding it" if wrappers else ""
    sibling = sem.sibling_setter(sm, key, own, fw.mechanisms)
    # A runner that always hands the setter ids (SGLang's DFLASH and DSPARK: Contract.ids_always_given, read from
    # the tree) never takes a None -> default branch: the fix writes none.
    given = sm.contract.ids_always_given
    if sibling is not None:
        # The class already sets the layers for another algorithm (the DFlash setter): hand it the ids, the
        # engine's default layers (2, n // 2, n - 3, states entering those layers) as ids it adds 1 to.
        body = ([] if given else [f"if {param} is None:", f"    num_layers = len({p}.layers)",
                                  f"    {param} = [1, num_layers // 2 - 1, num_layers - 4]"]) \
            + [f"self.{sibling}({param})"]
        edits = fixgen.header_imports(sm, key, mh) + fixgen.add_method(sm, key, mh.header, body)
        return Fix(f"add {setter}() to {key.name}, handing the ids to its {sibling}(){also}",
                   tuple(edits + wrappers), Applicability.UNSAFE)
    lines = idiom.setter_body_given if given and idiom.setter_body_given else idiom.setter_body
    body = [line.format(param=param, path=p, list=attr, flag=idiom.capture_flag) for line in lines]
    if f"self.{idiom.capture_flag}" in fw.method.reads:
        body.append(f"{p}.{idiom.capture_flag} = True")  # the owner's loop collects only behind its own flag
    if Mechanism.FLAG in fw.mechanisms and Mechanism.LIST not in fw.mechanisms:
        feeder = sem.flag_feeder(sm, own.key)
        body += [f"{p}.{feeder}({p}.{attr})"] if feeder else \
            [f"for layer_id in {p}.{attr}:", f"    setattr({p}.layers[layer_id], \"{idiom.layer_flags[0]}\", True)"]
    edits = fixgen.header_imports(sm, key, mh) + fixgen.add_method(sm, key, mh.header, body)
    if Mechanism.LIST in fw.mechanisms:
        edits = fixgen.init_attr(sm, own.key, attr, "[]") + edits
    return Fix(f"add {setter}() to {key.name}{also}", tuple(edits + wrappers), Applicability.UNSAFE)


def _setter_header(sm: Model, key: ClassKey, setter: str) -> fixgen.MethodHeader | None:
    """The header of a setter of the tree to copy: one in ``key``'s own module first, else the first in path order
    (one ids parameter with a default; without one only where no runner site calls the setter without ids, as
    SGLang's DFLASH and DSPARK calls always pass them: their setters take no default)."""
    own_path = sm.graph.path_of(key)
    classes = sorted(sem.classes_defining(sm, setter), key=lambda rk: (rk[0] != own_path, rk[0], rk[1].qualname))
    headers = [mh for _rel, k in classes if (mh := fixgen.method_header(sm, k, setter)) is not None
               and len(mh.params) == 1]
    bare = any(s.setter == setter and s.setter_ids in (SetterIds.DEFAULT, SetterIds.CAPTURED_DEFAULT)
               for s in sm.runner.sites)
    return next((mh for mh in headers if "=" in mh.header), None) or (
        None if bare or not sm.runner.sites else next(iter(headers), None))


def _fix(sm: Model, g: shared.Group, groups: list[shared.Group]) -> Fix | None:
    if not shared.wants_fix(sm, g.archs):
        return None
    key: ClassKey = g.data["key"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    if g.kind == "no-setter":
        others = [o.data["key"] for o in groups if o.kind == "no-setter" and o.data["key"] != key]
        if any(sm.graph.in_mro(key, o) for o in others):  # type: ignore[arg-type]  # Group.data: a ClassKey
            return None  # the base's new setter is inherited
        return _plumbing_fix(sm, g)
    top: ClassKey = g.data["top"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    flavor = fixgen.flavor(sm)
    own = sem.owner(sm, top)
    base: list[Edit] = list(fixgen.add_protocol(sm, key)) if g.kind == "partial" else []
    methods: list[Edit] = []
    need_setter = bool(flavor.setter) and _setter_needed(sm, top, g.kind)
    need_getter = bool(flavor.getter) and g.kind == "partial" and _getter_needed(sm, top, flavor.getter or "")
    if (need_setter or need_getter) and own is None:
        # No method body can be written without the layer owner; a base alone would make the
        # check pass over stub methods, which is worse than the finding.
        return None
    if need_setter and own is not None:
        methods += fixgen.add_setter(sm, key, _setter_body(sm, flavor, own))
    if need_getter and own is not None:
        methods += fixgen.add_getter(sm, key, fixgen.getter_direct(own.path))
    edits = base + methods
    if not edits:
        return None
    if methods:
        return Fix(
            f"add the missing {flavor.protocol or 'EAGLE-3'} methods to {key.name}", tuple(edits), Applicability.UNSAFE
        )
    return Fix(f"add the {flavor.protocol} base to {key.name}", tuple(edits), Applicability.SAFE)


def _setter_body(sm: Model, flavor: fixgen.Flavor, own: sem.Owner) -> list[str]:
    mixin_key = sem.mixin_key(sm)
    via_mixin = bool(flavor.defaults and mixin_key is not None and sm.graph.in_mro(own.key, mixin_key))
    return fixgen.setter_direct(
        flavor, own.path, fixgen.setter_param(sm), flavor.mixin_attr or "aux_hidden_state_layers", via_mixin
    )


def _setter_needed(sm: Model, top: ClassKey, kind: str) -> bool:
    name = sem.setter_name(sm)
    if name is None:
        return False
    if kind == "stub-setter":
        return True
    hit = sem.method_of(sm, top, name)
    if hit is not None and not sem.is_protocol_method(sm, hit[0]):
        return False
    if sm.graph.member_origin(top, name) is not None and hit is None:
        return False
    if not sm.contract.methods_have_defaults:
        return True
    eff = sem.default_setter_effect(sm, top)
    own = sem.owner(sm, top)
    return not (eff.kind == "writes" and own is not None and eff.path == own.path)


def _getter_needed(sm: Model, top: ClassKey, name: str) -> bool:
    hit = sem.method_of(sm, top, name)
    if hit is not None and not sem.is_protocol_method(sm, hit[0]):
        return False
    if sm.graph.member_origin(top, name) is not None and hit is None:
        return False
    if not sm.contract.methods_have_defaults:
        return True
    return sem.default_getter_state(sm, top).kind == "broken-default"
