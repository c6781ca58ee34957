"""Registers the demo models with vLLM (the ``vllm.general_plugins`` entry point).

Importing this package writes a tripwire file when EAGLE3_DEMO_PLUGIN_TRIPWIRE is set: eagle3-lint
must never import it.
"""

import os

if os.environ.get("EAGLE3_DEMO_PLUGIN_TRIPWIRE"):
    with open(os.environ["EAGLE3_DEMO_PLUGIN_TRIPWIRE"], "w") as fh:
        fh.write("imported")


def register() -> None:
    from vllm import ModelRegistry

    # The lazy string form: module:class, imported by vLLM only when the architecture is used.
    if "DemoForCausalLM" not in ModelRegistry.get_supported_archs():
        ModelRegistry.register_model("DemoForCausalLM", "eagle3_demo_plugin.good:DemoForCausalLM")

    # The class form, after an import.
    from eagle3_demo_plugin.bad import DemoVLForConditionalGeneration

    ModelRegistry.register_model("DemoVLForConditionalGeneration", DemoVLForConditionalGeneration)
