from itertools import islice

from torch import nn

from .interfaces import SupportsEagle, SupportsEagle3, SupportsPP
from .utils import make_layers


class DeepModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers,
            prefix="layers",
        )
        self.aux_hidden_state_layers = tuple[int, ...]()

    def forward(self, positions, hidden_states, intermediate_tensors=None):
        if intermediate_tensors is None:
            residual = None
        else:
            hidden_states = intermediate_tensors["hidden_states"]
            residual = intermediate_tensors["residual"]
        aux_hidden_states = []
        for idx, layer in enumerate(
            islice(self.layers, self.start_layer, self.end_layer), start=self.start_layer
        ):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = layer(positions, hidden_states, residual)
        if self.config.is_last_rank is False:
            return {"hidden_states": hidden_states, "residual": residual}
        hidden_states = hidden_states + residual
        if len(aux_hidden_states) > 0:
            return hidden_states, aux_hidden_states
        return hidden_states


class DeepForCausalLM(nn.Module, SupportsPP, SupportsEagle, SupportsEagle3):
    model_cls = DeepModel

    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = self.model_cls(vllm_config)

    def forward(self, positions, hidden_states):
        return self.model(positions, hidden_states)

    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.model.aux_hidden_state_layers = layers

    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
        num_layers = len(self.model.layers)
        return (2, num_layers // 2, num_layers - 3)


class DeepV3ForCausalLM(DeepForCausalLM):
    pass
