"""A patched EAGLE-3 drafter: the tree's class with a different fc initialisation."""

from vllm.model_executor.models.llama_eagle3 import Eagle3LlamaForCausalLM


class PatchedEagle3LlamaForCausalLM(Eagle3LlamaForCausalLM):
    pass
