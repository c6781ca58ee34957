from itertools import islice

from torch import nn

from .interfaces import EagleModelMixin, SupportsEagle3, SupportsPP


class ScaledModel(nn.Module, EagleModelMixin):
    supports_aux_hidden_states_over_pp = True

    def __init__(self, config):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = 0, config.num_hidden_layers, nn.ModuleList()
        self.local_scales = nn.ParameterList()  # one per layer this rank holds

    def local_scale(self, local_idx, hidden_states):
        return hidden_states * self.local_scales[local_idx]

    def forward(self, hidden_states, residual):
        aux_hidden_states = self._maybe_add_hidden_state([], self.start_layer, hidden_states, residual)
        for idx, layer in enumerate(
            islice(self.layers, self.start_layer, self.end_layer),
            start=self.start_layer,
        ):
            hidden_states, residual = layer(hidden_states, residual)
            # Rebased for a per-rank list, not for the aux ids: correct.
            hidden_states = self.local_scale(idx - self.start_layer, hidden_states)
            self._maybe_add_hidden_state(aux_hidden_states, idx + 1, hidden_states, residual)
        if len(aux_hidden_states) > 0:
            return hidden_states, aux_hidden_states
        return hidden_states


class ScaledForCausalLM(nn.Module, SupportsPP, SupportsEagle3):
    def __init__(self, config):
        super().__init__()
        self.model = ScaledModel(config)
