"""Fixes do not depend on the hash seed, and a collection fix appends the layer's own hidden state.

Before, ``fixgen._layer_call_vars`` picked the hidden-state variable out of a set: on vLLM 0.16.0 and
0.33.0 the zamba2 fix differed between ``PYTHONHASHSEED`` values, and one of the two collected
``original_hidden_states``, the embeddings every layer receives (``zamba2.py``: ``layer(hidden_states,
original_hidden_states=original_hidden_states, ...)`` then ``hidden_states = layer_outputs``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


def _fix(tree: Path, seed: int, *args: str) -> str:
    env = dict(os.environ, PYTHONHASHSEED=str(seed))
    p = subprocess.run([sys.executable, "-m", "eagle3_lint", "check", str(tree), "--fix", "--unsafe-fixes", *args],
                       capture_output=True, text=True, cwd=REPO, env=env)
    assert p.returncode in (0, 1), p.stderr
    return p.stdout


@pytest.mark.real
@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.16.0", "0.33.0"])
def test_fix_output_is_identical_for_every_hash_seed(version: str, real_trees: Any) -> None:
    tree = real_trees.get(version)
    for args in ((), ("--arch", "Zamba2ForCausalLM")):
        outs = {_fix(tree, seed, *args) for seed in range(8)}
        assert len(outs) == 1, f"{len(outs)} different --fix outputs for PYTHONHASHSEED 0..7 with {args}"
        out = outs.pop()
        assert out.strip(), args
        if args:
            added = [ln for ln in out.splitlines() if ln.startswith("+")]
            # 0.16: ``aux_hidden_states.append(hidden_states)``; 0.33: the mixin's
            # ``self._maybe_add_hidden_state(aux_hidden_states, layer_idx, hidden_states, None)``.
            collects = ("aux_hidden_states.append(hidden_states)", "aux_hidden_states, layer_idx, hidden_states")
            assert any(c in ln for ln in added for c in collects), added
            assert not any("original_hidden_states" in ln for ln in added), added
