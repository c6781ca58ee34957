"""## What it does
Checks the runner's fallback path: when the drafter's config names no aux layers, the runner
calls a getter on the model for the default layers. The getter's name is read from this tree's
runner (``get_eagle3_aux_hidden_state_layers`` up to 0.17, ``get_eagle3_default_aux_hidden_state_layers``
from 0.18), never assumed. For every class that passes the check it flags (a class that claims the
interface but fails the check is EGL003's):

- **error**: the getter is missing, or resolves to a body that returns nothing: the Protocol's
  stub (``...``) in versions whose Protocol has no default bodies, an own stub, the default body
  reading ``.layers`` that the holder never sets, or a delegation to an object without it;
- **warning**: the class defines a differently named getter (a stale name from another vLLM
  version, such as ``get_eagle3_aux_hidden_state_layers`` in a tree whose runner calls
  ``get_eagle3_default_aux_hidden_state_layers``) while a working body exists: a dead override
  the runner never calls. With no working body the stale name is the error above. A **note** when the dead
  override returns the same ids as the getter the runner calls (evaluated for 32 and 61 layers): nothing
  is lost, the method is only dead code.

Reported once per defining class. Pooling models and drafters are out of scope.

## Why is this bad?
With a stub getter the runner calls ``set_aux_hidden_state_layers(None)`` and the model iterates
``None``; with a missing one it raises ``AttributeError`` after the weights have loaded. A dead
override silently loses whatever layer choice its author made.

## Example
```python
class DeepseekV2ForCausalLM(nn.Module, SupportsEagle3):  # vLLM 0.33: runner calls ..._default_...
    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:  # never called
        num_layers = len(self.model.layers)
        return (2, num_layers // 2, num_layers - 3)
```

## Fix safety
Unsafe: renames the stale method to the runner's name (and its own delegating calls whose
receiver has the new name), or adds the getter with the analysed version's body
(``num_layers = len(self.model.layers)``; delegation to the inner model for wrappers).
No fix when the class already defines the runner's name with a body that cannot return the layers:
a second ``def`` of the name (added, or renamed to) would only shadow the first; the message says so.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from eagle3_lint import semantic as sem
from eagle3_lint.engine import Capability
from eagle3_lint.graph import ClassKey
from eagle3_lint.lazyimport import lazy
from eagle3_lint.model import Applicability, Finding, Fix, Location, Severity, Status
from eagle3_lint.rules import Found, RuleMeta, Scope, fit, make
from eagle3_lint.rules import _interface as shared

if TYPE_CHECKING:
    from eagle3_lint import fixgen
    from eagle3_lint.rules import Each
    from eagle3_lint.stages import Model
else:
    fixgen = lazy("eagle3_lint.fixgen")  # imported on first use (lazyimport.py)

META = RuleMeta(
    "EGL006",
    "default-aux-layers-unreachable",
    Severity.ERROR,
    True,
    "The runner's fallback getter for the default aux layers is missing, a stub, or shadowed by a stale name.",
    needs=frozenset({Capability.AUX_PLUMBING}),
    scope=Scope.ARCH,
    asked_of_model=True,
)

_BROKEN = ("missing", "stub", "broken-default", "broken-delegate")


def check(sm: Model, each: Each) -> Iterator[Found]:
    yield from shared.found(sm, _compute(sm, each), _finding, _fix)


def _compute(sm: Model, each: Each) -> shared.Groups:
    groups = shared.Groups()
    names = sem.getter_names(sm)
    if not names:
        return groups
    # One architecture's contribution: an answer kept between runs with the files it read (each_arch).
    def one(arch: str, key: ClassKey, groups: shared.Sink) -> None:
        # A class that claims the interface but fails the check is EGL003's (or EGL002's).
        if sem.status(sm, arch) is not Status.SUPPORTED:
            return
        stale = sem.stale_getters(sm, key)
        for name in names:
            st = sem.getter_state(sm, key, name)
            if st.kind in _BROKEN:
                if stale:
                    cls, old, line = stale[0]
                    groups.get(sem.method_location(sm, cls, line), "stale-broken", arch,
                               key=cls, top=key, old=old, new=name, state=st, defines=_defines(sm, cls, name))
                    continue
                loc: Location | None
                if st.kind == "stub" and not st.from_protocol and st.origin is not None:
                    loc, where = sem.method_location(sm, st.origin, st.line), st.origin
                else:
                    where = sem.claimer(sm, key)
                    loc = sem.class_location(sm, where)
                if loc is not None:
                    groups.get(loc, "broken", arch, key=where, top=key, new=name, state=st,
                               defines=_defines(sm, where, name))
            else:
                # A working (or a default) body runs instead of the stale one.
                for cls, old, line in stale:
                    groups.get(sem.method_location(sm, cls, line), "stale", arch,
                               key=cls, top=key, old=old, new=name, state=st, defines=_defines(sm, cls, name))
    shared.each_arch(each, groups, one, sem.scoped_archs(sm))
    return groups


def _finding(sm: Model, g: shared.Group) -> Finding:
    key: ClassKey = g.data["key"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    st: sem.GetterState = g.data["state"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    new = str(g.data["new"])
    site = next((s for s in sm.runner.sites if s.fallback == new), sm.runner.primary)
    at = f" ({site.path}:{site.fallback_line or site.line})" if site is not None else ""
    sev = shared.severity_for(sm, g.archs, META.severity)
    if g.kind == "stale":
        old = g.data["old"]
        instead = "the contract's default body" if st.from_protocol or st.origin is None else f"{st.origin.name}.{new}"
        top: ClassKey = g.data.get("top", key)  # type: ignore[assignment]  # Group.data: what _pairs stored
        same = sem.same_default(sm, top, str(old), new)
        if same:
            msg = (f"{key.name}.{old} is a dead override: the runner calls {new}(){at}, never {old}(); it returns "
                   f"the same ids as {instead}, so nothing is lost, but the method is dead code")
            sev = Severity.NOTE
        elif same is None:
            # Its ids come from an inner model the checkpoint chooses: nothing says they differ from what runs, so
            # this is dead code to clean up, not a layer choice known to be lost (a warning would be a guess).
            msg = (f"{key.name}.{old} is a dead override: the runner calls {new}(){at}, never {old}(); its ids "
                   f"come from a model the checkpoint chooses, so whether they differ from what {instead} returns "
                   "depends on the checkpoint")
            sev = Severity.NOTE
        else:
            msg = (f"{key.name}.{old} is a dead override: the runner calls {new}(){at}, never {old}(); "
                   f"{instead} runs instead, so this method's layer choice is ignored")
            sev = Severity.WARNING
        symbol = f"{key.name}.{old}"
    elif g.kind == "stale-broken":
        old = g.data["old"]
        msg = (f"{key.name} defines {old}() but the runner calls {new}(){at}, which {_broken_text(st)}")
        symbol = f"{key.name}.{old}"
    else:
        msg = f"the runner's fallback {new}(){at} {_broken_text(st)} for {key.name}"
        symbol = f"{key.name}.{new}"
    if g.data["defines"]:
        # The fix would add (or rename a method to) a second def of the name: the class's own body needs a human.
        msg += (f" (no fix: {key.name} already defines {new}(); its body needs changing by hand, a second def "
                "would only shadow it)")
    msg += f"; architectures: {shared.arch_list(g.archs)}"
    generic = (f"{symbol}: the runner's default aux-layer getter is missing, a stub or shadowed",
               f"{symbol}: default aux-layer getter missing, a stub or shadowed")
    title = fit(f"{symbol} is a dead override", *generic) if g.kind == "stale" else fit(*generic)
    return make(META, msg, g.location, severity=sev, architecture=shared.primary_arch(sm, g.archs),
                architectures=tuple(sorted(g.archs)), symbol=symbol,
                title=title)


def _broken_text(st: sem.GetterState) -> str:
    if st.kind == "missing":
        return "does not exist (AttributeError when the drafter config names no layers)"
    if st.kind == "stub":
        return f"resolves to a stub: {st.detail}, so the runner would call set_aux_hidden_state_layers(None)"
    return f"cannot return the layers: {st.detail}"


def _fix(sm: Model, g: shared.Group) -> Fix | None:
    if not shared.wants_fix(sm, g.archs):
        return None
    key: ClassKey = g.data["key"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    top: ClassKey = g.data["top"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    new = str(g.data["new"])
    if g.data["defines"]:
        return None  # neither a rename nor an added getter may leave two defs of one name (see _finding)
    if g.kind in ("stale", "stale-broken"):
        old = str(g.data["old"])
        edits = fixgen.rename_method(sm, key, old, new, _receivers_with(sm, top, new))
        if not edits:
            return None
        return Fix(f"rename {key.name}.{old} to {new}", tuple(edits), Applicability.UNSAFE)
    st: sem.GetterState = g.data["state"]  # type: ignore[assignment]  # Group.data: what _pairs stored
    if st.kind == "stub" and not st.from_protocol:
        return None  # an own stub body needs a human to decide the layers
    body = _getter_body(sm, top)
    if body is None:
        return None
    edits = fixgen.add_getter(sm, key, body)
    if not edits:
        return None
    return Fix(f"add {new}() to {key.name}", tuple(edits), Applicability.UNSAFE)


def _defines(sm: Model, key: ClassKey, name: str) -> bool:
    """``key``'s own body binds ``name`` (a def or an assignment): a fix adding or renaming to it would duplicate it.
    Asked inside the architecture's kept contribution, so a re-check reads no class's facts for it (test_queries)."""
    cf = sm.graph.class_facts(key)
    return cf is not None and name in cf.members


def _getter_body(sm: Model, top: ClassKey) -> list[str] | None:
    flavor = fixgen.flavor(sm)
    inner = sem.supporting_inner(sm, top)
    if inner and flavor.getter:
        return fixgen.getter_delegate(".".join(h.attr for h in inner[0]), flavor.getter)
    own = sem.owner(sm, top)
    if own is None:
        return None
    return fixgen.getter_direct(own.path)


def _receivers_with(sm: Model, top: ClassKey, name: str) -> tuple[str, ...]:
    """``self.<attr>`` receivers (delegations of ``top``) whose class has ``name``, so renamed calls still resolve."""
    out = []
    for d in sem.delegations(sm, top):
        if d.target is not None and sm.graph.member_origin(d.target, name) is not None:
            out.append(f"self.{d.attr}")
    return tuple(out)
