from torch import nn

from .interfaces import EagleModelMixin, SupportsEagle3, SupportsPP


class MossModel(nn.Module, EagleModelMixin):
    supports_aux_hidden_states_over_pp = True

    def __init__(self, config):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = 0, config.num_hidden_layers, nn.ModuleList()

    def forward(self, hidden_states, residual):
        aux_hidden_states = self._maybe_add_hidden_state([], self.start_layer, hidden_states, residual)
        for layer_idx, layer in enumerate(  # expect: EGL005
            self.layers[self.start_layer : self.end_layer],
            start=self.start_layer,
        ):
            hidden_states, residual = layer(hidden_states, residual)
            self._maybe_add_hidden_state(
                aux_hidden_states,
                layer_idx - self.start_layer + 1,
                hidden_states,
                residual,
            )
        if len(aux_hidden_states) > 0:
            return hidden_states, aux_hidden_states
        return hidden_states


class MossForCausalLM(nn.Module, SupportsPP, SupportsEagle3):
    def __init__(self, config):
        super().__init__()
        self.model = MossModel(config)
