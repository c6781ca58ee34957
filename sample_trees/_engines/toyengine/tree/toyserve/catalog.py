"""Which class serves which architecture: (module under toyserve.zoo, class name), looked up by name at load."""

CATALOG = [
    ("ToyLMForCausalLM", "toy_lm", "ToyLMForCausalLM"),
    ("ToyMoEForCausalLM", "toy_moe", "ToyMoEForCausalLM"),
]
