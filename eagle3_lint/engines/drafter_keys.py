"""Which drafter config keys a release's drafter code reads, found from the code (EGL011's facts).

A drafter ``config.json`` becomes the drafter's HF config object; the drafter class, its decoder layers and the
format converter read keys off it. Those reads are found statically in the syntax tree, never from a list of
key names: ``config.norm_before_fc``, ``getattr(config, "norm_before_fc", False)``, ``hasattr(config, "k")``,
``config.get("k")``, ``config["k"]`` and ``"k" in config``, on an expression that is the config object. A
local bound to a key's value is a nested object (``eagle_config = getattr(self.config, "eagle_config", None)
or {}`` makes ``eagle_config.get("norm_before_fc")`` a read of ``eagle_config.norm_before_fc``).

What is "the config object" is the one convention this module assumes: drafter code of both engines names it
``config``, ``self.config`` or ``<...>.hf_config`` (the HF config), and the speculators converters
``config_dict``. An attribute that is called (``config.get_text_config()``, ``config.to_dict()``) is a method,
not a key; an attribute that is assigned (``self.config.draft_vocab_size = ...``) is a write.

Which *other* releases read a key is data (``data/drafter_keys.json``, one section per engine with its reason),
written by ``scripts/drafter_keys.py`` with this module's own reader from the releases in the cache: a key is
worth flagging only when some examined release's drafter module reads it, another examined release's same module
does not (its reading began, or stopped, within the examined releases), and the checked release does not. So
generic HF keys every release reads (``hidden_size``) never are, nor keys no release's drafter code reads.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle3_lint.drafter import IgnoredKey
from eagle3_lint.semantic import Where

if TYPE_CHECKING:
    from eagle3_lint.stages import Model

# The names drafter code gives the config object (see the module docstring).
_CONFIG_NAMES = frozenset({"config", "hf_config", "config_dict"})
_CONFIG_ATTRS = frozenset({"config", "hf_config"})
MAX_DEPTH = 2  # top-level keys and the keys of a nested dict (eagle_config.norm_before_fc)

Reads = dict[str, int]  # dotted key -> first line that reads it


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}


NO_DEFAULT: Any = object()


def _default(node: ast.AST) -> Any:
    """The constant a read falls back to when the key is missing (``getattr(c, "k", False)``, ``c.get("k", 0)``),
    else ``NO_DEFAULT`` (an attribute or subscript read, ``hasattr``, a computed default)."""
    if isinstance(node, ast.Call):
        fn = node.func
        i = 2 if isinstance(fn, ast.Name) and fn.id == "getattr" else 1 if isinstance(fn, ast.Attribute) else -1
        arg = node.args[i] if 0 < i < len(node.args) else None
        if isinstance(arg, ast.Constant):
            return arg.value
        if isinstance(arg, ast.Call):
            # eagle_config.get("norm_before_fc", getattr(config, "norm_before_fc", False)): the inner read's default
            return _default(arg)
        if isinstance(fn, ast.Attribute) and fn.attr == "get" and len(node.args) == 1:
            return None  # dict.get's own default
    return NO_DEFAULT


def _text(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


class _Reader:
    """The key reads of one module, with aliases per function (a local bound to the config or a nested value)."""

    def __init__(self, tree: ast.Module) -> None:
        self.parent = _parents(tree)
        self.reads: Reads = {}
        self.defaults: dict[str, Any] = {}  # key -> the constant its first read falls back to
        scopes: list[ast.AST] = [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef,
                                                                                    ast.AsyncFunctionDef)))]
        for scope in scopes:
            aliases: dict[str, tuple[str, ...]] = {}
            body = list(self._own_nodes(scope))
            # Two passes: an alias may be bound after the line the walk meets first (ast.walk is breadth-first).
            for _ in range(2):
                for n in body:
                    if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
                        p = self.path(n.value, aliases)
                        if p is not None and len(p) < MAX_DEPTH:
                            aliases[n.targets[0].id] = p
            for n in body:
                k = self.read(n, aliases)
                if k:
                    name = ".".join(k)
                    line = getattr(n, "lineno", 0)  # every node a read is found at is an expression
                    if name not in self.reads or line < self.reads[name]:
                        self.reads[name] = line
                        d = _default(n)
                        if d is not NO_DEFAULT:
                            self.defaults[name] = d
                        else:
                            self.defaults.pop(name, None)

    @staticmethod
    def _own_nodes(scope: ast.AST) -> list[ast.AST]:
        """The nodes of ``scope`` outside its nested functions (each function is its own scope)."""
        out: list[ast.AST] = []
        todo = list(ast.iter_child_nodes(scope))
        while todo:
            n = todo.pop()
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            out.append(n)
            todo.extend(ast.iter_child_nodes(n))
        return out

    def path(self, node: ast.AST, aliases: dict[str, tuple[str, ...]]) -> tuple[str, ...] | None:
        """The key path ``node`` stands for: () for the config itself, ("eagle_config",) for a nested value."""
        if isinstance(node, ast.Name):
            if node.id in aliases:
                return aliases[node.id]
            return () if node.id in _CONFIG_NAMES else None
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            return self.path(node.values[0], aliases)  # getattr(config, "eagle_config", None) or {}
        if isinstance(node, ast.Attribute) and node.attr in _CONFIG_ATTRS and self.path(node.value, aliases) is None:
            return ()  # self.config, vllm_config.model_config.hf_config
        return self.read(node, aliases)

    def read(self, node: ast.AST, aliases: dict[str, tuple[str, ...]]) -> tuple[str, ...] | None:
        """The key ``node`` reads off a config object, or None."""
        base: tuple[str, ...] | None
        key: str | None
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            par = self.parent.get(node)
            if isinstance(par, ast.Call) and par.func is node:
                return None  # a method: config.get(...), config.to_dict()
            base = self.path(node.value, aliases)
            key = node.attr
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") \
                and len(node.args) >= 2 and _text(node.args[1]) is not None:
            base, key = self.path(node.args[0], aliases), _text(node.args[1])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and node.args and _text(node.args[0]) is not None:
            base, key = self.path(node.func.value, aliases), _text(node.args[0])
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _text(node.slice) is not None:
            base, key = self.path(node.value, aliases), _text(node.slice)
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)) \
                and _text(node.left) is not None:
            base, key = self.path(node.comparators[0], aliases), _text(node.left)
        else:
            return None
        if base is None or key is None or len(base) >= MAX_DEPTH:
            return None
        return (*base, key)


def config_reads(tree: ast.Module) -> Reads:
    """Every drafter config key ``tree`` reads (dotted for nested ones), with the first line that reads it."""
    return _Reader(tree).reads


def config_reads_with_defaults(tree: ast.Module) -> dict[str, list[Any]]:
    """``config_reads`` with each first read's constant default: ``key -> [line]`` or ``[line, default]``."""
    r = _Reader(tree)
    return {k: [line, r.defaults[k]] if k in r.defaults else [line] for k, line in r.reads.items()}


