from itertools import islice

from torch import nn

from .interfaces import SupportsEagle3, SupportsPP


class LlamaModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.start_layer, self.end_layer = 0, config.num_hidden_layers
        self.layers = nn.ModuleList()
        self.aux_hidden_state_layers = tuple[int, ...]()

    def forward(self, hidden_states, residual):
        aux_hidden_states = []
        for idx, layer in enumerate(
            islice(self.layers, self.start_layer, self.end_layer), start=self.start_layer
        ):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = layer(hidden_states, residual, idx=idx)
        for i, layer in enumerate(islice(self.layers, self.end_layer)):
            if i in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states)
        for i, layer in enumerate(self.layers[self.start_layer : self.end_layer]):
            layer.layer_idx = i
        if len(aux_hidden_states) > 0:
            return hidden_states, aux_hidden_states
        return hidden_states


class LlamaForCausalLM(nn.Module, SupportsPP, SupportsEagle3):  # expect: EGL009
    def __init__(self, config):
        super().__init__()
        self.model = LlamaModel(config)

    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.model.aux_hidden_state_layers = layers

    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
        num_layers = len(self.model.layers)
        return (2, num_layers // 2, num_layers - 3)
