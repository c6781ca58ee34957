"""Entry point of the helper-chain sample: vllm-ascend's shape, where the function the entry point
names only imports a helper of the same name from another module and calls it."""


def register_model():
    from .models import register_model  # shadows this function inside its body, as vllm-ascend does

    register_model()


def _never_called():
    from vllm import ModelRegistry

    # Not reachable from the entry point: vLLM never runs it, so it registers nothing.
    ModelRegistry.register_model("HelperUnusedForCausalLM", "helper_chain.text:HelperForCausalLM")
