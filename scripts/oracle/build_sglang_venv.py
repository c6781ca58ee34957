#!/usr/bin/env python3
"""Build (or reuse) a CPU-only venv holding one SGLang release, for SGLang's runtime oracle.

    python3 scripts/oracle/build_sglang_venv.py 0.5.10 [--cache-dir DIR]
    python3 scripts/oracle/build_sglang_venv.py 0.5.23 --resolve   # no lock yet: make one

The venv goes to DIR/sglang-<V>/ (default DIR: $XDG_CACHE_HOME/eagle3-lint/oracle-venvs). Steps, as
for vLLM (build_venv.py; recipe in /work/shared/runtime-oracle.md):

  1. python -m venv
  2. pip install torch==2.13.0                       (the CPU build on local disk)
  3. pip install --no-deps torchvision==0.28.0 torchaudio==2.11.1
  4. pip install --no-deps sglang==<V>              (cp311 manylinux_2_34 from 0.5.11: this machine's
                                                     glibc is older, so the platform tag is forced;
                                                     the wheel's compiled parts are never loaded)
  5. with a lock tests/differential/locks/sglang-<V>.txt: pip install --no-deps -r <lock>
     with --resolve: SGLang's own non-extra Requires-Dist minus torch*, CUDA-only kernels and
     servers' GPU pieces (SKIP), with torch pinned to the CPU build by a constraint; then
     ``pip freeze --all`` minus pip/sglang/torch/torchvision/torchaudio is written as the lock
  6. delete torchaudio/lib/_torchaudio*.so (CUDA-built native extension)
  7. smoke test: import sglang and its model registry module
  8. marker file (last), with the lock's sha256 and RECIPE

Prints the venv's python path as the last line of stdout on success; on failure one line
starting with "build_sglang_venv: error:" on stderr and a non-zero exit.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import venvlock  # scripts/oracle/venvlock.py, beside this script

REPO = Path(__file__).resolve().parents[2]
LOCK_DIR = REPO / "tests" / "differential" / "locks"
MARKER = ".eagle3-lint-oracle-complete.json"
RECIPE = 1
TORCH = "torch==2.13.0"
TORCH_NO_DEPS = ["torchvision==0.28.0", "torchaudio==2.11.1"]
WHEEL_TAGS = ["--python-version", "3.11", "--platform", "manylinux_2_34_x86_64",
              "--implementation", "cp", "--abi", "cp311", "--only-binary=:all:"]
# Requirements that are CUDA-only kernels, GPU runtimes or torch itself: not installed.
SKIP = re.compile(r"^(torch|torchvision|torchaudio|torchcodec|torchao|torch[-_]memory[-_]saver|flashinfer.*|"
                  r"sglang[-_]kernel|sgl[-_].*|nvidia-.*|nvshmem.*|cuda-.*|flash[-_]attn.*|quack-kernels|"
                  r"humming-kernels|tilelang|deepseek-recipe|kernels|py-spy|decord2?|av)$", re.I)
RUNTIME_EXTRAS = ("srt", "runtime-common", "runtime_common")
SMOKE = (
    "import os, sys, types;"
    "os.environ.update(HF_HUB_OFFLINE='1', CUDA_VISIBLE_DEVICES='');"
    "sys.modules['torchvision._meta_registrations'] = types.ModuleType('torchvision._meta_registrations');"
    "import sglang, sglang.srt.models.registry;"
    "print('sglang', sglang.__version__)"
)


class BuildError(Exception):
    pass


def log(msg: str) -> None:
    print(f"build_sglang_venv: {msg}", flush=True)


def run(cmd: list[str], what: str) -> None:
    print("+ " + " ".join(cmd), flush=True)
    t0 = time.monotonic()
    if subprocess.run(cmd).returncode != 0:
        raise BuildError(f"{what} failed: {' '.join(cmd)}")
    log(f"  {what}: {time.monotonic() - t0:.0f}s")


def site_packages(py: Path) -> Path:
    return Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())


def requirements(site: Path) -> list[str]:
    """SGLang's ``Requires-Dist`` lines minus SKIP (markers for other platforms dropped): the unconditional
    ones, plus the ``srt``/``runtime-common`` extras that carried the runtime's packages up to 0.4.x."""
    meta = next(site.glob("sglang-*.dist-info")) / "METADATA"
    out = []
    for line in meta.read_text().splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        m = re.search(r"""extra == ['"]([^'"]+)['"]""", line)
        if m and m.group(1) not in RUNTIME_EXTRAS:
            continue
        req = re.sub(r"""\s*(and\s+)?extra == ['"][^'"]+['"]""", "", line.split(":", 1)[1]).strip().rstrip(";").strip()
        if req.startswith("sglang["):
            continue  # the extras' self-reference (``sglang[runtime_common]``)
        if "aarch64" in req and "!=" not in req:
            continue  # arm-only alternatives (decord2, av)
        spec = req.split(";")[0].strip()
        name = re.split(r"[\[<>=!~ ]", spec, maxsplit=1)[0]
        if not SKIP.match(name):
            out.append(spec)
    return out


