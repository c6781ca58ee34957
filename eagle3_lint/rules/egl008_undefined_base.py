"""## What it does
Flags a class in a model file whose base (or ``metaclass=``) names something bound nowhere in its
module: no import, ``def``, ``class``, assignment, or star import that could provide it, and not a
builtin. A name bound only further down the module than a module-level class that uses it is
flagged too. Bases imported from outside the tree (``torch``, ``transformers``) are fine, and so
are names bound under ``if``/``try`` (some branch provides them), star imports from modules the
tool cannot read, and a class factory's parameters and local names.

## Why is this bad?
Python evaluates the bases when the ``class`` statement runs, at import time, so the module raises
``NameError`` when vLLM imports it, and every architecture registered in that module fails to load.
A missing ``from .interfaces import SupportsEagle3`` after adding the base by hand is the typical
case.

## Example
```python
from torch import nn

class LlamaForCausalLM(nn.Module, SupportsEagle3):  # SupportsEagle3 is never imported
    ...
```

## Fix safety
Safe, when the name is defined (as a module-level ``class`` or ``def``) in exactly one module of
the tree: the fix adds ``from <module> import <name>`` after the module's last import, relative
when the module is in the same package. Otherwise there is no fix, and the message lists the
candidates.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import TYPE_CHECKING

from eagle3_lint import semantic as sem
from eagle3_lint.facts import TYPE_CHECKING as TC_BRANCH
from eagle3_lint.facts import ClassFacts, ModuleFacts
from eagle3_lint.model import Applicability, Edit, Finding, Fix, Location, Severity
from eagle3_lint.rules import RuleMeta, Scope, make

if TYPE_CHECKING:
    from eagle3_lint.stages import Model

META = RuleMeta("EGL008", "undefined-base", Severity.ERROR, True,
                "A class base is bound nowhere in its module, so importing the module raises NameError.",
                scope=Scope.FILE)

_BUILTINS = frozenset(dir(builtins))


def _names(class_facts: ClassFacts) -> Iterator[tuple[str, str]]:
    """(head name, the expression it comes from) for every base and ``metaclass=`` that Python evaluates."""
    for b in class_facts.bases:
        if b.dotted:
            yield b.dotted.split(".")[0], b.text or b.dotted
        for a in b.args:
            if a and not a.startswith("*") and a != "?":
                yield a.split(".")[0], b.text or a
    meta = class_facts.keywords.get("metaclass", "")
    head = meta.split(".")[0]
    if head.isidentifier():
        yield head, meta


def _star_may_provide(sm: Model, mf: ModuleFacts, name: str) -> bool:
    for star in mf.star_imports:
        smf = sm.graph.module(star)
        if smf is None:
            return True  # a module outside the tree (or unreadable): it may export anything
        if sm.graph.resolve_name(star, name).kind != "unresolved":
            return True
    return False


def _problem(sm: Model, mf: ModuleFacts, class_facts: ClassFacts, name: str) -> str | None:
    """Why ``name`` raises NameError where the class statement runs, or None when something binds it."""
    if class_facts.nested_in is not None:
        # A factory's class statement runs when the factory is called, with the factory's own
        # scope: its parameters and locals bind the bases. Local binding forms other than
        # assignments and ``from`` imports (loops, ``with``, unpacking) are not in the facts, so a
        # factory class is flagged only for a name bound nowhere at all, never for ordering.
        ff = mf.functions.get(class_facts.nested_in)
        if ff is None or name in ff.params or name in ff.local_bindings or name in mf.bindings:
            return None
    bl = mf.bindings.get(name)
    if bl and class_facts.nested_in is None:
        if class_facts.branch == TC_BRANCH or any(b.line < class_facts.line for b in bl):
            return None
        first = min(b.line for b in bl)
        return f"{name!r} is bound only at line {first}, after the class statement at line {class_facts.line} runs"
    if name in _BUILTINS or _star_may_provide(sm, mf, name):
        return None
    return f"{name!r} is bound nowhere in {mf.module} (no import, def, class, assignment or star import provides it)"


def check(sm: Model, rel: str) -> list[Finding]:
    # One file: the pipeline keeps the answer between runs with the files it read (its star imports, say).
    return list(_findings_in(sm, rel))


def _findings_in(sm: Model, rel: str) -> Iterator[Finding]:
    mf = sm.store.load_path(rel)
    if mf is not None and not mf.error:
        archs: list[str] | None = None  # who cannot load: only worked out for a file with a finding
        reported: set[tuple[str, int]] = set()
        for class_facts in mf.classes.values():
            if class_facts.branch == TC_BRANCH:
                continue  # never executed at runtime
            for name, expr in _names(class_facts):
                if (name, class_facts.line) in reported:
                    continue
                why = _problem(sm, mf, class_facts, name)
                if why is None:
                    continue
                reported.add((name, class_facts.line))
                if archs is None:
                    archs = sorted(a for a, e in sm.registry.entries.items() if e.module == mf.module)
                who = (f"; {', '.join(archs[:4])}{' and more' if len(archs) > 4 else ''} cannot load" if archs
                       else "")
                msg = (f"class {class_facts.qualname} uses {expr} as a base, but {why}: importing {mf.module} raises "
                       f"NameError{who}")
                b = next((b for b in class_facts.bases if b.dotted.split('.')[0] == name), None)
                loc = (Location(rel, b.line, b.col, b.end_line, b.end_col) if b is not None
                       else Location(rel, class_facts.line, class_facts.col))
                yield make(META, msg, loc, symbol=name, architecture=archs[0] if len(archs) == 1 else None,
                           architectures=tuple(archs))


def _import_text(module: str, target: str, name: str) -> str:
    """``from .x import N`` inside the same package, else the absolute form."""
    pkg = module.rsplit(".", 1)[0]
    tpkg, _, tmod = target.rpartition(".")
    if tpkg == pkg and tpkg:
        return f"from .{tmod} import {name}"
    return f"from {target} import {name}"


def fix(sm: Model, finding: Finding) -> Fix | None:
    name = finding.symbol
    if not name or "bound nowhere" not in finding.message:
        return None
    mf = sm.store.load_path(finding.location.path)
    if mf is None:
        return None
    found = [m for m in sem.definers(sm, name) if m != mf.module]
    if len(found) != 1:
        return None
    line = mf.last_import_line + 1 if mf.last_import_line else 1
    text = _import_text(mf.module if not mf.is_package else mf.module + ".__init__", found[0], name)
    return Fix(f"import {name} from {found[0]}", (Edit(finding.location.path, line, 0, line, 0, text + "\n"),),
               Applicability.SAFE)