def set_keys(cfg: dict[str, Any]) -> list[str]:
    """The keys a drafter config sets, dotted for one level of nested dicts (``eagle_config.norm_before_fc``)."""
    out = []
    for k, v in cfg.items():
        out.append(k)
        if isinstance(v, dict):
            out.extend(f"{k}.{kk}" for kk in v)
    return out


# -- other releases, as data ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Reader:
    """An examined release whose drafter code reads a key: where."""

    release: str
    module: str
    line: int
    default: Any = NO_DEFAULT  # what that release falls back to when the key is missing


DATA_FILE = Path(str(resources.files("eagle3_lint").joinpath("data/drafter_keys.json")))


@lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    return json.loads(DATA_FILE.read_text(encoding="utf-8"))


def version_key(v: str) -> tuple[Any, ...]:
    """Release order; a version that is not a release number (a checkout) sorts after every release."""
    from packaging.version import InvalidVersion, Version

    try:
        return (0, Version(v))
    except InvalidVersion:
        return (1, v)


def releases(engine: str) -> list[str]:
    """The releases the table examined for ``engine``, oldest first."""
    return sorted(table().get(engine, {}).get("releases", {}), key=version_key)


def reason(engine: str) -> str:
    return str(table().get(engine, {}).get("reason", ""))


