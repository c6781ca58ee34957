"""What an engine makes of the semantic model: its config-time refusals, its drafter analysis and its serving chain.

The ``Engine`` (engine.py) is what the stages before the model need: identity, detection, fetch and the derivation
of plain data (registry, contract, runner path). These hooks take the ``Model`` that is built from that data, so
they sit above it: an engine that models them subclasses ``ModelHooks`` beside ``Engine``, and the core asks them
through the functions below, which give an engine that models none of them the defaults (no gate, no drafter
analysis, no serving chain). ``Engine.__init_subclass__`` refuses an engine that defines a hook without
``ModelHooks``, so a hook is never silently ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eagle3_lint.drafter import DraftAnalysis
    from eagle3_lint.model import Finding
    from eagle3_lint.runner import Gate, RunnerKind
    from eagle3_lint.serving import ServingVerdict
    from eagle3_lint.stages import Model


class ModelHooks:
    """The hooks of an engine that reads the semantic model; each default means "this engine has none"."""

    models_hooks = True  # what ``Engine.__init_subclass__`` looks for (engine.py cannot name this class)

    # -- config-time refusals (None: the engine has no such gate) ---------------------------------------------
    def config_refusal(self, sm: Model, arch: str) -> tuple[Gate, str] | None:
        """The config-time gate that refuses EAGLE-3 for ``arch`` with no target config, and the model_type it
        judged by (only to grade findings on untargeted architectures)."""
        del sm, arch
        return None

    def target_model_type(self, sm: Model, config_attr: str) -> Any:
        """What ``<config_attr>.model_type`` the engine gives the ``--target-config`` (memoised per analysis)."""
        del sm, config_attr
        return None

    def pp_refused(self, sm: Model) -> str | None:
        """Why this tree refuses every EAGLE-3 set-up with pipeline parallelism at config time, or None."""
        del sm
        return None

    # -- what the engine makes of a drafter and of serving (None: this engine does not model it yet) --------
    def draft_analysis(self, sm: Model, arch: str | None = None,
                       kind: RunnerKind | None = None) -> DraftAnalysis | None:
        """What ``--draft-config`` means to this tree for ``arch`` on runner ``kind`` (memoised per analysis)."""
        del sm, arch, kind
        return None

    def serving_verdict(self, sm: Model, arch: str, kind: RunnerKind | None = None) -> ServingVerdict | None:
        """The serving chain of ``arch`` (memoised per analysis), or None where the engine has none."""
        del sm, arch, kind
        return None

    def with_next_step(self, sm: Model, sv: ServingVerdict, findings: Sequence[Finding]) -> ServingVerdict:
        """``sv`` with its next step worked out from ``findings`` (the reported ones, once every rule ran)."""
        del sm, findings
        return sv


_NONE = ModelHooks()


def of(sm: Model) -> ModelHooks:
    """The hooks of ``sm``'s engine: the engine itself when it models them, else the defaults."""
    e = sm.engine
    return e if isinstance(e, ModelHooks) else _NONE


def config_refusal(sm: Model, arch: str) -> tuple[Gate, str] | None:
    return of(sm).config_refusal(sm, arch)


def target_model_type(sm: Model, config_attr: str) -> Any:
    return of(sm).target_model_type(sm, config_attr)


def pp_refused(sm: Model) -> str | None:
    return of(sm).pp_refused(sm)


def draft_analysis(sm: Model, arch: str | None = None, kind: RunnerKind | None = None) -> DraftAnalysis | None:
    return of(sm).draft_analysis(sm, arch, kind)


def serving_verdict(sm: Model, arch: str, kind: RunnerKind | None = None) -> ServingVerdict | None:
    return of(sm).serving_verdict(sm, arch, kind)


def with_next_step(sm: Model, sv: ServingVerdict, findings: Sequence[Finding]) -> ServingVerdict:
    return of(sm).with_next_step(sm, sv, findings)
