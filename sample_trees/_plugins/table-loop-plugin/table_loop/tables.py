"""(architecture, "module:Class") tables, the way plugins with many models keep them."""

_PKG = "table_loop"

TEXT_MODELS = [
    ("TableForCausalLM", f"{_PKG}.text:TableForCausalLM"),
    ("TableMoeForCausalLM", _PKG + ".text:TableMoeForCausalLM"),
]

VL_MODELS = {
    "TableVLForConditionalGeneration": "table_loop.vl:TableVLForConditionalGeneration",
}

# Filled after its definition: the walk follows the module's statements in order.
DRAFTERS: dict[str, tuple[str, str]] = {}
DRAFTERS["TableEagle3ForCausalLM"] = ("table_loop.text", "TableEagle3ForCausalLM")

# Built by a loop when the module is imported.
GENERATED: dict[str, str] = {}
for _size in ("Small", "Large"):
    GENERATED[f"Table{_size}ForCausalLM"] = "table_loop.text:TableForCausalLM"