def weightless(engine: str) -> frozenset[str]:
    """Drafter config keys whose part has no weights where a release reads them (the table's ``weightless``
    section, with its reason and where each was read): ignoring one loads the checkpoint and runs another drafter."""
    return frozenset(table().get(engine, {}).get("weightless", {}).get("keys", {}))


def parts(engine: str) -> dict[str, str]:
    """Drafter config keys that turn on a part with weights, each with the tensor-name component of that part (the
    table's ``parts`` section: ``norm_before_fc`` -> ``input_norm.``), with its reason and where each was read."""
    keys = table().get(engine, {}).get("parts", {}).get("keys", {})
    return {k: str(v["tensors"]) for k, v in keys.items()}


def fc_states(engine: str) -> dict[str, tuple[str, ...]]:
    """Drafter config keys that say how many aux states the drafter's fc takes (``num_aux_hidden_states``), each with
    the keys one state's width is read from, first set first (the table's ``fc_states`` section, with its reason,
    where each was read and where a release that ignores the key refuses another count)."""
    keys = table().get(engine, {}).get("fc_states", {}).get("keys", {})
    return {k: tuple(v["state_width"]) for k, v in keys.items()}


def _fc_width(raw: dict[str, Any], key: str, count: Any, widths: tuple[str, ...]) -> int | None:
    """The in-width ``count`` states give the checkpoint's fc: ``count`` times the first of ``widths`` the config
    sets (beside ``key``: ``eagle_config.num_aux_hidden_states`` reads ``eagle_config``'s widths, then the top's)."""
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        return None
    scopes = [raw]
    if "." in key:
        inner: Any = raw
        for p in key.split(".")[:-1]:
            inner = inner.get(p) if isinstance(inner, dict) else None
        if isinstance(inner, dict):
            scopes.insert(0, inner)
    for w in widths:
        for s in scopes:
            v = s.get(w)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                return count * v
    return None


def _with_module(engine: str, modules: tuple[str, ...]) -> list[str]:
    """The examined releases that have any of ``modules``."""
    data = table().get(engine, {}).get("releases", {})
    return [r for r in releases(engine) if any(m in data[r] for m in modules)]


def readers(engine: str, key: str, modules: tuple[str, ...]) -> list[Reader]:
    """The examined releases whose ``modules`` read ``key``, oldest first (the first such module of each)."""
    data = table().get(engine, {}).get("releases", {})
    out = []
    for r in releases(engine):
        hit = next(((m, data[r][m][key]) for m in modules if key in data[r].get(m, {})), None)
        if hit is not None:
            out.append(Reader(r, hit[0], hit[1][0], hit[1][1] if len(hit[1]) > 1 else NO_DEFAULT))
    return out


# Keys the loader itself consumes before any drafter code runs: the registry picks the class by ``architectures``
# and AutoConfig the config class by ``model_type`` (the drafter-class step judges both); never "ignored".
LOADER_KEYS = frozenset({"architectures", "model_type"})


def chain_reads(sm: Model, module: str | None, extra: tuple[str, ...] = ()) -> Reads:
    """The keys read by ``module`` (dotted module name of the drafter class), by the modules of every base class of
    the classes it defines (a drafter's decoder layer subclasses the target's, whose ``__init__`` reads the
    generic keys), and by the files ``extra`` (a format converter)."""
    from eagle3_lint.graph import ClassKey
    from eagle3_lint.source_ast import read_module

    mf = sm.graph.module(module) if module else None
    paths: dict[str, None] = {}
    if mf is not None and module:
        paths[mf.path] = None
        for qual in mf.classes:
            for e in sm.graph.mro(ClassKey(module, qual)).entries:
                if isinstance(e, ClassKey):
                    paths[sm.graph.path_of(e)] = None
    paths.update(dict.fromkeys(extra))
    out: Reads = {}
    for p in paths:
        tree = read_module(sm, p)
        if tree is not None:
            for k, line in config_reads(tree).items():
                out.setdefault(k, line)
    return out


