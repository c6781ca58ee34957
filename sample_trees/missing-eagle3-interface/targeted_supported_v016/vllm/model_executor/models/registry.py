_TEXT_GENERATION_MODELS = {
    "DeepForCausalLM": ("deep", "DeepForCausalLM"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
}
