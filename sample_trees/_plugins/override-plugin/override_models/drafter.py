"""A patched EAGLE-3 drafter whose fc takes four target hidden states instead of vLLM 0.16's three:
registered under the built-in drafter names, it is the class vLLM builds, so its fc is the one that
must match the drafter config's aux layer ids."""

from torch import nn

from vllm.model_executor.models.llama_eagle3 import Eagle3LlamaForCausalLM


class PatchedEagle3LlamaForCausalLM(Eagle3LlamaForCausalLM):
    def __init__(self, *, vllm_config, prefix: str = ""):
        super().__init__(vllm_config=vllm_config, prefix=prefix)
        config = vllm_config.speculative_config.draft_model_config.hf_config
        self.fc = nn.Linear(config.hidden_size * 4, config.hidden_size, bias=False)
