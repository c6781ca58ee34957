from typing import TYPE_CHECKING

from vllm.platforms import current_platform

if TYPE_CHECKING:
    from .nvidia.model import FamForCausalLM
elif current_platform.is_rocm():
    from .amd.model import FamForCausalLM  # type: ignore[assignment]
else:
    from .nvidia.model import FamForCausalLM

__all__ = ["FamForCausalLM"]
