_TEXT_GENERATION_MODELS = {
    "EarlyForCausalLM": ("early", "EarlyForCausalLM"),
    "AmbiguousForCausalLM": ("ambiguous", "AmbiguousForCausalLM"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
}
