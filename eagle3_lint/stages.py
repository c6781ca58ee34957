"""The pipeline's stage outputs: frozen data, each made from the one before it (analysis.py builds them in order).

``Facts`` (the tree and its per-file facts) -> ``EngineData`` (what the engine derives from the tree: registry,
contract, runner path) -> ``Model`` (the semantic model over them: the class graph, the class verdicts, and the
query layer that keeps its answers) -> ``Analysis`` (the findings of the rules, the suppressions, the serving
verdicts, the internal errors: what the emitters render). Nothing here is set after it is made; a stage's
consumers take the narrowest of these they need: rules, the semantic model, fixes and the engines' serving chains
take a ``Model``; renderers take an ``Analysis`` and their options.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eagle3_lint.contract import Contract
    from eagle3_lint.engine import Engine, ErrorRecord
    from eagle3_lint.graph import ClassGraph, ClassKey
    from eagle3_lint.model import Finding, Suppression, Verdict
    from eagle3_lint.queries import Memo, Queries, Table
    from eagle3_lint.registry import Registry
    from eagle3_lint.runner import RunnerPath
    from eagle3_lint.serving import ServingVerdict
    from eagle3_lint.source import SourceTree
    from eagle3_lint.store import FactStore
    from eagle3_lint.verdict import Judge


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class InternalError:
    where: str
    message: str
    traceback: str = ""


@dataclass(frozen=True, eq=False)
class Facts:
    """The source stage: the tree (read-only, never imported) and the facts of its files, one AST pass each."""

    source: SourceTree
    store: FactStore


@dataclass(frozen=True, eq=False)
class EngineData:
    """What the engine derives from the tree before any class is judged: plain data (``Engine.derive``)."""

    engine: Engine
    version: str
    registry: Registry
    contract: Contract
    runner: RunnerPath
    # (where, message, traceback) of derivations that failed with a bug of ours; the rest still ran.
    errors: tuple[ErrorRecord, ...] = ()


@dataclass(frozen=True, eq=False)
class Model:
    """The semantic model: the class graph over the facts, each registered architecture's class and verdict, the
    engine data and the options. What the rules, fixes, the semantic queries (semantic.py) and the engines' serving
    chains read. Its derived answers are kept by the query layer (``queries``), which records what each one read;
    ``memo`` is that layer's per-analysis view."""

    facts: Facts
    data: EngineData
    options: Options
    graph: ClassGraph
    judge: Judge
    verdicts: Mapping[str, Verdict]
    keys: Mapping[str, ClassKey | None]
    queries: Queries
    memo: Memo

    # The stages before this one, by the names their data goes by.
    @property
    def source(self) -> SourceTree:
        return self.facts.source

    @property
    def store(self) -> FactStore:
        return self.facts.store

    @property
    def engine(self) -> Engine:
        return self.data.engine

    @property
    def version(self) -> str:
        return self.data.version

    @property
    def registry(self) -> Registry:
        return self.data.registry

    @property
    def contract(self) -> Contract:
        return self.data.contract

    @property
    def runner(self) -> RunnerPath:
        return self.data.runner

    @property
    def targeted(self) -> tuple[str, ...]:
        return self.options.targets

    def is_targeted(self, arch: str | None) -> bool:
        return arch is not None and arch in self.options.targets

    def model_files(self) -> list[str]:
        # Asked by every per-file rule; the listing is the same all through a check.
        return self.memo.get("model-files", lambda: [f for f in self.source.py_files() if self.engine.is_model_file(f)])

    def model_classes(self) -> Iterator[tuple[ClassKey, str]]:
        """Every class defined at module level in the model files, with its file."""
        from eagle3_lint.graph import ClassKey

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


@dataclass(frozen=True)
class Keep:
    """Where and under what this analysis' answers are kept for the next check (queries.save)."""

    table: Table
    head: str
    # The tree's content hashes; on a first check (no table to compare them with) taken once the model is built, and
    # the answers kept only if no file changed since ``snapshot`` (the tree's stats when the check started).
    files: dict[str, bytes | None]
    derived: str  # queries.derived_digest of what the engine derived before the first answer
    snapshot: dict[str, tuple[int, ...] | None] | None = None


@dataclass(frozen=True, eq=False)
class Analysis:
    """The pipeline's result: the model, and what the rules, the suppressions and the serving chains made of it.
    Emitters render it (with their own options); nothing in it changes once made."""

    model: Model
    findings: tuple[Finding, ...] = ()  # reported, sorted (Finding.sort_key)
    # Findings silenced by an inline ``# eagle3-lint: ignore[...]`` comment (suppress.py), with why.
    suppressed: tuple[tuple[Finding, Suppression], ...] = ()
    # The serving verdict per targeted architecture (serving.py), made after the rules ran.
    serving: Mapping[str, ServingVerdict] = field(default_factory=dict)
    errors: tuple[InternalError, ...] = ()
    timings: Mapping[str, float] = field(default_factory=dict)
    keep: Keep | None = None

    # The model's data, by the names reports and tests read it by.
    @property
    def options(self) -> Options:
        return self.model.options

    @property
    def source(self) -> SourceTree:
        return self.model.source

    @property
    def store(self) -> FactStore:
        return self.model.store

    @property
    def graph(self) -> ClassGraph:
        return self.model.graph

    @property
    def judge(self) -> Judge:
        return self.model.judge

    @property
    def engine(self) -> Engine:
        return self.model.engine

    @property
    def version(self) -> str:
        return self.model.version

    @property
    def registry(self) -> Registry:
        return self.model.registry

    @property
    def contract(self) -> Contract:
        return self.model.contract

    @property
    def runner(self) -> RunnerPath:
        return self.model.runner

    @property
    def verdicts(self) -> Mapping[str, Verdict]:
        return self.model.verdicts

    @property
    def keys(self) -> Mapping[str, ClassKey | None]:
        return self.model.keys

    @property
    def targeted(self) -> tuple[str, ...]:
        return self.model.targeted

    def read_text(self, rel: str) -> str:
        return self.model.read_text(rel)
