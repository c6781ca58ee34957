from torch import nn

from .interfaces import SupportsPP


class StepDecoderModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.start_layer, self.end_layer = 0, config.num_hidden_layers
        self.layers = nn.ModuleList()
        self.aux_hidden_state_layers = tuple[int, ...]()

    def forward(self, hidden_states, residual):
        aux_hidden_states = []
        for idx, layer in enumerate(self.layers[self.start_layer : self.end_layer]):  # expect: EGL005
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = layer(hidden_states, residual)
        if len(aux_hidden_states) > 0:
            return hidden_states, aux_hidden_states
        return hidden_states


class StepForCausalLM(nn.Module, SupportsPP):
    def __init__(self, config):
        super().__init__()
        self.model = StepDecoderModel(config)
