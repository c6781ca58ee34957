_TEXT_GENERATION_MODELS = {
    "NoMarkerForCausalLM": ("nomarker", "NoMarkerForCausalLM"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
}
