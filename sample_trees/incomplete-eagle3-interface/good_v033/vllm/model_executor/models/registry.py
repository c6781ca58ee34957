_TEXT_GENERATION_MODELS = {
    "PartForCausalLM": ("part", "PartForCausalLM"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
}
