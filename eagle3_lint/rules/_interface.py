"""How the interface-side rules (EGL001-EGL004, EGL006) group and grade what they find.

The facts they report on come from the semantic model (``eagle3_lint.semantic``); this module only
groups one defect's affected architectures at one place and decides severity and fixes under
``--arch``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from eagle3_lint import semantic as sem
from eagle3_lint.graph import ClassKey
from eagle3_lint.model import Finding, Fix, Location, Severity
from eagle3_lint.rules import Found

if TYPE_CHECKING:
    from eagle3_lint.rules import Each
    from eagle3_lint.stages import Model


# -- grouping findings -------------------------------------------------------------------------
@dataclass
class Group:
    """One defect, at one place, with every architecture it affects."""

    location: Location
    kind: str
    archs: list[str] = field(default_factory=list)
    data: dict[str, object] = field(default_factory=dict)
    # The answers that made the group (each_arch): what a fix made from it depends on (found).
    sources: list[Hashable] = field(default_factory=list)

    def add(self, arch: str) -> None:
        if arch not in self.archs:
            self.archs.append(arch)


class Groups:
    def __init__(self) -> None:
        self._by: dict[tuple[str, int, str], Group] = {}

    def get(self, location: Location, kind: str, arch: str, **data: object) -> Group:
        k = (location.path, location.line, kind)
        g = self._by.get(k)
        if g is None:
            g = Group(location, kind, [], dict(data))
            self._by[k] = g
        g.add(arch)
        return g

    def __iter__(self) -> Iterator[Group]:
        return iter(sorted(self._by.values(), key=lambda g: (g.location.path, g.location.line, g.kind)))


class Sink:
    """What one architecture contributes to a rule's groups: ``get`` as on ``Groups``, recorded (each_arch)."""

    def __init__(self) -> None:
        self.items: list[tuple[Location, str, dict[str, object]]] = []

    def get(self, location: Location, kind: str, arch: str, **data: object) -> None:
        self.items.append((location, kind, data))


def each_arch(each: Each, groups: Groups, one: Callable[[str, ClassKey, Sink], None],
              archs: Iterable[tuple[str, ClassKey]]) -> None:
    """``one(arch, key, sink)`` for each architecture, into ``groups`` in that order. Each architecture's
    contribution is one answer the pipeline keeps (``each``): a re-check after an edit recomputes only the
    architectures whose files changed (queries.py)."""
    def contribution(_sm: Model, ak: tuple[str, ClassKey]) -> list[tuple[Location, str, dict[str, object]]]:
        sink = Sink()
        one(ak[0], ak[1], sink)
        return sink.items

    for (arch, _key), items, source in each(contribution, archs):
        for loc, kind, data in items:
            groups.get(loc, kind, arch, **data).sources.append(source)


def found(sm: Model, groups: Iterable[Group], finding: Callable[[Model, Group], Finding],
          fix: Callable[[Model, Group], Fix | None]) -> Iterator[Found]:
    """One ``Found`` per group: its finding, and its fix, which rests on what the group's architectures contributed
    rather than on everything the rule read (fixes are kept under their finding, and an architecture joining or
    leaving the group changes the finding: its architecture list and count)."""
    for f, g in [(finding(sm, g), g) for g in groups]:
        yield Found(f, functools.partial(fix, sm, g), tuple(g.sources))


def primary_arch(sm: Model, archs: Iterable[str]) -> str | None:
    archs = list(archs)
    for a in archs:
        if sm.is_targeted(a):
            return a
    return min(archs) if archs else None


def any_targeted(sm: Model, archs: Iterable[str]) -> bool:
    return any(sm.is_targeted(a) for a in archs)


def severity_for(sm: Model, archs: Iterable[str], default: Severity, past_interface: bool = True) -> Severity:
    """Severity follows the serving chain. With ``--arch``, a finding that affects none of the targets is a
    warning, so the gate is about them. For architectures nobody targets, a defect that an earlier gate makes
    unreachable for every affected architecture (the config-time model_type gate refuses them, or they fail the
    interface check first) is reported as a warning, not an error."""
    archs = list(archs)
    if default is not Severity.ERROR or any_targeted(sm, archs):
        return default
    if sm.targeted or (archs and all(sem.unreachable(sm, a, past_interface) for a in archs)):
        return Severity.WARNING
    return default


def unreachable_note(sm: Model, archs: Iterable[str], past_interface: bool = True) -> str:
    """`` (unreachable: why)`` for a finding downgraded because every affected architecture is unreachable."""
    archs = list(archs)
    if any_targeted(sm, archs) or not archs:
        return ""
    whys = [sem.unreachable(sm, a, past_interface) for a in archs]
    if not all(whys):
        return ""
    first = whys[0]
    return f" (not reached today: {first}" + (
        f", and likewise for the {len(archs) - 1} other(s))" if len(archs) > 1 else ")"
    )


def wants_fix(sm: Model, archs: Iterable[str]) -> bool:
    """With ``--arch``, fix only what the targeted architectures need; without, fix everything."""
    return not sm.targeted or any_targeted(sm, archs)


def arch_list(archs: list[str], limit: int = 4) -> str:
    s = sorted(archs)
    more = f" and {len(s) - limit} more" if len(s) > limit else ""
    return ", ".join(s[:limit]) + more
