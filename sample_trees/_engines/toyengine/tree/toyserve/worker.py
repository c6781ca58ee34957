import importlib

from toyserve.catalog import CATALOG


def build_model(arch, config):
    for name, module, cls in CATALOG:
        if name == arch:
            return getattr(importlib.import_module(f"toyserve.zoo.{module}"), cls)(config)
    raise KeyError(arch)


def load(arch, config, draft):
    model = build_model(arch, config)
    if draft is not None and draft.method == "eagle3":
        if not hasattr(model, "tap_layers"):
            raise RuntimeError(f"{type(model).__name__} cannot feed an EAGLE-3 drafter")
        model.tap_layers(draft.get("tap_ids"))
    return model
