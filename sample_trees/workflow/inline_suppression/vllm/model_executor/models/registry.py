_TEXT_GENERATION_MODELS = {
    "SilencedForCausalLM": ("silenced", "SilencedForCausalLM"),
    "NextLineForCausalLM": ("silenced", "NextLineForCausalLM"),
    "StaleForCausalLM": ("silenced", "StaleForCausalLM"),
    "PartlyForCausalLM": ("silenced", "PartlyForCausalLM"),
    "BlanketForCausalLM": ("silenced", "BlanketForCausalLM"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
}
