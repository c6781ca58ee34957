from torch import nn

from .interfaces import SupportsPP
from .utils import init_vllm_registered_model


class WrapForConditionalGeneration(nn.Module, SupportsPP):  # expect: EGL002
    def __init__(self, vllm_config, prefix=""):
        super().__init__()
        self.language_model = init_vllm_registered_model(
            vllm_config=vllm_config,
            prefix=prefix,
            architectures=["InnerForCausalLM"],
        )

    def get_language_model(self):
        return self.language_model


class WrapVariantForConditionalGeneration(WrapForConditionalGeneration):
    def load_weights(self, weights):
        return set()
