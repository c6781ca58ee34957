from itertools import islice

from torch import nn

from .interfaces import SupportsEagle, SupportsPP
from .utils import make_layers


class DeepModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.start_layer, self.end_layer, self.layers = make_layers(
            config.num_hidden_layers,
            prefix="layers",
        )

    def forward(self, positions, hidden_states, intermediate_tensors=None):
        if intermediate_tensors is None:
            residual = None
        else:
            hidden_states = intermediate_tensors["hidden_states"]
            residual = intermediate_tensors["residual"]
        for layer in islice(self.layers, self.start_layer, self.end_layer):
            hidden_states, residual = layer(positions, hidden_states, residual)
        if self.config.is_last_rank is False:
            return {"hidden_states": hidden_states, "residual": residual}
        hidden_states = hidden_states + residual
        return hidden_states


class DeepForCausalLM(nn.Module, SupportsPP, SupportsEagle):
    model_cls = DeepModel

    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = self.model_cls(vllm_config)

    def forward(self, positions, hidden_states):
        return self.model(positions, hidden_states)


class DeepV3ForCausalLM(DeepForCausalLM):  # expect: EGL001, EGL009
    pass


# As in vLLM 0.10's deepseek_v2.py, the file goes on after the placeholder class.
def get_spec_layer_idx_from_weight_name(config, weight_name):
    return None
