"""A multimodal wrapper that misses SupportsEagle3, registered by a helper that can call back into
models.register_model (a call cycle the walk must survive)."""

from torch import nn

from vllm.model_executor.models.interfaces import SupportsPP

from .text import HelperForCausalLM


class HelperVLForConditionalGeneration(nn.Module, SupportsPP):  # expect: EGL002
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.vision_tower = nn.Identity()
        self.language_model = HelperForCausalLM(vllm_config=vllm_config, prefix="language_model")

    def get_language_model(self) -> nn.Module:
        return self.language_model


def register_vision(with_text: bool = True) -> None:
    from vllm import ModelRegistry

    ModelRegistry.register_model("HelperVLForConditionalGeneration", HelperVLForConditionalGeneration)
    if with_text:
        from .models import register_model  # models -> vision -> models

        register_model()
