"""The serving verdict against expectations written by hand from the vLLM source (``cases.toml``).

Each case of ``cases.toml`` names a public target/drafter config pair, a release, a runner and a
pipeline-parallel size, and the outcome, stage, aux ids, captured and trained layers that the release's
source implies, with the file:line reasoning in its ``why``. Nothing here was derived from the tool.
Cases whose trained layers come from the checkpoint's history (``trained_layers_source = "provenance"``:
SpecForge ids carried over as-is into a speculators config) cannot be told from the config alone: the
tool must then refuse to say ``servable`` (the trained-layers step is ``unchecked``), and with the
convention stated (``--drafter-convention sglang``) it must match the expectation.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from eagle3_lint._compat import tomllib
from eagle3_lint.analysis import Analysis, Options, analyze
from eagle3_lint.engines import dir_source
from eagle3_lint.serving import Outcome, StepResult
from tests.conftest import session_cache

REPO = Path(__file__).resolve().parents[2]
CASES = tomllib.loads((REPO / "tests/serving/cases.toml").read_text())["case"]


def _ctx(real_trees: Any, case: dict[str, Any], convention: str | None) -> Analysis:
    tc, dc = REPO / case["target_config"], REPO / case["draft_config"]
    opts = Options(targets=(case["arch"],), target_config=json.loads(tc.read_text()), target_config_path=str(tc),
                   draft_config=json.loads(dc.read_text()), draft_config_path=str(dc), pipeline_parallel=case["pp"],
                   runner=case["runner"], drafter_convention=convention,
                   cache_dir=session_cache())  # each release parsed once for all the cases
    ctx = analyze(dir_source(real_trees.get(case["vllm"])), opts, select=lambda _rule: False)
    assert not ctx.errors, [e.message for e in ctx.errors]
    return ctx


@pytest.mark.real
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_case(case: dict[str, Any], real_trees: Any) -> None:
    provenance = case.get("trained_layers_source") == "provenance"
    sv = _ctx(real_trees, case, "sglang" if provenance else None).serving[case["arch"]]
    detail = "\n".join(f"{s.gate.value} {s.result.value}: {s.message}" for s in sv.steps)
    assert sv.runner is not None and sv.runner.value == case["runner"], detail
    assert sv.outcome.value == case["outcome"], detail
    assert (sv.stage.value if sv.stage else None) == case.get("stage"), detail
    if "aux_layer_ids" in case:
        assert list(sv.aux_layer_ids or ()) == case["aux_layer_ids"], detail
        assert sv.aux_layer_ids_source == case["aux_layer_ids_source"], detail
    if "captured_layers" in case:
        assert list(sv.captured_layers or ()) == case["captured_layers"], detail
    if "trained_layers" in case:
        assert list(sv.drafter_trained_ids or ()) == case["trained_layers"], detail


PROVENANCE = [c for c in CASES if c.get("trained_layers_source") == "provenance" and c["outcome"] == "wrong-layers"]


@pytest.mark.real
@pytest.mark.parametrize("case", PROVENANCE, ids=[c["id"] for c in PROVENANCE])
def test_carried_over_ids_are_never_called_servable(case: dict[str, Any], real_trees: Any) -> None:
    sv = _ctx(real_trees, case, None).serving[case["arch"]]
    assert sv.outcome is Outcome.UNCHECKED and sv.drafter_trained_ids is None
    step = sv.steps[-1]
    assert step.result is StepResult.UNCHECKED and "--drafter-convention" in step.message


@pytest.mark.real
def test_default_runner_of_each_release_matches_the_cases(real_trees: Any) -> None:
    """``runner = auto`` picks what each case marks as the release's default runner."""
    for case in (c for c in CASES if c["default_runner"] and c["pp"] == 1):
        auto = dict(case, runner="auto")
        sv = _ctx(real_trees, auto, None).serving[case["arch"]]
        assert sv.runner is not None and sv.runner.value == case["runner"], case["id"]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
