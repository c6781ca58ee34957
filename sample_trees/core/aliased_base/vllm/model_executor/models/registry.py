_TEXT_GENERATION_MODELS = {
    "AliasForCausalLM": ("alias", "AliasForCausalLM"),
    "ReexportForCausalLM": ("reexport", "ReexportForCausalLM"),
    "FamForCausalLM": ("vllm.models.fam", "FamForCausalLM"),
    "Fam2ForCausalLM": ("vllm.models.fam2", "Fam2ForCausalLM"),
    "PlainForCausalLM": ("reexport", "PlainForCausalLM"),
}
_SEQUENCE_CLASSIFICATION_MODELS = {
    "AliasForSequenceClassification": ("alias", "AliasForSequenceClassification"),
}
_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
    **_SEQUENCE_CLASSIFICATION_MODELS,
}
