_TEXT_GENERATION_MODELS = {
    "FbForCausalLM": ("fb", "FbForCausalLM"),
}
_MULTIMODAL_MODELS = {
    "FbVLForConditionalGeneration": ("fb", "FbVLForConditionalGeneration"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
    **_MULTIMODAL_MODELS,
}
