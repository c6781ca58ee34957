from vllm.model_executor.models.alias import AliasForCausalLM


class FamForCausalLM(AliasForCausalLM):
    pass
