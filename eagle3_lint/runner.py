"""The runner's aux-layer path and the config-time gates, as data.

Each engine reads them from the tree (``engines/<engine>/runner.py``): every place the runner checks
the top-level model for the EAGLE-3 contract, the object it interrogates, the error it raises, the
config key the layer ids come from, the model methods it calls afterwards; the pipeline-parallel
verifier, relay and drafter rank guard; and the ``if`` statements that refuse EAGLE-3 by ``model_type`` at config time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class SetterIds(str, Enum):
    """What a runner site hands the setter."""

    DRAFTER = "drafter"  # the drafter config's ids (the model's default when the config names none)
    DEFAULT = "default"  # no ids: the model's own default layers, until a later call sets others
    # No ids, and the same function then captures (a CUDA graph): the default layers are baked into what it
    # captured, whatever a later call sets.
    CAPTURED_DEFAULT = "captured-default"


class RunnerKind(str, Enum):
    """The engine's model runners (an engine with one runner uses V1; the engine package says which is which)."""

    V1 = "v1"
    V2 = "v2"

# Stands for the interrogated model's class name in ``RunnerSite.error`` (an f-string message such as
# ``f"Model {model.__class__.__name__} does not implement ..."``): the site is one for every architecture, and
# the trace puts the architecture's class in its place.
MODEL_CLASS = "<model class>"


@dataclass(frozen=True)
class RunnerSite:
    path: str
    line: int
    function: str
    interrogated: str  # source text of the object passed to the check, or of the receiver
    error: str = ""  # the exception the user sees, with MODEL_CLASS where the message names the model's class
    error_line: int = 0
    config_function: str | None = None
    config_line: int = 0
    fallback: str | None = None
    fallback_line: int = 0
    setter: str | None = None
    setter_line: int = 0
    checked: bool = True  # False where the runner calls the methods with no check first
    negated: bool = True  # ``if not supports_eagle3(...): raise`` (0.12+) vs ``if supports_eagle3(...): set`` (0.11)
    # The site's function calls the tree's relay set-up (``relay_setup`` below): the pipeline's
    # intermediate tensors get slots for the aux states. None: the tree has no such set-up.
    reserves_relay: bool | None = None
    kind: RunnerKind = RunnerKind.V1  # which of the engine's runners this site belongs to
    setter_ids: SetterIds | None = None  # what the setter call is given (None: the site calls no setter)


@dataclass(frozen=True)
class Gate:
    path: str
    line: int
    methods: tuple[str, ...]  # speculative methods it applies to ("eagle3", ...)
    allow_list: tuple[str, ...]
    list_name: str | None
    list_line: int
    config_attr: str  # e.g. "hf_text_config"
    match: str  # "substring"
    error: str


@dataclass(frozen=True)
class GateEdit:
    """Where EGL009's fix edits the gate at ``path:line`` (fixgen.allow_list_edits), in characters, as the engine
    read it: the allow-list's last element (line, end line, end column) and the list's end line; or the
    ``"<type>" not in X.model_type`` test's span (line, end line, column, end column) and ``X.model_type`` as
    written."""

    path: str
    line: int
    list_end: tuple[int, int, int, int] = (0, 0, 0, 0)
    literal_span: tuple[int, int, int, int] = (0, 0, 0, 0)
    literal_attr: str = ""


@dataclass(frozen=True)
class RankGuard:
    """A runner that builds its drafter on the last pipeline rank only, while start-up reads it on every rank.

    vLLM's V1 runner (``v1/worker/gpu_model_runner.py``) assigns ``self.drafter`` in ``__init__`` under
    ``if self.speculative_config and get_pp_group().is_last_rank:`` (0.32.0 :590), but ``initialize_kv_cache``,
    which every worker calls, reaches an unguarded read of it under ``use_eagle()`` (0.32.0
    ``_check_and_update_cudagraph_mode``, :6867-6873): with pipeline parallelism the other ranks raise
    AttributeError at engine start. Read from the tree by ``engines/vllm/runner.rank_guard``.
    """

    path: str
    attr: str  # the runner's attribute ("drafter")
    guard_line: int  # the ``if`` around the assignment
    guard: str  # its test, as source
    entry: str  # the start-up method every rank calls ("initialize_kv_cache")
    calls: tuple[str, ...]  # the methods from ``entry`` to the read, ``entry`` first
    read_line: int  # the unguarded read
    read_test_line: int  # the ``if`` the read sits in (0: none)
    read_test: str  # its test, as source


