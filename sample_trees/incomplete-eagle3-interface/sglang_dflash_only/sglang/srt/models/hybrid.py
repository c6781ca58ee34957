from typing import List

from torch import nn


class HybridModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList()
        self.layers_to_capture = set()

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


class HybridForCausalLM(nn.Module):  # expect: EGL003
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = HybridModel(config)
        self.capture_aux_hidden_states = False

    def forward(self, input_ids, positions):
        hidden_states = self.model(input_ids, positions, None)
        aux_hidden_states = None
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = hidden_states
        return hidden_states, aux_hidden_states

    def set_dflash_layers_to_capture(self, layer_ids: List[int]):
        if layer_ids is None:
            raise ValueError("DFLASH requires explicit layer_ids for aux hidden capture.")
        self.capture_aux_hidden_states = True
        self.model.layers_to_capture = {layer_id + 1 for layer_id in layer_ids}


EntryClass = HybridForCausalLM
