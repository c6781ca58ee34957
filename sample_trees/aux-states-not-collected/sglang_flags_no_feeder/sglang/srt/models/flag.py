from torch import nn


class FlagDecoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList()

    def forward(self, input_ids, positions, hidden_states):
        aux_hidden_states = []
        residual = None
        for layer in self.layers:
            hidden_states, residual = layer(
                positions, hidden_states, residual, aux_hidden_states if layer._is_layer_to_capture else None
            )
        if len(aux_hidden_states) == 0:
            return hidden_states
        return hidden_states, aux_hidden_states


class FlagForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = FlagDecoder(config)
        self.capture_aux_hidden_states = False

    def forward(self, input_ids, positions):
        hidden_states = self.model(input_ids, positions, None)
        aux_hidden_states = None
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = hidden_states
        return hidden_states, aux_hidden_states

    def set_eagle3_layers_to_capture(self, layer_ids=None):  # expect: EGL004
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.model.layers_to_capture = [val + 1 for val in layer_ids]


EntryClass = FlagForCausalLM
