#!/usr/bin/env python3
"""SGLang's own answer, for every registered architecture: does the class have ``set_eagle3_layers_to_capture``?

Run this with the python of an SGLang oracle venv (build_sglang_venv.py); it imports SGLang. The
analyzer never imports this file.

    <venv>/bin/python scripts/oracle/sglang_verdicts.py --output tests/differential/oracle/sglang-0.5.10.json

The registry is SGLang's own: importing ``sglang.srt.models.registry`` imports every top-level module of
``sglang.srt.models`` and fills ``ModelRegistry.models`` from their ``EntryClass`` (modules that fail
to import are skipped by SGLang with a warning; this script re-imports each module on its own to record
which failed and why). For each registered class:

* ``supports``: ``hasattr(cls, "set_eagle3_layers_to_capture")``, which is what the runner needs of
  the top-level model object (0.5.23 checks exactly this on the instance);
* ``wrapper_gap``: ``supports`` is False and a model class the wrapper builds has the method. "Builds"
  is read from the *running* objects, not from source: the classes named by ``__init__``'s bytecode
  (globals loaded by ``LOAD_GLOBAL``, nested code objects included, except a global whose next
  instruction reads an attribute of it: ``X.helper(...)`` calls a helper, it builds no model; and the
  names the function imports itself, ``from m import X`` inside ``__init__``) and by its
  default arguments, for every ``__init__`` in the MRO and for the methods of the class that those
  ``__init__``s name (``self.init_llm(...)``), plus class attributes holding classes; followed up
  to three hops (a VL wrapper holding a ``ForCausalLM`` holding a ``Model``). Only ``torch.nn.Module``
  subclasses count.
"""
from __future__ import annotations

import argparse
import dis
import importlib
import importlib.util
import inspect
import json
import logging
import os
import pkgutil
import platform
import sys
import time
import traceback
import types

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["CUDA_VISIBLE_DEVICES"] = ""
SETTER = "set_eagle3_layers_to_capture"
HOPS = 3


def _stub_torchvision() -> None:
    # PyPI's torchvision is a CUDA build; its fake-kernel registration fails against CPU torch.
    name = "torchvision._meta_registrations"
    sys.modules.setdefault(name, types.ModuleType(name))


class _Anything:
    """Stands for any kernel binding: callable, indexable, an attribute of itself, a usable decorator."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __call__(self, *args: object, **kwargs: object) -> object:
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]  # used as a decorator: keep the decorated function
        return _Anything(self._name + "()")

    def __getattr__(self, name: str) -> _Anything:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Anything(f"{self._name}.{name}")

    def __getitem__(self, key: object) -> _Anything:
        return self

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"<stub {self._name}>"


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str) -> object:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Anything(f"{self.__name__}.{name}")


class _StubFinder:
    """Supplies stub modules for CUDA-only kernel packages that cannot load on a CPU machine.

    Only names under the given top-level packages are served, and only when the real package is not
    importable; every module served is recorded so the output says which imports relied on a stub.
    """

    def __init__(self, tops: tuple[str, ...]) -> None:
        self.tops = tops
        self.served: set[str] = set()

    def find_spec(self, fullname: str, path: object = None, target: object = None):  # noqa: ANN201
        import importlib.machinery

        if fullname.split(".")[0] not in self.tops:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):  # noqa: ANN001, ANN201
        mod = _StubModule(spec.name)
        mod.__path__ = []
        mod.__version__ = "999.0.0"
        self.served.add(spec.name)
        return mod

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def _codes(fn: object) -> list[types.CodeType]:
    code = getattr(fn, "__code__", None)
    out: list[types.CodeType] = []
    todo = [code] if code is not None else []
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return out


def _imported_module(ins: list[dis.Instruction], i: int, g: dict[str, object]) -> types.ModuleType | None:
    """The module an ``IMPORT_FROM`` at ``ins[i]`` reads from: the nearest ``IMPORT_NAME`` before it (its level is
    the ``LOAD_CONST`` two instructions earlier), already imported, as SGLang's registry imports every model module."""
    j = next((k for k in range(i - 1, -1, -1) if ins[k].opname == "IMPORT_NAME"), None)
    if j is None:
        return None
    level = ins[j - 2].argval if j >= 2 and ins[j - 2].opname == "LOAD_CONST" else 0
    name = str(ins[j].argval)
    try:
        full = importlib.util.resolve_name("." * level + name, str(g.get("__package__") or "")) if level else name
        return importlib.import_module(full)
    except (ImportError, ValueError):
        return None


