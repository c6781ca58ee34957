"""Out-of-tree model plugins: a package that registers models through vLLM's plugin entry point.

vLLM loads every ``vllm.general_plugins`` entry point at start-up and calls it; the function then
calls ``ModelRegistry.register_model("Arch", "pkg.module:Class")`` (or ``register_model("Arch",
Class)`` after an import). ``--plugin PATH_OR_DIST`` makes such a package part of the analyzed
source: its files join the vLLM tree in one read-only overlay, its register calls become registry
entries (overriding a built-in architecture of the same name, as vLLM does), and every verdict
and rule runs on them against the contract and runner of the vLLM tree being checked.

Nothing of the plugin is imported. A folder is walked; an installed distribution is found with
``importlib.metadata`` (which reads its ``*.dist-info`` files, never the package), its files from
``RECORD``, an editable install's source folder from ``direct_url.json``. Entry points come from
``pyproject.toml`` (``[project.entry-points."vllm.general_plugins"]`` or Poetry's
``[tool.poetry.plugins."vllm.general_plugins"]``), ``setup.cfg``, a literal ``entry_points=`` in
``setup.py``, or ``entry_points.txt`` (an egg-info's, an unpacked wheel's dist-info). The entry
function is walked in its ``ast``, statement by statement: helpers it calls in any module of the
package are followed (bounded depth, recursion cut, arguments bound to parameters), loops over
literal (arch, path) tables are unrolled, guards (``if``, early return, ``try``, ``suppress``, ...)
are kept and never evaluated: a guarded registration is *conditional*. A register call the walk
cannot read (a computed name, a path built at runtime, a class from a factory) is kept as
*unresolved* with its file:line; one no entry point leads to as *unreached*. A package with no
entry point is scanned whole.

Paths: plugin files appear as ``<plugin>/REL`` where ``REL`` is relative to the plugin's root
folder (``<plugin:NAME>/REL`` when several plugins are given), so findings never pretend to be in
the vLLM tree. ``--fix`` diffs carry the same prefix; apply them in the plugin root with
``git apply -p2`` (``a/<plugin>/pkg/x.py`` → ``pkg/x.py``).
"""

from __future__ import annotations

import ast
import configparser
import dataclasses
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from urllib.parse import unquote, urlparse

from eagle3_lint._compat import TRY_NODES, tomllib
from eagle3_lint.errors import UsageError
from eagle3_lint.facts import decode_source
from eagle3_lint.registry import Entry, Registry
from eagle3_lint.source import MAX_FILE_BYTES, SourceTree

GROUP = "vllm.general_plugins"
PREFIX = "<plugin>"
_SKIP_DIRS = {"__pycache__", "build", "dist", "tests", "test", "docs", "node_modules", "venv", "site-packages"}
_SKIP_FILES = {"setup.py", "conftest.py", "noxfile.py"}
_MAX_FILES = 5000


@dataclass(frozen=True)
class EntryPoint:
    name: str
    value: str  # "pkg.module:function"
    source: str  # where it was declared: "pyproject.toml", "setup.py", "entry_points.txt", ...

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    @property
    def attr(self) -> str:
        return self.value.partition(":")[2].strip().split(".")[0].split("[")[0].strip()


class Form(str, Enum):
    """How the class is named in the register call."""

    STRING = "string"  # "pkg.module:Class", imported by vLLM on first use
    CLASS = "class"  # a class object (imported by the plugin)


class GuardKind(str, Enum):
    """What makes a register call conditional; the guard itself is never evaluated."""

    IF = "if"
    ELSE = "else"
    EARLY_EXIT = "early-exit"  # after ``if ...: return``/``raise`` in the same block
    TRY = "try"  # inside a try body (or its else) with except handlers
    EXCEPT = "except"
    LOOP = "while"
    MATCH = "match"
    SUPPRESS = "suppress"  # ``with contextlib.suppress(...)``


@dataclass(frozen=True)
class Guard:
    kind: GuardKind
    text: str  # "if envs.USE_X", "try (except ImportError)", "unless if not cuda returns", ...
    path: str
    line: int

    def describe(self) -> str:
        return f"{self.text} ({self.path}:{self.line})"


@dataclass(frozen=True)
class Registration:
    arch: str
    module: str  # absolute module holding the class (or the name)
    class_name: str
    path: str  # display path of the register call
    line: int
    form: Form
    guards: tuple[Guard, ...] = ()  # innermost last, across the calls that lead here
    via: tuple[str, ...] = ()  # "module.function (path:line of the call)" from the entry point down

    @property
    def conditional(self) -> bool:
        return bool(self.guards)


@dataclass(frozen=True)
class Unresolved:
    """A register call whose architecture or class the tool cannot read statically."""

    path: str
    line: int
    reason: str
    guards: tuple[Guard, ...] = ()
    via: tuple[str, ...] = ()


@dataclass
class Plugin:
    name: str
    root: Path  # files show as <prefix>/<path relative to root>
    import_roots: list[Path]
    prefix: str = PREFIX
    files: dict[str, Path] = field(default_factory=dict)  # display path -> file
    modules: dict[str, str] = field(default_factory=dict)  # module -> display path
    entry_points: list[EntryPoint] = field(default_factory=list)
    registrations: list[Registration] = field(default_factory=list)
    unresolved: list[Unresolved] = field(default_factory=list)
    unreached: list[tuple[str, int]] = field(default_factory=list)  # register calls no entry point leads to
    overrides: dict[str, str] = field(default_factory=dict)  # arch -> what it replaces ("built-in module.Class")
    notes: list[str] = field(default_factory=list)
    source_kind: str = "folder"  # folder | distribution


# -- locating the plugin --------------------------------------------------------------------------
def locate(spec: str) -> Plugin:
    """A folder, or the name of an installed distribution (found without importing it)."""
    p = Path(spec).expanduser()
    if p.exists():
        if not p.is_dir():
            raise UsageError(f"--plugin must be a folder or an installed distribution name: {spec}")
        return _from_folder(p.resolve(), p.resolve().name)
    return _from_distribution(spec)


def _import_roots(root: Path) -> list[Path]:
    src = root / "src"
    if src.is_dir() and any((c / "__init__.py").is_file() or c.suffix == ".py" for c in src.iterdir()):
        return [src]
    return [root]


