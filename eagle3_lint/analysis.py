"""The pipeline: tree -> facts -> engine data -> semantic model -> rules -> suppressions -> serving -> analysis.

Each stage's output is frozen data (stages.py) made from the one before it: ``Facts`` (the tree and its
facts), ``EngineData`` (registry, contract, runner path), ``Model`` (the class graph, the verdicts),
then ``Analysis``, which collects the rules' findings, the suppressions, the serving verdicts, the
timings and the internal errors. Internal errors inside one rule are caught and recorded, so the
other rules' findings still reach the report.
"""

from __future__ import annotations

import dataclasses
import functools
import time
import traceback
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from eagle3_lint import engine_hooks, engines
from eagle3_lint.contract import CheckKind
from eagle3_lint.graph import ClassGraph, ClassKey
from eagle3_lint.model import Finding, Fix, Status, Verdict
from eagle3_lint.queries import Memo, Queries
from eagle3_lint.rules import Each, Found, Rule, Scope
from eagle3_lint.source import SourceTree
from eagle3_lint.stages import Analysis, EngineData, Facts, InternalError, Keep, Model, Options
from eagle3_lint.store import FactStore
from eagle3_lint.verdict import Judge

if TYPE_CHECKING:
    from eagle3_lint.model import Suppression
    from eagle3_lint.serving import ServingVerdict

_I = TypeVar("_I", bound=Hashable)
_R = TypeVar("_R")

__all__ = ["Analysis", "InternalError", "Model", "Options", "analyze", "build", "keep_answers"]


class ArchTable(dict[str, Any]):
    """``Model.keys`` and ``Model.verdicts``: an architecture's entry is what its verdict query read, so reading
    it (not testing membership, which the registry decides) adds those files to the answer being computed."""

    __slots__ = ("_queries",)

    def __init__(self, queries: Queries | None = None) -> None:
        super().__init__()
        self._queries = queries

    def _touch(self, arch: str) -> None:
        if self._queries is not None and self._queries.frame is not None:
            self._queries.note_answer(("verdict", arch))

    def __getitem__(self, arch: str) -> Any:
        self._touch(arch)
        return super().__getitem__(arch)

    def get(self, arch: str, default: Any = None) -> Any:
        self._touch(arch)
        return super().get(arch, default)

    def items(self) -> Any:
        if self._queries is not None and self._queries.frame is not None:
            for a in self:
                self._touch(a)
        return super().items()

    def values(self) -> Any:
        if self._queries is not None and self._queries.frame is not None:
            for a in self:
                self._touch(a)
        return super().values()


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


def _options_key(options: Options) -> tuple[object, ...]:
    """The request's options as the kept answers depend on them (not where the cache is, nor the progress bar)."""
    return (options.targets, options.target_config, options.target_config_path, options.draft_config,
            options.draft_config_path, options.pipeline_parallel, options.pp_partition, options.runner,
            options.tensor_parallel, options.drafter_convention, options.debug, options.platform,
            weights_key(options.draft_weights), options.method)


def weights_key(ck: Any) -> tuple[object, ...] | None:
    """The checkpoint as the answers depend on it: every tensor's name, dtype and shape."""
    return None if ck is None else tuple(sorted((t.name, t.dtype, t.shape) for t in ck.tensors.values()))


