"""Text models and a drafter, all subclasses of the tree's classes."""

from vllm.model_executor.models.llama_eagle3 import Eagle3LlamaForCausalLM
from vllm.model_executor.models.toy import ToyForCausalLM


class TableForCausalLM(ToyForCausalLM):
    pass


class TableMoeForCausalLM(ToyForCausalLM):
    pass


class TableEagle3ForCausalLM(Eagle3LlamaForCausalLM):
    pass
