"""Read-only access to an engine's source tree, from a folder or straight from a wheel's zip.

Paths are POSIX, relative to the tree root (the folder that holds the engine's package). Nothing here imports
or executes the analyzed code.
"""

from __future__ import annotations

import os
import re
import stat
import zipfile
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING

from eagle3_lint import deps
from eagle3_lint.errors import TargetError

if TYPE_CHECKING:
    from collections.abc import Callable

    from eagle3_lint.deps import Recorder

# Generated files this large are not model code; reading them would only cost time.
MAX_FILE_BYTES = 8 * 1024 * 1024


class SourceTree(ABC):
    """A tree of files below a root; the only way the analyzer reads analyzed code."""

    root_label: str
    package: str  # the engine's top-level package, the only folder walked
    # Where the tree root sits in the folder the user named, when it is below it: ``python/`` for an SGLang
    # checkout (its package lives in ``python/sglang``). Output paths get it in front (``outcome.PathMap``), so
    # annotations, SARIF and ``--fix`` diffs are relative to the checkout, where git and CI read them.
    display_prefix: str = ""
    # The analysis reading the tree notes what each answer read here (deps.py, queries.Queries.watch).
    recorder: Recorder | None = None

    @abstractmethod
    def py_files(self) -> list[str]:
        """Every ``.py`` file under ``<package>/``, sorted."""

    @abstractmethod
    def read_bytes(self, rel: str) -> bytes:
        """The file's bytes; raises OSError when it cannot be read."""

    @abstractmethod
    def other_files(self) -> list[str]:
        """Non-Python files that matter (dist-info METADATA)."""

    @property
    def writable_root(self) -> Path | None:
        """Where ``--apply`` may write, or None for a wheel."""
        return None

    def plugins_json(self) -> list[dict[str, object]]:
        """The out-of-tree plugins overlaid on this tree, for the report (none for a plain tree)."""
        return []

    def exists(self, rel: str) -> bool:
        r = self.recorder
        if r is not None:
            r.note(rel)
        return rel in self._index()

    def _index(self) -> set[str]:
        idx = getattr(self, "_idx", None)
        if idx is None:
            idx = set(self.py_files())
            self._idx = idx
        return idx

    def module_path(self, module: str) -> str | None:
        """``pkg.a.b`` to ``pkg/a/b.py`` or ``pkg/a/b/__init__.py``, if present."""
        base = module.replace(".", "/")
        for cand in (base + ".py", base + "/__init__.py"):
            if self.exists(cand):
                return cand
        return None

    @staticmethod
    def path_module(rel: str) -> str:
        mod = rel[:-3] if rel.endswith(".py") else rel
        if mod.endswith("/__init__"):
            mod = mod[: -len("/__init__")]
        return mod.replace("/", ".")

    def package_version(self, package: str, modules: tuple[str, ...] = ("_version.py", "version.py")) -> str:
        """``<package>/<module>``'s literal version (the first of ``modules`` that has one), else the version in
        the dist-info METADATA among ``other_files()``, else "unknown"."""
        for name in modules:
            rel = f"{package}/{name}"
            if self.exists(rel):
                try:
                    text = self.read_bytes(rel).decode("utf-8", "replace")
                except OSError:
                    continue
                # setuptools-scm writes ``__version__ = version = '0.16.0'`` (a chained assignment).
                m = re.search(r"^(?:__version__|version)[ \t]*(?::[ \t]*str[ \t]*)?="
                              r"[ \t]*(?:(?:__version__|version)[ \t]*=[ \t]*)?['\"]([^'\"]+)['\"]", text, re.M)
                if m:
                    return m.group(1)
        for rel in self.other_files():
            if rel.endswith(".dist-info/METADATA"):
                try:
                    text = self.read_bytes(rel).decode("utf-8", "replace")
                except OSError:
                    continue
                m = re.search(r"^Version:\s*(\S+)", text, re.M)
                if m:
                    return m.group(1)
        return "unknown"


