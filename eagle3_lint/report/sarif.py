"""SARIF 2.1.0 (``--output-format sarif``), for GitHub code scanning and other SARIF consumers.

Shape, and the choices where SARIF leaves room:
- ``tool.driver.rules`` lists every rule plugin: id, kebab name, short description (META.summary),
  full description (the docstring's "What it does"), help (the docstring), ``helpUri`` (the rule's
  page, see catalog.help_uri) and the default level. Severity overrides and deselected rules go in
  ``invocations[0].ruleConfigurationOverrides``; the defaults stay the rule's own.
- Locations are relative URIs with ``uriBaseId`` ``SRCROOT`` (after ``--path-prefix``); when the
  tree is a folder and no prefix is set, ``originalUriBaseIds`` says where SRCROOT is.
- Regions are 1-based; ``columnKind`` is ``unicodeCodePoints``, because our columns count Python
  characters. A finding without an end covers its whole start line.
- ``partialFingerprints["eagle3LintFingerprint/v1"]`` is baseline.py's fingerprint (no line numbers).
- Fixable findings carry ``fixes``: one ``artifactChange`` per file, one ``replacement`` per edit;
  an insertion is a zero-length ``deletedRegion``. Unsafe fixes are included and say so.
- Inline-suppressed results carry ``suppressions`` of kind ``inSource``, baselined ones ``external``;
  with a baseline, ``baselineState`` is ``new`` or ``unchanged``.
- Files that cannot be read or parsed, internal errors and a stale baseline are also
  ``toolExecutionNotifications``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from eagle3_lint import __version__
from eagle3_lint.baseline import SnippetReader
from eagle3_lint.catalog import help_uri, sections
from eagle3_lint.model import Applicability, Edit, Finding, Location
from eagle3_lint.rules import Role, Rule, all_rules, with_role
from eagle3_lint.source import DirSource

if TYPE_CHECKING:
    from eagle3_lint.outcome import Outcome, Suppressed
    from eagle3_lint.stages import Analysis

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FINGERPRINT_KEY = "eagle3LintFingerprint/v1"
SRCROOT = "SRCROOT"
INFORMATION_URI = "https://github.com/eagle3-lint/eagle3-lint"


def _rule_descriptor(r: Rule) -> dict[str, Any]:
    m = r.meta
    what = sections(r.doc).get("What it does", "") or m.summary
    return {
        "id": m.id,
        "name": m.name,
        "shortDescription": {"text": m.summary},
        "fullDescription": {"text": what},
        "help": {"text": r.doc or m.summary, "markdown": r.doc or m.summary},
        "helpUri": help_uri(m.id),
        "defaultConfiguration": {"level": m.severity.value},
        "properties": {"fixable": m.fixable, "tags": ["eagle3", "speculative-decoding"]},
    }


class _Regions:
    """1-based SARIF regions from our Locations and Edits, reading line lengths where needed."""

    def __init__(self, reader: SnippetReader) -> None:
        self.reader = reader

    def location(self, loc: Location) -> dict[str, Any]:
        start_col = loc.col + 1
        if loc.end_line is None:
            end_line, end_col = loc.line, len(self.reader.line(loc.path, loc.line)) + 1
        else:
            end_line = loc.end_line
            end_col = (loc.end_col if loc.end_col is not None else len(self.reader.line(loc.path, end_line))) + 1
        if end_line == loc.line:
            end_col = max(end_col, start_col)
        return {
            "startLine": loc.line,
            "startColumn": start_col,
            "endLine": max(end_line, loc.line),
            "endColumn": end_col,
        }

    def edit(self, e: Edit) -> dict[str, Any]:
        # Columns past the end of a line mean its end, as fixes.apply_edits reads them.
        def col(line: int, c: int) -> int:
            text = self.reader.line(e.path, line)
            return min(c, len(text)) + 1 if text else c + 1

        return {"startLine": e.line, "startColumn": col(e.line, e.col), "endLine": e.end_line,
                "endColumn": col(e.end_line, e.end_col)}

    def replacements(self, edits: Sequence[Edit]) -> list[dict[str, Any]]:
        """One file's edits as SARIF replacements, in file order. Like fixes.apply_edits: identical
        edits count once, and insertions at one point keep their order, merged into one replacement
        (two separate empty regions at one point would leave the order to the consumer)."""
        out: list[dict[str, Any]] = []
        seen: set[tuple[Any, ...]] = set()
        regs = []
        for e in edits:
            reg = self.edit(e)
            key = (*reg.values(), e.new_text)
            if key not in seen:
                seen.add(key)
                regs.append((reg, e.new_text))
        regs.sort(key=lambda r: (r[0]["startLine"], r[0]["startColumn"], r[0]["endLine"], r[0]["endColumn"]))
        for reg, text in regs:
            empty = (reg["startLine"], reg["startColumn"]) == (reg["endLine"], reg["endColumn"])
            if out and empty and out[-1]["deletedRegion"] == reg:
                out[-1]["insertedContent"]["text"] += text
            else:
                out.append({"deletedRegion": reg, "insertedContent": {"text": text}})
        return out


def _artifact(path: str) -> dict[str, Any]:
    return {"uri": quote(path, safe="/"), "uriBaseId": SRCROOT}


def build_sarif(an: Analysis, out: Outcome, scope: dict[str, Any] | None = None) -> dict[str, Any]:
    rules = all_rules()
    index = {r.meta.id: i for i, r in enumerate(rules)}
    reader = SnippetReader(an.read_text)
    regions = _Regions(reader)
    pm = out.paths
    baseline_used = out.baseline is not None

    def phys(loc: Location) -> dict[str, Any]:
        return {"physicalLocation": {"artifactLocation": _artifact(pm.path(loc.path)), "region": regions.location(loc)}}

    def result(f: Finding, fp: str, sup: Suppressed | None) -> dict[str, Any]:
        res: dict[str, Any] = {
            "ruleId": f.rule,
            "level": f.severity.value,
            "message": {"text": f.message},
            "locations": [phys(f.location)],
            "partialFingerprints": {FINGERPRINT_KEY: fp},
        }
        if f.rule in index:
            res["ruleIndex"] = index[f.rule]
        related = [s for s in f.related if s.location is not None]
        if related:
            res["relatedLocations"] = [{"id": i, **phys(loc), "message": {"text": s.text}}
                                       for i, s in enumerate(related, 1) if (loc := s.location) is not None]
        if f.fix is not None and f.fix.edits:
            by_file: dict[str, list[Edit]] = {}
            for e in f.fix.edits:
                by_file.setdefault(e.path, []).append(e)
            unsafe = f.fix.applicability is Applicability.UNSAFE
            res["fixes"] = [
                {
                    "description": {
                        "text": f.fix.title + (" (unsafe: review before applying; --unsafe-fixes)" if unsafe else "")
                    },
                    "artifactChanges": [
                        {
                            "artifactLocation": _artifact(pm.path(path)),
                            "replacements": regions.replacements(edits),
                        }
                        for path, edits in by_file.items()
                    ],
                    "properties": {"applicability": f.fix.applicability.value},
                }
            ]
        if sup is not None:
            s: dict[str, Any] = {"kind": sup.suppression.kind, "status": "accepted"}
            if sup.suppression.justification:
                s["justification"] = sup.suppression.justification
            if sup.suppression.location is not None:
                s["location"] = phys(sup.suppression.location)
            res["suppressions"] = [s]
        if baseline_used:
            res["baselineState"] = "unchanged" if sup is not None and sup.suppression.kind == "external" else "new"
        props = {k: v for k, v in (("architecture", f.architecture), ("architectures", list(f.architectures)),
                                   ("symbol", f.symbol), ("engine", f.engine)) if v}
        if props:
            res["properties"] = props
        return res

    results = [result(f, fp, None) for f, fp in zip(out.findings, out.fingerprints, strict=True)]
    results += [result(s.finding, s.fingerprint, s) for s in out.suppressed]

    invocation: dict[str, Any] = {
        "executionSuccessful": not an.errors,
        "toolExecutionNotifications": _notifications(an, out, phys),
    }
    overrides = _overrides(rules, out)
    if overrides:
        invocation["ruleConfigurationOverrides"] = overrides
    run: dict[str, Any] = {
        "tool": {"driver": {
            "name": "eagle3-lint",
            "version": __version__,
            "semanticVersion": __version__,
            "informationUri": INFORMATION_URI,
            "rules": [_rule_descriptor(r) for r in rules],
        }},
        "invocations": [invocation],
        "columnKind": "unicodeCodePoints",
        "results": results,
        # vllmVersion as before for vLLM trees; engine and engineVersion for every engine (properties only added).
        "properties": {**({"vllmVersion": an.version} if an.engine.report_version_field == "vllm_version" else {}),
                       "targeted": list(an.targeted), "engine": an.engine.name, "engineVersion": an.version,
                       # What the results hold (the JSON report's "scope", camel-cased as SARIF's own keys are).
                       **({"scope": {"targets": scope["targets"], "complete": scope["complete"],
                                     "findingsLeftOut": scope["findings_left_out"]}} if scope is not None else {})},
    }
    if isinstance(an.source, DirSource) and not pm.prefixes:
        root = an.source.root.resolve().as_uri().rstrip("/") + "/"
        run["originalUriBaseIds"] = {
            SRCROOT: {"uri": root, "description": {"text": f"The analyzed {an.engine.display} tree"}}}
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def _overrides(rules: Sequence[Rule], out: Outcome) -> list[dict[str, Any]]:
    res = []
    for i, r in enumerate(rules):
        conf: dict[str, Any] = {}
        if not out.settings.selection.enabled(r.meta.id):
            conf["enabled"] = False
        sev = out.settings.severity_for(r.meta.id)
        if sev is not None and sev is not r.meta.severity:
            conf["level"] = sev.value
        if conf:
            res.append({"descriptor": {"id": r.meta.id, "index": i}, "configuration": conf})
    return res


def _notifications(an: Analysis, out: Outcome, phys: Any) -> list[dict[str, Any]]:
    notes: list[dict[str, Any]] = []
    unparsable = with_role(Role.UNPARSABLE).id  # the rule that reports these files as findings
    for rel in an.model.model_files():
        mf = an.store.load_path(rel)
        if mf is None:
            why = an.store.read_errors.get(rel, "cannot be read")
            notes.append({"level": "error", "message": {"text": f"{rel} cannot be read: {why}"},
                          "locations": [phys(Location(rel, 1))], "descriptor": {"id": unparsable}})
        elif mf.error:
            notes.append({"level": "error", "message": {"text": f"{rel} cannot be parsed: {mf.error}"},
                          "locations": [phys(Location(rel, max(1, mf.error_line)))],
                          "descriptor": {"id": unparsable}})
    for e in an.errors:
        notes.append({"level": "error", "message": {"text": f"internal error in {e.where}: {e.message}"},
                      "descriptor": {"id": "internal-error"}})
    b = out.baseline
    failure = out.stale_baseline_failure()
    if failure:
        # With CI=true a stale baseline fails the run: say so where code scanning shows it.
        notes.append({"level": "error", "descriptor": {"id": "stale-baseline"}, "message": {"text": failure}})
    elif b is not None and b.stale:
        notes.append({"level": "warning", "descriptor": {"id": "stale-baseline"},
                      "message": {"text": f"baseline {b.path} has {len(b.stale)} stale entries; "
                                          f"update it with --write-baseline {b.path}"}})
    return notes
