from torch import nn


class SliceModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList()
        self.start_layer = 0
        self.end_layer = 0
        self.layers_to_capture = []

    def forward(self, input_ids, positions, hidden_states):
        aux_hidden_states = []
        residual = None
        for i, layer in enumerate(self.layers[self.start_layer : self.end_layer]):  # expect: EGL005
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states + residual if residual is not None else hidden_states)
            hidden_states, residual = layer(positions, hidden_states, residual)
        if len(aux_hidden_states) == 0:
            return hidden_states
        return hidden_states, aux_hidden_states


class SliceForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = SliceModel(config)
        self.capture_aux_hidden_states = False

    def forward(self, input_ids, positions):
        hidden_states = self.model(input_ids, positions, None)
        aux_hidden_states = None
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = hidden_states
        return hidden_states, aux_hidden_states

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.model.layers_to_capture = [val + 1 for val in layer_ids]


EntryClass = SliceForCausalLM
