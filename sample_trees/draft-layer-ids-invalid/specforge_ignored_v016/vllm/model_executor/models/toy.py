# A decoder in the explicit idiom of vLLM 0.12-0.17 (llama.py, qwen3_moe.py): the state entering
# layer idx is collected when idx is an aux id; residual is None before the first layer.
from itertools import islice

from torch import nn

from vllm.distributed import get_pp_group
from vllm.sequence import IntermediateTensors

from .interfaces import SupportsEagle3, SupportsPP


class ToyModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.start_layer, self.end_layer = 0, config.num_hidden_layers
        self.layers = nn.ModuleList()
        self.aux_hidden_state_layers = tuple[int, ...]()

    def forward(self, input_ids, positions, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states = self.embed_tokens(input_ids)
            residual = None
        else:
            hidden_states = intermediate_tensors["hidden_states"]
            residual = intermediate_tensors["residual"]
        aux_hidden_states = []
        for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer), start=self.start_layer):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = layer(positions, hidden_states, residual)
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"hidden_states": hidden_states, "residual": residual})
        hidden_states, _ = self.norm(hidden_states, residual)
        if len(aux_hidden_states) > 0:
            return hidden_states, aux_hidden_states
        return hidden_states


class ToyForCausalLM(nn.Module, SupportsPP, SupportsEagle3):  # expect: EGL009
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = ToyModel(vllm_config.model_config.hf_config)

    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.model.aux_hidden_state_layers = layers

    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
        num_layers = len(self.model.layers)
        return (2, num_layers // 2, num_layers - 3)
