from torch import nn

from .interfaces import (
    SupportsPP,
)
from .utils import init_vllm_registered_model


class KimiForConditionalGeneration(nn.Module, SupportsPP):  # expect: EGL001, EGL009
    def __init__(self, vllm_config, prefix=""):
        super().__init__()
        self.language_model = init_vllm_registered_model(
            vllm_config=vllm_config,
            prefix=prefix,
            architectures=["DeepForCausalLM"],
        )

    def forward(self, positions, hidden_states):
        return self.language_model(positions, hidden_states)
