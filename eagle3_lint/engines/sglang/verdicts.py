"""SGLang's EAGLE-3 check, derived from a tree, and its verdict for every registered architecture.

The runner calls ``set_eagle3_layers_to_capture`` on the top-level registered model object (see
``runner.call_sites``), so an architecture passes SGLang's own check exactly when its registered class
has that attribute through its MRO. Verdicts:

* ``supported``: a class in the MRO defines it (``def`` or a class-level assignment);
* ``wrapper-gap``: it does not, but a model the class holds (``self.language_model = X(...)``,
  ``self.model = language_model_cls(...)`` with the constructor's default, a class attribute) has
  it: the wrapper does not delegate;
* ``unsupported``: neither;
* ``unknown``: the method is not found and part of the MRO cannot be followed inside the tree
  (a base made by a call, or a ``sglang.*`` name the tree does not hold), so the answer would be a guess.

Everything is read with the core's ``FactStore`` and ``ClassGraph``; nothing is imported or run.
"""

from __future__ import annotations

import ast
import enum
import textwrap
from dataclasses import dataclass
from pathlib import Path

from eagle3_lint.engines.sglang.registry import EntryKind, Registry, model_modules, read_registry
from eagle3_lint.engines.sglang.runner import SETTER, CallSite, IdSource, call_sites, id_sources
from eagle3_lint.engines.sglang.setter import IdTransform, read_setter
from eagle3_lint.engines.sglang.tree import PACKAGE, SglangDirSource
from eagle3_lint.facts import decode_source
from eagle3_lint.graph import ClassGraph, ClassKey, Resolved
from eagle3_lint.store import FactStore

# A wrapper may hold a wrapper (a VL model holding a ``...ForCausalLM`` holding a ``...Model``).
_MAX_HOPS = 3


class Status(enum.Enum):
    SUPPORTED = "supported"
    UNSUPPORTED = "unsupported"
    WRAPPER_GAP = "wrapper-gap"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Evidence:
    path: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"


@dataclass(frozen=True)
class ArchVerdict:
    arch: str
    cls: str  # module.qualname of the registered class
    supports: bool | None
    status: Status
    evidence: tuple[Evidence, ...]
    inner: tuple[str, ...] = ()  # for wrapper-gap: the held classes that have the method
    setter: IdTransform | None = None  # for supported: what the setter found in the MRO does with ids


@dataclass(frozen=True)
class Contract:
    """SGLang's EAGLE-3 contract as found in one tree."""

    version: str
    call_sites: tuple[CallSite, ...]
    id_sources: tuple[IdSource, ...]
    registry: Registry
    verdicts: tuple[ArchVerdict, ...]

    def by_arch(self) -> dict[str, ArchVerdict]:
        return {v.arch: v for v in self.verdicts}


def _in_tree_gap(r: Resolved) -> bool:
    """A base the check cannot see through: not followed, or an SGLang name missing from the tree."""
    if r.kind in ("unresolved", "dynamic"):
        return True
    # graph.py treats only ``vllm.*`` names that are not in the tree as unresolved; do the same for ours.
    return r.kind == "external" and r.name.split(".")[0] == PACKAGE


