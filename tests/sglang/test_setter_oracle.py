"""The setter's id transform the tool reads (``engines/sglang/setter.py``) against what SGLang's own setter stores.

The snapshots ``tests/differential/oracle/sglang-setters-<V>.json`` were recorded with
``scripts/oracle/sglang_setters.py`` in the CPU oracle venv of each release: every registered class that has
``set_eagle3_layers_to_capture`` ran it on a probe instance, for the default (``None``) and for drafter lists
that exercise the +1 and both heuristics (first id 1; largest id equal to ``n``), at 32 and 61 layers. The live
re-recording runs with the verdict oracle (``test_oracle_live.py``).

Every case must be predicted and agree: the list stored in ``layers_to_capture`` (or handed to a delegate's
setter with the shift applied), or, for a setter that hands the ids on unchanged, exactly the ids it was given.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagle3_lint.engines.sglang.setter import capture_indices, default_indices
from eagle3_lint.engines.sglang.verdicts import contract

ORACLE = Path(__file__).resolve().parents[1] / "differential" / "oracle"


@pytest.mark.real
@pytest.mark.parametrize("version", ["0.5.10", "0.5.19", "0.5.23"])
def test_setter_transform_agrees_with_sglang_itself(sglang_trees, version: str) -> None:
    oracle = json.loads((ORACLE / f"sglang-setters-{version}.json").read_text())
    verdicts = contract(sglang_trees.get(version)).by_arch()
    compared, wrong = 0, []
    for arch, rec in oracle["archs"].items():
        t = verdicts[arch].setter
        assert t is not None, arch
        for case in rec["cases"]:
            assert "error" not in case, (arch, case)
            n, ids, stored = case["n"], case["ids"], case["stored"]
            if t.delegates_to and t.offset == 0:
                # Handed on unchanged: the delegate's own setter decides what is captured.
                want: object = {f"{d}.set_eagle3_layers_to_capture()": ids for d in t.delegates_to}
                got: object = stored
            else:
                want = default_indices(t, n) if ids is None else capture_indices(t, ids, n)
                got = next(iter(stored.values())) if len(stored) == 1 else stored
            compared += 1
            if got != want:
                wrong.append((arch, n, ids, want, stored))
    assert not wrong, wrong
    assert compared == sum(len(r["cases"]) for r in oracle["archs"].values()) >= 7 * 40


@pytest.mark.real
def test_default_shifted_like_drafter_ids_0_5_23(sglang_trees) -> None:
    """minimax_m3_vl.py:260-263 (0.5.23) assigns its default to ``layer_ids`` and then stores
    ``[val + 1 for val in layer_ids]`` on both paths, so the default is shifted too; the oracle found the
    tool reading it as stored unshifted."""
    t = contract(sglang_trees.get("0.5.23")).by_arch()["MiniMaxM3SparseForConditionalGeneration"].setter
    assert t is not None and t.default_shifted and t.offset == 1
    assert default_indices(t, 32) == [3, 17, 30]