def _classes_built_by(cls: type, nn_module: type) -> dict[str, type]:
    """Module classes named by the __init__ code of cls's MRO (and the methods it names), its defaults
    and class attributes; keyed by module.qualname."""
    found: dict[str, type] = {}
    own = set(cls.__mro__)

    def note(obj: object) -> None:
        if isinstance(obj, type) and issubclass(obj, nn_module) and obj not in own:
            found[f"{obj.__module__}.{obj.__qualname__}"] = obj

    funcs: list[object] = []
    for k in cls.__mro__:
        init = k.__dict__.get("__init__")
        if init is not None and hasattr(init, "__code__"):
            funcs.append(init)
        for v in vars(k).values():
            note(v)
    seen: set[int] = set()
    depth = 0
    while funcs and depth < 3:
        nxt: list[object] = []
        for fn in funcs:
            if id(fn) in seen:
                continue
            seen.add(id(fn))
            g = getattr(fn, "__globals__", {})
            for d in (getattr(fn, "__defaults__", None) or ()):
                note(d)
            for d in (getattr(fn, "__kwdefaults__", None) or {}).values():
                note(d)
            for code in _codes(fn):
                ins = list(dis.get_instructions(code))
                for i, op in enumerate(ins):
                    # A global used as ``X.attr`` (``BailingMoeV3ForCausalLM.log_shared_experts_fusion(self)``)
                    # is a helper call, not a model the wrapper builds or holds.
                    if op.opname in ("LOAD_GLOBAL", "LOAD_NAME") and op.argval in g and not (
                            i + 1 < len(ins) and ins[i + 1].opname in ("LOAD_ATTR", "LOAD_METHOD")):
                        note(g[op.argval])
                    elif op.opname == "IMPORT_FROM" and (mod := _imported_module(ins, i, g)) is not None:
                        # ``from sglang.srt.models.llama4 import Llama4ForCausalLM`` inside ``__init__`` (0.5.23
                        # mllama4.py:494, llava.py:607): the class is a local of the function, never a global.
                        note(getattr(mod, op.argval, None))
                for name in code.co_names:
                    attr = inspect.getattr_static(cls, name, None)
                    attr = getattr(attr, "__func__", attr)
                    if inspect.isfunction(attr):
                        nxt.append(attr)
        funcs = nxt
        depth += 1
    return found


def inner_with_setter(cls: type, nn_module: type) -> list[str]:
    hits: list[str] = []
    seen = {cls}
    todo = [cls]
    for _ in range(HOPS):
        nxt = []
        for c in todo:
            for _name, inner in sorted(_classes_built_by(c, nn_module).items()):
                if inner in seen:
                    continue
                seen.add(inner)
                if hasattr(inner, SETTER):
                    hits.append(inner.__name__)
                else:
                    nxt.append(inner)
        todo = nxt
    return sorted(set(hits))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--output", required=True)
    ap.add_argument("--arch", action="append", default=[], help="only these architectures")
    ap.add_argument("--stub", action="append", default=[],
                    help="top-level CUDA-only package to replace with a stub (repeatable), e.g. sgl_kernel")
    args = ap.parse_args()
    _stub_torchvision()
    stubs = _StubFinder(tuple(args.stub))
    if args.stub:
        sys.meta_path.append(stubs)  # appended: a real, importable package always wins
    logging.disable(logging.WARNING)
    t0 = time.monotonic()
    import torch
    import transformers

    # isort: split
    # sglang after torch and transformers, the order of the runs that made the committed outputs
    import sglang
    failed: dict[str, str] = {}
    try:
        from sglang.srt.models.registry import ModelRegistry
    except Exception as exc:  # noqa: BLE001 - recorded: the oracle then says how far it got
        ModelRegistry = None
        failed["sglang.srt.models.registry"] = f"{type(exc).__name__}: {exc}"[:400]
    import sglang.srt.models as models_pkg

    modules = [n for _f, n, ispkg in pkgutil.iter_modules(models_pkg.__path__, "sglang.srt.models.") if not ispkg]
    imported = 0
    for name in modules:
        try:
            importlib.import_module(name)
            imported += 1
        except Exception as exc:  # noqa: BLE001
            failed[name] = f"{type(exc).__name__}: {exc}".splitlines()[0][:400]
        except SystemExit as exc:
            failed[name] = f"SystemExit: {exc}"
    registry = dict(ModelRegistry.models) if ModelRegistry is not None else {}
    # Modules that imported here but not during the registry's own pass (order effects) are added
    # the way the registry would add them.
    for name in modules:
        mod = sys.modules.get(name)
        entry = getattr(mod, "EntryClass", None) if mod is not None else None
        for c in (entry if isinstance(entry, list) else [entry] if entry is not None else []):
            registry.setdefault(c.__name__, c)
    archs: dict[str, dict] = {}
    for arch, cls in sorted(registry.items()):
        if args.arch and arch not in args.arch:
            continue
        try:
            sup = hasattr(cls, SETTER)
            inner = [] if sup else inner_with_setter(cls, torch.nn.Module)
            archs[arch] = {"module": cls.__module__, "class": cls.__qualname__, "supports": sup,
                           "wrapper_gap": bool(inner), "inner_with_setter": inner}
        except Exception:  # noqa: BLE001
            archs[arch] = {"module": getattr(cls, "__module__", "?"), "error": traceback.format_exc()[-400:]}
    out = {
        "sglang": sglang.__version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "modules": len(modules),
        "modules_imported": imported,
        "modules_failed": dict(sorted(failed.items())),
        "stubbed_packages": sorted(args.stub),
        "stubbed_modules_served": sorted(stubs.served),
        "registered": len(archs),
        "supports_true": sum(1 for a in archs.values() if a.get("supports")),
        "wrapper_gap": sum(1 for a in archs.values() if a.get("wrapper_gap")),
        "archs": archs,
    }
    with open(args.output, "w") as fh:
        json.dump(out, fh, indent=1, sort_keys=False)
        fh.write("\n")
    print(f"sglang {out['sglang']}: modules {imported}/{len(modules)} imported, {len(archs)} registered, "
          f"{out['supports_true']} with the setter, {out['wrapper_gap']} wrapper gaps, {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
