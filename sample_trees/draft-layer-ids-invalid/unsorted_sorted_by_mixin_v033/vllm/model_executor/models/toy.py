# A decoder that returns aux states in the stored ids' order (0.30+ DeepseekV4Model); otherwise the mixin idiom (qwen2.py): the embeddings before the loop on the first
# rank, then the state after layer idx as id idx + 1; it relays aux states over pipeline ranks.
from itertools import islice

from torch import nn

from vllm.distributed import get_pp_group
from vllm.sequence import IntermediateTensors

from .interfaces import EagleModelMixin, SupportsEagle3, SupportsPP


class ToyModel(nn.Module, EagleModelMixin):
    supports_aux_hidden_states_over_pp = True

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.start_layer, self.end_layer = 0, config.num_hidden_layers
        self.layers = nn.ModuleList()

    def forward(self, input_ids, positions, intermediate_tensors=None):
        if get_pp_group().is_first_rank:
            hidden_states = self.embed_tokens(input_ids)
            residual = None
        else:
            hidden_states = intermediate_tensors["hidden_states"]
            residual = intermediate_tensors["residual"]
        aux_hidden_states = []
        if get_pp_group().is_first_rank:
            self._maybe_add_hidden_state(aux_hidden_states, self.start_layer, hidden_states, residual)
        by_layer = {}
        for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer), start=self.start_layer):
            hidden_states, residual = layer(positions, hidden_states, residual)
            if idx + 1 in self.aux_hidden_state_layers:
                by_layer[idx + 1] = hidden_states + residual
        # In the ids' order, like 0.30+'s DeepseekV4Model; the mixin's setter has sorted them.
        aux_hidden_states += [by_layer[i] for i in self.aux_hidden_state_layers if i in by_layer]
        if not get_pp_group().is_last_rank:
            return IntermediateTensors({"hidden_states": hidden_states, "residual": residual,
                                        **self.pack_local_aux_hidden_states(aux_hidden_states)})
        hidden_states, _ = self.norm(hidden_states, residual)
        if len(aux_hidden_states) > 0:
            return hidden_states, aux_hidden_states
        return hidden_states


class ToyForCausalLM(nn.Module, SupportsPP, SupportsEagle3):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = ToyModel(vllm_config.model_config.hf_config)