def _project_name(root: Path) -> str | None:
    try:
        data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
        name = data.get("project", {}).get("name") or data.get("tool", {}).get("poetry", {}).get("name")
        if isinstance(name, str) and name:
            return name
    except (OSError, UnicodeError, tomllib.TOMLDecodeError):
        pass
    cp = configparser.ConfigParser(interpolation=None)
    try:
        cp.read_string((root / "setup.cfg").read_text(encoding="utf-8"))
        if cp.has_option("metadata", "name"):
            return cp.get("metadata", "name")
    except (OSError, UnicodeError, configparser.Error):
        pass
    for meta in sorted(root.glob("*.dist-info/METADATA")):  # an unpacked wheel
        try:
            m = re.search(r"^Name:\s*(\S+)", meta.read_text(encoding="utf-8", errors="replace")[:10_000], re.M)
        except OSError:
            continue
        if m:
            return m.group(1)
    return None


def _from_folder(root: Path, name: str) -> Plugin:
    name = _project_name(root) or name
    plugin = Plugin(name, root, _import_roots(root))
    plugin.entry_points = _declared_entry_points(root)
    _collect_files(plugin, root)
    return plugin


def _collect_files(plugin: Plugin, root: Path, only: set[Path] | None = None) -> None:
    seen: set[tuple[int, int]] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        try:
            st = os.stat(dirpath)
        except OSError:
            dirnames[:] = []
            continue
        if (st.st_dev, st.st_ino) in seen:
            dirnames[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS
                             and not d.endswith((".dist-info", ".egg-info")))
        for fn in sorted(filenames):
            if not fn.endswith(".py") or fn in _SKIP_FILES:
                continue
            full = Path(dirpath) / fn
            if only is not None and full.resolve() not in only:
                continue
            _add_file(plugin, full)
            if len(plugin.files) > _MAX_FILES:
                plugin.notes.append(f"more than {_MAX_FILES} files: the rest are not read")
                return


def _add_file(plugin: Plugin, full: Path) -> None:
    try:
        rel_root = full.relative_to(plugin.root).as_posix()
    except ValueError:
        return
    module = None
    for ir in plugin.import_roots:
        try:
            rel = full.relative_to(ir).with_suffix("").as_posix()
        except ValueError:
            continue
        parts = rel.split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts and all(x.isidentifier() for x in parts):
            module = ".".join(parts)
        break
    if module is None:
        return
    if module == "vllm" or module.startswith("vllm."):
        plugin.notes.append(f"{rel_root} would shadow vLLM's own module {module}; it is not read")
        return
    display = f"{plugin.prefix}/{rel_root}"
    plugin.files[display] = full
    plugin.modules.setdefault(module, display)


def _from_distribution(name: str) -> Plugin:
    from importlib import metadata

    try:
        dist = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        raise UsageError(f"--plugin {name}: no such folder, and no installed distribution of that name") from None
    eps = [EntryPoint(ep.name, ep.value, "entry_points.txt") for ep in dist.entry_points if ep.group == GROUP]
    direct = dist.read_text("direct_url.json")
    if direct:
        try:
            info = json.loads(direct)
        except json.JSONDecodeError:
            info = {}
        url = info.get("url", "")
        if info.get("dir_info", {}).get("editable") and url.startswith("file://"):
            folder = Path(unquote(urlparse(url).path))
            if folder.is_dir():
                plugin = _from_folder(folder, dist.metadata["Name"] or name)
                plugin.source_kind = "distribution"
                plugin.entry_points = eps or plugin.entry_points
                plugin.notes.append(f"editable install of {folder}")
                return plugin
    base = Path(str(dist.locate_file("")))
    plugin = Plugin(dist.metadata["Name"] or name, base, [base], source_kind="distribution")
    plugin.entry_points = eps
    files = [base / str(f) for f in (dist.files or []) if str(f).endswith(".py")]
    for f in sorted(files):
        parts = Path(os.path.relpath(f, base)).parts
        if parts and (parts[0] == ".." or any(p in _SKIP_DIRS for p in parts[:-1])):
            continue
        if f.is_file():
            _add_file(plugin, f)
    if not plugin.files:
        plugin.notes.append(f"distribution {name} lists no .py files in its RECORD")
    return plugin


# -- entry points ---------------------------------------------------------------------------------
def _declared_entry_points(root: Path) -> list[EntryPoint]:
    out: list[EntryPoint] = []
    pp = root / "pyproject.toml"
    if pp.is_file():
        try:
            data = tomllib.loads(pp.read_text(encoding="utf-8"))
        except (OSError, UnicodeError, tomllib.TOMLDecodeError):
            data = {}
        for table in (data.get("project", {}).get("entry-points", {}).get(GROUP, {}),
                      data.get("tool", {}).get("poetry", {}).get("plugins", {}).get(GROUP, {})):
            if isinstance(table, dict):
                out += [EntryPoint(str(k), str(v), "pyproject.toml") for k, v in table.items()]
    cfg = root / "setup.cfg"
    if cfg.is_file():
        out += _ini_entry_points(cfg, "options.entry_points", "setup.cfg")
    setup = root / "setup.py"
    if setup.is_file():
        out += _setup_py_entry_points(setup)
    # An sdist's egg-info, or an unpacked wheel's dist-info (``--plugin`` on what ``pip download`` gave).
    for txt in [*root.glob("*.egg-info/entry_points.txt"), *root.glob("src/*.egg-info/entry_points.txt"),
                *root.glob("*.dist-info/entry_points.txt")]:
        out += _ini_entry_points(txt, GROUP, "entry_points.txt", section_is_group=True)
    seen: set[tuple[str, str]] = set()
    uniq = []
    for ep in out:
        if (ep.name, ep.value) not in seen:
            seen.add((ep.name, ep.value))
            uniq.append(ep)
    return uniq


def _ini_entry_points(path: Path, section: str, label: str, section_is_group: bool = False) -> list[EntryPoint]:
    cp = configparser.ConfigParser(interpolation=None)
    try:
        cp.read_string(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeError, configparser.Error):
        return []
    if section_is_group:
        if not cp.has_section(GROUP):
            return []
        return [EntryPoint(k, v, label) for k, v in cp.items(GROUP)]
    if not cp.has_option(section, GROUP):
        return []
    out = []
    for line in cp.get(section, GROUP).splitlines():
        if "=" in line:
            k, _, v = line.partition("=")
            out.append(EntryPoint(k.strip(), v.strip(), label))
    return out


def _setup_py_entry_points(path: Path) -> list[EntryPoint]:
    try:
        tree = ast.parse(decode_source(path.read_bytes()), filename=str(path))
    except (OSError, SyntaxError, UnicodeError, ValueError):
        return []
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.keyword) and n.arg == "entry_points":
            try:
                value = ast.literal_eval(n.value)
            except (ValueError, TypeError, SyntaxError):
                continue
            if isinstance(value, dict):
                items = value.get(GROUP, [])
                for item in [items] if isinstance(items, str) else items:
                    if isinstance(item, str) and "=" in item:
                        k, _, v = item.partition("=")
                        out.append(EntryPoint(k.strip(), v.strip(), "setup.py"))
    return out


