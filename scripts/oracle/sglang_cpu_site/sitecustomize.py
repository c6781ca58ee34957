"""Loaded by every Python process of an SGLang CPU oracle run (on PYTHONPATH; SGLang spawns its scheduler).

- ``torchvision._meta_registrations`` is stubbed: PyPI's torchvision is a CUDA build (as build_sglang_venv.py).
- ``sgl_kernel`` (``SGLCPU_STUB=1``): SGLang's CPU engine imports sgl-kernel's CPU build at module level
  (0.5.23 ``sglang/kernels/ops/kvcache/cache_move.py:10``), which PyPI does not carry (its ``sglang-kernel`` wheels
  are CUDA-only). A finder serves stub modules; every attribute raises ``NotImplementedError`` when called,
  except the ops ``sglcpu_shims`` implements (``SGLCPU_SHIMS=1``). ``torch.ops.sgl_kernel`` stays empty, so
  SGLang's own ``cpu_has_amx_support()`` is False and its layers take their native-torch paths.
- ``SGLCPU_OBSERVE=<file>``: installs ``sglcpu_observe`` (capture observers, JSON lines into the file).
- ``SGLCPU_STUB_LOG=<file>``: each stub import, attribute and shim use, one line each.
"""
import importlib.machinery
import os
import sys
import types

sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
_LOG = os.environ.get("SGLCPU_STUB_LOG")


def _note(msg: str) -> None:
    if _LOG:
        with open(_LOG, "a") as f:
            f.write(f"{os.getpid()} {msg}\n")


class _Raise:
    """A kernel binding that is not there: usable as a decorator, raises when called."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        _note(f"CALL {self._name}")
        raise NotImplementedError(f"sgl_kernel stub: {self._name} called (no CPU sgl-kernel build)")

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Raise(f"{self._name}.{name}")

    def __bool__(self) -> bool:
        return False


class _Module(types.ModuleType):
    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        _note(f"ATTR {self.__name__}.{name}")
        if os.environ.get("SGLCPU_SHIMS") == "1" and self.__name__ == "sgl_kernel":
            import sglcpu_shims

            if hasattr(sglcpu_shims, name):
                _note(f"SHIM {name}")
                return getattr(sglcpu_shims, name)
        return _Raise(f"{self.__name__}.{name}")


class _Finder:
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] != "sgl_kernel":
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        mod = _Module(spec.name)
        mod.__path__ = []
        mod.__version__ = "0.0.0"
        _note(f"IMPORT {spec.name}")
        return mod

    def exec_module(self, module) -> None:
        return None


if os.environ.get("SGLCPU_STUB") == "1":
    sys.meta_path.append(_Finder())  # appended: a real sgl_kernel, if installed, wins
if os.environ.get("SGLCPU_OBSERVE"):
    import sglcpu_observe  # noqa: F401
