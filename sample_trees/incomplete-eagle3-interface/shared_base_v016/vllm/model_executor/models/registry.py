_TEXT_GENERATION_MODELS = {
    "PartForCausalLM": ("part", "PartForCausalLM"),
    "PartChatForCausalLM": ("part", "PartChatForCausalLM"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
}
