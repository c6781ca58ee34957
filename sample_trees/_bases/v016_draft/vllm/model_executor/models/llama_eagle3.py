# The EAGLE-3 drafter in vLLM 0.16's shape: the fc input is three target hidden states, fixed.
from torch import nn


class LlamaModel(nn.Module):
    def __init__(self, *, vllm_config, start_layer_id: int = 0, prefix: str = "") -> None:
        super().__init__()
        self.config = vllm_config.speculative_config.draft_model_config.hf_config
        self.vocab_size = self.config.vocab_size
        self.layers = nn.ModuleList([nn.Identity() for _ in range(self.config.num_hidden_layers)])
        if hasattr(self.config, "target_hidden_size"):
            fc_input_size = self.config.target_hidden_size * 3
        else:
            fc_input_size = self.config.hidden_size * 3
        self.fc = nn.Linear(fc_input_size, self.config.hidden_size, bias=False)


class Eagle3LlamaForCausalLM(nn.Module):
    def __init__(self, *, vllm_config, prefix: str = ""):
        super().__init__()
        self.model = LlamaModel(vllm_config=vllm_config, prefix="model")
