_TEXT_GENERATION_MODELS = {
    "GraniteForCausalLM": ("granite", "GraniteForCausalLM"),
    "RelayForCausalLM": ("relay", "RelayForCausalLM"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
}
