"""A multimodal wrapper that misses SupportsEagle3 (registered from a dict's .items())."""

from torch import nn

from vllm.model_executor.models.interfaces import SupportsPP

from .text import TableForCausalLM


class TableVLForConditionalGeneration(nn.Module, SupportsPP):  # expect: EGL002
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.language_model = TableForCausalLM(vllm_config=vllm_config, prefix="language_model")

    def get_language_model(self) -> nn.Module:
        return self.language_model
