#!/usr/bin/env python3
"""Build (or reuse) a CPU-only venv holding one vLLM release, for the runtime oracle.

    python3 scripts/oracle/build_venv.py 0.16.0 [--cache-dir DIR]

The venv goes to DIR/vllm-<V>/ (default DIR: $XDG_CACHE_HOME/eagle3-lint/oracle-venvs,
i.e. ~/.cache/eagle3-lint/oracle-venvs). It is built from the committed lock
tests/differential/locks/vllm-<V>.txt:

  1. python -m venv
  2. pip install torch==2.13.0              (the CPU build; anything else pulls CUDA)
  3. pip install --no-deps torchvision==0.28.0 torchaudio==2.11.1
  4. pip install --no-deps vllm==<V>
  5. pip install --no-deps -r <lock>
  6. delete torchaudio/lib/_torchaudio*.so if present (CUDA-built native ext)
  7. smoke test: import vllm's model registry inside the venv
  8. write the marker file (last), recording the lock's sha256 and RECIPE

A venv with a marker whose lock hash and recipe number match is reused as is; a venv without the
marker (an interrupted build) or built from another lock is deleted and rebuilt.
Prints the venv's python path as the last line of stdout on success. On failure,
exits non-zero with one line starting with "build_venv: error:" on stderr.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import venvlock  # scripts/oracle/venvlock.py, beside this script

REPO = Path(__file__).resolve().parents[2]
LOCK_DIR = REPO / "tests" / "differential" / "locks"
MARKER = ".eagle3-lint-oracle-complete.json"
# Bump when the build steps change, so that venvs built the old way are rebuilt.
RECIPE = 1
TORCH = "torch==2.13.0"
PYTHON = "3.11"
TORCH_NO_DEPS = ["torchvision==0.28.0", "torchaudio==2.11.1"]

SMOKE = (
    "import os, sys, types;"
    "os.environ.update(HF_HUB_OFFLINE='1', CUDA_VISIBLE_DEVICES='', VLLM_LOGGING_LEVEL='ERROR');"
    "sys.modules['torchvision._meta_registrations'] = types.ModuleType('torchvision._meta_registrations');"
    "import vllm;"
    "from vllm.model_executor.models.registry import ModelRegistry;"
    "from vllm.model_executor.models.interfaces import supports_eagle3;"
    "print('vllm', vllm.__version__, 'registered', len(ModelRegistry.models))"
)


class BuildError(Exception):
    pass


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "eagle3-lint" / "oracle-venvs"


def log(msg: str) -> None:
    print(f"build_venv: {msg}", flush=True)


def run(cmd: list[str], what: str) -> None:
    print("+ " + " ".join(cmd), flush=True)
    t0 = time.monotonic()
    proc = subprocess.run(cmd)
    if proc.returncode != 0:
        raise BuildError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}")
    log(f"  {what}: {time.monotonic() - t0:.0f}s")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_marker(venv: Path) -> dict | None:
    try:
        return json.loads((venv / MARKER).read_text())
    except (OSError, ValueError):
        return None


def check_python(python: str) -> None:
    """The locks and the CPU torch file on disk are for CPython 3.11; elsewhere
    torch==2.13.0 would come from PyPI as a multi-GB CUDA build."""
    try:
        proc = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=60)
        out = proc.stdout.strip() or "? (" + (proc.stderr.strip().splitlines() or ["no output"])[0] + ")"
    except (OSError, subprocess.SubprocessError) as exc:
        raise BuildError(f"cannot run {python}: {exc}") from exc
    if out != PYTHON:
        raise BuildError(f"{python} is Python {out}; the oracle venvs need Python {PYTHON}")


def build(version: str, venv: Path, lock: Path, python: str) -> None:
    py = venv / "bin" / "python"
    pip = [str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    run([python, "-m", "venv", str(venv)], "create venv")
    run(pip + [TORCH], "install torch (CPU build)")
    run(pip + ["--no-deps"] + TORCH_NO_DEPS, "install torchvision/torchaudio")
    run(pip + ["--no-deps", f"vllm=={version}"], "install vllm")
    run(pip + ["--no-deps", "-r", str(lock)], "install lock")

    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    so_files = sorted((Path(site) / "torchaudio" / "lib").glob("_torchaudio*.so"))
    for so in so_files:
        log(f"delete {so} (CUDA-built torchaudio extension; cannot load against CPU torch)")
        so.unlink()
    if not so_files:
        log("no torchaudio/lib/_torchaudio*.so to delete (this torchaudio has none)")

    print(f"+ {py} -c <smoke test: import vllm model registry>", flush=True)
    proc = subprocess.run([str(py), "-c", SMOKE], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise BuildError(f"smoke test failed: vllm {version} does not import in {venv}")
    log("  " + proc.stdout.strip().splitlines()[-1])
    got = proc.stdout.split()[1] if proc.stdout.split() else "?"
    if got != version:
        raise BuildError(f"smoke test imported vllm {got}, expected {version}")


def _reuse_or_build(args: argparse.Namespace, version: str, cache: Path, venv: Path, lock: Path,
                    t0: float) -> int:
    """Reuse the venv if its marker matches the lock and recipe, else (re)build it; holding the venv's lock."""
    lock_hash = sha256(lock)
    marker = read_marker(venv)
    if marker and not args.force and marker.get("lock_sha256") == lock_hash \
            and marker.get("recipe") == RECIPE \
            and (venv / "bin" / "python").exists():
        log(f"reuse complete venv {venv} (built {marker.get('built')})")
        print(venv / "bin" / "python")
        return 0
    check_python(args.python)
    if venv.exists():
        why = "forced" if args.force else (
            "lock or recipe changed" if marker else "no completion marker (interrupted build?)")
        log(f"delete {venv} ({why})")
        shutil.rmtree(venv)
    cache.mkdir(parents=True, exist_ok=True)
    log(f"build vLLM {version} venv at {venv} from {lock}")
    build(version, venv, lock, args.python)
    venvlock.write_marker(venv / MARKER, json.dumps({
        "vllm": version,
        "recipe": RECIPE,
        "lock": str(lock),
        "lock_sha256": lock_hash,
        "torch": TORCH,
        "built": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "build_seconds": round(time.monotonic() - t0, 1),
    }, indent=1) + "\n")
    log(f"done in {time.monotonic() - t0:.0f}s: {venv}")
    print(venv / "bin" / "python")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Build or reuse a CPU venv for one vLLM release.")
    ap.add_argument("version", help="vLLM release, e.g. 0.16.0")
    ap.add_argument("--cache-dir", type=Path, default=None,
                    help="folder holding the venvs (default: $XDG_CACHE_HOME/eagle3-lint/oracle-venvs)")
    ap.add_argument("--lock", type=Path, default=None,
                    help="lock file (default: tests/differential/locks/vllm-<V>.txt)")
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter to create the venv with "
                         "(default: this one; torch 2.13.0 CPU is on disk for 3.11)")
    ap.add_argument("--force", action="store_true", help="rebuild even if a complete venv exists")
    args = ap.parse_args(argv)

    version = args.version
    cache = (args.cache_dir or default_cache_dir()).expanduser().resolve()
    venv = cache / f"vllm-{version}"
    lock = (args.lock or LOCK_DIR / f"vllm-{version}.txt").resolve()
    t0 = time.monotonic()
    try:
        if not lock.is_file():
            raise BuildError(f"no lock file for vLLM {version}: {lock}")
        with venvlock.exclusive(venv, log):  # one build at a time (xdist workers share the cache)
            return _reuse_or_build(args, version, cache, venv, lock, t0)
    except BuildError as exc:
        print(f"build_venv: error: {exc}", file=sys.stderr)
        return 1
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"build_venv: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
