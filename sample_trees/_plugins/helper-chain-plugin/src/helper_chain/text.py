"""Text models, and a helper that receives the registry and the names as parameters."""

from vllm.model_executor.models.toy import ToyForCausalLM


class HelperForCausalLM(ToyForCausalLM):
    pass


class HelperMoeForCausalLM(ToyForCausalLM):
    pass


def _one(registry, arch: str, path: str) -> None:
    registry.register_model(arch, path)


def register_text(registry) -> None:
    _one(registry, "HelperForCausalLM", "helper_chain.text:HelperForCausalLM")
    _one(registry, arch="HelperMoeForCausalLM", path="helper_chain.text:HelperMoeForCausalLM")
