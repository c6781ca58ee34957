"""## What it does
Flags a targeted architecture whose top-level class fails vLLM's ``supports_eagle3`` check while
nothing in its delegation graph supports the contract either.

## Why is this bad?
The GPU runner asks the top-level model object (``supports_eagle3(self.get_model())``) once the
weights are loaded. For a 1-trillion-parameter model that is forty minutes in, and then it raises
``RuntimeError: Model does not support EAGLE3 interface``.

## Example
```python
class KimiK25ForConditionalGeneration(nn.Module, SupportsMultiModal, SupportsPP):
    def __init__(self, vllm_config, prefix=""):
        self.language_model = init_vllm_registered_model(..., architectures=["DeepseekV2ForCausalLM"])
# and DeepseekV2ForCausalLM does not implement SupportsEagle3 either
```

## Fix safety
Unsafe. The fix implements the contract along the whole chain the class graph found, in the
analysed version's idiom: the top-level class gets the interface base (with its import) and
methods delegating to the inner model (``self.language_model.set_aux_hidden_state_layers(layers)``);
the class holding the decoder gets the base and direct methods
(``self.model.aux_hidden_state_layers = layers``, the default layers from ``len(self.model.layers)``);
the decoder gets the attribute, a collection at absolute layer indices
(``enumerate(islice(self.layers, self.start_layer, self.end_layer), start=self.start_layer)``) and
returns ``(hidden_states, aux_hidden_states)``. Where the Protocol has real default bodies that
unwrap to an ``EagleModelMixin`` holder (0.18+), the bases and the mixin idiom replace the methods.
No fix when the decoder cannot be found or its ``forward`` has a shape the tool cannot rewrite.
Reported only for architectures named with ``--arch``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

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
    Status,
)
from eagle3_lint.rules import RuleMeta, fit, make

if TYPE_CHECKING:
    from eagle3_lint import fixgen
    from eagle3_lint.stages import Model
else:
    fixgen = lazy("eagle3_lint.fixgen")  # imported on first use (lazyimport.py)

META = RuleMeta("EGL001", "missing-eagle3-interface", Severity.ERROR, True,
                "A targeted architecture, and every model it delegates to, fails the engine's EAGLE-3 check.",
                asked_of_model=True)


def check(sm: Model) -> Iterator[Finding]:
    for arch in sm.targeted:
        v = sm.verdicts.get(arch)
        if v is None or v.status not in (Status.UNSUPPORTED, Status.PARTIAL) or v.location is None:
            continue
        key = sm.keys.get(arch)
        parts = [f"{arch}: {v.class_name} ({v.location}) does not pass {sm.contract.check_name}: {v.reason}"]
        related = []
        if key is not None:
            for d in sm.judge.model_delegations(key):
                if d.target is None:
                    parts.append(
                        f"its inner model self.{d.attr} is chosen by the checkpoint config and cannot be checked "
                        "statically"
                    )
                    continue
                class_facts = sm.graph.class_facts(d.target)
                loc = Location(sm.graph.path_of(d.target), class_facts.line if class_facts else 1)
                inner = sm.judge.check_class(d.target)
                parts.append(
                    f"the inner model self.{d.attr} -> {d.target.name} ({loc}) does not either: {inner.reason}"
                )
                related.append(loc)
        site = sm.runner.primary
        if site is not None:
            parts.append(f"the runner raises {site.error or 'an error'} at {site.path}:{site.line}")
        from eagle3_lint.model import Step

        check = sm.contract.check_name
        yield make(META, "; ".join(parts), v.location, architecture=arch, symbol=v.class_name,
                   related=tuple(Step("inner", "inner model", loc) for loc in related),
                   title=fit(f"{arch} does not pass {check}, nor does any model it delegates to",
                             f"{arch} fails {check}, as does every model it delegates to", f"{arch} fails {check}",
                             f"{arch} fails {sm.contract.short_check}"))


def fix(sm: Model, finding: Finding) -> Fix | None:
    key = sm.keys.get(finding.architecture or "")
    if key is None or not sm.engine.has(Capability.AUX_PLUMBING):
        return None  # the chain's edits write the aux plumbing in the idiom semantic.py models
    edits = chain_edits(sm, key)
    if not edits:
        return None
    return Fix(f"implement {sm.contract.protocol if sm.contract.found else 'the EAGLE-3 methods'} "
               f"along {key.name}'s delegation chain", tuple(edits), Applicability.UNSAFE)


def chain_edits(sm: Model, top: ClassKey) -> list[Edit] | None:
    """The contract on every class from ``top`` down to the decoder that owns the layers."""
    own = sem.owner(sm, top)
    if own is None:
        return None
    flavor = fixgen.flavor(sm)
    chain = [top, *(h.key for h in own.hops)]  # chain[-1] is the layer owner
    holder_i = max(len(chain) - 2, 0)  # the class holding the decoder (top itself when it owns the layers)
    param = fixgen.setter_param(sm)
    mixin_key = sem.mixin_key(sm)
    mixin_idiom = bool(flavor.defaults and flavor.mixin and flavor.collector)
    edits: list[Edit] = []
    decoder = own.key
    attr = (flavor.mixin_attr if mixin_idiom else None) or "aux_hidden_state_layers"

    # The decoder: mixin base (0.18+ idiom) or the attribute, then collection and the return.
    if mixin_idiom and mixin_key is not None and not sm.graph.in_mro(decoder, mixin_key):
        edits += fixgen.add_mixin(sm, decoder)
    fw = sem.forward_of(sm, decoder)
    if fw is None:
        return None
    if not fw.collects or not fw.returns_aux:
        if fw.collects:
            more = fixgen.collection(sm, fw.owner, attr, collect=False, ret=True, mixin_idiom=mixin_idiom)
        else:
            more = fixgen.collection(sm, fw.owner, attr, collect=True, ret=not fw.returns_aux, mixin_idiom=mixin_idiom)
            if more is not None and not mixin_idiom:
                more = fixgen.init_attr(sm, decoder, attr) + more
        if more is None:
            return None
        edits += more

    # Every class above the decoder: the base on the top and on the holder; methods where the
    # contract's own bodies (stubs, or defaults that unwrap elsewhere) would not reach the decoder.
    for i in range(holder_i, -1, -1):
        cls = chain[i]
        if i in (0, holder_i) and not sm.judge.check_class(cls).supports:
            edits += fixgen.add_protocol(sm, cls)
        rest = own.path[i:]  # attributes from this class down to the decoder
        direct = i == holder_i
        if flavor.setter and _needs(sm, cls, flavor.setter, rest, getter=False):
            if direct:
                body = fixgen.setter_direct(flavor, rest, param, attr, via_mixin=mixin_idiom)
            else:
                body = fixgen.setter_delegate(rest[0], flavor.setter, param)
            edits += fixgen.add_setter(sm, cls, body)
        if flavor.getter and _needs(sm, cls, flavor.getter, rest, getter=True):
            body = fixgen.getter_direct(rest) if direct else fixgen.getter_delegate(rest[0], flavor.getter)
            edits += fixgen.add_getter(sm, cls, body)
    return edits


def _needs(sm: Model, cls: ClassKey, name: str, rest: tuple[str, ...], *, getter: bool) -> bool:
    """Whether ``cls`` needs its own ``name`` once it inherits the Protocol."""
    hit = sem.method_of(sm, cls, name)
    if hit is not None and not sem.is_protocol_method(sm, hit[0]) and not hit[1].stub:
        return False  # a real override of its own
    if sm.graph.member_origin(cls, name) is not None and hit is None:
        return False
    if not sm.contract.methods_have_defaults:
        return True
    # Default bodies: they unwrap get_language_model()/language_model, then .model.
    kind, hops, _how = sem.default_holder(sm, cls)
    return not (kind == "ok" and tuple(h.attr for h in hops) == rest)
