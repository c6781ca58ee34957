from torch import nn

from sglang.srt.models.vl import VLForConditionalGeneration


class FlagModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList()
        self.layers_to_capture = []

    def set_dflash_layers_to_capture(self, layers_to_capture: list[int]):
        self.layers_to_capture = layers_to_capture
        for layer_id in self.layers_to_capture:
            setattr(self.layers[layer_id], "_is_layer_to_capture", True)

    def forward(self, input_ids, positions, hidden_states):
        aux_hidden_states = []
        residual = None
        for layer_idx in range(len(self.layers)):
            layer = self.layers[layer_idx]
            hidden_states, residual = layer(
                positions,
                hidden_states,
                residual,
                captured_last_layer_outputs=(
                    aux_hidden_states if getattr(layer, "_is_layer_to_capture", False) else None
                ),
            )
        if len(aux_hidden_states) == 0:
            return hidden_states
        return hidden_states, aux_hidden_states


class FlagVLForConditionalGeneration(VLForConditionalGeneration):
    def __init__(self, config, language_model_cls=FlagModel):
        super().__init__(config, language_model_cls)


EntryClass = FlagVLForConditionalGeneration
