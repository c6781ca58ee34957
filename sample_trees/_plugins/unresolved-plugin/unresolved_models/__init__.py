"""Registrations whose architecture or class only exists at runtime: each must be reported with its
file:line, never dropped. The readable registrations are still found."""

import json
import os

from vllm import ModelRegistry


def _archs_from_file():
    with open(os.path.join(os.path.dirname(__file__), "archs.json")) as fh:
        return json.load(fh)


def _make_class():
    from .models import ResolvedForCausalLM

    return type("FactoryForCausalLM", (ResolvedForCausalLM,), {})


def register():
    for arch in _archs_from_file():
        ModelRegistry.register_model(arch, "unresolved_models.models:ResolvedForCausalLM")
    name = os.environ.get("UNRESOLVED_ARCH", "EnvForCausalLM")
    ModelRegistry.register_model(name, "unresolved_models.models:ResolvedForCausalLM")
    package = os.environ.get("UNRESOLVED_PACKAGE", "unresolved_models")
    ModelRegistry.register_model("RuntimePathForCausalLM", package + ".models:ResolvedForCausalLM")
    ModelRegistry.register_model("NamedPathForCausalLM", f"{__name__}.models:ResolvedForCausalLM")  # readable
    ModelRegistry.register_model("FactoryForCausalLM", _make_class())
    ModelRegistry.register_model("NoColonForCausalLM", "unresolved_models.models.ResolvedForCausalLM")
    ModelRegistry.register_model("ResolvedForCausalLM", "unresolved_models.models:ResolvedForCausalLM")
    from .broken import register_broken

    register_broken()
