from vllm.model_executor.models.alias import AliasForCausalLM


class Fam2ForCausalLM(AliasForCausalLM):
    pass
