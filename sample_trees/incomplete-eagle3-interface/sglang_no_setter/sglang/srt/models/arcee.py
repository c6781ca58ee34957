from torch import nn


class ArceeModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList()
        self.layers_to_capture = []

    def forward(self, input_ids, positions, hidden_states):
        aux_hidden_states = []
        residual = None
        for i in range(len(self.layers)):
            if i in self.layers_to_capture:
                aux_hidden_states.append(hidden_states + residual if residual is not None else hidden_states)
            hidden_states, residual = self.layers[i](positions, hidden_states, residual)
        if len(aux_hidden_states) == 0:
            return hidden_states
        return hidden_states, aux_hidden_states


class ArceeForCausalLM(nn.Module):  # expect: EGL003
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = ArceeModel(config)
        self.capture_aux_hidden_states = False

    def forward(self, input_ids, positions):
        hidden_states = self.model(input_ids, positions, None)
        aux_hidden_states = None
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = hidden_states
        return hidden_states, aux_hidden_states


EntryClass = ArceeForCausalLM
