_TEXT_GENERATION_MODELS = {
    "DeepForCausalLM": ("deep", "DeepForCausalLM"),
    "DeepV3ForCausalLM": ("deep", "DeepV3ForCausalLM"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
}