class _Checker:
    def __init__(self, root: Path, cache_dir: Path | None = None) -> None:
        self.source = SglangDirSource(root)
        self.store = FactStore(self.source, cache_dir)
        self.graph = ClassGraph(loader=self.store.load)
        self._init_defaults: dict[ClassKey, dict[str, str]] = {}

    def setter_origin(self, key: ClassKey) -> tuple[ClassKey, int, int] | None:
        hit = self.graph.member_origin(key, SETTER)
        if hit is None:
            return None
        owner, member = hit
        return owner, member.line, member.end_line

    def gaps(self, key: ClassKey) -> list[Resolved]:
        return [e for e in self.graph.mro(key).entries if isinstance(e, Resolved) and _in_tree_gap(e)]

    # -- what a wrapper holds ------------------------------------------------------------------
    def _defaults(self, key: ClassKey) -> dict[str, str]:
        """``__init__`` parameter defaults of this class itself (name -> expression), parsed from its span."""
        hit = self._init_defaults.get(key)
        if hit is not None:
            return hit
        out: dict[str, str] = {}
        cf = self.graph.class_facts(key)
        init = cf.methods.get("__init__") if cf else None
        if init is not None:
            try:
                lines = decode_source(self.source.read_bytes(self.graph.path_of(key))).splitlines()
                fn = ast.parse(textwrap.dedent("\n".join(lines[init.line - 1: init.end_line]))).body[0]
            except (OSError, UnicodeError, LookupError, SyntaxError, ValueError, IndexError, RecursionError):
                fn = None
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                pos = [*fn.args.posonlyargs, *fn.args.args]
                for a, d in zip(pos[len(pos) - len(fn.args.defaults):], fn.args.defaults, strict=True):
                    out[a.arg] = ast.unparse(d)
                for a, kw_default in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True):
                    if kw_default is not None:
                        out[a.arg] = ast.unparse(kw_default)
        self._init_defaults[key] = out
        return out

    def held(self, key: ClassKey) -> list[tuple[ClassKey, Evidence]]:
        """Classes this one holds as models: the graph's delegation edges, plus ``self.x = param(...)``
        where ``param`` is an ``__init__`` parameter, valued with the most derived default in the MRO."""
        out: list[tuple[ClassKey, Evidence]] = []
        for d in self.graph.delegations(key):
            if d.target is not None:
                out.append((d.target, Evidence(d.path, d.line, d.detail)))
        mro = [e for e in self.graph.mro(key).entries if isinstance(e, ClassKey)]
        for e in mro:
            cf = self.graph.class_facts(e)
            init = cf.methods.get("__init__") if cf else None
            if init is None:
                continue
            path = self.graph.path_of(e)
            for sa in init.self_assigns:
                attr = sa.target[5:] if sa.target.startswith("self.") else ""
                if attr and "." not in attr:
                    # graph.delegations keeps one target per attribute; an attribute assigned under
                    # branches (``self.model = DeepseekV3ForCausalLM(...)`` / ``DeepseekForCausalLM(...)``,
                    # chosen by the checkpoint config) may hold any of them.
                    held = self.graph._delegation_from_assign(e, attr, sa, path)  # noqa: SLF001
                    if held is not None and held.target is not None:
                        out.append((held.target, Evidence(held.path, held.line, held.detail)))
                if sa.value_kind != "call" or "." in sa.func or sa.func not in init.params:
                    continue
                for holder in mro:  # the most derived default wins: subclasses pass theirs up via super()
                    expr = self._defaults(holder).get(sa.func)
                    if expr is None:
                        continue
                    r = self.graph.resolve_dotted(holder.module, expr, binds=holder.binds)
                    if r.kind == "class" and r.key is not None:
                        out.append((r.key, Evidence(self.graph.path_of(e), sa.line,
                                                    f"{sa.target} = {sa.func}(...) with {sa.func}={expr} "
                                                    f"(default in {holder.name})")))
                    break
        return out

    def inner_with_setter(self, key: ClassKey) -> list[tuple[ClassKey, list[Evidence]]]:
        found: list[tuple[ClassKey, list[Evidence]]] = []
        seen = {key}
        todo: list[tuple[ClassKey, list[Evidence]]] = [(key, [])]
        for _hop in range(_MAX_HOPS):
            nxt: list[tuple[ClassKey, list[Evidence]]] = []
            for k, trail in todo:
                for inner, ev in self.held(k):
                    if inner in seen:
                        continue
                    seen.add(inner)
                    origin = self.setter_origin(inner)
                    if origin is not None:
                        o, line, _end = origin
                        found.append((inner, [*trail, ev, Evidence(self.graph.path_of(o), line,
                                                                 f"{o.name}.{SETTER} (inherited by {inner.name})"
                                                                 if o != inner else f"{inner.name}.{SETTER}")]))
                    else:
                        nxt.append((inner, [*trail, ev]))
            todo = nxt
        return found

    # -- one registered class ------------------------------------------------------------------
    def verdict(self, arch: str, key: ClassKey) -> ArchVerdict:
        cf = self.graph.class_facts(key)
        where = Evidence(self.graph.path_of(key), cf.line if cf else 0, f"class {key.name}")
        origin = self.setter_origin(key)
        if origin is not None:
            o, line, end = origin
            t = read_setter(self.source, self.graph.path_of(o), line, end)
            text = f"{SETTER} defined on {o.name}" + ("" if o == key else f", inherited by {key.name}")
            return ArchVerdict(arch, str(key), True, Status.SUPPORTED,
                               (Evidence(self.graph.path_of(o), line, text),), setter=t)
        gaps = self.gaps(key)
        if gaps:
            return ArchVerdict(arch, str(key), None, Status.UNKNOWN, (where, *(
                Evidence(where.path, where.line, f"base not followed: {g.kind} {g.name} {g.note}".strip())
                for g in gaps)))
        mro_names = ", ".join(e.name if isinstance(e, ClassKey) else e.name for e in self.graph.mro(key).entries)
        absent = Evidence(where.path, where.line, f"no {SETTER} in the MRO: {mro_names}")
        inner = self.inner_with_setter(key)
        if inner:
            ev = [absent, *(e for _k, trail in inner for e in trail)]
            return ArchVerdict(arch, str(key), False, Status.WRAPPER_GAP, tuple(ev),
                               inner=tuple(sorted({k.name for k, _t in inner})))
        return ArchVerdict(arch, str(key), False, Status.UNSUPPORTED, (absent,))


def contract(root: str | Path, cache_dir: Path | None = None) -> Contract:
    """SGLang's contract and per-architecture verdicts for the tree at ``root`` (the folder holding ``sglang/``)."""
    ch = _Checker(Path(root), cache_dir)
    # Every registered class lives in (or is re-exported by) a top-level model module: load them at
    # once, in parallel where the core's store finds it pays.
    ch.store.preload(model_modules(ch.source))
    reg = read_registry(ch.source, ch.graph, ch.store.load_path)
    out: list[ArchVerdict] = []
    done: set[str] = set()
    for e in reg.entries:
        if e.arch in done:
            continue
        done.add(e.arch)
        if e.kind is EntryKind.CLASS and e.key is not None:
            out.append(ch.verdict(e.arch, e.key))
        else:
            out.append(ArchVerdict(e.arch, "", None, Status.UNKNOWN,
                                   (Evidence(e.path, e.line, f"EntryClass element {e.written}: {e.note}"),)))
    if cache_dir is not None:
        ch.store.save()  # the facts pack: a warm run skips parsing (0.5.23: about 9 s cold, 2.5 s warm here)
    return Contract(ch.source.sglang_version(), call_sites(ch.source), id_sources(ch.source), reg, tuple(out))


def verdicts(root: str | Path, cache_dir: Path | None = None) -> dict[str, ArchVerdict]:
    """Per-architecture verdicts (arch -> verdict) for a fetched SGLang tree."""
    return contract(root, cache_dir).by_arch()
