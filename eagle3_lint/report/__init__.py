"""Renderers: one module per output format; each takes the JSON-shaped report dict (or the context).

The JSON report's shape is declared once, as the typed model in ``report/schema.py`` (which also
generates its JSON Schema); ``report/build.py`` builds it from the analysis (``build_report``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eagle3_lint.model import Status, Verdict

if TYPE_CHECKING:
    from eagle3_lint.stages import Analysis

# The report's schema_version: fields are only added within one; a breaking change bumps it and adds
# tests/snapshots/report.schema.v<N>.json (tests/test_ci_schema.py decides which a change is).
SCHEMA_VERSION = 4

# Non-supported first: that is what a reader of the table came for.
STATUS_ORDER = [Status.WRAPPER_GAP, Status.PARTIAL, Status.UNSUPPORTED, Status.UNKNOWN, Status.SUPPORTED]


def sorted_verdicts(an: Analysis, only: tuple[str, ...] = ()) -> list[Verdict]:
    vs = [an.verdicts[a] for a in (only or tuple(an.verdicts)) if a in an.verdicts]
    return sorted(vs, key=lambda v: (STATUS_ORDER.index(v.status), v.architecture))
