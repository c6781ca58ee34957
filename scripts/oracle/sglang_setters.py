#!/usr/bin/env python3
"""What SGLang's own ``set_eagle3_layers_to_capture`` does with the ids it is given, for every registered class
that has one: the runtime half of the id-convention differential.

Run this with the python of an SGLang oracle venv (build_sglang_venv.py); it imports SGLang. The analyzer
never imports this file.

    <venv>/bin/python scripts/oracle/sglang_setters.py --stub sgl_kernel \\
        --output tests/differential/oracle/sglang-setters-0.5.23.json

Building a real model needs weights, kernels and a process group, so each setter runs on a *probe*: an
instance of a subclass of the registered class made with ``object.__new__`` and ``torch.nn.Module.__init__``
only, whose missing attributes are recorders. A recorder answers every attribute read with another recorder
(kept, so a write is seen by a later read), records every attribute write and every call, and is truthy. The
model config says ``num_hidden_layers = n`` (``text_config`` and ``get_text_config()`` are the same config);
``pp_group`` / ``get_pp_group()`` / ``get_parallel().pp_group`` say this is the last and the first rank;
``layers`` is a list of ``n`` recorders, ``start_layer``/``end_layer`` are ``0``/``n``. The setter's own code
runs unchanged.

For each case (``n`` layers; ids ``None`` or a drafter's list) it records:

* ``stored``: every list written to an attribute whose name ends in ``layers_to_capture`` (dotted from
  ``self``), and the ids passed to a delegate's setter (``self.model.set_eagle3_layers_to_capture([...])``)
  as ``<receiver>.<setter>()``;
* ``flags``: the indices of the layers whose ``_is_layer_to_capture`` was set true;
* ``error``: the exception, when the setter raised on the probe (then nothing else is compared).
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import json
import logging
import platform
import sys
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sglang_verdicts import SETTER, _stub_torchvision, _StubFinder  # noqa: E402 - after the path

# The cases each setter is asked: the default (None) and drafter lists that exercise the +1 and the two
# heuristics (first id 1; largest id equal to n), on a dense model's and on DeepSeek-V3's depth.
CASES: tuple[tuple[int, list[int] | None], ...] = (
    (32, None), (32, [1, 15, 28]), (32, [2, 16, 29]), (32, [0, 16, 32]),
    (61, None), (61, [1, 29, 57]), (61, [2, 30, 58]),
)


class Recorder:
    """A stand-in object: reads give recorders, writes and calls are recorded in ``log``."""

    def __init__(self, path: str, log: dict[str, Any], values: dict[str, Any] | None = None) -> None:
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_log", log)
        object.__setattr__(self, "_values", dict(values or {}))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        values = object.__getattribute__(self, "_values")
        if name not in values:
            values[name] = Recorder(f"{self._path}.{name}", self._log)
        return values[name]

    def __setattr__(self, name: str, value: Any) -> None:
        self._values[name] = value
        self._log["writes"].append((f"{self._path}.{name}", value))

    def __call__(self, *args: Any, **kwargs: Any) -> Recorder:
        self._log["calls"].append((self._path, list(args), dict(kwargs)))
        return Recorder(f"{self._path}()", self._log)

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"<recorder {self._path}>"


def _config(n: int, log: dict[str, Any]) -> Recorder:
    cfg = Recorder("self.config", log, {"num_hidden_layers": n})
    values = object.__getattribute__(cfg, "_values")
    values["text_config"] = cfg
    values["get_text_config"] = lambda *a, **k: cfg
    return cfg


def _plain(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, (set, frozenset)):
        return sorted(_plain(x) for x in v)
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    return repr(v)


def probe(cls: type, n: int, ids: list[int] | None, nn_module: type) -> dict[str, Any]:
    log: dict[str, Any] = {"writes": [], "calls": []}
    pp = Recorder("pp_group", log, {"is_last_rank": True, "is_first_rank": True, "world_size": 1, "rank_in_group": 0})
    layers = [Recorder(f"layer[{i}]", log) for i in range(n)]
    kept: dict[str, Any] = {"config": _config(n, log), "pp_group": pp}

    def missing(self: Any, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if name not in kept:
            rec = Recorder(f"self.{name}", log, {"layers": layers, "start_layer": 0, "end_layer": n,
                                                  "config": kept["config"], "pp_group": pp})
            kept[name] = rec
        return kept[name]

    probe_cls = type(f"Probe{cls.__name__}", (cls,), {"__getattr__": missing, "__module__": cls.__module__})
    inst = object.__new__(probe_cls)
    nn_module.__init__(inst)
    fn = getattr(cls, SETTER)
    # ``get_pp_group()`` is a module global of the setter's module: answered by the probe's rank for the call.
    g = getattr(fn, "__globals__", {})
    # 0.5.23's newer models ask ``get_parallel().pp_group`` instead.
    saved = {k: g[k] for k in ("get_pp_group", "get_parallel") if k in g}
    if "get_pp_group" in g:
        g["get_pp_group"] = lambda *a, **k: pp
    if "get_parallel" in g:
        g["get_parallel"] = lambda *a, **k: Recorder("parallel", log, {"pp_group": pp})
    before = dict(inst.__dict__)
    params = [p for p in inspect.signature(fn).parameters.values()][1:]
    try:
        fn(inst) if not params else fn(inst, None if ids is None else list(ids))
    except Exception as exc:  # noqa: BLE001 - recorded: the case is then not compared
        return {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:300]}
    finally:
        g.update(saved)
    stored: dict[str, Any] = {}
    for path, value in log["writes"]:
        if path.endswith("layers_to_capture") and not path.startswith("layer["):
            stored[path] = _plain(value)
    for k, v in inst.__dict__.items():
        if k.endswith("layers_to_capture") and before.get(k) is not v:
            stored[f"self.{k}"] = _plain(v)
    for path, args, kwargs in log["calls"]:
        if path.endswith(f".{SETTER}"):
            stored[f"{path}()"] = _plain(args[0] if args else kwargs.get("layer_ids"))
    flags = sorted(i for i, layer in enumerate(layers)
                   if object.__getattribute__(layer, "_values").get("_is_layer_to_capture") is True)
    return {"stored": stored, "flags": flags}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--output", required=True)
    ap.add_argument("--arch", action="append", default=[], help="only these architectures")
    ap.add_argument("--stub", action="append", default=[], help="CUDA-only top-level package to stub (repeatable)")
    args = ap.parse_args()
    _stub_torchvision()
    stubs = _StubFinder(tuple(args.stub))
    if args.stub:
        sys.meta_path.append(stubs)
    logging.disable(logging.WARNING)
    import pkgutil

    import sglang
    import sglang.srt.models as models_pkg
    import torch
    from sglang.srt.models.registry import ModelRegistry

    for _f, name, ispkg in pkgutil.iter_modules(models_pkg.__path__, "sglang.srt.models."):
        if not ispkg:
            # The verdict oracle (sglang_verdicts.py) records which modules fail to import and why; here a
            # module that fails simply registers nothing, as in SGLang's own registry pass.
            with contextlib.suppress(Exception, SystemExit):
                importlib.import_module(name)
    registry = dict(ModelRegistry.models)
    for mod in list(sys.modules.values()):
        entry = getattr(mod, "EntryClass", None) if getattr(mod, "__name__", "").startswith("sglang.srt.models.") \
            else None
        for c in (entry if isinstance(entry, list) else [entry] if entry is not None else []):
            registry.setdefault(c.__name__, c)
    archs: dict[str, Any] = {}
    for arch, cls in sorted(registry.items()):
        if args.arch and arch not in args.arch or not hasattr(cls, SETTER):
            continue
        owner = next((k for k in cls.__mro__ if SETTER in vars(k)), cls)
        rec: dict[str, Any] = {"setter_of": f"{owner.__module__}.{owner.__qualname__}", "cases": []}
        for n, ids in CASES:
            try:
                got = probe(cls, n, ids, torch.nn.Module)
            except Exception:  # noqa: BLE001
                got = {"error": traceback.format_exc().splitlines()[-1][:300]}
            rec["cases"].append({"n": n, "ids": ids, **got})
        archs[arch] = rec
    out = {"sglang": sglang.__version__, "python": platform.python_version(), "torch": torch.__version__,
           "cases": [{"n": n, "ids": ids} for n, ids in CASES], "archs": archs}
    Path(args.output).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"{len(archs)} setters probed, {sum(1 for a in archs.values() for c in a['cases'] if 'error' in c)} "
          "cases raised", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
