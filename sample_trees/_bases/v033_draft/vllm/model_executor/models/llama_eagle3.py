# The EAGLE-3 drafter in vLLM 0.25+'s shape: fc takes num_aux_hidden_states target states, from the
# config, else the length of eagle_config's ids, else 3.
from torch import nn


class LlamaModel(nn.Module):
    def __init__(self, *, vllm_config, start_layer_id: int = 0, prefix: str = "") -> None:
        super().__init__()
        speculative_config = vllm_config.speculative_config
        self.config = speculative_config.draft_model_config.hf_config
        eagle_config = getattr(self.config, "eagle_config", None) or {}
        if "use_aux_hidden_state" in eagle_config:
            self.use_aux_hidden_state = eagle_config["use_aux_hidden_state"]
        else:
            self.use_aux_hidden_state = True
        self.layers = nn.ModuleList([nn.Identity() for _ in range(self.config.num_hidden_layers)])
        if self.use_aux_hidden_state:
            self.num_aux_hidden_states = getattr(self.config, "num_aux_hidden_states", None)
            if self.num_aux_hidden_states is None:
                layer_ids = eagle_config.get("eagle_aux_hidden_state_layer_ids")
                self.num_aux_hidden_states = len(layer_ids) if layer_ids else 3
            target_hidden_size = getattr(self.config, "target_hidden_size", self.config.hidden_size)
            self.fc_input_size = target_hidden_size * self.num_aux_hidden_states
            self.fc = nn.Linear(self.fc_input_size, self.config.hidden_size, bias=False)


class Eagle3LlamaForCausalLM(nn.Module):
    def __init__(self, *, vllm_config, prefix: str = ""):
        super().__init__()
        self.model = LlamaModel(vllm_config=vllm_config, prefix="model")
