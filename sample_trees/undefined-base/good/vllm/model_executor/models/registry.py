_TEXT_GENERATION_MODELS = {
    "StarForCausalLM": ("star", "StarForCausalLM"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
}
