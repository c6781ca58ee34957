"""A tripwire in the tool itself: analysis must never import, execute or write the analyzed tree.

``protect(source)`` is active around every analysis (``analysis.analyze``). While it is active:

- an import hook (a ``sys.meta_path`` finder, first in line) refuses any module named after an
  engine's package (``<package>`` or ``<package>.*``, for every engine the tool knows) and any module
  whose file lies under the analyzed tree, by raising ``GuardViolation``.
  It is not an ``ImportError``, so an ``except ImportError`` somewhere cannot swallow it, and the
  violation is also recorded and raised again when the scope closes. The hook only runs when a
  module is imported for the first time, which the analysis hardly ever does: it costs nothing
  measurable.
- with ``EAGLE3_LINT_GUARD=1`` (the test suite sets it), an audit hook also refuses ``exec`` of a
  code object compiled from a file of the tree (the path ``runpy``/``spec_from_file_location``
  take, which no import hook sees) and any open-for-write, rename or delete inside the tree. Audit
  hooks cannot be removed once added, so this one is opt-in and does nothing outside a scope.

The analyzed tree is ``<root>/<package>`` for a folder (the root may be a site-packages folder, whose
other packages are the tool's own dependencies) and the wheel itself for a ``.whl``.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import CodeType, ModuleType
from typing import Any

from eagle3_lint.source import DirSource, SourceTree, ZipSource

ENV = "EAGLE3_LINT_GUARD"

_lock = threading.RLock()
_roots: dict[str, int] = {}  # protected prefix (real path, trailing sep) -> nesting count
_violations: list[str] = []
_local = threading.local()
_audit_installed = False


class GuardViolation(RuntimeError):
    """Analyzed code was about to be imported, executed or written during analysis."""


def protected_prefix(source: SourceTree) -> str | None:
    """The path under which every file belongs to the analyzed tree, or None if it has no path."""
    if isinstance(source, DirSource):
        base = os.path.join(os.path.realpath(source.root), source.package)
    elif isinstance(source, ZipSource):
        base = os.path.realpath(source.wheel)
    else:
        root = getattr(source, "root", None)
        if root is None:
            return None
        base = os.path.join(os.path.realpath(root), source.package)
    return base.rstrip(os.sep) + os.sep


def _under(path: object) -> str | None:
    """The protected prefix ``path`` falls under, if any."""
    if not isinstance(path, (str, bytes, os.PathLike)) or not _roots:
        return None
    try:
        p = os.fsdecode(path)
        real = os.path.realpath(p) if not p.startswith("<") else p
    except (OSError, ValueError, TypeError):
        return None
    # A wheel member path looks like ``/x/engine.whl/engine/a.py``: the wheel's own path is a prefix.
    cand = real.rstrip(os.sep) + os.sep
    for prefix in list(_roots):
        if cand.startswith(prefix):
            return prefix
    return None


def _violate(what: str) -> GuardViolation:
    msg = f"analyzed code would have been {what}; eagle3-lint never runs the tree it checks"
    with _lock:
        _violations.append(msg)
    return GuardViolation(msg)


def _engine_packages() -> frozenset[str]:
    """Every engine's top-level package (computed once, before any scope can be active)."""
    global _PACKAGES
    if _PACKAGES is None:
        from eagle3_lint.engines import all_engines

        _PACKAGES = frozenset(e.package for e in all_engines())
    return _PACKAGES


_PACKAGES: frozenset[str] | None = None


class _Finder(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path`` while a scope is active; finds the spec the others would, then vets it."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if not _roots:
            return None
        if fullname.split(".", 1)[0] in _engine_packages():
            raise _violate(f"imported: {fullname}")
        if getattr(_local, "busy", False):
            return None
        _local.busy = True
        try:
            spec = None
            for finder in list(sys.meta_path):
                if finder is self or isinstance(finder, _Finder):
                    continue
                find = getattr(finder, "find_spec", None)
                if find is None:
                    continue
                spec = find(fullname, path, target)
                if spec is not None:
                    break
        finally:
            _local.busy = False
        if spec is None:
            return None
        places = [spec.origin, *(spec.submodule_search_locations or [])]
        for place in places:
            if place and _under(place):
                raise _violate(f"imported: {fullname} from {place}")
        return spec


_FINDER = _Finder()


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _roots or getattr(_local, "auditing", False):
        return
    _local.auditing = True
    try:
        if event == "exec":
            code = args[0] if args else None
            if isinstance(code, CodeType) and _under(code.co_filename):
                raise _violate(f"executed: {code.co_filename}")
        elif event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC))
            if writing and _under(path):
                raise _violate(f"written: {os.fsdecode(path)}")
        elif event in ("os.rename", "os.remove", "os.rmdir", "os.truncate", "os.chmod", "os.mkdir", "os.symlink",
                       "os.link", "shutil.rmtree", "shutil.move", "shutil.copyfile"):
            for a in args[:2]:
                if _under(a):
                    raise _violate(f"written ({event}): {os.fsdecode(a)}")
    finally:
        _local.auditing = False


def enabled_by_env() -> bool:
    return os.environ.get(ENV, "").strip().lower() not in ("", "0", "false", "no")


def _install_audit() -> None:
    global _audit_installed
    with _lock:
        if not _audit_installed:
            sys.addaudithook(_audit)
            _audit_installed = True


@contextmanager
def protect(source: SourceTree) -> Iterator[None]:
    """Guard ``source`` for the duration of the block; raises GuardViolation at exit if anything tripped."""
    _engine_packages()  # the engines' modules are imported now, never from inside the import hook
    prefix = protected_prefix(source)
    if prefix is None:
        yield
        return
    if enabled_by_env():
        _install_audit()
    with _lock:
        start = len(_violations)
        _roots[prefix] = _roots.get(prefix, 0) + 1
        if _FINDER not in sys.meta_path:
            sys.meta_path.insert(0, _FINDER)
    try:
        yield
    finally:
        with _lock:
            n = _roots.get(prefix, 0) - 1
            if n > 0:
                _roots[prefix] = n
            else:
                _roots.pop(prefix, None)
            if not _roots and _FINDER in sys.meta_path:
                sys.meta_path.remove(_FINDER)
            tripped = _violations[start:]
    if tripped:
        raise GuardViolation(tripped[0] + (f" (and {len(tripped) - 1} more)" if len(tripped) > 1 else ""))
