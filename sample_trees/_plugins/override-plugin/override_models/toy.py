"""A faster ToyForCausalLM that forgot the SupportsEagle3 base: the replacement loses EAGLE-3."""

from torch import nn

from vllm.model_executor.models.interfaces import SupportsPP
from vllm.model_executor.models.toy import ToyModel


class FastToyForCausalLM(nn.Module, SupportsPP):  # expect: EGL003
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = ToyModel(vllm_config.model_config.hf_config)

    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.model.aux_hidden_state_layers = layers

    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
        num_layers = len(self.model.layers)
        return (2, num_layers // 2, num_layers - 3)
