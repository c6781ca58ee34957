"""Rules are plugins: one module per rule, discovered by name (``eglNNN_<name>.py``).

Each module defines ``META`` (a ``RuleMeta``), a docstring in ruff's shape (What it does / Why is
this bad? / Example / Fix safety), ``check(sm)`` yielding findings, and optionally a pure
``fix(sm, finding)`` returning a ``Fix`` (or None). Rules query the context; they never read files.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

from eagle3_lint.engine import Capability
from eagle3_lint.model import MAX_TITLE, Finding, Fix, Location, Severity

if TYPE_CHECKING:
    from eagle3_lint.stages import Model


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


class Rule:
    def __init__(self, module: ModuleType) -> None:
        self.module = module
        self.meta: RuleMeta = module.META
        self.doc: str = (module.__doc__ or "").strip()
        self._check: Callable[[Model], Iterable[Finding]] = module.check
        self._fix: Callable[[Model, Finding], Fix | None] | None = getattr(module, "fix", None)

    def run(self, sm: Model) -> Iterator[Finding]:
        for f in self._check(sm):
            f = dataclasses.replace(f, engine=sm.engine.name, check=sm.contract.check_name,
                                    title=f.title or default_title(self.meta, f),
                                    architectures=_architectures(f))
            if self._fix is not None and f.fix is None:
                # A fix re-reads whole files (fixgen), so it is kept between runs with the files it read.
                fx = sm.queries.get(("fix", self.meta.id, f), lambda f=f: self._fix(sm, f),  # type: ignore[misc]
                                     persist=True)
                if fx is not None and fx.edits:
                    f = dataclasses.replace(f, fix=fx)
            yield f

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
