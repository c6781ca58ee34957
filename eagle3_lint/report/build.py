"""The JSON report built as the typed model of ``report/schema.py`` from an analysis context.

Kept apart from ``report/__init__.py`` so that only runs that write JSON pay for defining the model's
classes (tens of milliseconds of dataclass creation at import).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from eagle3_lint import __version__
from eagle3_lint.model import Finding, Status, Verdict
from eagle3_lint.report import SCHEMA_VERSION, sorted_verdicts
from eagle3_lint.report import schema as rs

if TYPE_CHECKING:
    from eagle3_lint.baseline import BaselineStatus
    from eagle3_lint.model import Suppression
    from eagle3_lint.serving import ServingVerdict
    from eagle3_lint.stages import Analysis


def _step(s: Any) -> rs.Step:
    loc = s.location
    return rs.Step(kind=s.kind, text=s.text, path=loc.path if loc else None, line=loc.line if loc else None)


def _finding_fields(f: Finding) -> dict[str, Any]:
    loc = f.location
    fix = None if f.fix is None else rs.Fix(
        title=f.fix.title, applicability=f.fix.applicability,
        edits=[rs.Edit(path=e.path, line=e.line, col=e.col, end_line=e.end_line, end_col=e.end_col, new_text=e.new_text)
               for e in f.fix.edits])
    return {
        "rule": f.rule, "name": f.name, "severity": f.severity, "message": f.message, "path": loc.path,
        "line": loc.line, "column": loc.col + 1,
        "end_line": loc.end_line if loc.end_line is not None else loc.line,
        "end_column": (loc.end_col + 1) if loc.end_col is not None else loc.col + 1,
        "architecture": f.architecture, "architectures": list(f.architectures),
        "symbol": f.symbol, "related": [_step(s) for s in f.related], "fix": fix,
        # The model's Engine (one of engines.names()); Finding.engine is the engine's name.
        "engine": f.engine if f.engine else rs.ABSENT,
    }


def finding_model(f: Finding, fingerprint: str | rs.Absent = rs.ABSENT) -> rs.Finding:
    return rs.Finding(**_finding_fields(f), fingerprint=fingerprint)


def suppressed_model(f: Finding, fingerprint: str, why: Suppression) -> rs.SuppressedFinding:
    loc = why.location
    # Suppression.kind is a plain str today; the model names its two values.
    sup = rs.Suppression(kind=why.kind, justification=why.justification,  # type: ignore[arg-type]  # str vs Literal
                         path=loc.path if loc else None, line=loc.line if loc else None)
    return rs.SuppressedFinding(**_finding_fields(f), fingerprint=fingerprint, suppression=sup)


def verdict_model(v: Verdict) -> rs.Architecture:
    loc = v.location
    return rs.Architecture(name=v.architecture, module=v.module, class_=v.class_name, supports_eagle3=v.supports_eagle3,
                           status=v.status, reason=v.reason, path=loc.path if loc else None,
                           line=loc.line if loc else None, inner=list(v.inner), evidence=[_step(s) for s in v.evidence])


def _copy(cls: type[Any], obj: Any, **renamed: Any) -> Any:
    """A model object from a same-shaped analysis dataclass: every model field read by its name."""
    return cls(**{f.name: renamed[f.name] if f.name in renamed else getattr(obj, f.name)
                  for f in dataclasses.fields(cls)})


def _contract(an: Analysis) -> rs.Contract:
    c = an.contract
    return rs.Contract(
        found=c.found, protocol=c.protocol, path=c.path, line=c.line, check=c.check.value,
        check_function=c.check_function, runtime_checkable=c.runtime_checkable,
        members=[_copy(rs.Member, m, params=list(m.params)) for m in c.members],
        marker=c.marker, setter=c.setter, default_getter=c.default_getter,
        methods_have_defaults=c.methods_have_defaults, mixin=c.mixin, unwrap_attrs=list(c.unwrap_attrs),
        notes=list(c.notes))


def _runner(an: Analysis) -> rs.Runner:
    r = an.runner
    return rs.Runner(
        sites=[_copy(rs.RunnerSite, s) for s in r.sites], config_key=r.config_key, fallback=list(r.fallback_names),
        setter=list(r.setter_names), pp_verifier=r.pp_verifier, pp_flag=r.pp_flag,
        gates=[_copy(rs.Gate, g, methods=list(g.methods), allow_list=list(g.allow_list)) for g in r.gates],
        notes=list(r.notes))


def _plugin(p: Mapping[str, Any]) -> rs.Plugin:
    data = dict(p)
    data["entry_points"] = [rs.from_mapping(rs.EntryPoint, e) for e in p.get("entry_points", [])]
    def with_conditions(cls: type[Any], r: Mapping[str, Any]) -> Any:
        d = dict(r)
        if "conditions" in d:
            d["conditions"] = [rs.from_mapping(rs.Condition, c) for c in d["conditions"]]
        return rs.from_mapping(cls, d)

    data["registrations"] = [with_conditions(rs.Registration, r) for r in p.get("registrations", [])]
    if "unresolved" in p:
        data["unresolved"] = [with_conditions(rs.Unresolved, u) for u in p["unresolved"]]
    if "unreached" in p:
        data["unreached"] = [rs.from_mapping(rs.Unreached, u) for u in p["unreached"]]
    plugin: rs.Plugin = rs.from_mapping(rs.Plugin, data)
    return plugin


def serving_model(sv: ServingVerdict) -> rs.ServingVerdict:
    """One ``serving`` entry: the chain of gates for a targeted architecture (serving.py)."""
    def ints(xs: tuple[int, ...] | None) -> list[int] | None:
        return list(xs) if xs is not None else None

    return rs.ServingVerdict(
        # engine: a str in serving.py, the report model's Literal of the engines it knows.
        architecture=sv.architecture, engine=sv.engine, engine_version=sv.engine_version,  # type: ignore[arg-type]
        runner=sv.runner.value if sv.runner else None, runner_reason=sv.runner_reason,
        outcome=sv.outcome.value, stage=sv.stage.value if sv.stage else None,
        # ignore below: aux_layer_ids_source is a str in serving.py, a Literal in the model
        aux_layer_ids=ints(sv.aux_layer_ids), aux_layer_ids_source=sv.aux_layer_ids_source,  # type: ignore[arg-type]
        captured_layers=ints(sv.captured_layers), drafter_trained_ids=ints(sv.drafter_trained_ids),
        drafter_convention=sv.trained_convention,  # type: ignore[arg-type]  # likewise
        drafter_architecture=sv.drafter_architecture,
        pipeline_parallel=sv.pipeline_parallel, tensor_parallel=sv.tensor_parallel,
        platform=sv.platform,  # type: ignore[arg-type]  # a str in serving.py, a Literal in the model
        steps=[rs.ServingStep(gate=s.gate.value, result=s.result.value,
                              path=s.location.path if s.location else None,
                              line=s.location.line if s.location else None, message=s.message) for s in sv.steps],
        next_step=sv.next_step)


def report_model(an: Analysis, findings: Sequence[Finding] | None = None, *,
                 fingerprints: Sequence[str] | None = None,
                 suppressed: Sequence[tuple[Finding, str, Suppression]] | None = None,
                 baseline: BaselineStatus | None | rs.Absent = rs.ABSENT,
                 config: str | None | rs.Absent = rs.ABSENT, rows: bool = True) -> rs.Report:
    """The report as the typed model. ``fingerprints`` (aligned with ``findings``), ``suppressed``,
    ``baseline`` and ``config`` come from outcome.finalize; without them those keys are left out. ``rows``
    False leaves "architectures" empty, for a caller that has their text (outcome.json_text)."""
    fs = list(an.findings if findings is None else findings)
    counts: dict[str, int] = {s.value: 0 for s in Status}
    for v in an.verdicts.values():
        counts[v.status.value] += 1
    sev: dict[str, int] = {"error": 0, "warning": 0, "note": 0}
    for f in fs:
        sev[f.severity.value] += 1
    fps: Sequence[str | rs.Absent] = fingerprints if fingerprints is not None else [rs.ABSENT] * len(fs)
    draft: rs.Draft | rs.Absent = rs.ABSENT
    plugins: list[rs.Plugin] | rs.Absent = rs.ABSENT
    if an.options.draft_config is not None or getattr(an.source, "plugins", None):
        from eagle3_lint.report.draft import report_json

        sections = report_json(an)  # "draft" (--draft-config) and "plugins" (--plugin)
        if "draft" in sections:
            draft = rs.from_mapping(rs.Draft, sections["draft"])
        if "plugins" in sections:
            plugins = [_plugin(p) for p in sections["plugins"]]
    return rs.Report(
        schema_version=SCHEMA_VERSION,
        tool=rs.Tool(name="eagle3-lint", version=__version__),
        # vllm_version stays what it was for vLLM trees; engine and engine_version name every engine's.
        target=rs.Target(root=an.source.root_label,
                         vllm_version=an.version if an.engine.report_version_field == "vllm_version" else rs.ABSENT,
                         # ignore below: the engine's name is a str; the model's Engine marks one of engines.names()
                         engine=an.engine.name, engine_version=an.version),  # type: ignore[arg-type]
        contract=_contract(an),
        runner=_runner(an),
        registry=rs.Registry(path=an.registry.path, architectures=len(an.registry.entries), note=an.registry.note),
        summary=rs.Summary(statuses=rs.StatusCounts(wrapper_gap=counts.pop(Status.WRAPPER_GAP.value), **counts),
                           findings=rs.SeverityCounts(**sev), targeted=list(an.targeted)),
        architectures=[verdict_model(v) for v in sorted_verdicts(an)] if rows else [],
        findings=[finding_model(f, fp) for f, fp in zip(fs, fps, strict=True)],
        errors=[rs.ErrorEntry(where=e.where, message=e.message) for e in an.errors],
        draft=draft,
        plugins=plugins,
        suppressed=rs.ABSENT if suppressed is None else [suppressed_model(*s) for s in suppressed],
        baseline=baseline if isinstance(baseline, rs.Absent) or baseline is None else rs.Baseline(
            path=baseline.path, written=baseline.written, entries=baseline.entries, matched=baseline.matched,
            new=baseline.new, stale=list(baseline.stale)),
        config=config,
        serving=[serving_model(sv) for sv in an.serving.values()] if an.serving else rs.ABSENT,
    )


def build_report(an: Analysis, findings: Sequence[Finding] | None = None) -> dict[str, Any]:
    """The JSON-shaped report of the core's findings (no fingerprints, suppressions or baseline);
    outcome.json_report adds those."""
    return rs.dump_object(report_model(an, findings))
