"""From the core's findings to what a run reports: configuration filters, fingerprints, baseline, paths.

The core (analysis + suppress.py) yields reported and inline-suppressed findings. ``finalize`` then
applies the project configuration (per-architecture and per-file ignores, which drop findings as
ruff does, and severity overrides), fingerprints every finding, and applies or writes the baseline
(baselined findings become suppressed, kind ``external``). Every renderer (text, json, sarif,
github) and the exit code work from the resulting ``Outcome``. ``PathMap`` rewrites tree-relative
paths for repositories that vendor the tree (``--path-prefix FROM=TO``), at output time only:
fingerprints, baselines and configuration globs see the tree-relative paths.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

from eagle3_lint import baseline as baseline_mod
from eagle3_lint.config import Settings
from eagle3_lint.fixes import Plan
from eagle3_lint.model import Finding, Location, Suppression
from eagle3_lint.queries import query

if TYPE_CHECKING:
    from eagle3_lint.stages import Analysis, Model


@dataclass(frozen=True)
class PathMap:
    """``--path-prefix FROM=TO``: the first FROM that starts a path is replaced by its TO."""

    prefixes: tuple[tuple[str, str], ...] = ()

    def path(self, p: str) -> str:
        for frm, to in self.prefixes:
            if p.startswith(frm):
                return to + p[len(frm):]
        return p

    @overload
    def location(self, loc: Location) -> Location: ...

    @overload
    def location(self, loc: None) -> None: ...

    def location(self, loc: Location | None) -> Location | None:
        return None if loc is None or not self.prefixes else dataclasses.replace(loc, path=self.path(loc.path))

    def finding(self, f: Finding) -> Finding:
        if not self.prefixes:
            return f
        fix = f.fix
        if fix is not None:
            edits = tuple(dataclasses.replace(e, path=self.path(e.path)) for e in fix.edits)
            fix = dataclasses.replace(fix, edits=edits)
        return dataclasses.replace(
            f, location=self.location(f.location), fix=fix,
            related=tuple(dataclasses.replace(s, location=self.location(s.location)) for s in f.related),
        )

    def value(self, obj: Any) -> Any:
        """A frozen value (dataclass, tuple, dict) with every ``*path`` string field rewritten;
        unchanged parts are returned as they are."""
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            changes: dict[str, Any] = {}
            for fld in dataclasses.fields(obj):
                if not fld.init:
                    continue
                v = getattr(obj, fld.name)
                nv = self.path(v) if fld.name.endswith("path") and isinstance(v, str) and v else self.value(v)
                if nv is not v:
                    changes[fld.name] = nv
            return dataclasses.replace(obj, **changes) if changes else obj
        if isinstance(obj, tuple):
            items = tuple(self.value(v) for v in obj)
            return obj if all(a is b for a, b in zip(items, obj, strict=True)) else items
        if isinstance(obj, dict):
            new = {k: self.value(v) for k, v in obj.items()}
            return obj if all(new[k] is obj[k] for k in obj) else new
        return obj

    def context(self, an: Analysis) -> Analysis:
        """A view of the analysis for the text report: verdicts, contract and runner with rewritten paths."""
        if not self.prefixes:
            return an
        sm = an.model
        data = dataclasses.replace(sm.data, contract=self.value(sm.contract), runner=self.value(sm.runner))
        return dataclasses.replace(an, model=dataclasses.replace(sm, data=data, verdicts=self.value(sm.verdicts)),
                                   serving=self.value(an.serving))

    def plan(self, p: Plan) -> Plan:
        """A fix plan whose file names are rewritten, for the printed diff (never for --apply)."""
        return p if not self.prefixes else dataclasses.replace(p, files={self.path(k): v for k, v in p.files.items()})

    def json(self, obj: Any) -> Any:
        """Rewrite every ``"path"`` string in a JSON-shaped value, in place; returns it."""
        if not self.prefixes:
            return obj
        if isinstance(obj, dict):
            for k, v in obj.items():
                if k == "path" and isinstance(v, str):
                    obj[k] = self.path(v)
                else:
                    self.json(v)
        elif isinstance(obj, list):
            for v in obj:
                self.json(v)
        return obj


@dataclass
class Suppressed:
    finding: Finding
    suppression: Suppression
    fingerprint: str


@dataclass
class Outcome:
    findings: list[Finding]
    fingerprints: list[str]  # aligned with findings
    suppressed: list[Suppressed] = field(default_factory=list)
    baseline: baseline_mod.BaselineStatus | None = None
    paths: PathMap = PathMap()
    settings: Settings = Settings()

    def stale_baseline_failure(self) -> str | None:
        """Why the run fails because the baseline needs updating (only in CI), or None."""
        b = self.baseline
        if b is None or b.written or not b.stale or not baseline_mod.in_ci():
            return None
        return (f"baseline {b.path} has {len(b.stale)} stale entr{'y' if len(b.stale) == 1 else 'ies'} "
                f"(fixed or changed findings) and CI is set; update it with --write-baseline {b.path}")

    def notes(self) -> list[str]:
        """Lines for stderr: what was suppressed, the baseline written or compared, its stale entries."""
        lines: list[str] = []
        inline = sum(1 for s in self.suppressed if s.suppression.kind == "inSource")
        external = len(self.suppressed) - inline
        if self.suppressed:
            lines.append(f"{len(self.suppressed)} finding(s) suppressed "
                         f"({inline} by comments, {external} by the baseline)")
        b = self.baseline
        if b is not None and b.written:
            lines.append(f"wrote {b.entries} finding(s) to the baseline {b.path}")
        elif b is not None and b.stale:
            lines.append(f"baseline {b.path}: {len(b.stale)} stale entr{'y' if len(b.stale) == 1 else 'ies'} "
                         "(no longer found; update with --write-baseline):")
            lines += [f"  {e.get('rule')} {self.paths.path(str(e.get('path')))} {e.get('symbol')}: {e.get('snippet')}"
                      for e in b.stale]
        return lines


def _filter(findings: Sequence[Finding], settings: Settings, paths: PathMap) -> list[Finding]:
    out: list[Finding] = []
    for f in findings:
        if settings.ignored_for(f.rule, f.architecture, {f.location.path, paths.path(f.location.path)}):
            continue
        sev = settings.severity_for(f.rule)
        out.append(dataclasses.replace(f, severity=sev) if sev is not None and sev is not f.severity else f)
    return out


def finalize(an: Analysis, settings: Settings) -> Outcome:
    prefixes = settings.path_prefixes
    if not prefixes and an.source.display_prefix:
        # An SGLang checkout: ``sglang/...`` is ``python/sglang/...`` where git and CI look.
        pkg = an.source.package + "/"
        prefixes = ((pkg, an.source.display_prefix + pkg),)
    paths = PathMap(prefixes)
    active = _filter(an.findings, settings, paths)
    inline = [(f2, s) for f, s in an.suppressed for f2 in _filter([f], settings, paths)]
    reader = baseline_mod.SnippetReader(an.read_text)
    everything = active + [f for f, _ in inline]
    fps = baseline_mod.fingerprints(everything, reader)
    active_fps, inline_fps = fps[: len(active)], fps[len(active):]
    suppressed = [Suppressed(f, s, fp) for (f, s), fp in zip(inline, inline_fps, strict=True)]

    status: baseline_mod.BaselineStatus | None = None
    bpath = settings.write_baseline or settings.baseline
    if settings.write_baseline:
        baseline_mod.write(settings.write_baseline, active, active_fps, reader, an.version)
    if bpath:
        b = baseline_mod.read(bpath)
        hit, status = baseline_mod.compare(b, active_fps)
        status.written = bool(settings.write_baseline)
        why = f"recorded in the baseline {bpath}"
        suppressed += [Suppressed(f, Suppression("external", why), fp)
                       for f, fp, h in zip(active, active_fps, hit, strict=True) if h]
        active = [f for f, h in zip(active, hit, strict=True) if not h]
        active_fps = [fp for fp, h in zip(active_fps, hit, strict=True) if not h]
    suppressed.sort(key=lambda s: s.finding.sort_key())
    return Outcome(active, active_fps, suppressed, status, paths, settings)


def scoped(an: Analysis, out: Outcome, show_all: bool) -> tuple[Outcome, dict[str, Any]]:
    """The outcome as the machine formats report it, and the JSON ``scope`` that says what it holds. With targets
    and without ``--all`` only the findings that concern a target, as the text shows them (report/headline.py
    ``split``): a CI job checking its model gets annotations about its model, not about thirty others."""
    targets = list(an.targeted)
    if not targets or show_all:
        return out, {"targets": targets, "complete": True, "findings_left_out": 0, "architectures_left_out": 0}
    from eagle3_lint.report.headline import split

    mine = {id(f) for f in split(an, out.findings)[0]}
    kept = [(f, fp) for f, fp in zip(out.findings, out.fingerprints, strict=True) if id(f) in mine]
    narrowed = dataclasses.replace(out, findings=[f for f, _ in kept], fingerprints=[fp for _, fp in kept])
    rows = sum(1 for a in an.verdicts if a in targets)
    return narrowed, {"targets": targets, "complete": False, "findings_left_out": len(out.findings) - len(kept),
                      "architectures_left_out": len(an.verdicts) - rows}


# Where a row of "architectures" sits in the JSON report: {"architectures": [ {row} ]}.
_ROW_PAD = "    "


def json_text(an: Analysis, out: Outcome, scope: dict[str, Any] | None = None) -> str:
    """The JSON report's text (``json.dumps(json_report(...), indent=2)``). The text of each architecture's row is
    a declared query (``_row_text``), kept between runs with its verdict: the rows are 1.1 MB of the 1.2 MB report of
    vLLM 0.33.0, and encoding them is 0.06 s of CPU (all 415, on a loaded machine), a sixth of a one-edit budget."""
    from eagle3_lint.report.build import sorted_verdicts
    from eagle3_lint.report.jsondump import Fragment, dumps

    rep = json_report(an, out, rows=False, scope=scope)
    only = () if scope is None or scope["complete"] else tuple(scope["targets"])
    rep["architectures"] = [Fragment(_ROW_PAD, _row_text(an.model, out.paths, v.architecture))
                            for v in sorted_verdicts(an, only)]
    return dumps(rep)


@query
def _row_text(sm: Model, paths: PathMap, arch: str) -> str:
    from eagle3_lint.report.build import verdict_model
    from eagle3_lint.report.jsondump import dumps_at
    from eagle3_lint.report.schema import dump

    # Read through sm.verdicts: the row is the verdict's, so it rests on the files the verdict read.
    return dumps_at(paths.json(dump(verdict_model(sm.verdicts[arch]))), _ROW_PAD)


def json_report(an: Analysis, out: Outcome, rows: bool = True, scope: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON report (report/build.py) with fingerprints, suppressed findings and baseline state (``rows``
    False: without the architectures' rows, see json_text), and what it holds (``scope``, from ``scoped``)."""
    from eagle3_lint.report.build import report_model
    from eagle3_lint.report.schema import dump_object

    model = report_model(an, out.findings, fingerprints=out.fingerprints,
                         suppressed=[(s.finding, s.fingerprint, s.suppression) for s in out.suppressed],
                         baseline=out.baseline,
                         config=str(out.settings.config_path) if out.settings.config_path else None, rows=rows)
    rep = dump_object(model)
    from eagle3_lint.report.title import title

    # The short first sentence beside the whole message (a field only added).
    for fj, f in zip(rep["findings"], out.findings, strict=True):
        fj["title"] = title(f)
    for fj, sup in zip(rep.get("suppressed") or [], out.suppressed, strict=True):
        fj["title"] = title(sup.finding)
    failure = out.stale_baseline_failure()
    if rep.get("baseline") is not None and failure:
        rep["baseline"]["failure"] = failure  # CI=true: why this run fails although no finding is new
    if scope is not None:
        rep["scope"] = scope
    out.paths.json(rep)  # in place
    return rep
