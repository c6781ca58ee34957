"""report/jsondump.dumps writes exactly what ``json.dumps(obj, indent=2)`` writes (issue 13, item 6).

The JSON and SARIF reports are written with it; a speed-up must not move one byte of either.
"""

from __future__ import annotations

import enum
import json
import math
from pathlib import Path
from typing import Any

import pytest

from eagle3_lint.analysis import Options, analyze
from eagle3_lint.config import Settings
from eagle3_lint.engines import dir_source
from eagle3_lint.outcome import finalize, json_report
from eagle3_lint.report.jsondump import dumps
from eagle3_lint.report.sarif import build_sarif
from tests.cihelp import run_case, sample_cases


class _Kind(str, enum.Enum):
    A = "a\u00e9"


class _Num(enum.IntEnum):
    ONE = 1


EDGE_CASES: list[Any] = [
    {}, [], (), "", 0, -1, 10**30, 1.5, -0.0, 1e300, math.inf, -math.inf, True, False, None,
    {"nested": {"empty": {}, "list": [], "tuple": (1, (2, [])), "deep": [[{"a": [None]}]]}},
    {"unicode \u2603 \U0001f600": "tab\t nl\n quote\" backslash\\ ctl\x01 \u00e9"},
    {1: "int key", 2.5: "float key", None: "none key"}, {True: "bool key", False: "no"}, {_Num.ONE: "intenum key"},
    [_Kind.A, _Num.ONE, {"k": _Kind.A}],
]


@pytest.mark.parametrize("obj", EDGE_CASES, ids=range(len(EDGE_CASES)))
def test_same_text_as_json_dumps(obj: Any) -> None:
    assert dumps(obj) == json.dumps(obj, indent=2)


def test_nan_and_rejected_objects_behave_as_json_dumps() -> None:
    assert dumps([math.nan]) == json.dumps([math.nan], indent=2) == "[\n  NaN\n]"
    for bad in ({"k": object()}, {(1, 2): "tuple key"}, [{1, 2}]):
        with pytest.raises(TypeError):
            json.dumps(bad, indent=2)
        with pytest.raises(TypeError):
            dumps(bad)
    cyc: list[Any] = []
    cyc.append(cyc)
    with pytest.raises(ValueError, match="Circular"):
        dumps(cyc)


@pytest.mark.parametrize("case", sample_cases()[:6], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sample_reports(case: Path, tmp_path: Path) -> None:
    ctx, out = run_case(case, tmp_path / "tree")
    for obj in (json_report(ctx, out), build_sarif(ctx, out)):
        assert dumps(obj) == json.dumps(obj, indent=2)


@pytest.mark.real
def test_real_release_reports(real_trees: Any) -> None:
    """The whole JSON and SARIF report of vLLM 0.16.0, as built (enums, tuples and all)."""
    ctx = analyze(dir_source(real_trees.get("0.16.0")), Options())
    out = finalize(ctx, Settings())
    for obj in (json_report(ctx, out), build_sarif(ctx, out)):
        text = dumps(obj)
        assert len(text) > 100_000
        assert text == json.dumps(obj, indent=2)


def test_fragments_are_their_values() -> None:
    """A Fragment (a row kept between runs, outcome.json_text) prints as its value would, wherever it sits."""
    from eagle3_lint.report.jsondump import Fragment, dumps_at

    row = {"name": "LlamaForCausalLM", "evidence": [{"kind": "class", "line": 3}], "inner": []}
    at_row = Fragment("    ", dumps_at(row, "    "))
    assert dumps({"architectures": [at_row]}) == json.dumps({"architectures": [row]}, indent=2)
    assert dumps([[at_row]]) == json.dumps([[row]], indent=2)  # another depth: encoded from its value
    with pytest.raises(TypeError):  # the library's fallback sees the values too
        dumps({"architectures": [at_row], "bad": object()})
