_TEXT_GENERATION_MODELS = {
    "FbForCausalLM": ("fb", "FbForCausalLM"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
}
