"""SGLang's EAGLE-3 check and its verdict for every registered architecture, as the core computes them.

The runner calls ``set_eagle3_layers_to_capture`` on the top-level registered model object (see
``runner.call_sites``), so an architecture passes SGLang's own check exactly when its registered class
has that attribute through its MRO. The judging is the core's (``analysis.build`` with this engine's
``derive``: the neutral ``verdict.Judge`` over the class graph); this module only gives the verdicts the
SGLang-side shape the sweep script and the engine tests read, with the setter's id transform added:

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

from dataclasses import dataclass
from pathlib import Path

from eagle3_lint.engines.sglang import ENGINE
from eagle3_lint.engines.sglang.registry import Registry, read_registry
from eagle3_lint.engines.sglang.runner import SETTER, CallSite, IdSource, call_sites, id_sources
from eagle3_lint.engines.sglang.setter import IdTransform, read_setter
from eagle3_lint.model import Status
from eagle3_lint.source import DirSource

PACKAGE = "sglang"

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


def contract(root: str | Path, cache_dir: Path | None = None) -> Contract:
    """SGLang's contract and per-architecture verdicts for the tree at ``root`` (the folder holding ``sglang/``)."""
    from eagle3_lint import analysis

    source = DirSource(Path(root), PACKAGE)
    sm = analysis.build(source, analysis.Options(cache_dir=cache_dir)).model
    reg = read_registry(source, sm.graph, sm.store.load_path)
    out: list[ArchVerdict] = []
    for arch, v in sm.verdicts.items():
        key = sm.keys.get(arch)
        ev = tuple(Evidence(s.location.path, s.location.line, s.text) for s in v.evidence if s.location is not None)
        if v.location is not None:
            ev = (*ev, Evidence(v.location.path, v.location.line, v.reason))
        if key is None:
            out.append(ArchVerdict(arch, "", None, v.status, ev or (Evidence("", 0, v.reason),)))
            continue
        inner: list[str] = []
        setter: IdTransform | None = None
        if v.status is Status.SUPPORTED:
            hit = sm.graph.member_origin(key, SETTER)
            if hit is not None:
                setter = read_setter(source, sm.graph.path_of(hit[0]), hit[1].line, hit[1].end_line)
                ev = (Evidence(sm.graph.path_of(hit[0]), hit[1].line, f"{SETTER} defined on {hit[0].name}"), *ev)
        elif v.status is Status.WRAPPER_GAP:
            for _d, t in sm.judge.inner_supporting(key):
                inner.append(t.name)
                hit = sm.graph.member_origin(t, SETTER)
                if hit is not None:
                    ev = (*ev, Evidence(sm.graph.path_of(hit[0]), hit[1].line, f"{hit[0].name}.{SETTER}"))
        out.append(ArchVerdict(arch, str(key), v.supports_eagle3, v.status, ev, tuple(sorted(set(inner))), setter))
    if cache_dir is not None:
        sm.store.save()  # the facts pack: a warm run skips parsing
    return Contract(ENGINE.version(source), call_sites(source), id_sources(source), reg, tuple(out))


def verdicts(root: str | Path, cache_dir: Path | None = None) -> dict[str, ArchVerdict]:
    """Per-architecture verdicts (arch -> verdict) for a fetched SGLang tree."""
    return contract(root, cache_dir).by_arch()