# -- register calls -------------------------------------------------------------------------------
def _parse(plugin: Plugin, display: str) -> ast.Module | None:
    f = plugin.files.get(display)
    if f is None:
        return None
    try:
        if f.stat().st_size > MAX_FILE_BYTES:
            return None
        return ast.parse(decode_source(f.read_bytes()), filename=display)
    except (OSError, SyntaxError, UnicodeError, ValueError, RecursionError, MemoryError):
        return None


def _abs_import(module: str, is_pkg: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    parts = module.split(".")
    if not is_pkg:
        parts = parts[:-1]
    parts = parts[: len(parts) - (level - 1)] if level > 1 else parts
    return ".".join([*parts, name] if name else parts)


# The entry function is walked statement by statement, never run: calls to the package's own
# functions are followed (also into other modules, bounded and cycle-safe, arguments bound to
# parameters), loops over literal (arch, path) tables are unrolled, and every ``if``/``try``/
# early return/``while``/``match``/``suppress`` around a register call is kept as a Guard. Values
# are only literals, names bound to literals, class references and a few pure operations (``+`` on
# strings and sequences, f-strings without format specs, ``.items()``): nothing can run or blow up.
_MAX_DEPTH = 8  # helper calls followed from the entry function
_MAX_STEPS = 50_000  # statements (and comprehension items) walked from one entry point or scanned function
_MAX_TOTAL = 1_000_000  # the same, for the whole plugin
_MAX_ITEMS = 2_000  # elements of one literal table
_MAX_STR = 1_000  # characters of a computed string
_TEXT = 80  # characters of a guard's source shown in notes
_MAX_NOTES = 50  # unreached register calls listed one per note


@dataclass(frozen=True)
class _Unknown:
    why: str


@dataclass(frozen=True)
class _ClassRef:
    module: str
    name: str


@dataclass(frozen=True)
class _ModRef:
    module: str


@dataclass(frozen=True)
class _FuncRef:
    display: str
    node: ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class _ImportRef:
    module: str
    attr: str | None  # None: ``import module`` (as name)


def _short(node: ast.AST) -> str:
    try:
        text = " ".join(ast.unparse(node).split())
    except (ValueError, RecursionError):
        text = "..."
    return text if len(text) <= _TEXT else text[: _TEXT - 3] + "..."


@dataclass
class _Module:
    display: str
    name: str
    is_pkg: bool
    tree: ast.Module
    names: dict[str, object] | None = None  # module-level bindings, computed on first use


@dataclass
class _Frame:
    mod: _Module
    env: dict[str, object] = field(default_factory=dict)  # locals: parameters, loop targets, assignments
    chain: tuple[str, ...] = ()  # "module.function" from the entry point down to here
    sites: tuple[str, ...] = ()  # the same, with where each was called: "module.function (path:line)"


class _Walker:
    """Finds the register calls reachable from entry points (or, with none, anywhere in the package)."""

    def __init__(self, plugin: Plugin) -> None:
        self.plugin = plugin
        self.modules: dict[str, _Module | None] = {}
        self.found: dict[tuple[object, ...], Registration] = {}
        self.unresolved: dict[tuple[str, int, str], Unresolved] = {}
        self.steps = 0  # this walk (an entry point, or one function of a scan)
        self.total = 0
        self.exhausted = False
        self.resolving: set[tuple[str, str]] = set()
        self.by_display = {d: m for m, d in plugin.modules.items()}
        self.reached: set[tuple[str, int]] = set()  # register calls the walk got to (read or not)

    def unreached(self) -> list[tuple[str, int]]:
        """register_model(arch, cls) calls in the package that no entry point leads to."""
        out = []
        for name, display in sorted(self.plugin.modules.items()):
            try:  # most files never mention it: a byte search spares parsing them
                if name not in self.modules and b"register_model" not in self.plugin.files[display].read_bytes():
                    continue
            except OSError:
                continue
            mod = self.module(name)
            if mod is None:
                continue
            for n in ast.walk(mod.tree):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "register_model" \
                        and len(n.args) + len(n.keywords) >= 2 and (mod.display, n.lineno) not in self.reached:
                    out.append((mod.display, n.lineno))
        return out

    # -- modules and names --------------------------------------------------------------------
    def module(self, name: str) -> _Module | None:
        if name not in self.modules:
            display = self.plugin.modules.get(name)
            tree = _parse(self.plugin, display) if display else None
            if display and tree is None:
                self.plugin.notes.append(f"{display} cannot be parsed: registrations in it are not read")
            self.modules[name] = _Module(display, name, display.endswith("/__init__.py"), tree) \
                if display and tree is not None else None
        return self.modules[name]

    def names(self, mod: _Module) -> dict[str, object]:
        if mod.names is None:
            mod.names = {}  # a cycle through this module sees it empty
            frame = _Frame(mod, mod.names)
            self.bind_statements(mod.tree.body, frame)
        return mod.names

    def bind_statements(self, stmts: list[ast.stmt], frame: _Frame) -> None:
        """Module level: bindings only, in source order (later wins); alternatives keep the first binding."""
        for st in stmts:
            if isinstance(st, ast.If) or isinstance(st, TRY_NODES):  # noqa: SIM101  # TRY_NODES: per version
                # Alternatives (else, except) only bind what the first branch leaves unbound: the
                # ``try: from x import f`` / ``except ImportError: f = None`` idiom keeps ``f``.
                first = [*st.body]
                rest = [*getattr(st, "orelse", [])] + [s for h in getattr(st, "handlers", []) for s in h.body]
                self.bind_statements(first, frame)
                shadow = _Frame(frame.mod, dict(frame.env), frame.chain, frame.sites)
                self.bind_statements(rest, shadow)
                for k in self._assigned(rest) - self._assigned(first):
                    if k in shadow.env:
                        frame.env[k] = shadow.env[k]
                self.bind_statements(getattr(st, "finalbody", []), frame)
            elif isinstance(st, (ast.For, ast.AsyncFor)):
                # A table filled by a loop (``for name in NAMES: _MODELS[name] = ...``) is unrolled.
                items = self.value(st.iter, frame)
                items = tuple(items) if isinstance(items, dict) else items
                if isinstance(items, tuple):
                    for item in items:
                        if not self._step():
                            break
                        self.assign(st.target, item, frame)
                        self.bind_statements(st.body, frame)
                else:
                    self._forget([st], frame, f"a loop over {_short(st.iter)}")
            elif isinstance(st, (ast.With, ast.AsyncWith)):
                self.bind_statements(st.body, frame)
            elif isinstance(st, (ast.While, ast.Match)):
                self._forget([st], frame, "a while loop" if isinstance(st, ast.While) else "a match statement")
            else:
                self.bind(st, frame)

    def _forget(self, stmts: list[ast.stmt], frame: _Frame, where: str) -> None:
        """Names set or changed in code the binding pass does not model become unknown, never stale."""
        touched = self._assigned(stmts)
        for st in stmts:
            for n in ast.walk(st):
                if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name):
                    touched.add(n.value.id)
                elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                        and isinstance(n.func.value, ast.Name):
                    touched.add(n.func.value.id)  # X.append(...), X.update(...)
        for k in touched & set(frame.env):
            frame.env[k] = _Unknown(f"{k} is changed in {where}")
        for k in self._assigned(stmts) - set(frame.env):
            frame.env[k] = _Unknown(f"{k} is set in {where}")

    @staticmethod
    def _assigned(stmts: list[ast.stmt]) -> set[str]:
        out: set[str] = set()
        for st in stmts:
            for n in ast.walk(st):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    out.add(n.id)
                elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    out.add(n.name)
                elif isinstance(n, (ast.Import, ast.ImportFrom)):
                    out.update((a.asname or a.name.split(".")[0]) for a in n.names)
        return out

    def bind(self, st: ast.stmt, frame: _Frame) -> None:
        """The effect of one statement on the names of ``frame`` (no call is followed here)."""
        mod, env = frame.mod, frame.env
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            env[st.name] = _FuncRef(mod.display, st)
        elif isinstance(st, ast.ClassDef):
            env[st.name] = _ClassRef(mod.name, st.name) if not frame.chain else \
                _Unknown(f"class {st.name} is defined inside a function")
        elif isinstance(st, ast.Import):
            for a in st.names:
                env[a.asname or a.name.split(".")[0]] = _ModRef(a.name if a.asname else a.name.split(".")[0])
        elif isinstance(st, ast.ImportFrom):
            base = _abs_import(mod.name, mod.is_pkg, st.level, st.module)
            for a in st.names:
                if a.name != "*":
                    env[a.asname or a.name] = _ImportRef(base, a.name)
        elif isinstance(st, (ast.Assign, ast.AnnAssign)):
            if st.value is None:
                return
            value = self.value(st.value, frame)
            for t in st.targets if isinstance(st, ast.Assign) else [st.target]:
                self.assign(t, value, frame)
        elif isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name) and isinstance(st.op, ast.Add):
            env[st.target.id] = self._add(self.lookup(st.target.id, frame), self.value(st.value, frame))
        elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Attribute) \
                and isinstance(st.value.func.value, ast.Name) and st.value.func.value.id in env:
            # _MODELS.append(...) / .extend(...) / .update(...): a new value, never an in-place change.
            name, meth, c = st.value.func.value.id, st.value.func.attr, st.value
            cur = env[name]
            args = [self.value(a, frame) for a in c.args]
            if meth == "append" and isinstance(cur, tuple) and len(args) == 1:
                env[name] = (*cur, args[0])
            elif meth == "extend" and isinstance(cur, tuple) and len(args) == 1:
                env[name] = self._add(cur, args[0])
            elif meth == "update" and isinstance(cur, dict) and len(args) == 1 and isinstance(args[0], dict):
                env[name] = {**cur, **args[0]}
            elif meth in ("append", "extend", "update", "insert", "setdefault") and isinstance(cur, (tuple, dict)):
                env[name] = _Unknown(f"{name} is changed by {_short(c)}")

    def assign(self, target: ast.expr, value: object, frame: _Frame) -> None:
        env = frame.env
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            elts = value if isinstance(value, tuple) and len(value) == len(target.elts) else None
            unknown = value if isinstance(value, _Unknown) else _Unknown(f"unpacking {_short(target)}")
            for i, t in enumerate(target.elts):
                self.assign(t, elts[i] if elts is not None else unknown, frame)
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id in env:
            cur, key = env[target.value.id], self.value(target.slice, frame)
            env[target.value.id] = {**cur, key: value} if isinstance(cur, dict) and isinstance(key, str) else \
                _Unknown(f"{target.value.id}[...] is assigned a key the tool cannot read")

    def lookup(self, name: str, frame: _Frame) -> object:
        if name in frame.env:
            return self.resolve(frame.env[name])
        names = self.names(frame.mod)  # a function's globals (or the rest of its module's top level)
        if name in names:
            return self.resolve(names[name])
        if name == "__name__":  # the module's own name, as the package is laid out
            return frame.mod.name
        if name == "__package__":
            return frame.mod.name if frame.mod.is_pkg else frame.mod.name.rpartition(".")[0]
        return _Unknown(f"{name} is not defined in {frame.mod.display}")

    def resolve(self, v: object, depth: int = 0) -> object:
        if not isinstance(v, _ImportRef):
            return v
        if v.attr is None:
            return _ModRef(v.module)
        full = f"{v.module}.{v.attr}"
        if full in self.plugin.modules:
            return _ModRef(full)
        if v.module not in self.plugin.modules:
            return _ClassRef(v.module, v.attr)  # outside the package (vLLM, torch, ...): a class reference by name
        mod = self.module(v.module)
        if mod is None:
            return _Unknown(f"{full} is in a file that cannot be parsed")
        if (v.module, v.attr) in self.resolving or depth > 10:
            return _Unknown(f"{full} is imported in a cycle")
        self.resolving.add((v.module, v.attr))
        try:
            names = self.names(mod)
            if v.attr not in names:
                return _Unknown(f"{full} is not defined in {mod.display}")
            return self.resolve(names[v.attr], depth + 1)
        finally:
            self.resolving.discard((v.module, v.attr))

    def attribute(self, base: object, attr: str) -> object:
        if isinstance(base, _ModRef):
            full = f"{base.module}.{attr}"
            if full in self.plugin.modules:
                return _ModRef(full)
            if base.module in self.plugin.modules:
                return self.resolve(_ImportRef(base.module, attr))
            return _ModRef(full) if attr[:1].islower() else _ClassRef(base.module, attr)
        if isinstance(base, _ClassRef):
            return _Unknown(f"attribute {attr} of class {base.name}")
        return _Unknown(f".{attr} of a value the tool cannot read")

    # -- values -------------------------------------------------------------------------------
    def value(self, node: ast.expr, frame: _Frame) -> object:
        try:
            return self._value(node, frame, 0)
        except RecursionError:
            return _Unknown("expression too deep")

    def _value(self, node: ast.expr, frame: _Frame, depth: int) -> object:
        if depth > 50:
            return _Unknown("expression too deep")
        v = lambda n: self._value(n, frame, depth + 1)  # noqa: E731
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, (str, int, float, bool, type(None))) else _Unknown("a constant")
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            if len(node.elts) > _MAX_ITEMS:
                return _Unknown(f"a table of more than {_MAX_ITEMS} items")
            out: list[object] = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    inner = v(e.value)
                    if not isinstance(inner, tuple):
                        return _Unknown(f"*{_short(e.value)}")
                    out.extend(inner)
                else:
                    out.append(v(e))
            return tuple(out)
        if isinstance(node, ast.Dict):
            if len(node.keys) > _MAX_ITEMS:
                return _Unknown(f"a table of more than {_MAX_ITEMS} items")
            d: dict[object, object] = {}
            for k, val in zip(node.keys, node.values, strict=True):
                if k is None:
                    inner = v(val)
                    if not isinstance(inner, dict):
                        return _Unknown(f"**{_short(val)}")
                    d.update(inner)
                    continue
                key = v(k)
                if not isinstance(key, (str, int)):
                    return _Unknown(f"a dict key {_short(k)} the tool cannot read")
                d[key] = v(val)
            return d
        if isinstance(node, ast.Name):
            return self.lookup(node.id, frame)
        if isinstance(node, ast.Attribute):
            return self.attribute(v(node.value), node.attr)
        if isinstance(node, ast.JoinedStr):
            parts = []
            for p in node.values:
                if isinstance(p, ast.Constant) and isinstance(p.value, str):
                    parts.append(p.value)
                    continue
                if not isinstance(p, ast.FormattedValue) or p.format_spec is not None or p.conversion not in (-1, 115):
                    return _Unknown(f"the string {_short(node)}")
                inner = v(p.value)
                if not isinstance(inner, str):
                    return _Unknown(f"the string {_short(node)} is built at runtime")
                parts.append(inner)
            s = "".join(parts)
            return s if len(s) <= _MAX_STR else _Unknown("a string too long")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self._add(v(node.left), v(node.right))
        if isinstance(node, ast.Subscript):
            base, key = v(node.value), v(node.slice)
            if isinstance(base, tuple) and isinstance(key, int) and -len(base) <= key < len(base):
                return base[key]
            if isinstance(base, dict) and isinstance(key, (str, int)) and key in base:
                return base[key]
            return _Unknown(f"{_short(node)} the tool cannot read")
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in ("items", "keys", "values") and not node.args:
                base = v(f.value)
                if isinstance(base, _Unknown):
                    return base
                if isinstance(base, dict):
                    return tuple(base.items()) if f.attr == "items" else tuple(base) if f.attr == "keys" \
                        else tuple(base.values())
            if isinstance(f, ast.Name) and f.id in ("list", "tuple", "sorted", "set", "dict") and len(node.args) == 1 \
                    and not node.keywords and f.id not in frame.env:
                inner = v(node.args[0])
                if isinstance(inner, dict) and f.id != "dict":
                    inner = tuple(inner)
                if f.id == "sorted" and isinstance(inner, tuple):
                    try:
                        return tuple(sorted(inner))
                    except TypeError:
                        return _Unknown(f"{_short(node)}")
                if isinstance(inner, (tuple, dict)):
                    return dict(inner) if f.id == "dict" and isinstance(inner, dict) else inner
            return _Unknown(f"the result of {_short(node)}")
        return _Unknown(f"{_short(node)}")

    @staticmethod
    def _add(a: object, b: object) -> object:
        for x in (a, b):
            if isinstance(x, _Unknown):
                return x
        if isinstance(a, str) and isinstance(b, str):
            return a + b if len(a) + len(b) <= _MAX_STR else _Unknown("a string too long")
        if isinstance(a, tuple) and isinstance(b, tuple):
            return a + b if len(a) + len(b) <= _MAX_ITEMS else _Unknown(f"a table of more than {_MAX_ITEMS} items")
        return _Unknown("a sum the tool cannot read")

    # -- walking ------------------------------------------------------------------------------
    def entry(self, ep: EntryPoint) -> None:
        mod = self.module(ep.module)
        if mod is None:
            display = self.plugin.modules.get(ep.module)
            self.plugin.notes.append(f"entry point {ep.name} = {ep.value} ({ep.source}): " + (
                f"{display} cannot be parsed" if display else f"module {ep.module} is not in the plugin"))
            return
        # Loading the entry point imports its module: module-level code runs before the function.
        self.block(mod.tree.body, _Frame(mod, {}, ()), (), 0, module_level=True)
        target = self.resolve(self.names(mod).get(ep.attr, _Unknown("")))
        if not isinstance(target, _FuncRef):
            self.plugin.notes.append(f"entry point {ep.name} = {ep.value}: {ep.attr}() is not a function defined "
                                     f"in the plugin ({mod.display})")
            return
        self.call_function(target, [], {}, _Frame(mod, {}, ()), (), 0, f"entry point {ep.name}")

    def scan(self) -> None:
        """No entry point: every module's top level and every function in the package."""
        for name in sorted(self.plugin.modules):
            mod = self.module(name)
            if mod is None:
                continue

            def walk_module(mod: _Module = mod) -> None:
                self.block(mod.tree.body, _Frame(mod, {}, ()), (), 0, module_level=True)

            self.root(walk_module, mod.display)
            for n in ast.walk(mod.tree):
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):

                    def walk_function(n: ast.FunctionDef | ast.AsyncFunctionDef = n, mod: _Module = mod) -> None:
                        self.call_function(_FuncRef(mod.display, n), None, {}, _Frame(mod, {}, ()), (), 0, "scan")

                    self.root(walk_function, mod.display)
            if self.total > _MAX_TOTAL:
                return

    def _module_at(self, display: str) -> _Module | None:
        name = self.by_display.get(display)
        return self.module(name) if name is not None else None

    def _qual(self, fn: _FuncRef) -> str:
        mod = self._module_at(fn.display)
        return f"{mod.name}.{fn.node.name}" if mod is not None and mod.name else fn.node.name

    def call_function(self, fn: _FuncRef, args: list[object] | None, kwargs: dict[str, object], caller: _Frame,
                      guards: tuple[Guard, ...], depth: int, site: str) -> None:
        mod = self._module_at(fn.display)
        if mod is None:
            return
        qual = self._qual(fn)
        if qual in caller.chain:
            return  # recursion: its register calls are found on the first visit
        frame = _Frame(mod, {}, (*caller.chain, qual), (*caller.sites, f"{qual} ({site})"))
        a = fn.node.args
        params = [*a.posonlyargs, *a.args]
        defaults = dict(zip([p.arg for p in params[len(params) - len(a.defaults):]], a.defaults, strict=True))
        defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None})
        for i, p in enumerate([*params, *a.kwonlyargs]):
            if args is None:
                frame.env[p.arg] = _Unknown(f"parameter {p.arg} of {fn.node.name}()")
            elif i < len(params) and i < len(args):
                frame.env[p.arg] = args[i]
            elif p.arg in kwargs:
                frame.env[p.arg] = kwargs[p.arg]
            elif p.arg in defaults:
                frame.env[p.arg] = self.value(defaults[p.arg], _Frame(mod, {}, ()))
            else:
                frame.env[p.arg] = _Unknown(f"parameter {p.arg} of {fn.node.name}()")
        for extra in (a.vararg, a.kwarg):
            if extra is not None:
                frame.env[extra.arg] = _Unknown(f"parameter {extra.arg} of {fn.node.name}()")
        self.block(fn.node.body, frame, guards, depth)

    def block(self, stmts: list[ast.stmt], frame: _Frame, guards: tuple[Guard, ...], depth: int,
              module_level: bool = False) -> bool:
        """Walks ``stmts`` in order; True when the block always ends in return/raise."""
        path = frame.mod.display
        for st in stmts:
            if not self._step():
                return True
            if isinstance(st, ast.If):
                test = _short(st.test)
                g_if = Guard(GuardKind.IF, f"if {test}", path, st.lineno)
                g_else = Guard(GuardKind.ELSE, f"else of if {test}", path, st.lineno)
                self.exprs(st.test, frame, guards, depth)
                t_body = self.block(st.body, frame, (*guards, g_if), depth, module_level)
                t_else = self.block(st.orelse, frame, (*guards, g_else), depth, module_level)
                if t_body and t_else:
                    return True
                if t_body or t_else:
                    # An early return/raise: everything after runs only when the other branch is taken.
                    exit_ = "returns" if isinstance((st.body if t_body else st.orelse)[-1], ast.Return) else "raises"
                    guards = (*guards, Guard(GuardKind.EARLY_EXIT, f"unless {'if' if t_body else 'else of if'} "
                                                                    f"{test} {exit_}", path, st.lineno))
            elif isinstance(st, ast.Try) or type(st).__name__ == "TryStar":
                t: ast.Try = st  # type: ignore[assignment]  # TryStar (3.11+) has the same fields
                caught = ", ".join(_short(h.type) if h.type is not None else "everything" for h in t.handlers)
                g_try = Guard(GuardKind.TRY, f"try (except {caught})" if caught else "try", path, t.lineno)
                in_try = (*guards, g_try) if caught else guards
                self.block(t.body, frame, in_try, depth, module_level)
                for h in t.handlers:
                    g = Guard(GuardKind.EXCEPT, f"except {_short(h.type) if h.type is not None else ''}".rstrip(),
                              path, h.lineno)
                    self.block(h.body, frame, (*guards, g), depth, module_level)
                self.block(t.orelse, frame, in_try, depth, module_level)
                if self.block(t.finalbody, frame, guards, depth, module_level):
                    return True
            elif isinstance(st, (ast.For, ast.AsyncFor)):
                self.exprs(st.iter, frame, guards, depth)
                items = self.value(st.iter, frame)
                if isinstance(items, dict):
                    items = tuple(items)
                if isinstance(items, tuple):
                    for item in items:
                        self.assign(st.target, item, frame)
                        self.block(st.body, frame, guards, depth, module_level)
                else:
                    why = items.why if isinstance(items, _Unknown) else _short(st.iter)
                    self.assign(st.target, _Unknown(f"a loop over {_short(st.iter)} ({why})"), frame)
                    self.block(st.body, frame, guards, depth, module_level)
                self.block(st.orelse, frame, guards, depth, module_level)
            elif isinstance(st, ast.While):
                self.exprs(st.test, frame, guards, depth)
                g = Guard(GuardKind.LOOP, f"while {_short(st.test)}", path, st.lineno)
                self.block(st.body, frame, (*guards, g), depth, module_level)
                self.block(st.orelse, frame, guards, depth, module_level)
            elif isinstance(st, (ast.With, ast.AsyncWith)):
                inner = guards
                for item in st.items:
                    self.exprs(item.context_expr, frame, guards, depth)
                    c = item.context_expr
                    name = c.func.attr if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) else \
                        c.func.id if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) else ""
                    if name == "suppress":
                        inner = (*inner, Guard(GuardKind.SUPPRESS, f"with {_short(c)}", path, st.lineno))
                if self.block(st.body, frame, inner, depth, module_level):
                    return True
            elif isinstance(st, ast.Match):
                self.exprs(st.subject, frame, guards, depth)
                for case in st.cases:
                    g = Guard(GuardKind.MATCH, f"match {_short(st.subject)} case {_short(case.pattern)}", path,
                              case.pattern.lineno)
                    self.block(case.body, frame, (*guards, g), depth, module_level)
            elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for d in st.decorator_list:
                    self.exprs(d, frame, guards, depth)
                self.bind(st, frame)
            else:
                self.exprs(st, frame, guards, depth)
                self.bind(st, frame)
                if isinstance(st, (ast.Return, ast.Raise)):
                    return True
        return False

    def _step(self) -> bool:
        """Counts one unit of work; False once a budget is spent (noted once)."""
        self.steps += 1
        self.total += 1
        if self.steps <= _MAX_STEPS and self.total <= _MAX_TOTAL:
            return True
        if not self.exhausted:
            self.exhausted = True
            self.plugin.notes.append(f"more than {_MAX_STEPS if self.steps > _MAX_STEPS else _MAX_TOTAL} statements "
                                     "walked: the rest of this walk is not read")
        return False

    def root(self, walk: Callable[[], None], what: str) -> None:
        """One walk from a root (an entry point; a scanned module or function) with its own budget."""
        self.steps, self.exhausted = 0, False
        try:
            walk()
        except RecursionError:
            self.plugin.notes.append(f"{what}: code nested too deeply to read; the rest of this walk is not read")

    def exprs(self, node: ast.AST, frame: _Frame, guards: tuple[Guard, ...], depth: int) -> None:
        """Every call in ``node`` (arguments first), comprehensions unrolled like loops; lambdas skipped."""
        if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)) and len(node.generators) == 1:
            gen = node.generators[0]
            self.exprs(gen.iter, frame, guards, depth)
            items = self.value(gen.iter, frame)
            items = tuple(items) if isinstance(items, dict) else items
            inner = _Frame(frame.mod, dict(frame.env), frame.chain, frame.sites)
            g = (*guards, *(Guard(GuardKind.IF, f"if {_short(c)}", frame.mod.display, c.lineno) for c in gen.ifs))
            elts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            for item in items if isinstance(items, tuple) else (_Unknown(f"a loop over {_short(gen.iter)}"),):
                if not self._step():
                    return
                self.assign(gen.target, item, inner)
                for e in elts:
                    self.exprs(e, inner, g, depth)
            return
        path = frame.mod.display
        if isinstance(node, ast.IfExp):  # reg() if cond else other()
            self.exprs(node.test, frame, guards, depth)
            self.exprs(node.body, frame, (*guards, Guard(GuardKind.IF, f"if {_short(node.test)}", path, node.lineno)),
                       depth)
            self.exprs(node.orelse, frame, (*guards, Guard(GuardKind.ELSE, f"else of if {_short(node.test)}", path,
                                                           node.lineno)), depth)
            return
        if isinstance(node, ast.BoolOp):  # cond and reg(): every operand after the first may not run
            self.exprs(node.values[0], frame, guards, depth)
            for i, v in enumerate(node.values[1:], 1):
                op = "and" if isinstance(node.op, ast.And) else "or"
                after = Guard(GuardKind.IF, f"{op}: after {_short(ast.BoolOp(node.op, node.values[:i]))}", path,
                              v.lineno)
                self.exprs(v, frame, (*guards, after), depth)
            return
        for child in ast.iter_child_nodes(node):
            self.exprs(child, frame, guards, depth)
        if isinstance(node, ast.Call):
            self.call(node, frame, guards, depth)

    def call(self, c: ast.Call, frame: _Frame, guards: tuple[Guard, ...], depth: int) -> None:
        target = self.value(c.func, frame)
        if isinstance(target, _FuncRef):
            if self._qual(target) in frame.chain:
                return  # recursion: its register calls are found on the first visit
            if depth >= _MAX_DEPTH:
                self.plugin.notes.append(f"{frame.mod.display}:{c.lineno}: {_short(c.func)}() is deeper than "
                                         f"{_MAX_DEPTH} calls from the entry point: not followed")
                return
            args: list[object] = []
            known = True  # False: a *args whose value is not a tuple, the positional arguments are unknown
            for a in c.args:
                if isinstance(a, ast.Starred):
                    inner = self.value(a.value, frame)
                    if not isinstance(inner, tuple):
                        known = False
                        break
                    args.extend(inner)
                else:
                    args.append(self.value(a, frame))
            kwargs = {k.arg: self.value(k.value, frame) for k in c.keywords if k.arg}
            self.call_function(target, args if known else None, kwargs, frame, guards, depth + 1,
                               f"{frame.mod.display}:{c.lineno}")
        elif isinstance(c.func, ast.Attribute) and c.func.attr == "register_model":
            self.register(c, frame, guards)

    def register(self, c: ast.Call, frame: _Frame, guards: tuple[Guard, ...]) -> None:
        path, line = frame.mod.display, c.lineno
        self.reached.add((path, line))
        args: list[tuple[object, ast.expr]] = []
        for a in c.args:
            if isinstance(a, ast.Starred):
                inner = self.value(a.value, frame)
                if not isinstance(inner, tuple):
                    self._unresolved(path, line, f"register_model(*{_short(a.value)}): arguments built at runtime",
                                     guards, frame)
                    return
                args.extend((x, a) for x in inner)
            else:
                args.append((self.value(a, frame), a))
        kw = {k.arg: (self.value(k.value, frame), k.value) for k in c.keywords if k.arg}
        arch_v = args[0] if args else kw.get("model_arch") or kw.get("arch")
        cls_v = args[1] if len(args) > 1 else kw.get("model_cls") or kw.get("cls")
        if arch_v is None or cls_v is None:
            return  # not vLLM's register_model(arch, cls) (another class's method of that name)
        (arch, arch_node), (cls, cls_node) = arch_v, cls_v
        if not isinstance(arch, str) or not arch:
            why = f" ({arch.why})" if isinstance(arch, _Unknown) and arch.why else ""
            self._unresolved(path, line, f"register_model({_short(arch_node)}, ...): an architecture name computed "
                                         f"at runtime{why}", guards, frame)
            return
        if isinstance(cls, str):
            mod_name, _, cls_name = cls.partition(":")
            # vLLM's own check: exactly one ":" (register_model raises ValueError otherwise).
            if cls.count(":") != 1 or not mod_name.strip() or not cls_name.strip():
                self._unresolved(path, line, f"register_model({arch!r}, {cls!r}): not a 'module:Class' path",
                                 guards, frame)
                return
            reg = Registration(arch, mod_name.strip(), cls_name.strip(), path, line, Form.STRING, guards, frame.sites)
        elif isinstance(cls, _ClassRef):
            reg = Registration(arch, cls.module, cls.name, path, line, Form.CLASS, guards, frame.sites)
        else:
            what = "a path built at runtime" if isinstance(cls_node, (ast.JoinedStr, ast.BinOp)) else \
                "a class object the tool cannot follow"
            why = f" ({cls.why})" if isinstance(cls, _Unknown) and cls.why else ""
            self._unresolved(path, line, f"register_model({arch!r}, {_short(cls_node)}): {what}{why}", guards, frame)
            return
        self.found.setdefault((reg.arch, reg.module, reg.class_name, reg.path, reg.line, reg.guards), reg)

    def _unresolved(self, path: str, line: int, why: str, guards: tuple[Guard, ...], frame: _Frame) -> None:
        self.unresolved.setdefault((path, line, why), Unresolved(path, line, why, guards, frame.sites))


