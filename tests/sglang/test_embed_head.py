"""SGLang's EAGLE worker asks the top-level target for ``get_embed_and_head()`` (issue 24): a class with the setter
but without that method fails at load, with ``AttributeError``, and where in start-up depends on the release.

0.5.23: ``Scheduler.init_model_worker`` calls ``init_memory_pools()`` (``managers/scheduler.py:1137``), which
allocates the drafter's pools (:1106 ``self.draft_worker.alloc_memory_pool`` -> ``eagle_worker_v2.py:258``
``init_lm_head`` -> :339 ``_resolve_shared_embed_and_head`` -> ``pp_draft_embedding.py:261`` ->
``resolve_target_embed_and_head``, which calls ``target_model.get_embed_and_head()`` at :95 unless the target has
``get_embed_and_head_for_draft`` (:85-94), and re-raises the ``AttributeError`` at :97-98 when the input embedding is
not a PP stage's ``PPMissingLayer``), before ``init_all_attention_backends()`` (:1145), whose
``configure_aux_hidden_state_capture`` checks the setter (``attention_backend_setup.py:55-61``).

0.5.10: the setter is called while the target's ``ModelRunner`` is built (``ModelRunner.__init__`` ->
``initialize`` -> ``model_runner.py:668``); the EAGLE worker, built after it and given the target worker, calls
``self.target_worker.model_runner.model.get_embed_and_head()`` in its ``__init__`` (``eagle_worker.py:158``).

``Qwen2MoeForCausalLM`` has the setter (0.5.23 ``qwen2_moe.py:1418``, 0.5.10 :928) and neither method in its class or
its base ``nn.Module`` (``qwen2_moe.py:1218``, 0.5.10 :726); ``LlamaForCausalLM`` has both (0.5.23 ``llama.py:892``,
0.5.10 :754).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cihelp import run_cli


def _check(root: Path, tmp: Path, arch: str) -> dict:
    proc = run_cli(["check", str(root), "--arch", arch, "--output-format", "json"], cwd=tmp)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def _interface_steps(sv: dict) -> list[tuple[str, int, str]]:
    return [(s["path"], s["line"], s["result"]) for s in sv["steps"] if s["gate"] == "runner-interface"]


@pytest.mark.real
def test_0_5_23_takes_the_embedding_before_it_checks_the_setter(sglang_trees, tmp_path: Path) -> None:  # noqa: ANN001
    rep = _check(sglang_trees.get("0.5.23"), tmp_path, "Qwen2MoeForCausalLM")
    sv = rep["serving"][0]
    assert (sv["outcome"], sv["stage"]) == ("refused-at-load", "runner-interface")
    assert _interface_steps(sv) == [
        ("sglang/srt/speculative/pp_draft_embedding.py", 95, "fail"),
        ("sglang/srt/model_executor/model_runner_components/attention_backend_setup.py", 61, "pass")]
    fail = sv["steps"][1]
    assert "AttributeError: 'Qwen2MoeForCausalLM' object has no attribute 'get_embed_and_head'" in fail["message"]
    assert "get_embed_and_head_for_draft" in fail["message"]  # tried first, :85-94
    assert "sglang/srt/managers/scheduler.py:1137" in fail["message"] and ":1145" in fail["message"]
    # No other rule names it: EGL012 does, where the engine raises.
    mine = [(f["rule"], f["path"], f["line"]) for f in rep["findings"] if f["architecture"] == "Qwen2MoeForCausalLM"
            and f["severity"] == "error"]
    assert mine == [("EGL012", "sglang/srt/speculative/pp_draft_embedding.py", 95)]
    # Its title says what the runner hits there, not only the gate (the AttributeError of :95).
    egl012 = next(f for f in rep["findings"] if f["rule"] == "EGL012")
    assert egl012["title"] == "Qwen2MoeForCausalLM: get_embed_and_head() raises AttributeError under EAGLE3"


@pytest.mark.real
def test_0_5_10_checks_the_setter_first(sglang_trees, tmp_path: Path) -> None:  # noqa: ANN001
    sv = _check(sglang_trees.get("0.5.10"), tmp_path, "Qwen2MoeForCausalLM")["serving"][0]
    assert (sv["outcome"], sv["stage"]) == ("refused-at-load", "runner-interface")
    assert _interface_steps(sv) == [("sglang/srt/model_executor/model_runner.py", 668, "pass"),
                                    ("sglang/srt/speculative/eagle_worker.py", 158, "fail")]
    assert "ModelRunner.__init__ -> ModelRunner.initialize" in sv["steps"][2]["message"]


@pytest.mark.real
@pytest.mark.parametrize(("version", "line"), [("0.5.23", 892), ("0.5.10", 754)])
def test_a_class_with_the_method_passes(sglang_trees, tmp_path: Path, version: str, line: int) -> None:  # noqa: ANN001
    sv = _check(sglang_trees.get(version), tmp_path, "LlamaForCausalLM")["serving"][0]
    step = next(s for s in sv["steps"] if s["gate"] == "runner-interface" and "get_embed_and_head" in s["message"])
    assert step["result"] == "pass" and f"sglang/srt/models/llama.py:{line}" in step["message"]
    assert sv["outcome"] == "unchecked"  # no drafter config: the id steps are unchecked, nothing fails
