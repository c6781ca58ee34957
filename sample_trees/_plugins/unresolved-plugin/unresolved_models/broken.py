"""A helper module with a syntax error: vLLM would fail to import it; the tool reports it (EGL000)."""

from vllm import ModelRegistry


def register_broken(:  # expect: EGL000
    ModelRegistry.register_model("BrokenForCausalLM", "unresolved_models.models:ResolvedForCausalLM")
