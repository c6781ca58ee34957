"""The one model this plugin registers in a way the tool can read."""

from vllm.model_executor.models.toy import ToyForCausalLM


class ResolvedForCausalLM(ToyForCausalLM):
    pass
