_TEXT_GENERATION_MODELS = {
    "DenseForCausalLM": ("dense", "DenseForCausalLM"),
    "MossForCausalLM": ("moss", "MossForCausalLM"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
}