def find_registrations(plugin: Plugin) -> None:
    w = _Walker(plugin)
    if plugin.entry_points:
        for ep in plugin.entry_points:
            w.root(lambda ep=ep: w.entry(ep), f"entry point {ep.name}")  # type: ignore[misc]  # the default binds ep
        # Dead code, or reached in a way the walk does not follow (a method, a callback, the model
        # runner): named so it is not silently dropped, but not counted, as vLLM does not run it at start-up.
        plugin.unreached = w.unreached()
        for path, line in plugin.unreached[:_MAX_NOTES]:
            plugin.notes.append(f"{path}:{line}: register_model call not reached from any {GROUP} entry point: "
                                "not counted")
        if len(plugin.unreached) > _MAX_NOTES:
            plugin.notes.append(f"... and {len(plugin.unreached) - _MAX_NOTES} more register_model calls not reached")
    else:
        plugin.notes.append(f"no {GROUP} entry point declared: every register_model call in the package counts")
        w.scan()
    # One call site reached along several paths: unconditional if any path reaches it unguarded.
    sites: dict[tuple[str, str, str, str, int], Registration] = {}
    for r in w.found.values():
        key = (r.arch, r.module, r.class_name, r.path, r.line)
        if key not in sites or len(r.guards) < len(sites[key].guards):
            sites[key] = r  # an existing key keeps its place (walk order decides which class wins)
    plugin.registrations = list(sites.values())
    # A call site read in one context and not in another (a helper called with literals and with a
    # parameter) counts as read.
    done = {(r.path, r.line) for r in plugin.registrations}
    plugin.unresolved = [u for u in w.unresolved.values() if (u.path, u.line) not in done]
    for u in plugin.unresolved:
        plugin.notes.append(f"{u.path}:{u.line}: not resolved: {u.reason}"
                            + (f" [conditional: {'; '.join(g.text for g in u.guards)}]" if u.guards else ""))
    by_arch: dict[str, list[Registration]] = {}
    for r in plugin.registrations:
        by_arch.setdefault(r.arch, []).append(r)
    for arch, regs in by_arch.items():
        if len({(r.module, r.class_name) for r in regs}) > 1:
            alts = ", ".join(f"{r.module}:{r.class_name} ({r.path}:{r.line}{', conditional' if r.conditional else ''})"
                             for r in regs)
            plugin.notes.append(f"{arch} is registered to {len(regs)} classes: {alts}; the verdict judges the last "
                                f"in source order (which one runs depends on guards the tool does not evaluate)")
    if not plugin.registrations:
        plugin.notes.append("no ModelRegistry.register_model call found")


