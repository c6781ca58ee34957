"""Queries about the aux hidden-state path of one class: who owns the layers, what the setter writes,
and how the owner's ``forward`` collects hidden states.

The runner calls the setter on the top-level object; the setter must reach the decoder that owns
``self.layers``, and that decoder's ``forward`` must compare layer indices with the configured ids
and return what it collected. These functions answer each link from the facts, with lines.
"""

from __future__ import annotations

from dataclasses import dataclass

from eagle3_lint.facts import Loop, Method
from eagle3_lint.graph import ClassGraph, ClassKey, Delegation

_MAX_HOPS = 4


@dataclass(frozen=True)
class LayerOwner:
    key: ClassKey
    path: tuple[str, ...]  # attribute hops from the top-level class: ("language_model", "model")
    layers_line: int


@dataclass(frozen=True)
class Collection:
    """How a forward collects aux hidden states."""

    owner: ClassKey
    method_owner: ClassKey
    method: Method
    loop: Loop | None
    idiom: str  # "explicit" (idx in self.X) | "mixin" (helper(aux, idx + k, ...)) | "none"
    attr: str | None  # the attribute compared with the index: "aux_hidden_state_layers"
    returns_aux: bool


def layer_owner(graph: ClassGraph, key: ClassKey, hops: tuple[str, ...] = (), seen: frozenset[ClassKey] = frozenset()) -> LayerOwner | None:
    """The class reachable through model delegations whose ``__init__`` assigns ``self.layers``."""
    if key in seen or len(hops) > _MAX_HOPS:
        return None
    hit = graph.assigns_attr(key, "layers")
    if hit is not None:
        return LayerOwner(key, hops, hit[1])
    dels: list[Delegation] = [d for d in graph.delegations(key) if d.target is not None]
    lm = graph.language_model_attrs(key)
    # The contract's default bodies unwrap the language model first, then ``.model``.
    dels.sort(key=lambda d: (d.attr not in lm and d.attr != "language_model", d.attr != "model"))
    for d in dels:
        if d.attr not in lm and d.attr not in ("language_model", "model") and d.how != "registered-model":
            continue
        assert d.target is not None
        found = layer_owner(graph, d.target, (*hops, d.attr), seen | {key})
        if found is not None:
            return found
    return None


def forward_collection(graph: ClassGraph, owner: ClassKey, collector_names: tuple[str, ...] = ()) -> Collection | None:
    hit = graph.method(owner, "forward")
    if hit is None:
        return None
    mowner, md = hit
    assert isinstance(md, Method)
    layer_loops = [lp for lp in md.loops if "layers" in lp.iter_text]
    loop = layer_loops[0] if layer_loops else None
    idiom, attr = "none", None
    for lp in layer_loops:
        for u in lp.uses:
            if u.kind == "in" and u.target.startswith("self."):
                idiom, attr, loop = "explicit", u.target[5:], lp
                break
            if u.kind == "call" and (u.target.rsplit(".", 1)[-1] in collector_names or "hidden_state" in u.target):
                idiom, loop = "mixin", lp
                break
        if idiom != "none":
            break
    if idiom == "none":
        for left, container, _line in md.memberships:
            if container.startswith("self.") and "aux" in container:
                idiom, attr = "explicit", container[5:]
                break
    returns_aux = any("aux" in text for _k, text, _l in md.returns)
    return Collection(owner, mowner, md, loop, idiom, attr, returns_aux)
