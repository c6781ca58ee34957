import importlib


def __getattr__(name):
    if name == "LazyBase":
        return importlib.import_module(".impl", __name__).LazyBase
    raise AttributeError(name)
