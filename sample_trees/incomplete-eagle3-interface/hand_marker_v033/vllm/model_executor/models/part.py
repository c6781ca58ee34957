from itertools import islice

from torch import nn

from .interfaces import EagleModelMixin, SupportsPP
from .utils import make_layers


class PartModel(nn.Module, EagleModelMixin):
    def __init__(self, config):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(config.num_hidden_layers)

    def forward(self, positions, hidden_states):
        residual = None
        aux_hidden_states = []
        for idx, layer in enumerate(
            islice(self.layers, self.start_layer, self.end_layer), start=self.start_layer
        ):
            self._maybe_add_hidden_state(aux_hidden_states, idx, hidden_states, residual)
            hidden_states, residual = layer(positions, hidden_states, residual)
        if len(aux_hidden_states) > 0:
            return hidden_states, aux_hidden_states
        return hidden_states


class PartForCausalLM(nn.Module, SupportsPP):  # expect: EGL003
    supports_eagle3 = True

    def __init__(self, vllm_config, prefix=""):
        super().__init__()
        self.model = PartModel(vllm_config)
