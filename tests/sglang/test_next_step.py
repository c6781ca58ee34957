"""The next step for a blocked SGLang target with no automatic fix (issue 13's "next step", on SGLang).

SGLang 0.5.10's Qwen3VLMoeForConditionalGeneration fails at load (model_runner.py:668 calls
``set_eagle3_layers_to_capture`` unguarded; neither the class nor Qwen3VLForConditionalGeneration defines it,
qwen3_vl.py:1051) and EGL002 has no fix there (the inner Qwen3MoeLLMModel is a decoder without logits): the
next step is the trace of what the runner reaches, in the same [TARGET] --arch shape as the check.
"""

from __future__ import annotations

import pytest

from eagle3_lint.app import CheckRequest, run_check
from eagle3_lint.report.headline import next_step, verdict_line
from tests import cihelp

ARCH = "Qwen3VLMoeForConditionalGeneration"


@pytest.mark.real
def test_blocked_without_fix_points_at_the_trace(sglang_trees) -> None:
    root = str(sglang_trees.get("0.5.10"))
    ctx = run_check(CheckRequest(root, (ARCH,), no_cache=True))
    assert verdict_line(ctx, ARCH).startswith(f"{ARCH} on SGLang 0.5.10 (CUDA): refused at load "
                                              "(sglang/srt/model_executor/model_runner.py:668) -- 1 blocker")
    invocation = f"eagle3-lint check {root} --arch {ARCH}"
    assert next_step(ctx, ARCH, ctx.findings, invocation) == (
        f"eagle3-lint trace {root} --arch {ARCH} shows what the runner reaches (no automatic fix)")


@pytest.mark.real
def test_trace_names_the_error_the_user_would_see(sglang_trees) -> None:
    """The trace it points at quotes the runner's error with the architecture's class in it, on both shapes:
    0.5.10's unguarded call (AttributeError, model_runner.py:668) and 0.5.23's ``hasattr`` guard raising
    ``ValueError(f"Model {model.__class__.__name__} does not implement ...")`` (attention_backend_setup.py:55)."""
    for version, error in (
        ("0.5.10", f"AttributeError: '{ARCH}' object has no attribute 'set_eagle3_layers_to_capture'"),
        ("0.5.23", f"ValueError: Model {ARCH} does not implement set_eagle3_layers_to_capture,"),
    ):
        p = cihelp.cli("trace", str(sglang_trees.get(version)), "--arch", ARCH)
        assert p.returncode == 0, p.stderr
        assert f"a model without it: {error}" in p.stdout and "<model class>" not in p.stdout, version