def build(source: SourceTree, options: Options, store: FactStore | None = None) -> Analysis:
    """The stages up to the semantic model (facts, engine data, class verdicts), with no rule run: the model, the
    internal errors and timings of building it. ``store``: one the caller already opened on ``source`` (to hash
    the tree first), else a new one."""
    from eagle3_lint import queries as queries_mod
    from eagle3_lint.source import DirSource, ZipSource

    t0 = time.perf_counter()
    if store is None:
        store = FactStore(source, options.cache_dir)
    facts = Facts(source, store)
    engine = engines.for_package(source.package)
    version = engine.version(source)
    # Answers are kept for plain trees only: a tree overlaid with plugins is never cached (reportcache.py).
    keep_dir = options.cache_dir if type(source) in (DirSource, ZipSource) else None
    # The tree's content hashes, for comparing with a table of earlier answers: on a first check there is none, and
    # they are taken once the model is built, from what the check read by then (every file read is hashed as it is
    # read: the model files, the runner's), instead of reading every file once more up front (~0.25 s of CPU on
    # SGLang 0.5.23); the answers are kept only if no file changed meanwhile (``Keep.snapshot``, keep_answers).
    digests: dict[str, dict[str, bytes | None]] = {}

    def files_now() -> dict[str, bytes | None]:
        if "now" not in digests:
            digests["now"] = queries_mod.file_digests(source, store)
        return digests["now"]

    head = queries_mod.header(source, engine.name, version, _options_key(options)) if keep_dir is not None else ""
    queries, changed, table = queries_mod.load(keep_dir, source, head, files_now)
    # Hashed only at the end: the stats now say whether the tree stayed what this check read.
    snapshot = store.snapshot() if table is not None and "now" not in digests else None
    if store.rebuilt:
        queries = Queries()  # a damaged facts cache is rebuilt whole, by a full analysis (its answers are kept)
    queries.watch(source, store)  # what each answer reads of the tree is recorded from here on (deps.py)
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
    if options.method is not None:
        derived = engine.for_method(source, store, derived, options.method)  # what that method's runner asks for
    data = EngineData(engine, version, derived.registry, derived.contract, derived.runner, derived.errors)
    registry, contract, runner = data.registry, data.contract, data.runner
    # Every answer rests on what was derived (registry, contract, runner path, gates) without reading it: the
    # answers kept are reused only if that is what the last check derived. An edit of a model file that leaves
    # the registry as it was keeps them (SGLang's registry is read from every model file).
    digest = queries_mod.derived_digest(derived) if table is not None else ""
    if queries.seeded and table is not None and table.derived != digest:
        queries.drop_kept()
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
    errors = [InternalError(*e) for e in derived.errors]
    keys: ArchTable = ArchTable(queries)
    verdicts: ArchTable = ArchTable(queries)

    def judged(arch: str, e: Any) -> tuple[ClassKey | None, Verdict]:
        key, note = resolve_entry(graph, e.module, e.class_name)
        return key, judge.verdict(e, key, note, getattr(e, "path", "") or registry.path)

    for arch, e in registry.entries.items():
        try:
            keys[arch], verdicts[arch] = queries.get(("verdict", arch), functools.partial(judged, arch, e),
                                                     persist=True)
        except Exception as exc:  # noqa: BLE001 - one architecture must not sink the others
            keys.setdefault(arch, None)
            errors.append(InternalError(f"verdict {arch}", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
            verdicts[arch] = Verdict(arch, e.module, e.class_name, None, Status.UNKNOWN,
                                     f"internal error while judging it: {type(exc).__name__}: {exc}")
    if table is not None:
        files_now()  # the files no derivation read are hashed now, so the pack saved after the rules holds them all
    t3 = time.perf_counter()
    sm = Model(facts, data, options, graph, judge, verdicts, keys, queries, Memo(queries))
    queries.bind(sm)  # declared queries (queries.query) take the model: the framework recomputes them on it
    return Analysis(sm, errors=tuple(errors), timings={"facts": t1 - t0, "derive": t2 - t1, "verdicts": t3 - t2},
                    keep=Keep(table, head, digests["now"], digest, snapshot) if table is not None else None)


class _Each:
    """A rule's work per scope item, as the pipeline keeps it (``rules.Each``): the answer under (the rule, the
    function, the item), kept between runs with the files it read (queries.py). A re-check after an edit recomputes
    only the items whose files changed."""

    def __init__(self, sm: Model, rule: str) -> None:
        self._sm = sm
        self._rule = rule

    def __call__(self, fn: Callable[[Model, _I], _R], items: Iterable[_I]) -> Iterator[tuple[_I, _R, Hashable]]:
        for item in items:
            key = (self._rule, fn.__qualname__, item)
            yield item, self._sm.queries.get(key, functools.partial(fn, self._sm, item), persist=True), key


def each_for(sm: Model, rule: str) -> Each:
    """The ``Each`` the pipeline gives the ARCH-scoped rule ``rule`` (for asking a rule's ``check`` directly)."""
    return _Each(sm, rule)


def _listed(rule: Rule, sm: Model, rel: str) -> list[Finding | Found]:
    return list(rule.check(sm, rel))


def _fix_of(sm: Model, fd: Found) -> Fix | None:
    # Inside the fix's own answer: it rests on the answers its group was made from, and on what it reads itself.
    for q in fd.rests_on:
        sm.queries.note_answer(q)
    assert fd.fix is not None
    return fd.fix()


def run_rule(sm: Model, rule: Rule) -> Iterator[Finding]:
    """``rule``'s findings on ``sm``, asked per its scope, each with its fix attached. A FILE rule's answer per file
    and every fix (fixgen re-reads whole files) are kept between runs with the files they read."""
    meta = rule.meta
    raw: Iterable[Finding | Found]
    if meta.scope is Scope.FILE:
        # One answer per file: an unchanged file's facts are not even loaded.
        raw = (x for rel in sm.model_files()
               for x in sm.queries.get((meta.id, rel), functools.partial(_listed, rule, sm, rel), persist=True))
    elif meta.scope is Scope.ARCH:
        raw = rule.check(sm, _Each(sm, meta.id))
    else:
        raw = rule.check(sm)
    for x in raw:
        fd = rule.finish(sm, x)
        f = fd.finding
        if fd.fix is not None and f.fix is None:
            fx = sm.queries.get(("fix", meta.id, f), functools.partial(_fix_of, sm, fd), persist=True)
            if fx is not None and fx.edits:
                f = dataclasses.replace(f, fix=fx)
        yield f


def run_rules(sm: Model, rules: Iterable[object]) -> tuple[list[Finding], list[InternalError]]:
    """Every rule's findings, sorted, and the internal errors of the rules that broke."""
    findings: list[Finding] = []
    errors: list[InternalError] = []
    for rule in rules:
        assert isinstance(rule, Rule)
        try:
            findings.extend(run_rule(sm, rule))
        except Exception as exc:  # noqa: BLE001 - one broken rule must not hide the others
            errors.append(
                InternalError(f"rule {rule.meta.id}", f"{type(exc).__name__}: {exc}", traceback.format_exc())
            )
    findings.sort(key=Finding.sort_key)
    sm.store.save()
    return findings, errors


def serving_verdicts(sm: Model, findings: Sequence[Finding],
                     errors: list[InternalError]) -> dict[str, ServingVerdict]:
    out: dict[str, ServingVerdict] = {}
    for arch in sm.targeted:
        try:
            # Rules (EGL007) may have asked for the chain already; its next step names fixes, so it is
            # worked out again now that every rule has run.
            sv = engine_hooks.serving_verdict(sm, arch)
            if sv is not None:
                out[arch] = engine_hooks.with_next_step(sm, sv, findings)
        except Exception as exc:  # noqa: BLE001 - one architecture's chain must not sink the report
            errors.append(InternalError(f"serving {arch}", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
    return out


def unreported_blockers(sm: Model, found: list[Finding], ran: set[str], errors: list[InternalError]) -> list[Finding]:
    """``found`` with the failing serving steps no rule that ran reports (EGL012's, if it ran), finished as the rules'
    findings are: whether a step is reported depends on every other rule's findings, so the pipeline makes them."""
    from eagle3_lint import serving_steps
    from eagle3_lint.rules import Role, all_rules

    rule = next((r for r in all_rules() if r.meta.role is Role.UNREPORTED_BLOCKER and r.meta.id in ran), None)
    if rule is None or not sm.targeted:
        return found
    try:
        extra = [rule.finish(sm, f).finding for f in serving_steps.unreported_blockers(sm, found)]
    except Exception as exc:  # noqa: BLE001 - a serving-chain bug must not lose the findings (the chain reports it)
        errors.append(InternalError(f"rule {rule.meta.id}", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
        return found
    return sorted([*found, *extra], key=Finding.sort_key) if extra else found


def apply_suppressions(sm: Model, findings: list[Finding], ran: set[str],
                       errors: list[InternalError]) -> tuple[list[Finding], list[tuple[Finding, Suppression]]]:
    from eagle3_lint import suppress

    try:
        return suppress.apply(sm, findings, ran)
    except Exception as exc:  # noqa: BLE001 - a comment-scanning bug must not lose the findings
        errors.append(InternalError("suppressions", f"{type(exc).__name__}: {exc}", traceback.format_exc()))
        return findings, []


def analyze(source: SourceTree, options: Options, select: Callable[[str], bool] | None = None,
            store: FactStore | None = None, keep: bool = True) -> Analysis:
    """The analysis of ``source``. Its answers are kept for the next check at the end (``keep``), or by the caller
    with ``keep_answers`` once it has asked for more (the JSON report's rows, outcome.json_text)."""
    from eagle3_lint import guard
    from eagle3_lint.rules import all_rules

    rules = [r for r in all_rules() if select is None or select(r.meta.id)]
    # Nothing under the tree may be imported, executed or written while it is analyzed (guard.py).
    with guard.protect(source):
        built = build(source, options, store)
        sm = built.model
        errors = list(built.errors)
        # A rule resting on what this engine does not model yet would report false findings: it does not run.
        rules = [r for r in rules if sm.engine.has(*r.meta.needs)]
        if sm.contract.check is CheckKind.NONE:  # the method's runner asks the model nothing: nothing to judge there
            rules = [r for r in rules if not r.meta.asked_of_model]
        t = time.perf_counter()
        found, rule_errors = run_rules(sm, rules)
        errors += rule_errors
        found = unreported_blockers(sm, found, {r.meta.id for r in rules}, errors)
        findings, suppressed = apply_suppressions(sm, found, {r.meta.id for r in rules}, errors)
        # Empty where the engine has no serving chain (serving_verdict: None).
        serving = serving_verdicts(sm, findings, errors)
        # A file whose facts could not be extracted because of a bug of ours is an internal error (exit 2).
        for mf in sm.store.loaded():
            err: str | None = getattr(mf, "internal_error", None)
            if err:
                msg, _, tb = err.partition("\n")
                errors.append(InternalError(f"facts {mf.path}", msg, tb))
        timings = {**built.timings, "rules": time.perf_counter() - t}
        an = Analysis(sm, tuple(findings), tuple(suppressed), serving, tuple(errors), timings, built.keep)
        if keep:
            keep_answers(an)
    return an


def keep_answers(an: Analysis) -> None:
    """Save the answers for the next check; after an internal error, drop them (the next check starts afresh)."""
    from eagle3_lint import queries as queries_mod

    k = an.keep
    if k is None:
        return
    store = an.model.store
    if k.snapshot is not None and not store.unchanged(k.snapshot):
        # A file changed while this first check ran: the hashes may not be those of what the answers were made from.
        queries_mod.save(k.table, k.head, k.files, k.derived, None)
        return
    queries_mod.save(k.table, k.head, k.files, k.derived, None if an.errors else an.model.queries)
    store.save()  # the facts and stat memos loaded since the rules ran (rendering), if any