def same_as_missing(value: Any, default: Any) -> bool:
    """A set value that builds what a missing key builds: the read's default itself, or a false flag (False,
    None) where the default is False or None (the drafter code tests these keys for truth:
    ``if self.norm_before_fc:``)."""
    if default is NO_DEFAULT:
        return False
    if value == default and type(value) is type(default):
        return True
    return (value is False or value is None) and (default is False or default is None)


def ignored(engine: str, version: str, raw: dict[str, Any], draft_path: str, reads: Reads,
            modules: tuple[str, ...], drafter_class: str, skip: frozenset[str],
            fc_in: int | None = None) -> list[IgnoredKey]:
    """The leaf keys ``raw`` sets that ``reads`` (this release's drafter code) lacks and some examined release's
    ``modules`` read, each with the first later release that reads it (else the last earlier one). ``fc_in``: the
    in-width of the fc this release's drafter class builds for ``raw`` (None: not known). A count of the fc's aux
    states (``fc_states``) that gives the checkpoint's fc that same width builds the same drafter: not ignored."""
    import dataclasses

    from eagle3_lint.drafter import json_line

    out: list[IgnoredKey] = []
    mine = version_key(version)
    counts = fc_states(engine)
    for k in set_keys(raw):
        parts = k.split(".")
        v: Any = raw
        for p in parts:
            v = v[p]
        if isinstance(v, dict) or k in skip or k in LOADER_KEYS or k in reads:
            continue
        rs = readers(engine, k, modules)
        if not rs:
            continue  # no examined release's drafter code reads it: not a drafter key, or not one yet
        if len(rs) == len(_with_module(engine, modules)):
            continue  # every examined release reads it (hidden_size): generic, not a key some release began reading
        later = [r for r in rs if version_key(r.release) > mine]
        judge = later[0] if later else rs[-1]
        if same_as_missing(v, judge.default):
            continue  # the value the reading release falls back to: ignoring the key builds the same drafter
        width = _fc_width(raw, k, v, counts[parts[-1]]) if parts[-1] in counts else None
        if width is not None and width == fc_in:
            continue  # this release's own count builds the fc the checkpoint has: the same drafter
        fc = (width, fc_in) if width is not None and fc_in is not None else None
        rels = releases(engine)
        if later:
            r = later[0]
            i = rels.index(r.release)
            before = rels[i - 1] if i > 0 else ""
            ik = IgnoredKey(k, json_line(draft_path, parts[-1]), drafter_class, modules[0], r.release,
                            Where(r.module, r.line, k), before)
        else:
            r = rs[-1]
            ik = IgnoredKey(k, json_line(draft_path, parts[-1]), drafter_class, modules[0], "", None,
                            earlier=r.release, earlier_where=Where(r.module, r.line, k))
        out.append(dataclasses.replace(ik, fc=fc))
    return out


def examine(root: str, globs: tuple[str, ...]) -> dict[str, dict[str, list[Any]]]:
    """Per drafter module of the tree at ``root`` (a release's folder holding the package), the keys it reads:
    one release's row of the table (scripts/drafter_keys.py). Files are parsed, never imported."""
    from eagle3_lint.facts import decode_source

    base = Path(root)
    out: dict[str, dict[str, list[Any]]] = {}
    for g in globs:
        for f in sorted(base.glob(g)):
            try:
                tree = ast.parse(decode_source(f.read_bytes()), str(f))
            except (OSError, SyntaxError, UnicodeError, ValueError):
                continue
            reads = config_reads_with_defaults(tree)
            if reads:
                out[f.relative_to(base).as_posix()] = dict(sorted(reads.items()))
    return out
