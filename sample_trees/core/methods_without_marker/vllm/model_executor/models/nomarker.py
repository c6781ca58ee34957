from torch import nn

from .interfaces import SupportsPP


class NoMarkerModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList()
        self.aux_hidden_state_layers = ()

    def forward(self, hidden_states):
        aux_hidden_states = []
        for idx, layer in enumerate(self.layers):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states)
            hidden_states = layer(hidden_states)
        if aux_hidden_states:
            return hidden_states, aux_hidden_states
        return hidden_states


class NoMarkerForCausalLM(nn.Module, SupportsPP):  # expect: EGL003
    def __init__(self, config):
        super().__init__()
        self.model = NoMarkerModel(config)

    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.model.aux_hidden_state_layers = layers

    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
        return (2, 4, 6)
