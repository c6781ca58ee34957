_TEXT_GENERATION_MODELS = {
    "GoodForCausalLM": ("good", "GoodForCausalLM"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
}