class DirSource(SourceTree):
    # The package is the caller's to name (``engines.dir_source`` asks each engine's test of the folder): a tree
    # knows no engine.
    def __init__(self, root: Path, package: str, display_prefix: str = "") -> None:
        self.root = root
        self.root_label = str(root)
        self.display_prefix = display_prefix
        self.package = package
        self._files: list[str] | None = None

    @property
    def writable_root(self) -> Path | None:
        return self.root

    def _walk(self) -> list[str]:
        out: list[str] = []
        seen_dirs: set[tuple[int, int]] = set()
        top = self.root / self.package
        base = str(top)
        # followlinks=False plus an inode set: a symlink loop cannot make the walk spin.
        def unreadable(exc: OSError) -> None:
            # A folder the walk cannot list hides every file in it: no verdict can rest on what is left.
            rel = (self.package + str(exc.filename or top)[len(base):]).replace(os.sep, "/")
            raise TargetError(f"{self.root_label}: {rel}/ is not readable ({exc.strerror or exc})")

        for dirpath, dirnames, filenames in os.walk(top, onerror=unreadable, followlinks=False):
            try:
                st = os.stat(dirpath)
                key = (st.st_dev, st.st_ino)
            except OSError:
                dirnames[:] = []
                continue
            if key in seen_dirs:
                dirnames[:] = []
                continue
            seen_dirs.add(key)
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
            # os.walk joins names onto ``top`` as given, so the folder's path relative to the root is a
            # slice of it (os.path.relpath per file was a third of a warm re-check's walk).
            rel_dir = (self.package + dirpath[len(base):]).replace(os.sep, "/") + "/"
            out.extend(rel_dir + fn for fn in filenames if fn.endswith(".py"))
        return sorted(out)

    def py_files(self) -> list[str]:
        r = self.recorder
        if r is not None:
            r.note(deps.LISTING)
        if self._files is None:
            self._files = self._walk()
        return self._files

    def other_files(self) -> list[str]:
        try:
            return sorted(
                f"{p.name}/METADATA" for p in self.root.iterdir()
                if p.name.startswith(f"{self.package}-") and p.name.endswith(".dist-info")
                and (p / "METADATA").is_file()
            )
        except OSError:
            return []

    def read_bytes(self, rel: str) -> bytes:
        r = self.recorder
        if r is not None:
            r.note(rel)
        full = self.root / rel
        st = os.stat(full)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"not a regular file: {rel}")
        if st.st_size > MAX_FILE_BYTES:
            raise OSError(f"file too large to analyze ({st.st_size} bytes): {rel}")
        with open(full, "rb") as fh:
            return fh.read()


class ZipSource(SourceTree):
    """A wheel read in place: members are decompressed one at a time, on demand."""

    # ``package`` picks the engine package among the wheel's top-level names (``engines.zip_source``).
    def __init__(self, wheel: Path, package: Callable[[list[str]], str] | str) -> None:
        self.wheel = wheel
        self.root_label = str(wheel)
        try:
            self._zip = zipfile.ZipFile(wheel)
            names = self._zip.namelist()
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise TargetError(f"cannot read wheel {wheel}: {exc}") from None
        self.package = package if isinstance(package, str) else package(
            sorted({n.split("/", 1)[0] for n in names if "/" in n}))
        self._py = sorted(n for n in names if n.startswith(f"{self.package}/") and n.endswith(".py"))
        self._other = sorted(n for n in names if n.endswith(".dist-info/METADATA"))

    def py_files(self) -> list[str]:
        r = self.recorder
        if r is not None:
            r.note(deps.LISTING)
        return self._py

    def other_files(self) -> list[str]:
        return self._other

    def read_bytes(self, rel: str) -> bytes:
        r = self.recorder
        if r is not None:
            r.note(rel)
        try:
            info = self._zip.getinfo(rel)
            if info.file_size > MAX_FILE_BYTES:
                raise OSError(f"file too large to analyze ({info.file_size} bytes): {rel}")
            return self._zip.read(rel)
        except OSError:
            raise
        except Exception as exc:  # noqa: BLE001 - a damaged member fails in many ways (zlib.error, CRC, ...)
            raise OSError(f"cannot read {rel} from wheel: {type(exc).__name__}: {exc}") from None

