"""The pipeline: tree -> facts -> graph -> contract + runner + registry -> verdicts -> rules.

``analyze`` builds one ``Context`` that rules query. Internal errors inside one rule are caught and
recorded, so the other rules' findings still reach the report.
"""

from __future__ import annotations

import functools
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle3_lint import deps, engines
from eagle3_lint.contract import Contract
from eagle3_lint.engine import Engine
from eagle3_lint.graph import ClassGraph, ClassKey
from eagle3_lint.model import Finding, Status, Verdict
from eagle3_lint.queries import Queries, Table
from eagle3_lint.registry import Registry
from eagle3_lint.runner import RunnerPath
from eagle3_lint.semantic import Memo
from eagle3_lint.source import SourceTree
from eagle3_lint.store import FactStore
from eagle3_lint.verdict import Judge

if TYPE_CHECKING:
    from eagle3_lint.serving import ServingVerdict
    from eagle3_lint.suppress import Suppression

@dataclass
class Options:
    targets: tuple[str, ...] = ()  # architectures the user targets (--arch)
    cache_dir: Path | None = None
    target_config: dict | None = None  # the target's HF config.json, parsed
    target_config_path: str | None = None
    draft_config: dict | None = None
    draft_config_path: str | None = None
    pipeline_parallel: int | None = None  # --pipeline-parallel N (EGL007 shows the layer split)
    pp_partition: str | None = None  # --pp-partition, vLLM's VLLM_PP_LAYER_PARTITION override
    runner: str = "auto"  # --runner auto|v1|v2: the model runner the serving verdict and EGL007 model
    tensor_parallel: int | None = None  # --tensor-parallel-size: recorded; it does not change what is captured
    drafter_convention: str | None = None  # --drafter-convention vllm|sglang: how the drafter's ids number layers
    platform: str = "cuda"  # --platform: what a platform dispatch in the tree and the runner choice are evaluated for
    method: str | None = None  # --method: the speculative method (None: the engine's EAGLE-3), engine.spec_methods
    debug: bool = False
    # The drafter checkpoint's tensors (weights.Checkpoint), read from the safetensors headers of a --draft-config
    # folder; None without one.
    draft_weights: Any = None
    # progress(message) for a step, progress(message, done, total) for a counted one (cli.py renders it).
    progress: Callable[..., None] | None = None


@dataclass
class InternalError:
    where: str
    message: str
    traceback: str = ""


class ArchTable(dict[str, Any]):
    """``ctx.keys`` and ``ctx.verdicts``: an architecture's entry is what its verdict query read, so reading
    it (not testing membership, which the registry decides) adds those files to the answer being computed."""

    __slots__ = ("_queries",)

    def __init__(self, queries: Queries | None = None) -> None:
        super().__init__()
        self._queries = queries

    def _touch(self, arch: str) -> None:
        if deps.frame is not None and self._queries is not None:
            self._queries.note_answer(("verdict", arch))

    def __getitem__(self, arch: str) -> Any:
        self._touch(arch)
        return super().__getitem__(arch)

    def get(self, arch: str, default: Any = None) -> Any:
        self._touch(arch)
        return super().get(arch, default)

    def items(self) -> Any:
        if deps.frame is not None:
            for a in self:
                self._touch(a)
        return super().items()

    def values(self) -> Any:
        if deps.frame is not None:
            for a in self:
                self._touch(a)
        return super().values()


