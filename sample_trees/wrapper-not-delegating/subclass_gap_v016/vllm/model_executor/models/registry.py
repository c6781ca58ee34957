_TEXT_GENERATION_MODELS = {
    "InnerForCausalLM": ("inner", "InnerForCausalLM"),
}
_MULTIMODAL_MODELS = {
    "WrapForConditionalGeneration": ("wrap", "WrapForConditionalGeneration"),
    "WrapVariantForConditionalGeneration": ("wrap", "WrapVariantForConditionalGeneration"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
    **_MULTIMODAL_MODELS,
}
