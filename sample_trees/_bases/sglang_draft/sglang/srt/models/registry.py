import importlib
import pkgutil


def import_model_classes():
    model_arch_name_to_cls = {}
    for _, name, ispkg in pkgutil.iter_modules(["sglang/srt/models"]):
        if not ispkg:
            module = importlib.import_module(f"sglang.srt.models.{name}")
            if hasattr(module, "EntryClass"):
                entry = module.EntryClass
                model_arch_name_to_cls[entry.__name__] = entry
    return model_arch_name_to_cls
