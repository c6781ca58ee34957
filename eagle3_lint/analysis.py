"""The pipeline: tree -> facts -> graph -> contract + runner + registry -> verdicts -> rules.

``analyze`` builds one ``Context`` that rules query. Internal errors inside one rule are caught and
recorded, so the other rules' findings still reach the report.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from eagle3_lint import contract as contract_mod
from eagle3_lint import registry as registry_mod
from eagle3_lint import runner as runner_mod
from eagle3_lint.contract import CheckKind, Contract
from eagle3_lint.graph import ClassGraph, ClassKey
from eagle3_lint.model import Finding, Status, Verdict
from eagle3_lint.registry import Registry
from eagle3_lint.runner import RunnerPath
from eagle3_lint.semantic import Memo
from eagle3_lint.source import SourceTree
from eagle3_lint.store import FactStore
from eagle3_lint.verdict import Judge

if TYPE_CHECKING:
    from eagle3_lint.serving import ServingVerdict
    from eagle3_lint.suppress import Suppression

# Plugin files (``--plugin``, plugins.py) are model files too, under their ``<plugin>/`` display prefix.
MODEL_DIRS = ("vllm/model_executor/models/", "vllm/models/", "<plugin")


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
    debug: bool = False
    # progress(message) for a step, progress(message, done, total) for a counted one (cli.py renders it).
    progress: Callable[..., None] | None = None


@dataclass
class InternalError:
    where: str
    message: str
    traceback: str = ""


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
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    keys: dict[str, ClassKey | None] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    errors: list[InternalError] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    # Findings silenced by an inline ``# eagle3-lint: ignore[...]`` comment (suppress.py), with why.
    suppressed: list[tuple[Finding, Suppression]] = field(default_factory=list)
    # Answers of the semantic model (semantic.py) and of rules, shared by rules, fixes and the serving verdict.
    memo: Memo = field(default_factory=Memo)
    # The serving verdict per targeted architecture (serving.py), made after the rules ran.
    serving: dict[str, ServingVerdict] = field(default_factory=dict)

    @property
    def targeted(self) -> tuple[str, ...]:
        return self.options.targets

    def is_targeted(self, arch: str | None) -> bool:
        return arch is not None and arch in self.options.targets

    def model_files(self) -> list[str]:
        return [f for f in self.source.py_files() if f.startswith(MODEL_DIRS)]

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


def sub_config_architectures(cfg: dict[str, Any], expr: str) -> tuple[str, ...]:
    """The ``architectures`` of the sub-config an ``hf_config=`` expression names (``config.text_config``)."""
    parts = [p for p in expr.replace("()", "").split(".") if p]
    while parts and parts[0] not in cfg:
        parts = parts[1:]
    cur: Any = cfg
    for p in parts:
        cur = cur.get(p) if isinstance(cur, dict) else None
    archs = cur.get("architectures") if isinstance(cur, dict) and parts else None
    return tuple(a for a in archs if isinstance(a, str)) if isinstance(archs, list) else ()


_T = TypeVar("_T")


def _safely(errors: list[InternalError], where: str, fn: Callable[[], _T], fallback: Callable[[], _T]) -> _T:
    """``fn()``, or, if it raises (a bug of ours), an internal error and ``fallback()``: the rest still runs."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - one derivation must not sink the report
        errors.append(InternalError(where, f"{type(exc).__name__}: {exc}", traceback.format_exc()))
        return fallback()


def _no_contract(iface: list[str]) -> Contract:
    return Contract(found=False, check=CheckKind.UNKNOWN, path=iface[0] if iface else "",
                    notes=("internal error while reading the contract",))


