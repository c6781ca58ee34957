"""How the interface-side rules (EGL001-EGL004, EGL006) group and grade what they find.

The facts they report on come from the semantic model (``eagle3_lint.semantic``); this module only
groups one defect's affected architectures at one place and decides severity and fixes under
``--arch``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from eagle3_lint import semantic as sem
from eagle3_lint.model import Finding, Location, Severity

if TYPE_CHECKING:
    from eagle3_lint.analysis import Context


# -- grouping findings -------------------------------------------------------------------------
@dataclass
class Group:
    """One defect, at one place, with every architecture it affects."""

    location: Location
    kind: str
    archs: list[str] = field(default_factory=list)
    data: dict[str, object] = field(default_factory=dict)

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


def primary_arch(ctx: Context, archs: Iterable[str]) -> str | None:
    archs = list(archs)
    for a in archs:
        if ctx.is_targeted(a):
            return a
    return min(archs) if archs else None


def any_targeted(ctx: Context, archs: Iterable[str]) -> bool:
    return any(ctx.is_targeted(a) for a in archs)


def severity_for(ctx: Context, archs: Iterable[str], default: Severity, past_interface: bool = True) -> Severity:
    """Severity follows the serving chain. With ``--arch``, a finding that affects none of the targets is a
    warning, so the gate is about them. For architectures nobody targets, a defect that an earlier gate makes
    unreachable for every affected architecture (the config-time model_type gate refuses them, or they fail the
    interface check first) is reported as a warning, not an error."""
    archs = list(archs)
    if default is not Severity.ERROR or any_targeted(ctx, archs):
        return default
    if ctx.targeted or (archs and all(sem.unreachable(ctx, a, past_interface) for a in archs)):
        return Severity.WARNING
    return default


def unreachable_note(ctx: Context, archs: Iterable[str], past_interface: bool = True) -> str:
    """`` (unreachable: why)`` for a finding downgraded because every affected architecture is unreachable."""
    archs = list(archs)
    if any_targeted(ctx, archs) or not archs:
        return ""
    whys = [sem.unreachable(ctx, a, past_interface) for a in archs]
    if not all(whys):
        return ""
    first = whys[0]
    return f" (not reached today: {first}" + (
        f", and likewise for the {len(archs) - 1} other(s))" if len(archs) > 1 else ")"
    )


def wants_fix(ctx: Context, archs: Iterable[str]) -> bool:
    """With ``--arch``, fix only what the targeted architectures need; without, fix everything."""
    return not ctx.targeted or any_targeted(ctx, archs)


def arch_list(archs: list[str], limit: int = 4) -> str:
    s = sorted(archs)
    more = f" and {len(s) - limit} more" if len(s) > limit else ""
    return ", ".join(s[:limit]) + more


def group_of(pairs: list[tuple[Finding, Group]], finding: Finding) -> Group | None:
    for f, g in pairs:
        if f is finding or f == finding:
            return g
    return None
