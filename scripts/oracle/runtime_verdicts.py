#!/usr/bin/env python3
"""vLLM's own EAGLE-3 verdict for every registered architecture (the runtime oracle).

Run this with the python of an oracle venv (see build_venv.py); it imports vLLM.
The analyzer never imports this file.

    <venv>/bin/python scripts/oracle/runtime_verdicts.py --output out.json
    <venv>/bin/python scripts/oracle/runtime_verdicts.py --output out.json \
        --vllm-path /tmp/patched            # /tmp/patched/vllm/... is a patched tree
    <venv>/bin/python scripts/oracle/runtime_verdicts.py --output out.json \
        --arch LlamaForCausalLM --arch DeepseekV3ForCausalLM

Patched-tree mode (--vllm-path DIR): DIR is put first on sys.path, so `vllm` and
every pure-Python submodule come from DIR/vllm. A patched source tree has no
compiled extension modules (vllm/_C.abi3.so, vllm/_moe_C.abi3.so,
vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so, ...). A meta-path finder appended to
sys.meta_path resolves, for `vllm.*` names that DIR does not provide, *only*
extension modules from the mirrored folder of the vllm installed in the venv.
Pure-Python modules are never taken from the installed copy, so a module that
the patched tree lacks stays missing. Non-Python data files (JSON configs,
jinja templates) are not overlaid; model-class imports do not read them.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.machinery
import importlib.util
import json
import os
import sys
import sysconfig
import traceback
import types
from pathlib import Path

# Must be set before vllm (and torch / huggingface_hub) are imported.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ["VLLM_LOGGING_LEVEL"] = "ERROR"


def _install_torchvision_stub() -> None:
    """PyPI's torchvision registers a fake kernel for torchvision::nms, an op its
    CUDA-built extension would define; against CPU torch the op is absent and the
    import fails. Pre-seeding an empty module skips only that registration."""
    name = "torchvision._meta_registrations"
    if name not in sys.modules:
        sys.modules[name] = types.ModuleType(name)


class _CompiledFallbackFinder:
    """For `vllm.*` names not found in the patched tree, find extension modules
    (only those) in the installed vllm package's mirrored folder."""

    def __init__(self, installed_pkg_dir: Path) -> None:
        self.installed = installed_pkg_dir
        self.loader_details = (
            importlib.machinery.ExtensionFileLoader,
            importlib.machinery.EXTENSION_SUFFIXES,
        )

    def find_spec(self, fullname, path=None, target=None):
        parts = fullname.split(".")
        if parts[0] != "vllm" or len(parts) < 2:
            return None
        folder = self.installed.joinpath(*parts[1:-1])
        if not folder.is_dir():
            return None
        finder = importlib.machinery.FileFinder(str(folder), self.loader_details)
        return finder.find_spec(fullname, target)

    def invalidate_caches(self) -> None:  # pragma: no cover - importlib protocol
        pass


def _setup_patched_tree(vllm_path: str) -> tuple[Path, Path | None]:
    root = Path(vllm_path).resolve()
    if not (root / "vllm" / "__init__.py").is_file():
        if root.name == "vllm" and (root / "__init__.py").is_file():
            root = root.parent  # accept the package folder itself
        else:
            raise SystemExit(f"error: --vllm-path {vllm_path}: no vllm/__init__.py there")
    # Locate the installed vllm *before* changing sys.path; this does not import it.
    spec = importlib.machinery.PathFinder.find_spec("vllm")
    installed = Path(spec.origin).parent if spec and spec.origin else None
    sys.path.insert(0, str(root))
    if installed is not None and installed != root / "vllm":
        sys.meta_path.append(_CompiledFallbackFinder(installed))
    return root, installed


def _one_line(exc: BaseException, site: str) -> str:
    # Paths into the venv would make snapshots differ between machines.
    msg = str(exc).replace(site, "<site-packages>").strip().splitlines()
    text = f"{type(exc).__name__}: {msg[0] if msg else ''}".rstrip(": ").rstrip()
    return text if len(text) <= 400 else text[:397] + "..."


def _qualname(c: type) -> str:
    return f"{c.__module__}.{c.__qualname__}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", required=True, help="JSON file to write")
    ap.add_argument("--vllm-path", help="folder holding a patched pure-Python vllm/ package")
    ap.add_argument("--arch", action="append", default=[],
                    help="evaluate only this architecture (repeatable)")
    ap.add_argument("--traceback", action="store_true",
                    help="print full tracebacks of failed imports to stderr")
    args = ap.parse_args(argv)

    _install_torchvision_stub()
    if args.vllm_path:
        _setup_patched_tree(args.vllm_path)

    import vllm  # noqa: E402  (after sys.path / env setup on purpose)
    from vllm.model_executor.models.interfaces import supports_eagle3
    from vllm.model_executor.models.registry import ModelRegistry

    site = sysconfig.get_paths()["purelib"]
    models = dict(ModelRegistry.models)
    archs = sorted(models)
    if args.arch:
        unknown = [a for a in args.arch if a not in models]
        if unknown:
            print(f"error: not registered in this vLLM: {', '.join(unknown)}", file=sys.stderr)
            return 2
        archs = sorted(set(args.arch))

    verdicts: dict[str, bool] = {}
    not_importable: dict[str, str] = {}
    mro: dict[str, list[str]] = {}
    module: dict[str, str] = {}
    klass: dict[str, str] = {}
    for arch in archs:
        entry = models[arch]
        cls = getattr(entry, "model_cls", None)  # eagerly registered (_RegisteredModel)
        module[arch] = getattr(entry, "module_name", None) or (cls.__module__ if cls else "")
        klass[arch] = getattr(entry, "class_name", None) or (cls.__name__ if cls else "")
        try:
            if cls is None:
                cls = getattr(importlib.import_module(module[arch]), klass[arch])
            verdicts[arch] = bool(supports_eagle3(cls))
            mro[arch] = [_qualname(c) for c in cls.__mro__]
        except BaseException as exc:  # noqa: BLE001 - any failure is data here
            if isinstance(exc, KeyboardInterrupt):
                raise
            not_importable[arch] = _one_line(exc, site)
            if args.traceback:
                print(f"--- {arch}", file=sys.stderr)
                traceback.print_exception(exc, file=sys.stderr)

    result = {
        "vllm_version": getattr(vllm, "__version__", "unknown"),
        "python": sys.version.split()[0],
        "registered": len(archs),  # evaluated; == importable + len(not_importable)
        "registered_total": len(models),  # differs from "registered" only with --arch
        "importable": len(verdicts),
        "verdicts": verdicts,
        "not_importable": not_importable,
        "mro": mro,
        "module": module,
        "class": klass,
        "vllm_file": str(Path(vllm.__file__).resolve()),
    }
    out = Path(args.output)
    if out.parent != Path(""):
        out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    n_true = sum(verdicts.values())
    print(f"vllm {result['vllm_version']}: {len(archs)} registered, {len(verdicts)} importable, "
          f"{n_true} support EAGLE-3, {len(not_importable)} not importable -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
