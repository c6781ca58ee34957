_TEXT_GENERATION_MODELS = {
    "ToyForCausalLM": ("toy", "ToyForCausalLM"),
}
_SPECULATIVE_DECODING_MODELS = {
    "LlamaForCausalLMEagle3": ("llama_eagle3", "Eagle3LlamaForCausalLM"),
    "Eagle3LlamaForCausalLM": ("llama_eagle3", "Eagle3LlamaForCausalLM"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
    **_SPECULATIVE_DECODING_MODELS,
}
