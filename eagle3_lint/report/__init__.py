"""Renderers: one module per output format; each takes the JSON-shaped report dict (or the context)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eagle3_lint import __version__
from eagle3_lint.model import Finding, Status, Verdict, to_jsonable

if TYPE_CHECKING:
    from eagle3_lint.analysis import Context
    from eagle3_lint.serving import ServingVerdict

SCHEMA_VERSION = 1

# Non-supported first: that is what a reader of the table came for.
STATUS_ORDER = [Status.WRAPPER_GAP, Status.PARTIAL, Status.UNSUPPORTED, Status.UNKNOWN, Status.SUPPORTED]


def finding_json(f: Finding) -> dict[str, Any]:
    loc = f.location
    return {
        "rule": f.rule,
        "name": f.name,
        "severity": f.severity.value,
        "message": f.message,
        "path": loc.path,
        "line": loc.line,
        "column": loc.col + 1,
        "end_line": loc.end_line if loc.end_line is not None else loc.line,
        "end_column": (loc.end_col + 1) if loc.end_col is not None else loc.col + 1,
        "architecture": f.architecture,
        "symbol": f.symbol,
        "related": [_step(s) for s in f.related],
        "fix": None if f.fix is None else {
            "title": f.fix.title,
            "applicability": f.fix.applicability.value,
            "edits": [to_jsonable(e) for e in f.fix.edits],
        },
    }


def _step(s: Any) -> dict[str, Any]:
    return {
        "kind": s.kind,
        "text": s.text,
        "path": s.location.path if s.location else None,
        "line": s.location.line if s.location else None,
    }


def verdict_json(v: Verdict) -> dict[str, Any]:
    return {
        "name": v.architecture,
        "module": v.module,
        "class": v.class_name,
        "supports_eagle3": v.supports_eagle3,
        "status": v.status.value,
        "reason": v.reason,
        "path": v.location.path if v.location else None,
        "line": v.location.line if v.location else None,
        "inner": list(v.inner),
        "evidence": [_step(s) for s in v.evidence],
    }


def serving_json(sv: ServingVerdict) -> dict[str, Any]:
    """One ``serving`` entry: the chain of gates for a targeted architecture (serving.py)."""
    return {
        "architecture": sv.architecture,
        "engine": sv.engine,
        "engine_version": sv.engine_version,
        "runner": sv.runner.value if sv.runner else None,
        "runner_reason": sv.runner_reason,
        "outcome": sv.outcome.value,
        "stage": sv.stage.value if sv.stage else None,
        "aux_layer_ids": list(sv.aux_layer_ids) if sv.aux_layer_ids is not None else None,
        "aux_layer_ids_source": sv.aux_layer_ids_source,
        "captured_layers": list(sv.captured_layers) if sv.captured_layers is not None else None,
        "drafter_trained_ids": list(sv.drafter_trained_ids) if sv.drafter_trained_ids is not None else None,
        "drafter_convention": sv.trained_convention,
        "drafter_architecture": sv.drafter_architecture,
        "pipeline_parallel": sv.pipeline_parallel,
        "tensor_parallel": sv.tensor_parallel,
        "steps": [{"gate": s.gate.value, "result": s.result.value,
                   "path": s.location.path if s.location else None, "line": s.location.line if s.location else None,
                   "message": s.message} for s in sv.steps],
        "next_step": sv.next_step,
    }


def sorted_verdicts(ctx: Context, only: tuple[str, ...] = ()) -> list[Verdict]:
    vs = [ctx.verdicts[a] for a in (only or tuple(ctx.verdicts)) if a in ctx.verdicts]
    return sorted(vs, key=lambda v: (STATUS_ORDER.index(v.status), v.architecture))


def build_report(ctx: Context, findings: list[Finding] | None = None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    c, r = ctx.contract, ctx.runner
    fs = ctx.findings if findings is None else findings
    counts: dict[str, int] = {s.value: 0 for s in Status}
    for v in ctx.verdicts.values():
        counts[v.status.value] += 1
    sev: dict[str, int] = {"error": 0, "warning": 0, "note": 0}
    for f in fs:
        sev[f.severity.value] += 1
    rep: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "eagle3-lint", "version": __version__},
        "target": {"root": ctx.source.root_label, "vllm_version": ctx.version},
        "contract": {
            "found": c.found,
            "protocol": c.protocol,
            "path": c.path,
            "line": c.line,
            "check": c.check,
            "check_function": c.check_function,
            "runtime_checkable": c.runtime_checkable,
            "members": [to_jsonable(m) for m in c.members],
            "marker": c.marker,
            "setter": c.setter,
            "default_getter": c.default_getter,
            "methods_have_defaults": c.methods_have_defaults,
            "mixin": c.mixin,
            "unwrap_attrs": list(c.unwrap_attrs),
            "notes": list(c.notes),
        },
        "runner": {
            "sites": [to_jsonable(s) for s in r.sites],
            "config_key": r.config_key,
            "fallback": list(r.fallback_names),
            "setter": list(r.setter_names),
            "pp_verifier": r.pp_verifier,
            "pp_flag": r.pp_flag,
            "gates": [to_jsonable(g) for g in r.gates],
            "notes": list(r.notes),
        },
        "registry": {"path": ctx.registry.path, "architectures": len(ctx.registry.entries), "note": ctx.registry.note},
        "summary": {"statuses": counts, "findings": sev, "targeted": list(ctx.targeted)},
        "architectures": [verdict_json(v) for v in sorted_verdicts(ctx)],
        "findings": [finding_json(f) for f in fs],
        "errors": [{"where": e.where, "message": e.message} for e in ctx.errors],
    }
    if ctx.serving:
        rep["serving"] = [serving_json(sv) for sv in ctx.serving.values()]
    if ctx.options.draft_config is not None or getattr(ctx.source, "plugins", None):
        from eagle3_lint.report.draft import report_json

        rep.update(report_json(ctx))  # "draft" (--draft-config) and "plugins" (--plugin) sections
    if extra:
        rep.update(extra)
    return rep