@dataclass
class Context:
    source: SourceTree
    store: FactStore
    graph: ClassGraph
    contract: Contract
    runner: RunnerPath
    registry: Registry
    judge: Judge
    options: Options
    version: str
    engine: Engine
    verdicts: dict[str, Verdict] = field(default_factory=ArchTable)
    keys: dict[str, ClassKey | None] = field(default_factory=ArchTable)
    findings: list[Finding] = field(default_factory=list)
    errors: list[InternalError] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    # Findings silenced by an inline ``# eagle3-lint: ignore[...]`` comment (suppress.py), with why.
    suppressed: list[tuple[Finding, Suppression]] = field(default_factory=list)
    # Answers of the semantic model (semantic.py) and of rules, shared by rules, fixes and the serving verdict.
    memo: Memo = field(default_factory=Memo)
    # The serving verdict per targeted architecture (serving.py), made after the rules ran.
    serving: dict[str, ServingVerdict] = field(default_factory=dict)
    # The analysis' queries (queries.py), and what keeping them for the next check needs.
    queries: Queries = field(default_factory=Queries)
    keep: Keep | None = None

    @property
    def targeted(self) -> tuple[str, ...]:
        return self.options.targets

    def is_targeted(self, arch: str | None) -> bool:
        return arch is not None and arch in self.options.targets

    def model_files(self) -> list[str]:
        # Asked by every per-file rule; the listing is the same all through a check.
        return self.memo.get("model-files", lambda: [f for f in self.source.py_files() if self.engine.is_model_file(f)])

    def model_classes(self) -> Iterable[tuple[ClassKey, str]]:
        """Every class defined at module level in the model files, with its file."""
        for rel in self.model_files():
            mf = self.store.load_path(rel)
            if mf is None or mf.error:
                continue
            for qn, cf in mf.classes.items():
                if cf.nested_in is None:
                    yield ClassKey(mf.module, qn), rel

    def read_text(self, rel: str) -> str:
        from eagle3_lint.facts import decode_source

        return decode_source(self.source.read_bytes(rel))


def resolve_entry(graph: ClassGraph, module: str, class_name: str) -> tuple[ClassKey | None, str]:
    if graph.module(module) is None:
        return None, f"module {module} is not in this tree"
    mf = graph.module(module)
    if mf is not None and mf.error:
        return None, f"{mf.path} cannot be parsed ({mf.error}), so the runtime cannot import it"
    r = graph.resolve_name(module, class_name)
    if r.kind == "class" and r.key is not None:
        return r.key, ""
    if r.kind == "external":
        return None, f"{class_name} comes from outside the tree ({r.name})"
    return None, f"{class_name} cannot be resolved in {module}: {r.name} {r.note}".strip()


def sub_config_architectures(cfg: dict[str, Any], expr: str,
                             unnamed: Callable[[dict[str, Any]], tuple[str, ...]] | None = None) -> tuple[str, ...]:
    """The ``architectures`` of the sub-config an ``hf_config=`` expression names (``config.text_config``);
    ``unnamed`` gives the engine's names for a sub-config that has none (``Engine.unnamed_sub_config``)."""
    parts = [p for p in expr.replace("()", "").split(".") if p]
    while parts and parts[0] not in cfg:
        parts = parts[1:]
    cur: Any = cfg
    for p in parts:
        cur = cur.get(p) if isinstance(cur, dict) else None
    archs = cur.get("architectures") if isinstance(cur, dict) and parts else None
    if archs is None and isinstance(cur, dict) and parts and unnamed is not None:
        return unnamed(cur)
    return tuple(a for a in archs if isinstance(a, str)) if isinstance(archs, list) else ()


@dataclass(frozen=True)
class Keep:
    """Where and under what this analysis' answers are kept for the next check (queries.save)."""

    table: Table
    head: str
    files: dict[str, bytes | None]
    derived: str  # queries.derived_digest of what the engine derived before the first answer


def _options_key(options: Options) -> tuple[object, ...]:
    """The request's options as the kept answers depend on them (not where the cache is, nor the progress bar)."""
    return (options.targets, options.target_config, options.target_config_path, options.draft_config,
            options.draft_config_path, options.pipeline_parallel, options.pp_partition, options.runner,
            options.tensor_parallel, options.drafter_convention, options.debug, options.platform,
            weights_key(options.draft_weights))


def weights_key(ck: Any) -> tuple[object, ...] | None:
    """The checkpoint as the answers depend on it: every tensor's name, dtype and shape."""
    return None if ck is None else tuple(sorted((t.name, t.dtype, t.shape) for t in ck.tensors.values()))


