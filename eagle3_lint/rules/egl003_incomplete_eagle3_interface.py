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
layers`` with stub-bodied Protocols, the mixin setter with default bodies).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from eagle3_lint import fixgen
from eagle3_lint import semantic as sem
from eagle3_lint.contract import CheckKind
from eagle3_lint.engine import Capability
from eagle3_lint.graph import ClassKey
from eagle3_lint.model import Applicability, Edit, Finding, Fix, Severity, Status
from eagle3_lint.rules import RuleMeta, make
from eagle3_lint.rules import _interface as shared

if TYPE_CHECKING:
    from eagle3_lint.analysis import Context

META = RuleMeta("EGL003", "incomplete-eagle3-interface", Severity.ERROR, True,
                "A class carries part of the EAGLE-3 contract but not all of it.",
                needs=frozenset({Capability.AUX_COLLECTION}))


def check(ctx: Context) -> Iterator[Finding]:
    for f, _g in _pairs(ctx):
        yield f


def _pairs(ctx: Context) -> list[tuple[Finding, shared.Group]]:
    return ctx.memo.get(META.id, lambda: [(_finding(ctx, g), g) for g in _compute(ctx)])


def _compute(ctx: Context) -> shared.Groups:
    groups = shared.Groups()
    for arch, key in sem.scoped_archs(ctx):
        st = sem.status(ctx, arch)
        if st is Status.PARTIAL:
            chk = ctx.judge.check_class(key)
            definer = _definer(ctx, key, chk.own_present)
            loc = sem.class_location(ctx, definer) if definer else None
            if loc is not None:
                groups.get(loc, "partial", arch, key=definer, top=key, missing=chk.missing, present=chk.own_present)
        elif st is Status.SUPPORTED and not ctx.contract.methods_have_defaults:
            eff = sem.setter_effect(ctx, key)
            if eff.kind != "stub" or sem.supporting_inner(ctx, key):
                continue
            where = sem.claimer(ctx, key) if eff.from_protocol else eff.method_owner
            loc = sem.class_location(ctx, where) if where else None
            if loc is not None:
                groups.get(loc, "stub-setter", arch, key=where, top=key, effect=eff)
    return groups


def _definer(ctx: Context, key: ClassKey, own_present: tuple[str, ...]) -> ClassKey | None:
    """The most derived class in the MRO that defines one of the contract members present."""
    origins = {}
    for name in own_present:
        hit = ctx.graph.member_origin(key, name)
        if hit is not None and not sem.is_interface_class(ctx, hit[0]):
            origins[hit[0]] = name
    for e in ctx.graph.mro(key).entries:
        if isinstance(e, ClassKey) and e in origins:
            return e
    return None


def _finding(ctx: Context, g: shared.Group) -> Finding:
    key: ClassKey = g.data["key"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    c = ctx.contract
    if g.kind == "partial":
        missing: tuple[str, ...] = g.data["missing"]  # type: ignore[assignment]  # Group.data: what _pairs stored
        present: tuple[str, ...] = g.data["present"]  # type: ignore[assignment]  # Group.data: what _pairs stored
        why = "the Protocol is structural, so every member must be present" if c.check is CheckKind.STRUCTURAL else \
            "the runner calls every one of them"
        msg = (f"{key.name} defines {', '.join(present)} but not {', '.join(missing)}: "
               f"{c.check_function}() is False ({why})")
    else:
        eff: sem.Effect = g.data["effect"]  # type: ignore[assignment]  # Group.data: what _pairs stored
        msg = (f"{key.name} inherits {c.protocol} but not a real {c.setter}(): {eff.detail}, and the Protocol's "
               f"bodies are stubs in this version, so {c.check_function}() passes and the runner's "
               f"{c.setter}(...) sets nothing")
    msg += f"; architectures: {shared.arch_list(g.archs)}"
    return make(META, msg, g.location, severity=shared.severity_for(ctx, g.archs, META.severity, past_interface=False),
                architecture=shared.primary_arch(ctx, g.archs), symbol=key.name)


def fix(ctx: Context, finding: Finding) -> Fix | None:
    g = shared.group_of(_pairs(ctx), finding)
    if g is None or not shared.wants_fix(ctx, g.archs):
        return None
    key: ClassKey = g.data["key"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    top: ClassKey = g.data["top"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    flavor = fixgen.flavor(ctx)
    own = sem.owner(ctx, top)
    base: list[Edit] = list(fixgen.add_protocol(ctx, key)) if g.kind == "partial" else []
    methods: list[Edit] = []
    need_setter = bool(flavor.setter) and _setter_needed(ctx, top, g.kind)
    need_getter = bool(flavor.getter) and g.kind == "partial" and _getter_needed(ctx, top, flavor.getter or "")
    if (need_setter or need_getter) and own is None:
        # No method body can be written without the layer owner; a base alone would make the
        # check pass over stub methods, which is worse than the finding.
        return None
    if need_setter and own is not None:
        methods += fixgen.add_setter(ctx, key, _setter_body(ctx, flavor, own))
    if need_getter and own is not None:
        methods += fixgen.add_getter(ctx, key, fixgen.getter_direct(own.path))
    edits = base + methods
    if not edits:
        return None
    if methods:
        return Fix(
            f"add the missing {flavor.protocol or 'EAGLE-3'} methods to {key.name}", tuple(edits), Applicability.UNSAFE
        )
    return Fix(f"add the {flavor.protocol} base to {key.name}", tuple(edits), Applicability.SAFE)


def _setter_body(ctx: Context, flavor: fixgen.Flavor, own: sem.Owner) -> list[str]:
    mixin_key = sem.mixin_key(ctx)
    via_mixin = bool(flavor.defaults and mixin_key is not None and ctx.graph.in_mro(own.key, mixin_key))
    return fixgen.setter_direct(
        flavor, own.path, fixgen.setter_param(ctx), flavor.mixin_attr or "aux_hidden_state_layers", via_mixin
    )


def _setter_needed(ctx: Context, top: ClassKey, kind: str) -> bool:
    name = sem.setter_name(ctx)
    if name is None:
        return False
    if kind == "stub-setter":
        return True
    hit = sem.method_of(ctx, top, name)
    if hit is not None and not sem.is_protocol_method(ctx, hit[0]):
        return False
    if ctx.graph.member_origin(top, name) is not None and hit is None:
        return False
    if not ctx.contract.methods_have_defaults:
        return True
    eff = sem.default_setter_effect(ctx, top)
    own = sem.owner(ctx, top)
    return not (eff.kind == "writes" and own is not None and eff.path == own.path)


def _getter_needed(ctx: Context, top: ClassKey, name: str) -> bool:
    hit = sem.method_of(ctx, top, name)
    if hit is not None and not sem.is_protocol_method(ctx, hit[0]):
        return False
    if ctx.graph.member_origin(top, name) is not None and hit is None:
        return False
    if not ctx.contract.methods_have_defaults:
        return True
    return sem.default_getter_state(ctx, top).kind == "broken-default"
