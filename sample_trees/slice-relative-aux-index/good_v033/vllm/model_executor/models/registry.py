_TEXT_GENERATION_MODELS = {
    "RelayForCausalLM": ("relay", "RelayForCausalLM"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
}