def build(version: str, venv: Path, lock: Path, python: str, resolve: bool) -> None:
    py = venv / "bin" / "python"
    pip = [str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    run([python, "-m", "venv", str(venv)], "create venv")
    run(pip + [TORCH], "install torch (CPU build)")
    run(pip + ["--no-deps"] + TORCH_NO_DEPS, "install torchvision/torchaudio")
    # pip install refuses --platform; download the wheel for the forced tags, then install the file.
    dl = venv / ".sglang-wheel"
    run([str(py), "-m", "pip", "download", "--disable-pip-version-check", "-q", "--no-deps", *WHEEL_TAGS,
         f"sglang=={version}", "-d", str(dl)], "download sglang")
    wheel = next(dl.glob("*.whl"))
    if "manylinux" in wheel.name:
        # The file's tag does not match this glibc; install it under a pure-Python name. Its compiled
        # modules are installed but never imported by the model files (checked by the smoke test).
        fixed = dl / re.sub(r"-cp\d+-cp\d+-manylinux[^.]*\.whl$", "-py3-none-any.whl", wheel.name)
        wheel.rename(fixed)
        wheel = fixed
    run(pip + ["--no-deps", str(wheel)], "install sglang")
    shutil.rmtree(dl)
    site = site_packages(py)
    if resolve:
        cons = venv / ".constraints.txt"
        cons.write_text(f"{TORCH}\n" + "".join(f"{p}\n" for p in TORCH_NO_DEPS))
        reqs = requirements(site)
        log("requirements: " + " ".join(reqs))
        # One at a time: a requirement that cannot resolve against CPU torch is reported and skipped.
        for r in reqs:
            if subprocess.run(pip + ["-c", str(cons), r]).returncode != 0:
                log(f"  skipped {r}: does not resolve against {TORCH}")
        run(pip + ["--no-deps", "timm"], "install timm")
        frozen = subprocess.run([str(py), "-m", "pip", "freeze", "--all"], capture_output=True, text=True,
                                check=True).stdout.splitlines()
        drop = re.compile(r"^(pip|sglang|torch|torchvision|torchaudio|setuptools)(==| @)", re.I)
        lock.write_text(f"# SGLang {version} oracle venv ({TORCH} CPU); made by build_sglang_venv.py --resolve\n"
                        + "".join(f"{ln}\n" for ln in frozen if not drop.match(ln)))
        log(f"wrote {lock}")
    else:
        run(pip + ["--no-deps", "-r", str(lock)], "install lock")
    for so in sorted((site / "torchaudio" / "lib").glob("_torchaudio*.so")):
        log(f"delete {so} (CUDA-built torchaudio extension)")
        so.unlink()
    proc = subprocess.run([str(py), "-c", SMOKE], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise BuildError(f"smoke test failed: sglang {version} does not import in {venv}")
    log("  " + proc.stdout.strip().splitlines()[-1])


def _reuse_or_build(args: argparse.Namespace, cache: Path, venv: Path, lock: Path, t0: float) -> int:
    """Reuse the venv if its marker matches the lock and recipe, else (re)build it; holding the venv's lock."""
    try:
        marker = json.loads((venv / MARKER).read_text())
    except (OSError, ValueError):
        marker = None
    if marker and not args.force and not args.resolve and lock.is_file() \
            and marker.get("lock_sha256") == hashlib.sha256(lock.read_bytes()).hexdigest() \
            and marker.get("recipe") == RECIPE:
        log(f"reuse complete venv {venv}")
        print(venv / "bin" / "python")
        return 0
    if venv.exists():
        shutil.rmtree(venv)
    cache.mkdir(parents=True, exist_ok=True)
    build(args.version, venv, lock, args.python, args.resolve)
    venvlock.write_marker(venv / MARKER, json.dumps({
        "sglang": args.version, "recipe": RECIPE, "lock": str(lock),
        "lock_sha256": hashlib.sha256(lock.read_bytes()).hexdigest(), "torch": TORCH,
        "built": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "build_seconds": round(time.monotonic() - t0, 1),
    }, indent=1) + "\n")
    log(f"done in {time.monotonic() - t0:.0f}s: {venv}")
    print(venv / "bin" / "python")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Build or reuse a CPU venv for one SGLang release.")
    ap.add_argument("version")
    ap.add_argument("--cache-dir", type=Path, default=None)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--resolve", action="store_true", help="no lock: resolve SGLang's requirements and write one")
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args(argv)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    cache = (args.cache_dir or Path(base) / "eagle3-lint" / "oracle-venvs").expanduser().resolve()
    venv = cache / f"sglang-{args.version}"
    lock = LOCK_DIR / f"sglang-{args.version}.txt"
    t0 = time.monotonic()
    try:
        if not args.resolve and not lock.is_file():
            raise BuildError(f"no lock file for SGLang {args.version}: {lock} (use --resolve to make one)")
        with venvlock.exclusive(venv, log):  # one build at a time (xdist workers share the cache)
            return _reuse_or_build(args, cache, venv, lock, t0)
    except (BuildError, StopIteration) as exc:
        print(f"build_sglang_venv: error: {exc or 'pip produced no wheel'}", file=sys.stderr)
        return 1
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"build_sglang_venv: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
