"""A setup.py-era plugin: a flat layout, and a register function that delegates to a helper."""

ARCH = "ToyForCausalLM"  # replaces vLLM's own ToyForCausalLM, as register_model does at runtime


def _register(registry) -> None:
    registry.register_model(ARCH, "legacy_toy.model:PatchedToyForCausalLM")


def register_all() -> None:
    from vllm import ModelRegistry

    _register(ModelRegistry)
