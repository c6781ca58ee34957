from typing import List, Optional

from torch import nn


class ListModel(nn.Module):
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


class VLForConditionalGeneration(nn.Module):
    def __init__(self, config, language_model_cls=ListModel):
        super().__init__()
        self.config = config
        self.model = language_model_cls(config)
        self.capture_aux_hidden_states = False

    def forward(self, input_ids, positions):
        hidden_states = self.model(input_ids, positions, None)
        aux_hidden_states = None
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = hidden_states
        return hidden_states, aux_hidden_states

    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):  # expect: EGL004
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.model.layers_to_capture = [val + 1 for val in layer_ids]


EntryClass = VLForConditionalGeneration
