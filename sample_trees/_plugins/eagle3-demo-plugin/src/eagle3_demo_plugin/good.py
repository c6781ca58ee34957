"""A decoder-only model written against vLLM 0.12-0.17's SupportsEagle3 (explicit idiom, absolute indices)."""

from itertools import islice

from torch import nn

from vllm.model_executor.models.interfaces import SupportsEagle3, SupportsPP


class DemoModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.start_layer, self.end_layer = 0, config.num_hidden_layers
        self.layers = nn.ModuleList()
        self.aux_hidden_state_layers = tuple[int, ...]()

    def forward(self, hidden_states, positions):
        residual = hidden_states
        aux_hidden_states = []
        for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer), start=self.start_layer):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = layer(positions, hidden_states, residual)
        if len(aux_hidden_states) > 0:
            return hidden_states, aux_hidden_states
        return hidden_states


class DemoForCausalLM(nn.Module, SupportsPP, SupportsEagle3):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = DemoModel(vllm_config.model_config.hf_config)

    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.model.aux_hidden_state_layers = layers

    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
        num_layers = len(self.model.layers)
        return (2, num_layers // 2, num_layers - 3)
