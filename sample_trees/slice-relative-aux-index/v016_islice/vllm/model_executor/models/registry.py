_TEXT_GENERATION_MODELS = {
    "LlamaForCausalLM": ("llama", "LlamaForCausalLM"),
    "StepForCausalLM": ("step", "StepForCausalLM"),
    "NoPPForCausalLM": ("nopp", "NoPPForCausalLM"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
}
