"""GitHub Actions workflow commands (``--output-format github``): one annotation per reported finding.

``::error file=F,line=L,endLine=E,col=C,endColumn=D,title=EGLnnn name::message``. Data (the
message) escapes ``%``, CR and LF; properties also escape ``:`` and ``,``. Columns are given only
for single-line spans, as GitHub accepts them. Severities map to ``error``, ``warning`` and
``notice``; the most severe come first because GitHub keeps the first ones.

GitHub shows at most 10 annotations of each kind per step (and 50 per job); the rest are only in
the log. When some would be hidden, a final ``::notice`` says how many, and where to see them all.
That notice must itself be shown: when notes already fill the notice budget it goes just before
them, and the notes it displaces are counted.
"""

from __future__ import annotations

from collections.abc import Sequence

from eagle3_lint.model import Finding, Severity
from eagle3_lint.safe_text import printable

PER_STEP_LIMIT = 10  # per annotation kind (error, warning, notice), per step
COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "notice"}


def escape_data(s: str) -> str:
    # Other control characters (ESC sequences colour or hide log text) come from the tree's own
    # strings and file names; they are shown as escapes (safe_text.printable).
    # CR and LF are the workflow-command escapes (%0D, %0A); escape them before printable() would.
    return printable(s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"), one_line=False)


def escape_property(s: str) -> str:
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def annotation(f: Finding) -> str:
    loc = f.location
    props = [("file", loc.path), ("line", str(loc.line))]
    end_line = loc.end_line if loc.end_line is not None else loc.line
    props.append(("endLine", str(end_line)))
    if end_line == loc.line:
        props.append(("col", str(loc.col + 1)))
        if loc.end_col is not None and loc.end_col >= loc.col:
            props.append(("endColumn", str(loc.end_col + 1)))
    props.append(("title", f"{f.rule} {f.name}"))
    head = ",".join(f"{k}={escape_property(v)}" for k, v in props)
    return f"::{COMMAND[f.severity]} {head}::{escape_data(f.message)}"


def render(findings: Sequence[Finding], failure: str | None = None) -> str:
    """Annotations, most severe first, then the hidden-count notice if GitHub would hide any.

    ``failure``: why the run fails although no finding does (a stale baseline with CI=true); it
    comes first as an ``::error``, so the failed step says why.
    """
    ordered = sorted(findings, key=lambda f: (-f.severity.rank, *f.sort_key()))
    lines = [annotation(f) for f in ordered]
    if failure:
        lines.insert(0, f"::error title={escape_property('eagle3-lint baseline')}::{escape_data(failure)}")
    by_kind = {s: sum(1 for f in ordered if f.severity is s) for s in Severity}
    hidden = sum(max(0, n - PER_STEP_LIMIT) for s, n in by_kind.items() if s is not Severity.NOTE)
    notes = by_kind[Severity.NOTE]
    hidden_if_last = hidden + max(0, notes - PER_STEP_LIMIT)
    if hidden_if_last:
        if notes < PER_STEP_LIMIT:
            lines.append(_summary(hidden_if_last, len(ordered)))
        else:
            # The summary is a notice too: put it before the notes so GitHub keeps it.
            hidden += notes - (PER_STEP_LIMIT - 1)
            first_note = len(ordered) - notes
            lines.insert(first_note, _summary(hidden, len(ordered)))
    return "".join(line + "\n" for line in lines)


def _summary(hidden: int, total: int) -> str:
    msg = (f"eagle3-lint: {hidden} of {total} annotations are not shown: GitHub shows at most "
           f"{PER_STEP_LIMIT} errors, {PER_STEP_LIMIT} warnings and {PER_STEP_LIMIT} notices per step. "
           "See this step's log or the SARIF upload for all findings.")
    return f"::notice title={escape_property('eagle3-lint')}::{escape_data(msg)}"
