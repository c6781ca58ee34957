"""A multimodal wrapper around DemoForCausalLM that does not implement SupportsEagle3 itself.

The runner asks the wrapper (``supports_eagle3(self.get_model())``), so EAGLE-3 fails although the
inner model supports it: the Kimi-K2.5 shape, in a plugin.
"""

from torch import nn

from vllm.model_executor.models.interfaces import SupportsPP

from .good import DemoForCausalLM


class DemoVLForConditionalGeneration(nn.Module, SupportsPP):  # expect: EGL002
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.vision_tower = nn.Identity()
        self.language_model = DemoForCausalLM(vllm_config=vllm_config, prefix="language_model")

    def get_language_model(self) -> nn.Module:
        return self.language_model
