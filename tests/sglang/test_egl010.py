"""EGL010 on released SGLang trees: the CUDA-graph runner's call with no ids (0.4.7 - 0.5.10).

Expectations read from SGLang's source:
- 0.4.7: model_executor/cuda_graph_runner.py:279 ``self.model_runner.model.set_eagle3_layers_to_capture()``
  (then ``self.capture()`` at :305) and model_runner.py:294 the same with no ids: no runner call passes the
  drafter's ids at all.
- 0.4.9: cuda_graph_runner.py:298 no ids, ``self.capture()`` at :336; model_runner.py:341 passes
  ``eagle_aux_hidden_state_layer_ids``.
- 0.5.10: cuda_graph_runner.py:648 no ids, ``self.capture()`` at :653; model_runner.py:668 passes the ids after
  ``init_device_graphs()`` (:655); model_runner.py:2158 (``_dummy_run``, the warm-up of :654) has no ids but
  captures nothing and is replaced at :668: not flagged.
- 0.5.11: model_runner.py:821 is the only call, with the ids; 0.5.23: attention_backend_setup.py:61, likewise.
"""

from __future__ import annotations

import pytest

from eagle3_lint.analysis import Options, analyze
from eagle3_lint.engines import dir_source
from eagle3_lint.source import DirSource

EXPECTED = {
    "0.4.7": [("sglang/srt/model_executor/cuda_graph_runner.py", 279, "no runner call passes")],
    "0.4.9": [("sglang/srt/model_executor/cuda_graph_runner.py", 298, "model_runner.py:341")],
    "0.5.10": [("sglang/srt/model_executor/cuda_graph_runner.py", 648, "model_runner.py:668")],
    "0.5.11": [],
    "0.5.23": [],
}


@pytest.mark.real
@pytest.mark.parametrize("version", sorted(EXPECTED))
def test_graph_runner_default_ids(sglang_trees, version: str) -> None:
    ctx = analyze(DirSource(sglang_trees.get(version), "sglang"), Options(), select=lambda rule: rule == "EGL010")
    assert not ctx.errors, ctx.errors
    got = [(f.location.path, f.location.line, f.message) for f in ctx.findings]
    assert [(p, n) for p, n, _m in got] == [(p, n) for p, n, _s in EXPECTED[version]], got
    for (_p, _n, msg), (_ep, _en, says) in zip(got, EXPECTED[version], strict=True):
        assert says in msg, msg


@pytest.mark.real
@pytest.mark.parametrize("version", ["0.11.0", "0.16.0", "0.33.0"])
def test_vllm_runners_always_pass_the_ids(real_trees: object, version: str) -> None:
    """vLLM's runners hand the setter the ids they read (the drafter config's, else the model default), so EGL010
    never fires on a vLLM release (gpu_model_runner.py's set_aux_hidden_state_layers(aux_layers) call)."""
    tree = real_trees.get(version)  # type: ignore[attr-defined]  # the conftest fixture's accessor
    ctx = analyze(dir_source(tree), Options(), select=lambda rule: rule == "EGL010")
    assert not ctx.findings
    assert any(s.setter for s in ctx.runner.sites) and all(
        s.setter_ids is not None and s.setter_ids.value == "drafter" for s in ctx.runner.sites if s.setter)
