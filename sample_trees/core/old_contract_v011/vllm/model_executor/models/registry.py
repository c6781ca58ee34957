_TEXT_GENERATION_MODELS = {
    "OldForCausalLM": ("old", "OldForCausalLM"),
    "OldChildForCausalLM": ("old", "OldChildForCausalLM"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
}
