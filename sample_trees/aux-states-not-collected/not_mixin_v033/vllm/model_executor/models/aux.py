from itertools import islice

from torch import nn

from .interfaces import SupportsEagle3, SupportsPP
from .utils import make_layers


class AuxModel(nn.Module):  # expect: EGL004
    def __init__(self, config):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(config.num_hidden_layers)

    def forward(self, positions, hidden_states):
        residual = None
        for layer in islice(self.layers, self.start_layer, self.end_layer):
            hidden_states, residual = layer(positions, hidden_states, residual)
        return hidden_states


class AuxForCausalLM(nn.Module, SupportsPP, SupportsEagle3):
    def __init__(self, vllm_config, prefix=""):
        super().__init__()
        self.model = AuxModel(vllm_config)