def build(source: SourceTree, options: Options, store: FactStore | None = None) -> Context:
    """``store``: one the caller already opened on ``source`` (to hash the tree first), else a new one."""
    t0 = time.perf_counter()
    if store is None:
        store = FactStore(source, options.cache_dir)
    contract_errors: list[InternalError] = []  # reported after the registry's, as they always were
    # Whole-tree derivations are cached under the content hashes of the files they read (store.memo).
    # The contract (one small file) comes first, so that a cold run can read the runner path (2,000+
    # files, ~0.3 s) in a second process while this one parses the model files.
    iface = [p for p in (source.module_path(contract_mod.INTERFACES_MODULE),) if p]
    contract = _safely(contract_errors, "contract", lambda: store.memo("contract", (), iface, contract_mod.derive),
                       lambda: _no_contract(iface))
    rargs = (contract.check_function, contract.required if contract.found else (), contract.pp_flag)
    runner_job = store.memo_in_background("runner", rargs, runner_mod.input_files(source),
                                          lambda src: runner_mod.derive(src, *rargs))
    store.preload([rel for rel in source.py_files() if rel.startswith(MODEL_DIRS)], options.progress)
    t1 = time.perf_counter()
    reg_mf = store.load(registry_mod.REGISTRY_MODULE)
    try:
        reg_text = source.read_bytes(reg_mf.path).decode("utf-8", "replace") if reg_mf else ""
    except OSError:
        reg_text = ""
    derive_errors: list[InternalError] = []
    registry = _safely(derive_errors, "registry", lambda: registry_mod.derive(reg_mf, reg_text),
                       lambda: registry_mod.Registry(False, reg_mf.path if reg_mf else "", {}, (),
                                                     registry_mod.DEFAULT_PREFIX, "internal error while reading it"))
    extend = getattr(source, "extend_registry", None)  # --plugin: the plugins' register_model calls
    if extend is not None:
        registry = extend(registry)
    derive_errors.extend(contract_errors)
    runner = _safely(derive_errors, "runner", runner_job,
                     lambda: RunnerPath(notes=("internal error while reading the runner",)))
    if not contract.found:
        calls = runner.model_calls
        contract = _safely(derive_errors, "contract", lambda: store.memo(
            "contract-duck", (calls,), iface, lambda src: contract_mod.derive(src, calls)), lambda: _no_contract(iface))
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
        return sub_config_architectures(options.target_config, expr)

    graph = ClassGraph(loader=store.load, registered=registered, checkpoint_archs=checkpoint_archs)
    judge = Judge(graph, contract, runner)
    ctx = Context(source, store, graph, contract, runner, registry, judge, options, source.vllm_version())
    ctx.errors.extend(derive_errors)
    for arch, e in registry.entries.items():
        try:
            key, note = resolve_entry(graph, e.module, e.class_name)
            ctx.keys[arch] = key
            ctx.verdicts[arch] = judge.verdict(e, key, note, getattr(e, "path", "") or registry.path)
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
    from eagle3_lint import serving

    out: dict[str, ServingVerdict] = {}
    for arch in ctx.targeted:
        try:
            # Rules (EGL007) may have asked for the chain already; its next step names fixes, so it is
            # worked out again now that every rule has run.
            out[arch] = serving.with_next_step(ctx, serving.verdict(ctx, arch))
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
            store: FactStore | None = None) -> Context:
    from eagle3_lint import guard
    from eagle3_lint.rules import all_rules

    rules = [r for r in all_rules() if select is None or select(r.meta.id)]
    # Nothing under the tree may be imported, executed or written while it is analyzed (guard.py).
    with guard.protect(source):
        ctx = build(source, options, store)
        t = time.perf_counter()
        run_rules(ctx, rules)
        apply_suppressions(ctx, {r.meta.id for r in rules})
        ctx.serving = serving_verdicts(ctx)
        # A file whose facts could not be extracted because of a bug of ours is an internal error (exit 2).
        for mf in ctx.store.loaded():
            err: str | None = getattr(mf, "internal_error", None)
            if err:
                msg, _, tb = err.partition("\n")
                ctx.errors.append(InternalError(f"facts {mf.path}", msg, tb))
        ctx.timings["rules"] = time.perf_counter() - t
    return ctx
