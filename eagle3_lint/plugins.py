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
``setup.py``, or ``entry_points.txt``; the register calls are read from the entry-point function's
``ast`` (and the module functions it calls). A package with no entry point is scanned whole.

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
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

from eagle3_lint._compat import tomllib
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


@dataclass(frozen=True)
class Registration:
    arch: str
    module: str  # absolute module holding the class (or the name)
    class_name: str
    path: str  # display path of the register call
    line: int
    form: str  # "string" ("pkg.mod:Class") | "class" (a class object)


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
    for txt in list(root.glob("*.egg-info/entry_points.txt")) + list(root.glob("src/*.egg-info/entry_points.txt")):
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
    except (OSError, SyntaxError, UnicodeError, ValueError, RecursionError):
        return None


def _module_of(plugin: Plugin, display: str) -> str:
    for m, d in plugin.modules.items():
        if d == display:
            return m
    return ""


def _abs_import(module: str, is_pkg: bool, level: int, name: str | None) -> str:
    if level == 0:
        return name or ""
    parts = module.split(".")
    if not is_pkg:
        parts = parts[:-1]
    parts = parts[: len(parts) - (level - 1)] if level > 1 else parts
    return ".".join([*parts, name] if name else parts)


def _registrations_in(plugin: Plugin, display: str, tree: ast.Module, nodes: list[ast.AST]) -> list[Registration]:
    module = _module_of(plugin, display)
    is_pkg = display.endswith("/__init__.py")
    consts: dict[str, str] = {}
    imported_modules: dict[str, str] = {}
    imported_names: dict[str, tuple[str, str]] = {}
    for st in tree.body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) \
                and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str):
            consts[st.targets[0].id] = st.value.value
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                imported_modules[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(n, ast.ImportFrom):
            base = _abs_import(module, is_pkg, n.level, n.module)
            for a in n.names:
                # ``from pkg import models``: a module (if it is one) usable as ``models.Class``.
                imported_modules.setdefault(a.asname or a.name, f"{base}.{a.name}")
                # ``from pkg.bad import Model`` (often inside the register function): the class itself.
                imported_names.setdefault(a.asname or a.name, (base, a.name))
    out: list[Registration] = []
    for root in nodes:
        for n in ast.walk(root):
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "register_model"):
                continue
            args = list(n.args)
            for k in n.keywords:
                if k.arg in ("model_arch", "arch") and len(args) == 0:
                    args.insert(0, k.value)
                elif k.arg in ("model_cls", "cls"):
                    args.append(k.value)
            if len(args) < 2:
                continue
            a0, a1 = args[0], args[1]
            arch = a0.value if isinstance(a0, ast.Constant) and isinstance(a0.value, str) else \
                consts.get(a0.id) if isinstance(a0, ast.Name) else None
            if not arch:
                plugin.notes.append(f"{display}:{n.lineno}: register_model with an architecture name the tool cannot read")
                continue
            if isinstance(a1, ast.Constant) and isinstance(a1.value, str) and ":" in a1.value:
                mod, _, cls = a1.value.partition(":")
                out.append(Registration(arch, mod.strip(), cls.strip(), display, n.lineno, "string"))
            elif isinstance(a1, ast.Name):
                mod, cls = imported_names.get(a1.id, (module, a1.id))
                out.append(Registration(arch, mod, cls, display, n.lineno, "class"))
            elif isinstance(a1, ast.Attribute) and isinstance(a1.value, ast.Name) and a1.value.id in imported_modules:
                out.append(Registration(arch, imported_modules[a1.value.id], a1.attr, display, n.lineno, "class"))
            else:
                plugin.notes.append(f"{display}:{n.lineno}: register_model({arch!r}, ...) with a class the tool cannot follow")
    return out


def find_registrations(plugin: Plugin) -> None:
    regs: list[Registration] = []
    if plugin.entry_points:
        for ep in plugin.entry_points:
            display = plugin.modules.get(ep.module)
            if display is None:
                plugin.notes.append(f"entry point {ep.name} = {ep.value} ({ep.source}): module {ep.module} is not in the plugin")
                continue
            tree = _parse(plugin, display)
            if tree is None:
                plugin.notes.append(f"entry point {ep.name}: {display} cannot be parsed")
                continue
            fns = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
            fn = fns.get(ep.attr)
            if fn is None:
                plugin.notes.append(f"entry point {ep.name} = {ep.value}: {ep.attr}() is not defined in {display}")
                continue
            # The entry function, plus module functions it calls (one level: a common helper split).
            nodes: list[ast.AST] = [fn]
            for c in ast.walk(fn):
                if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in fns and c.func.id != fn.name:
                    nodes.append(fns[c.func.id])
            regs += _registrations_in(plugin, display, tree, nodes)
    else:
        plugin.notes.append(f"no {GROUP} entry point declared: every register_model call in the package counts")
        for display in sorted(plugin.files):
            tree = _parse(plugin, display)
            if tree is not None:
                regs += _registrations_in(plugin, display, tree, [tree])
    plugin.registrations = regs
    if not regs:
        plugin.notes.append("no ModelRegistry.register_model call found")


# -- the overlay ----------------------------------------------------------------------------------
class PluginOverlay(SourceTree):
    """The vLLM tree plus plugin files under their display prefix; read-only, nothing imported."""

    def __init__(self, base: SourceTree, plugins: list[Plugin]) -> None:
        self.base = base
        self.plugins = plugins
        self.root_label = base.root_label
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

    def path_module(self, rel: str) -> str:  # type: ignore[override]
        if rel in self._path_modules:
            return self._path_modules[rel]
        return SourceTree.path_module(rel)

    def vllm_version(self) -> str:
        return self.base.vllm_version()

    def is_plugin_path(self, rel: str) -> bool:
        return rel in self._files

    def extend_registry(self, registry: Registry) -> Registry:
        """The tree's registry plus the plugins' entries; a plugin's entry replaces a built-in one, as at runtime."""
        entries = dict(registry.entries)
        for p in self.plugins:
            for r in p.registrations:
                entries[r.arch] = _entry(r, p)
        return dataclasses.replace(registry, entries=entries, found=registry.found or bool(entries))


def _entry(r: Registration, p: Plugin) -> Entry:
    fields = {f.name for f in dataclasses.fields(Entry)}
    kw = {"path": r.path} if "path" in fields else {}
    return Entry(r.arch, r.module, r.class_name, f"{p.prefix} {p.name}", r.line, **kw)  # type: ignore[arg-type]


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


def plugin_json(source: SourceTree) -> list[dict[str, object]]:
    if not isinstance(source, PluginOverlay):
        return []
    return [{
        "name": p.name, "root": str(p.root), "prefix": p.prefix, "kind": p.source_kind,
        "files": len(p.files),
        "entry_points": [{"name": e.name, "value": e.value, "source": e.source} for e in p.entry_points],
        "registrations": [{"architecture": r.arch, "module": r.module, "class": r.class_name, "path": r.path,
                           "line": r.line, "form": r.form} for r in p.registrations],
        "notes": list(p.notes),
    } for p in source.plugins]


_PREFIX_RE = re.compile(r"^<plugin(?::[^>]*)?>/")


def is_plugin_display_path(path: str) -> bool:
    return bool(_PREFIX_RE.match(path))
