"""Replaces built-in architectures, as vLLM allows (it logs "already registered, and will be
overwritten"): the target ToyForCausalLM, and both names of the EAGLE-3 drafter."""

from vllm import ModelRegistry

from .drafter import PatchedEagle3LlamaForCausalLM


def register():
    ModelRegistry.register_model("ToyForCausalLM", "override_models.toy:FastToyForCausalLM")
    for arch in ("Eagle3LlamaForCausalLM", "LlamaForCausalLMEagle3"):
        ModelRegistry.register_model(arch, PatchedEagle3LlamaForCausalLM)
    ModelRegistry.register_model("OverrideNewForCausalLM", "override_models.toy:FastToyForCausalLM")
