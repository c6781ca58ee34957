from itertools import islice

from torch import nn

from .interfaces import EagleModelMixin, SupportsEagle3, SupportsPP


class DenseModel(nn.Module, EagleModelMixin):
    def __init__(self, config):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = 0, config.num_hidden_layers, nn.ModuleList()

    def forward(self, hidden_states, residual):
        aux_hidden_states = self._maybe_add_hidden_state([], self.start_layer, hidden_states, residual)
        for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer), start=self.start_layer):  # expect: EGL005
            hidden_states, residual = layer(hidden_states, residual)
            self._maybe_add_hidden_state(aux_hidden_states, idx + 1 - self.start_layer, hidden_states, residual)
        if len(aux_hidden_states) > 0:
            return hidden_states, aux_hidden_states
        return hidden_states


class DenseForCausalLM(nn.Module, SupportsPP, SupportsEagle3):
    def __init__(self, config):
        super().__init__()
        self.model = DenseModel(config)