# -- the overlay ----------------------------------------------------------------------------------
class PluginOverlay(SourceTree):
    """The vLLM tree plus plugin files under their display prefix; read-only, nothing imported."""

    def __init__(self, base: SourceTree, plugins: list[Plugin]) -> None:
        self.base = base
        self.plugins = plugins
        self.root_label = base.root_label
        self.package = base.package
        root = getattr(base, "root", None)
        if root is not None:
            self.root = root  # the guard protects the vLLM part by this attribute
        self._files: dict[str, Path] = {}
        self._modules: dict[str, str] = {}
        self._path_modules: dict[str, str] = {}
        for p in plugins:
            self._files.update(p.files)
            for m, d in p.modules.items():
                self._modules.setdefault(m, d)
                self._path_modules[d] = m

    @property
    def writable_root(self) -> Path | None:
        return self.base.writable_root

    def py_files(self) -> list[str]:
        return [*self.base.py_files(), *sorted(self._files)]

    def other_files(self) -> list[str]:
        return self.base.other_files()

    def read_bytes(self, rel: str) -> bytes:
        f = self._files.get(rel)
        if f is None:
            return self.base.read_bytes(rel)
        st = os.stat(f)
        if st.st_size > MAX_FILE_BYTES:
            raise OSError(f"file too large to analyze ({st.st_size} bytes): {rel}")
        with open(f, "rb") as fh:
            return fh.read()

    def exists(self, rel: str) -> bool:
        return rel in self._files or self.base.exists(rel)

    def module_path(self, module: str) -> str | None:
        if module in self._modules:
            return self._modules[module]
        return self.base.module_path(module)

    def path_module(self, rel: str) -> str:  # type: ignore[override]  # per instance: plugins add modules
        if rel in self._path_modules:
            return self._path_modules[rel]
        return SourceTree.path_module(rel)

    def plugins_json(self) -> list[dict[str, object]]:
        return plugin_json(self)

    def extend_registry(self, registry: Registry) -> Registry:
        """The tree's registry plus the plugins' entries; a plugin's entry replaces a built-in one, as at runtime."""
        entries = dict(registry.entries)
        for p in self.plugins:
            p.overrides = {}
            for r in p.registrations:
                old = entries.get(r.arch)
                if old is not None and r.arch not in p.overrides and old.source_dict != f"{p.prefix} {p.name}":
                    # vLLM logs "already registered, and will be overwritten" and uses the plugin's class.
                    owner = "built-in" if not old.path else f"plugin {old.source_dict.split(' ', 1)[-1]}'s"
                    p.overrides[r.arch] = f"{owner} {old.module}.{old.class_name}"
                entries[r.arch] = _entry(r, p)
        return dataclasses.replace(registry, entries=entries, found=registry.found or bool(entries))