@dataclass(frozen=True)
class TargetCall:
    """Another method the engine calls on the top-level target model while it starts with EAGLE-3, besides the
    setter, which a class without it fails on at load (``AttributeError``).

    SGLang's EAGLE worker takes the target's embedding and LM head for the drafter: ``get_embed_and_head()``
    (0.5.23 ``speculative/pp_draft_embedding.py:95``, reached from ``eagle_worker_v2.py:339``; 0.5.10
    ``speculative/eagle_worker.py:158``). Read from the tree by ``engines/sglang/target_calls.derive``.
    """

    path: str
    line: int
    function: str  # the enclosing def
    method: str  # "get_embed_and_head"
    receiver: str  # as written: ``target_model``, ``self.target_worker.model_runner.model``
    # Methods the same function calls instead when the target has them (a ``hasattr`` test before the call):
    # 0.5.22's ``get_embed_and_head_for_draft``. A class with one of them passes.
    alternatives: tuple[str, ...] = ()
    # Whether the engine makes this call before it checks the setter: True, False, or None (the tree does not say).
    before_setter: bool | None = None
    order_why: str = ""  # how the order was read, with file:line


@dataclass(frozen=True)
class RunnerPath:
    sites: tuple[RunnerSite, ...] = ()
    config_key: str | None = None
    config_key_path: str = ""
    pp_verifier: str | None = None  # function that refuses PP unless the decoder sets the flag
    pp_verifier_path: str = ""
    pp_verifier_line: int = 0
    pp_flag: str | None = None
    # A runner-side function that gives ``model.make_empty_intermediate_tensors`` room for aux states
    # (0.33's ``reserve_aux_intermediate_tensor_slots``): without it a relaying decoder's last rank misses them.
    relay_setup: str | None = None
    relay_setup_path: str = ""
    relay_setup_line: int = 0
    gates: tuple[Gate, ...] = ()
    gate_edits: tuple[GateEdit, ...] = ()  # one for each gate, where its fix goes
    notes: tuple[str, ...] = field(default_factory=tuple)
    # The drafter exists on the last pipeline rank only, but start-up reads it on every rank (None: not so here).
    rank_guard: RankGuard | None = None
    # Other methods the engine calls on the top-level target at start-up (SGLang's get_embed_and_head), in path order.
    target_calls: tuple[TargetCall, ...] = ()

    def gate_edit(self, g: Gate) -> GateEdit | None:
        return next((e for e in self.gate_edits if e.path == g.path and e.line == g.line), None)

    def site_for(self, kind: RunnerKind) -> RunnerSite | None:
        """The call site of runner ``kind`` (its first one), or None when this tree has no such runner."""
        return next((s for s in self.sites if s.kind is kind), None)

    @property
    def kinds(self) -> tuple[RunnerKind, ...]:
        return tuple(k for k in RunnerKind if self.site_for(k) is not None)

    @property
    def primary(self) -> RunnerSite | None:
        """The site a plain set-up reaches first (the engine lists it first)."""
        return self.sites[0] if self.sites else None

    @property
    def fallback_names(self) -> tuple[str, ...]:
        return tuple(sorted({s.fallback for s in self.sites if s.fallback}))

    @property
    def setter_names(self) -> tuple[str, ...]:
        return tuple(sorted({s.setter for s in self.sites if s.setter}))

    @property
    def model_calls(self) -> tuple[str, ...]:
        return tuple(sorted({n for s in self.sites for n in (s.setter, s.fallback) if n}))

