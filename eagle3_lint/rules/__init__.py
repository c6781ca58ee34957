"""Rules are plugins: one module per rule, discovered by name (``eglNNN_<name>.py``).

Each module defines ``META`` (a ``RuleMeta``), a docstring in ruff's shape (What it does / Why is
this bad? / Example / Fix safety), and ``check``, a function of the semantic model (``stages.Model``:
the model, the engine data, the options) whose arguments follow the rule's declared ``Scope``:

- ``Scope.FILE``: ``check(sm, rel)``, the findings in one model file; the pipeline asks it per file.
- ``Scope.ARCH``: ``check(sm, each)``; the rule's work per architecture (or per file) goes through
  ``each(fn, items)``, and the rule combines the answers (one finding for every architecture a defect
  affects).
- ``Scope.TREE``: ``check(sm)``.

``check`` returns findings, or ``Found``s (a finding with what makes its fix); a module may define
``fix(sm, finding)`` instead, for findings that carry none. Rules read the model; they never read
files, and never name a cache: the pipeline (analysis.py) keeps each answer per (rule, scope item)
and each fix per (rule, finding), with what it read (queries.py).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib
import pkgutil
import re
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from eagle3_lint.engine import Capability
from eagle3_lint.model import MAX_TITLE, Finding, Fix, Location, Severity

if TYPE_CHECKING:
    from eagle3_lint.stages import Model

_I = TypeVar("_I", bound=Hashable)
_R = TypeVar("_R")


class Scope(str, Enum):
    """What a rule is a function of, besides the model: what the pipeline asks it for and keeps answers by."""

    TREE = "tree"  # the whole model: one answer per check
    ARCH = "arch"  # each architecture's contribution (through ``Each``), combined by the rule
    FILE = "file"  # one model file: an answer per file, kept between runs with what it read


class Each(Protocol):
    """``each(fn, items)``: ``(item, fn(sm, item), source)`` for each item, in order, each answer kept by the
    pipeline under (the rule, ``fn``, the item) with the files it read. ``source`` names that answer: a ``Found``
    whose fix rests on it lists it (``Found.rests_on``)."""

    def __call__(self, fn: Callable[[Model, _I], _R], items: Iterable[_I]) -> Iterator[tuple[_I, _R, Hashable]]: ...


@dataclass(frozen=True)
class Found:
    """A finding with what makes its fix (the pipeline makes it once and keeps it under the finding), and the
    ``Each`` answers the fix rests on: the fix then depends on what those read rather than on everything the rule
    read, so an edit elsewhere keeps it."""

    finding: Finding
    fix: Callable[[], Fix | None] | None = None
    rests_on: tuple[Hashable, ...] = ()


class Role(str, enum.Enum):
    """What the code outside ``rules/`` asks a rule for: by the role the rule declares (``RuleMeta.role``), never
    by its id, so an id is written once, in its rule's ``META``."""

    UNPARSABLE = "unparsable"  # reports the model files that cannot be read or parsed (the engine's import fails)
    CONFIG_GATE = "config-gate"  # reports the config-time model_type gate (the verdict line's "refused at config")
    UNUSED_SUPPRESSION = "unused-suppression"  # what suppress.py reports stale suppressions and noqa comments as
    # what the pipeline reports a targeted architecture's failing serving step as when no rule that ran reports it
    UNREPORTED_BLOCKER = "unreported-blocker"


@dataclass(frozen=True)
class RuleMeta:
    id: str
    name: str
    severity: Severity
    fixable: bool
    summary: str
    # What the engine must model for the rule to be right on its trees (``engine.Capability``); the rule does
    # not run on an engine that lacks any of them.
    needs: frozenset[Capability] = frozenset()
    role: Role | None = None
    scope: Scope = Scope.TREE
    # The rule judges what the runner asks of the top-level model: the interface, its setter, the aux-state path
    # and the ids handed to it. Under a method whose runner asks nothing (the contract's check is NONE: vLLM's
    # ``eagle``) it has nothing to judge and does not run.
    asked_of_model: bool = False