def build(source: SourceTree, options: Options, store: FactStore | None = None) -> Context:
    """``store``: one the caller already opened on ``source`` (to hash the tree first), else a new one."""
    from eagle3_lint import queries as queries_mod
    from eagle3_lint.source import DirSource, ZipSource

    t0 = time.perf_counter()
    if store is None:
        store = FactStore(source, options.cache_dir)
    engine = engines.for_package(source.package)
    version = engine.version(source)
    # Answers are kept for plain trees only: a tree overlaid with plugins is never cached (reportcache.py).
    keep_dir = options.cache_dir if type(source) in (DirSource, ZipSource) else None
    files = queries_mod.file_digests(source, store) if keep_dir is not None else {}
    head = queries_mod.header(source, engine.name, version, _options_key(options)) if keep_dir is not None else ""
    queries, changed, table = queries_mod.load(keep_dir, source, head, files)
    if store.rebuilt:
        queries = Queries()  # a damaged facts cache is rebuilt whole, by a full analysis (its answers are kept)
    t1 = t0

    def preload() -> None:
        nonlocal t1
        model_files = [rel for rel in source.py_files() if engine.is_model_file(rel)]
        if queries.seeded:
            # Answers of the last check are reused: facts load when an answer that must be recomputed reads
            # them. The changed files load now, so that a bug of ours in their facts is reported as always.
            model_files = [rel for rel in model_files if rel in changed]
        store.preload(model_files, options.progress)
        t1 = time.perf_counter()

    # The engine parses the model files (``preload``) when it suits its derivations: vLLM's reads the
    # runner path in a second process meanwhile.
    derived = engine.derive(source, store, preload)
    registry, contract, runner = derived.registry, derived.contract, derived.runner
    # Every answer rests on what was derived (registry, contract, runner path, gates) without reading it: the
    # answers kept are reused only if that is what the last check derived. An edit of a model file that leaves
    # the registry as it was keeps them (SGLang's registry is read from every model file).
    digest = queries_mod.derived_digest(derived) if table is not None else ""
    if queries.seeded and table is not None and table.derived != digest:
        queries = Queries()
        store.preload([rel for rel in source.py_files() if engine.is_model_file(rel)], options.progress)
    t2 = time.perf_counter()

    def registered(arch: str) -> ClassKey | None:
        e = registry.entries.get(arch)
        if e is None:
            return None
        return resolve_entry(graph, e.module, e.class_name)[0]

    def checkpoint_archs(key: ClassKey, expr: str) -> tuple[str, ...]:
        # Only a targeted architecture's own class reads the checkpoint the target config describes.
        if options.target_config is None or key not in {registered(a) for a in options.targets}:
            return ()
        return sub_config_architectures(options.target_config, expr, lambda sub: engine.unnamed_sub_config(source, sub))

    graph = ClassGraph(loader=store.load, registered=registered, checkpoint_archs=checkpoint_archs,
                       package=engine.package, registered_model_helpers=engine.registered_model_helpers,
                       queries=queries, platform=options.platform)
    judge = Judge(graph, contract, runner)
    ctx = Context(source, store, graph, contract, runner, registry, judge, options, version, engine,
                  verdicts=ArchTable(queries), keys=ArchTable(queries), memo=Memo(queries), queries=queries,
                  keep=Keep(table, head, files, digest) if table is not None else None)
    ctx.errors.extend(InternalError(*e) for e in derived.errors)

    def judged(arch: str, e: Any) -> tuple[ClassKey | None, Verdict]:
        key, note = resolve_entry(graph, e.module, e.class_name)
        return key, judge.verdict(e, key, note, getattr(e, "path", "") or registry.path)

    for arch, e in registry.entries.items():
        try:
            ctx.keys[arch], ctx.verdicts[arch] = queries.get(("verdict", arch), functools.partial(judged, arch, e),
                                                             persist=True)
        except Exception as exc:  # noqa: BLE001 - one architecture must not sink the others
            ctx.keys.setdefault(arch, None)
            ctx.errors.append(InternalError(f"verdict {arch}", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
            ctx.verdicts[arch] = Verdict(arch, e.module, e.class_name, None, Status.UNKNOWN,
                                         f"internal error while judging it: {type(exc).__name__}: {exc}")
    t3 = time.perf_counter()
    ctx.timings = {"facts": t1 - t0, "derive": t2 - t1, "verdicts": t3 - t2}
    return ctx


def run_rules(ctx: Context, rules: Iterable[object]) -> None:
    from eagle3_lint.rules import Rule

    for rule in rules:
        assert isinstance(rule, Rule)
        try:
            ctx.findings.extend(rule.run(ctx))
        except Exception as exc:  # noqa: BLE001 - one broken rule must not hide the others
            ctx.errors.append(
                InternalError(f"rule {rule.meta.id}", f"{type(exc).__name__}: {exc}", traceback.format_exc())
            )
    ctx.findings.sort(key=Finding.sort_key)
    ctx.store.save()


def serving_verdicts(ctx: Context) -> dict[str, ServingVerdict]:
    out: dict[str, ServingVerdict] = {}
    for arch in ctx.targeted:
        try:
            # Rules (EGL007) may have asked for the chain already; its next step names fixes, so it is
            # worked out again now that every rule has run.
            sv = ctx.engine.serving_verdict(ctx, arch)
            if sv is not None:
                out[arch] = ctx.engine.with_next_step(ctx, sv)
        except Exception as exc:  # noqa: BLE001 - one architecture's chain must not sink the report
            ctx.errors.append(InternalError(f"serving {arch}", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
    return out


def apply_suppressions(ctx: Context, ran: set[str]) -> None:
    from eagle3_lint import suppress

    try:
        suppress.apply(ctx, ran)
    except Exception as exc:  # noqa: BLE001 - a comment-scanning bug must not lose the findings
        ctx.errors.append(InternalError("suppressions", f"{type(exc).__name__}: {exc}", traceback.format_exc()))


def analyze(source: SourceTree, options: Options, select: Callable[[str], bool] | None = None,
            store: FactStore | None = None, keep: bool = True) -> Context:
    """The analysis of ``source``. Its answers are kept for the next check at the end (``keep``), or by the caller
    with ``keep_answers`` once it has asked for more (the JSON report's rows, outcome.json_text)."""
    from eagle3_lint import guard
    from eagle3_lint.rules import all_rules

    rules = [r for r in all_rules() if select is None or select(r.meta.id)]
    # Nothing under the tree may be imported, executed or written while it is analyzed (guard.py).
    with guard.protect(source):
        ctx = build(source, options, store)
        # A rule resting on what this engine does not model yet would report false findings: it does not run.
        rules = [r for r in rules if ctx.engine.has(*r.meta.needs)]
        t = time.perf_counter()
        run_rules(ctx, rules)
        apply_suppressions(ctx, {r.meta.id for r in rules})
        ctx.serving = serving_verdicts(ctx)  # empty where the engine has no serving chain (serving_verdict: None)
        # A file whose facts could not be extracted because of a bug of ours is an internal error (exit 2).
        for mf in ctx.store.loaded():
            err: str | None = getattr(mf, "internal_error", None)
            if err:
                msg, _, tb = err.partition("\n")
                ctx.errors.append(InternalError(f"facts {mf.path}", msg, tb))
        ctx.timings["rules"] = time.perf_counter() - t
        if keep:
            keep_answers(ctx)
    return ctx


def keep_answers(ctx: Context) -> None:
    """Save the answers for the next check; after an internal error, drop them (the next check starts afresh)."""
    from eagle3_lint import queries as queries_mod

    k = ctx.keep
    if k is None:
        return
    queries_mod.save(k.table, k.head, k.files, k.derived, None if ctx.errors else ctx.queries)
