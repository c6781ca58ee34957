"""Registrations behind guards the tool must keep, never evaluate: the platform, vLLM's version, an
environment variable (an early return in a helper), an optional import, contextlib.suppress."""

import contextlib
import os

import vllm
from vllm.platforms import current_platform

_M = "guarded_models.models"


def _register_extra(registry) -> None:
    if os.environ.get("GUARDED_EXTRA") != "1":
        return
    registry.register_model("GuardedExtraForCausalLM", f"{_M}:GuardedExtraForCausalLM")


def register():
    from vllm import ModelRegistry

    ModelRegistry.register_model("GuardedForCausalLM", f"{_M}:GuardedForCausalLM")
    if current_platform.is_cuda():
        ModelRegistry.register_model("GuardedCudaForCausalLM", f"{_M}:GuardedCudaForCausalLM")
    elif current_platform.is_rocm():
        ModelRegistry.register_model("GuardedRocmForCausalLM", f"{_M}:GuardedRocmForCausalLM")
    if vllm.__version__ >= "0.15":
        ModelRegistry.register_model("GuardedVersionedForCausalLM", f"{_M}:GuardedNewForCausalLM")
    else:
        ModelRegistry.register_model("GuardedVersionedForCausalLM", f"{_M}:GuardedOldForCausalLM")
    try:
        import flash_attn  # noqa: F401

        ModelRegistry.register_model("GuardedFlashForCausalLM", f"{_M}:GuardedFlashForCausalLM")
    except ImportError:
        pass
    with contextlib.suppress(ImportError):
        from .models import GuardedForCausalLM

        ModelRegistry.register_model("GuardedSuppressedForCausalLM", GuardedForCausalLM)
    _register_extra(ModelRegistry)
    current_platform.is_tpu() and ModelRegistry.register_model("GuardedTpuForCausalLM", f"{_M}:GuardedTpuForCausalLM")
