from typing import TYPE_CHECKING

from vllm.platforms import current_platform

# The runtime default (no ROCm) takes the body: the NVIDIA implementation.
if TYPE_CHECKING or not current_platform.is_rocm():
    from .nvidia.model import Fam2ForCausalLM
else:
    from .amd.model import Fam2ForCausalLM  # type: ignore[assignment]
