_TEXT_GENERATION_MODELS = {
    "AuxForCausalLM": ("aux", "AuxForCausalLM"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
}