def _entry(r: Registration, p: Plugin) -> Entry:
    notes = [f"registered by plugin {p.name}"]
    if r.guards:
        notes.append("conditional: " + "; ".join(g.describe() for g in r.guards))
    if r.arch in p.overrides:
        notes.append(f"overrides {p.overrides[r.arch]}")
    return Entry(r.arch, r.module, r.class_name, f"{p.prefix} {p.name}", r.line, path=r.path, note="; ".join(notes))


def overlay(base: SourceTree, specs: list[str]) -> PluginOverlay:
    plugins = [locate(s) for s in specs]
    if len(plugins) > 1:
        # Several plugins: each gets its own prefix so equal relative paths cannot collide.
        for p in plugins:
            p.prefix = f"<plugin:{p.name}>"
            files = list(p.files.values())
            p.files, p.modules = {}, {}
            for full in files:
                _add_file(p, full)
    for p in plugins:
        find_registrations(p)
    return PluginOverlay(base, plugins)


def _guards_json(guards: tuple[Guard, ...]) -> list[dict[str, object]]:
    return [{"kind": g.kind.value, "text": g.text, "path": g.path, "line": g.line} for g in guards]


def plugin_json(source: SourceTree) -> list[dict[str, object]]:
    if not isinstance(source, PluginOverlay):
        return []
    return [{
        "name": p.name, "root": str(p.root), "prefix": p.prefix, "kind": p.source_kind,
        "files": len(p.files),
        "entry_points": [{"name": e.name, "value": e.value, "source": e.source} for e in p.entry_points],
        "registrations": [{"architecture": r.arch, "module": r.module, "class": r.class_name, "path": r.path,
                           "line": r.line, "form": r.form.value, "conditional": r.conditional,
                           "conditions": _guards_json(r.guards), "overrides": p.overrides.get(r.arch),
                           "via": list(r.via)} for r in p.registrations],
        "unresolved": [{"path": u.path, "line": u.line, "reason": u.reason, "conditional": bool(u.guards),
                        "conditions": _guards_json(u.guards), "via": list(u.via)} for u in p.unresolved],
        "unreached": [{"path": path, "line": line} for path, line in p.unreached],
        "notes": list(p.notes),
    } for p in source.plugins]


_PREFIX_RE = re.compile(r"^<plugin(?::[^>]*)?>/")


def is_plugin_display_path(path: str) -> bool:
    return bool(_PREFIX_RE.match(path))