class Rule:
    def __init__(self, module: ModuleType) -> None:
        self.module = module
        self.meta: RuleMeta = module.META
        self.doc: str = (module.__doc__ or "").strip()
        # check(sm), check(sm, each) or check(sm, rel), as META.scope says.
        self._check: Callable[..., Iterable[Finding | Found]] = module.check
        self._fix: Callable[[Model, Finding], Fix | None] | None = getattr(module, "fix", None)

    def check(self, sm: Model, *scope: Any) -> Iterable[Finding | Found]:
        """The rule's findings: ``scope`` is the ``Each`` of an ARCH rule, the file of a FILE rule, nothing else."""
        return self._check(sm, *scope)

    def finish(self, sm: Model, x: Finding | Found) -> Found:
        """A finding as reported (engine, check, title, architectures), with what makes its fix."""
        fd = x if isinstance(x, Found) else Found(x)
        f = fd.finding
        f = dataclasses.replace(f, engine=sm.engine.name, check=sm.contract.check_name,
                                title=f.title or default_title(self.meta, f),
                                architectures=_architectures(f))
        if fd.fix is None and self._fix is not None:
            return Found(f, functools.partial(self._fix, sm, f))
        return dataclasses.replace(fd, finding=f)

    def finding(self, message: str, location: Location, *, severity: Severity | None = None, **kw: Any) -> Finding:
        # kw are Finding's optional fields, passed through (Finding checks their names)
        return Finding(self.meta.id, self.meta.name, severity or self.meta.severity, message, location, **kw)


def fit(*forms: str) -> str:
    """A finding's title: the first of the rule's forms (its sentence, then shorter ones for long names) that
    fits ``MAX_TITLE``, else the shortest. A title is never cut (issue 21): a whole sentence over the limit,
    which takes a class name longer than any released tree has, reads better than half of one."""
    return next((f for f in forms if len(f) <= MAX_TITLE), min(forms, key=len))


def default_title(meta: RuleMeta, f: Finding) -> str:
    """The title of a finding its rule made without one: the message's first sentence when it fits, else the
    rule's summary, named by what the finding is about."""
    from eagle3_lint.report.title import first_sentence

    who = f.architecture or f.symbol
    summary = meta.summary.rstrip(".")
    lowered = summary[:1].lower() + summary[1:]
    return fit(first_sentence(f.message), *([f"{who}: {lowered}"] if who else []), summary)


def _architectures(f: Finding) -> tuple[str, ...]:
    """The finding's architectures, sorted, with its ``architecture`` among them."""
    return tuple(sorted({*f.architectures, *([f.architecture] if f.architecture else [])}))


def make(
    meta: RuleMeta, message: str, location: Location, *, severity: Severity | None = None, **kw: Any
) -> Finding:
    # kw are Finding's optional fields, passed through (Finding checks their names)
    return Finding(meta.id, meta.name, severity or meta.severity, message, location, **kw)


_RULE_FILE = re.compile(r"^egl\d{3}_\w+$")


@lru_cache(maxsize=1)
def all_rules() -> tuple[Rule, ...]:
    mods: list[Rule] = []
    for info in pkgutil.iter_modules(__path__):
        if _RULE_FILE.match(info.name):
            mods.append(Rule(importlib.import_module(f"{__name__}.{info.name}")))
    return tuple(sorted(mods, key=lambda r: r.meta.id))


def rule_ids() -> tuple[str, ...]:
    """Every rule id, from the module names (``egl001_...`` -> ``EGL001``), without importing a rule.

    Settings need only the ids (config.py), and a replayed check (reportcache.py) needs nothing else
    from the rules: importing all of them was a sixth of its start-up. tests/test_fast_paths.py checks
    that the names agree with every rule's ``META.id``."""
    names = (info.name for info in pkgutil.iter_modules(__path__))
    return tuple(sorted(f"EGL{n[3:6]}" for n in names if _RULE_FILE.match(n)))


def by_id() -> dict[str, Rule]:
    return {r.meta.id: r for r in all_rules()}


@lru_cache(maxsize=len(Role))
def with_role(role: Role) -> RuleMeta:
    """The declaration of the one rule whose role is ``role``."""
    hits = [r.meta for r in all_rules() if r.meta.role is role]
    if len(hits) != 1:
        raise LookupError(f"{len(hits)} rules declare the role {role.value}: {[m.id for m in hits]}")
    return hits[0]
