"""Registers every model of the tables in loops: tuples, dict .items(), nested unpacking, class
objects spread with *, and a comprehension."""

from .tables import DRAFTERS, GENERATED, TEXT_MODELS, VL_MODELS
from .text import TableForCausalLM

_ALL = TEXT_MODELS + [("TableAliasForCausalLM", "table_loop.text:TableForCausalLM")]
_CLASSES = (("TableClassForCausalLM", TableForCausalLM),)
_LATE = ["TableLateForCausalLM"]


def register():
    from vllm import ModelRegistry

    for arch, path in _ALL:
        ModelRegistry.register_model(arch, path)
    for arch, path in VL_MODELS.items():
        ModelRegistry.register_model(arch, path)
    for arch, (module, cls) in DRAFTERS.items():
        ModelRegistry.register_model(arch, f"{module}:{cls}")
    for entry in _CLASSES:
        ModelRegistry.register_model(*entry)
    [ModelRegistry.register_model(name, "table_loop.text:TableMoeForCausalLM") for name in _LATE]
    for arch in GENERATED:
        ModelRegistry.register_model(arch, GENERATED[arch])
