_TEXT_GENERATION_MODELS = {
    "RelayForCausalLM": ("relay", "RelayForCausalLM"),
    "ScaledForCausalLM": ("scaled", "ScaledForCausalLM"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
}
