"""The engine boundary: what the engine-neutral core asks of a serving engine.

An ``Engine`` knows one engine's tree: how to recognise it, where its model files live, how to read
its registry, EAGLE-3 contract and runner path (as the neutral data of ``registry.py``,
``contract.py`` and ``runner.py``), and how to fetch a release. Everything that names an engine's
modules or paths lives in ``engines/<engine>/``; the facts, class graph, semantic model, rules,
fixes and reports take what they need from here.
"""

from __future__ import annotations

import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    import os

    from eagle3_lint.contract import Contract
    from eagle3_lint.registry import Registry
    from eagle3_lint.runner import RunnerPath
    from eagle3_lint.source import SourceTree
    from eagle3_lint.store import FactStore


_T = TypeVar("_T")
ErrorRecord = tuple[str, str, str]  # (where, message, traceback)


def safely(errors: list[ErrorRecord], where: str, fn: Callable[[], _T], fallback: Callable[[], _T]) -> _T:
    """``fn()``, or, if it raises (a bug of ours), a recorded error and ``fallback()``: the rest still runs."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - one derivation must not sink the report
        errors.append((where, f"{type(exc).__name__}: {exc}", traceback.format_exc()))
        return fallback()


class Capability(str, Enum):
    """What an engine's derivation gives the core beyond registry, contract and runner sites. A rule (or the
    part of one) that rests on a capability runs only for engines that declare it (``RuleMeta.needs``), so a
    rule whose model of the engine is not right yet produces nothing rather than false findings."""

    # The contract's Protocol-era plumbing semantic.py models besides collection: default method bodies, the
    # mixin, the runner's fallback getter (EGL001's chain fix, EGL002's "passes but does not reach", EGL006).
    AUX_PLUMBING = "aux-plumbing"
    # What the setter the runner calls feeds and how the layer owner's forward collects (``semantic.setter_effect``,
    # ``semantic.forward_of``, the layer loops): EGL003-EGL005. Engines whose models collect through lists or
    # per-layer flags declare it with a ``CollectionIdiom``.
    AUX_COLLECTION = "aux-collection"
    CONFIG_GATES = "config-gates"  # the runner path reads config-time model_type gates (EGL009)
    DRAFTER_IDS = "drafter-ids"  # drafter configs, the id convention and the PP split are read (EGL007)


class Mechanism(str, Enum):
    """How a decoder's forward decides which layers' hidden states to collect."""

    LIST = "list"  # the layer index is tested against a list attribute of the decoder (``i in self.<list>``)
    FLAG = "flag"  # each layer object carries a flag the loop reads (``getattr(layer, "<flag>", False)``)


@dataclass(frozen=True)
class CollectionIdiom:
    """The names an engine's models collect aux hidden states by, when they are not the contract's own
    (an engine with no Protocol or mixin): the semantic model reads setters and forwards with them."""

    list_attrs: tuple[str, ...]  # decoder attributes holding the layer ids to capture
    layer_flags: tuple[str, ...]  # per-layer attributes marking a layer whose input is captured
    capture_flag: str  # the top-level attribute that makes ``forward`` unpack ``(hidden, aux)``
    # The body of a new setter, in the engine's own style: ``{path}`` is the layer owner (``self.model``),
    # ``{list}`` the list attribute, ``{param}`` the ids parameter, ``{flag}`` the capture flag.
    setter_body: tuple[str, ...] = ()
    # The same body for a runner that always hands the setter ids (``Contract.ids_always_given``): no default branch.
    setter_body_given: tuple[str, ...] = ()


@dataclass(frozen=True)
class Derived:
    """What an engine reads from a tree before any class is judged."""

    registry: Registry
    contract: Contract
    runner: RunnerPath
    # (where, message, traceback) of derivations that failed with a bug of ours; the rest still ran.
    errors: tuple[ErrorRecord, ...] = ()


@runtime_checkable
class EngineProtocol(Protocol):
    """What an engine plugin is to the registry and the target resolver: data in, data out. An engine's identity,
    its release spellings, the test of a folder, its version, its fetch and its derivation (registry, contract and
    runner path as plain data); ``Engine`` below implements it and adds what configs and ``--method`` mean before
    any class is judged. Config gates, the drafter and the serving chain read the model: ``engine_hooks.ModelHooks``,
    with defaults for an engine that models none of it."""

    name: str
    display: str
    package: str
    dists: tuple[str, ...]
    order: int
    model_dirs: tuple[str, ...]
    registry_module: str
    capabilities: frozenset[Capability]
    collection: CollectionIdiom | None

    @property
    def release_names(self) -> tuple[str, ...]: ...

    def tree_root(self, path: Path) -> Path | None: ...

    def version(self, source: SourceTree) -> str: ...

    def fetch_release(self, version: str, cache_dir: str | os.PathLike[str] | None,
                      progress: Callable[[str], None] | None = None) -> Path: ...

    def derive(self, source: SourceTree, store: FactStore, preload: Callable[[], None]) -> Derived: ...

    def is_model_file(self, rel: str) -> bool: ...

    def with_plugins(self, source: SourceTree, specs: list[str]) -> SourceTree: ...


# The methods of engine_hooks.ModelHooks, the hooks that take the semantic model (an engine's subclass of that class
# defines them; ``Engine.__init_subclass__`` refuses one that defines them on its own).
MODEL_HOOKS = ("config_refusal", "target_model_type", "pp_refused", "draft_analysis", "serving_verdict",
               "with_next_step")


class Engine(ABC):
    """One serving engine, as the core sees it before the semantic model exists (``EngineProtocol``, plus what the
    stages ask of configs and ``--method``); the hooks that read the model are ``engine_hooks.ModelHooks``'."""

    name: str  # the entry point's name (``eagle3_lint.engines``), the report's engine and ``--engine`` value
    display: str  # the engine's own spelling, for messages
    package: str  # the top-level package that holds its code
    # The distribution names a release is spelled with (``<dist>==X.Y.Z``, compared as PyPI does): () is the name.
    dists: tuple[str, ...] = ()
    # Where the engine comes among the others (``engines.all_engines``): the first is the default one, of a tree
    # that holds no engine and of ``matrix --releases``; an engine that comes after the tool's own keeps 100.
    order: int = 100
    model_dirs: tuple[str, ...]  # folders (relative to the tree root) whose files are model code
    registry_module: str  # where the architecture registry is read from
    # Helpers that build an inner model from the registry by architecture name (``self.x = helper(...)``).
    registered_model_helpers: tuple[str, ...] = ()
    # The interface a model class needs before the engine lets it run under pipeline parallelism ("": none).
    pp_protocol: str = ""
    # How a user picks the first runner when a release defaults to another (an environment setting; "": none).
    runner_switch: str = ""
    # The environment setting that overrides the pipeline-parallel layer split ("": none).
    pp_partition_env: str = ""
    # How documents name the check a status reports (matrix legends), and what else refuses a supported class.
    check_words: str = "the engine's own EAGLE-3 check"
    gate_note: str = ""
    capabilities: frozenset[Capability] = frozenset()
    # How models collect aux hidden states when not through the contract's own names (None: the contract says).
    collection: CollectionIdiom | None = None
    # The speculative methods ``--method`` may name, EAGLE-3's first: the ones whose gates the engine derives from the
    # tree (methods that feed the drafter the target's hidden states, and EAGLE-1 given an EAGLE-3 drafter).
    spec_methods: tuple[str, ...] = ()
    # The report's engine-specific version field this engine's reports carried before ``engine_version``.
    report_version_field: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The hooks that read the Model are engine_hooks.ModelHooks' (they sit above the stages this module is
        # below): one defined here without it would never be called, so the engine is refused as it is written.
        stray = [h for h in MODEL_HOOKS if h in vars(cls)]
        if stray and not getattr(cls, "models_hooks", False):
            raise TypeError(f"{cls.__name__} defines {', '.join(stray)} without eagle3_lint.engine_hooks.ModelHooks "
                            f"among its bases: the core would never call {'them' if len(stray) > 1 else 'it'}")

    def has(self, *caps: Capability) -> bool:
        return all(c in self.capabilities for c in caps)

    @property
    def release_names(self) -> tuple[str, ...]:
        """How a release of this engine is spelled before ``==X.Y.Z``, the first in messages."""
        return self.dists or (self.name,)

    @abstractmethod
    def tree_root(self, path: Path) -> Path | None:
        """The root of this engine's tree for a folder the user gave (the folder holding the package), or None."""

    def version(self, source: SourceTree) -> str:
        return source.package_version(self.package)

    @abstractmethod
    def fetch_release(self, version: str, cache_dir: str | os.PathLike[str] | None,
                      progress: Callable[[str], None] | None = None) -> Path:
        """The cached tree of release ``version``, downloaded on first use."""

    @abstractmethod
    def derive(self, source: SourceTree, store: FactStore, preload: Callable[[], None]) -> Derived:
        """Registry, contract and runner path of ``source``. ``preload()`` parses the model files; the engine
        calls it exactly once, where it suits it (work that needs no model file can overlap the parse)."""

    def for_method(self, source: SourceTree, store: FactStore, derived: Derived, method: str) -> Derived:
        """What ``derive`` gave, for speculative method ``method`` (``--method``): the contract and runner path that
        method's runner asks the target for, which the verdicts, rules and fixes then read; ``derived`` itself where
        they are EAGLE-3's (vLLM's dflash and extract_hidden_states ride ``SupportsEagle3``)."""
        del source, store, method
        return derived

    def is_model_file(self, rel: str) -> bool:
        return rel.startswith(self.model_dirs)

    def with_plugins(self, source: SourceTree, specs: list[str]) -> SourceTree:
        """``source`` with out-of-tree model plugins overlaid (``--plugin``)."""
        from eagle3_lint.errors import UsageError

        raise UsageError(f"--plugin: {self.display} has no out-of-tree model plugins this tool can read")

    # -- what the engine reads of configs and --method before any class is judged --------------------------------
    def unnamed_sub_config(self, source: SourceTree, sub: dict[str, Any]) -> tuple[str, ...]:
        """The architectures the engine gives a registered inner model whose sub-config names none (none here)."""
        del source, sub
        return ()

    def method_spelling(self, source: SourceTree, method: str) -> str:
        """``method`` (``--method``) as this release's own parser of the name reads it, so the tool accepts what the
        engine accepts (SGLang upper-cases ``--speculative-algorithm``); as given where the engine does not say."""
        del source
        return method

    def method_refusal(self, source: SourceTree, method: str) -> str | None:
        """Why this release refuses speculative method ``method`` before anything loads (it does not have it), as a
        usage error; None when it has it or the engine does not say (``spec_methods`` is the tool's own list)."""
        return None
