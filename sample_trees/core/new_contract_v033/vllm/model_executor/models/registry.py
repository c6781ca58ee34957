_TEXT_GENERATION_MODELS = {
    "MixForCausalLM": ("mix", "MixForCausalLM"),
    "StaleForCausalLM": ("mix", "StaleForCausalLM"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
}
