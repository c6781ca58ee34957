from itertools import islice

from torch import nn

from .interfaces import SupportsEagle3, SupportsPP
from .utils import make_layers


class AuxModel(nn.Module):
    @staticmethod
    def layer_count(config):
        return config.num_hidden_layers

    def __init__(self, config):
        super().__init__()
        self._init_layers(config)

    def _init_layers(self, config):
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers,
            prefix="layers",
        )

    def forward(self, positions, hidden_states):  # expect: EGL004
        residual = None
        for layer in islice(self.layers, self.start_layer, self.end_layer):
            hidden_states, residual = layer(positions, hidden_states, residual)
        hidden_states = hidden_states + residual
        return hidden_states


class AuxForCausalLM(nn.Module, SupportsPP, SupportsEagle3):
    def __init__(self, vllm_config, prefix=""):
        super().__init__()
        self.model = AuxModel(vllm_config)

    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.model.aux_hidden_state_layers = layers

    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
        num_layers = len(self.model.layers)
        return (2, num_layers // 2, num_layers - 3)
