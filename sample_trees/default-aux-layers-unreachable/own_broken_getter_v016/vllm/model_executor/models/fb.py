from itertools import islice

from torch import nn

from .interfaces import SupportsEagle3, SupportsPP
from .utils import make_layers


class FbModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(config.num_hidden_layers)
        self.aux_hidden_state_layers = tuple[int, ...]()

    def forward(self, positions, hidden_states):
        residual = None
        aux_hidden_states = []
        for idx, layer in enumerate(
            islice(self.layers, self.start_layer, self.end_layer), start=self.start_layer
        ):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = layer(positions, hidden_states, residual)
        if len(aux_hidden_states) > 0:
            return hidden_states, aux_hidden_states
        return hidden_states


class FbForCausalLM(nn.Module, SupportsPP, SupportsEagle3):  # expect: EGL006
    def __init__(self, vllm_config, prefix=""):
        super().__init__()
        self.model = FbModel(vllm_config)

    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.model.aux_hidden_state_layers = layers

    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
        return self.model.get_eagle3_aux_hidden_state_layers()
