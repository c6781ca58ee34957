#!/usr/bin/env python3
"""Serve tiny random-weight targets with an EAGLE-3 drafter on SGLang's CPU engine and observe what is captured.

Run with the python of the venv ``build_sglang_venv.py 0.5.23`` builds:

    $PY scripts/oracle/sglang_e2e_observe.py --output F.json [--case ID]... [--work DIR] [--list]

The checkpoints are the vLLM oracle's (``e2e_observe.build_target`` / ``build_drafter``: 8-layer targets, hidden
256, random weights, a one-layer SpecForge-layout drafter). Each case runs in its own subprocess:

    sglang.Engine(model_path=<target>, device="cpu", speculative_algorithm="EAGLE3",
                  speculative_draft_model_path=<drafter>, speculative_num_steps=2, speculative_eagle_topk=1,
                  speculative_num_draft_tokens=3, attention_backend="triton", skip_tokenizer_init=True,
                  disable_cuda_graph=True, disable_overlap_schedule=True, dtype="float32", ...)

with ``SGLANG_USE_CPU_ENGINE=1`` and one prompt of 12 token ids, 8 greedy tokens.

**Not SGLang as released on a Xeon with its CPU kernels.** SGLang's CPU engine needs sgl-kernel's CPU build
(``sgl-kernel/pyproject_cpu.toml``, built from source; PyPI's ``sglang-kernel``/``sgl-kernel`` wheels are CUDA
only). Without it the engine does not import (0.5.23 ``kernels/ops/kvcache/cache_move.py:10``). Here
``sglang_cpu_site/`` (on PYTHONPATH, so the spawned scheduler loads it too) stubs ``sgl_kernel``: SGLang's
``cpu_has_amx_support()`` is then False and its layers take their native-torch paths; the eight CPU ops its
EAGLE path calls anyway are replaced by the release's own Triton kernels for the same steps, interpreted
(``TRITON_INTERPRET=1``), and the attention backend is SGLang's Triton backend, interpreted: ``intel_amx`` needs
sgl-kernel's attention ops and ``torch_native`` is refused for EAGLE's draft decode (0.5.23
``srt/speculative/draft_utils.py:64``). What is observed (the target's setter, its forward and aux capture, the
drafter's fc) is SGLang's own code on that path.

What is observed (``sglang_cpu_site/sglcpu_observe.py``), in the scheduler process:
  - ``configure_aux_hidden_state_capture`` (model_runner.py's import) is wrapped: the ids handed to the
    target's ``set_eagle3_layers_to_capture`` and the decoder's ``layers_to_capture`` afterwards;
  - each decoder layer's ``input_layernorm`` gets a forward pre-hook recording ``x + residual`` (as the norm's
    native path computes it: the residual stream entering that layer), the final ``norm`` the same (state n);
    the decoder's ``forward`` is wrapped on the instance and each returned aux tensor is matched with
    ``torch.equal`` against those states;
  - the drafter's ``fc`` gets a pre-hook recording the width that reaches it.

Output (keys sorted): ``{"schema", "sglang_version", "torch", "triton", "transformers", "python", "cases"}``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import e2e_observe as E  # noqa: E402  (the vLLM oracle's checkpoint builders, beside this script)

SCHEMA = 1
SITE = Path(__file__).resolve().parent / "sglang_cpu_site"
PROMPT = [1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45]
NEW_TOKENS = 8
CASES: dict[str, E.Case] = {
    "llama/default": E.Case("llama", "none", None),
    "llama/nested-1-4-6": E.Case("llama", "nested", [1, 4, 6]),
    "llama/top-1-4-6": E.Case("llama", "top", [1, 4, 6]),
    "llama/nested-1-4-7": E.Case("llama", "nested", [1, 4, 7]),
    "llama/nested-2-3-3": E.Case("llama", "nested", [2, 3, 3]),
    "llama/nested-1-4-9": E.Case("llama", "nested", [1, 4, 9]),
    "qwen2/nested-1-4-6": E.Case("qwen2", "nested", [1, 4, 6]),
    "gemma/default": E.Case("gemma", "none", None),
}
ENGINE_KW: dict[str, Any] = dict(
    device="cpu", skip_tokenizer_init=True, speculative_algorithm="EAGLE3", speculative_num_steps=2,
    speculative_eagle_topk=1, speculative_num_draft_tokens=3, attention_backend="triton", disable_cuda_graph=True,
    disable_overlap_schedule=True, dtype="float32", max_total_tokens=2048, mem_fraction_static=0.1,
    random_seed=0, log_level="info")
ENV = {"SGLANG_USE_CPU_ENGINE": "1", "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": "", "TRITON_INTERPRET": "1",
       "SGLCPU_STUB": "1", "SGLCPU_SHIMS": "1"}


def run_one(target: str, drafter: str) -> int:
    """The case's subprocess: start the engine, generate, print markers the parent reads."""
    import sglang

    t0 = time.monotonic()
    eng = sglang.Engine(model_path=target, speculative_draft_model_path=drafter, **ENGINE_KW)
    print(f"SGLCPU-STARTED {time.monotonic() - t0:.1f}", flush=True)
    out = eng.generate(input_ids=[PROMPT], sampling_params={"max_new_tokens": NEW_TOKENS, "temperature": 0})
    meta = out[0]["meta_info"]
    print("SGLCPU-GENERATED " + json.dumps({
        "tokens": len(out[0]["output_ids"]), "spec_verify_ct": meta.get("spec_verify_ct"),
        "spec_accept_length": meta.get("spec_accept_length")}), flush=True)
    eng.shutdown()
    return 0


_EXC = re.compile(r"^([A-Za-z_.]*(?:Error|Exception|Interrupt)): (.*)$")
_FRAME = re.compile(r'^\s*File "(?P<f>[^"]+)", line (?P<l>\d+), in (?P<fn>\S+)')


def scheduler_error(log: str) -> tuple[str | None, str | None]:
    """The first exception SGLang logged (``Scheduler hit an exception`` or the driver's own traceback): its
    ``Type: message`` line and the innermost frame in the sglang package, as ``sglang/...py:N``."""
    lines = log.splitlines()
    for i, line in enumerate(lines):
        m = _EXC.match(line.strip())
        if not m:
            continue
        where = None
        for prev in reversed(lines[:i]):
            f = _FRAME.match(prev)
            if f and "/site-packages/sglang/" in f["f"]:
                where = "sglang/" + f["f"].split("/site-packages/sglang/", 1)[1] + ":" + f["l"]
                break
        return f"{m[1].split('.')[-1]}: {m[2]}"[:400], where
    return None, None


def summarize(obs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for rec in obs:
        kind = rec["kind"]
        if kind == "setter-call" and rec["use_aux"]:
            out.update(target_class=rec["cls"], setter_ids=rec["ids"], has_setter=rec["has_setter"])
        elif kind == "after-setter":
            out.update(layers_to_capture=rec["layers_to_capture"], capture_flag=rec["capture_flag"])
        elif kind == "installed":
            out.update(decoder=rec["decoder"], decoder_layers=rec["layers"])
        elif kind == "fc-installed":
            out.update(drafter_class=rec["cls"], drafter_fc_input_size=rec["fc_in"])
    aux = [r for r in obs if r["kind"] == "aux"]
    if aux:
        matches = [r["matched"] for r in aux]
        out.update(forward_calls_with_aux=len(aux), captures_agree_across_calls=all(m == matches[0] for m in matches),
                   observed_aux_matches=matches[0],
                   observed_captured_layers=[m[0] if len(m) == 1 else None for m in matches[0]])
    fc = sorted({(r["input_width"], r["fc_in"]) for r in obs if r["kind"] == "fc"})
    if fc:
        out["drafter_fc_widths"] = [list(w) for w in fc]
    errors = [r for r in obs if r["kind"] == "observer-error"]
    if errors:
        out["observer_errors"] = errors[:3]
    return out


def run_case(case_id: str, work: Path, timeout: float) -> dict[str, Any]:
    case = CASES[case_id]
    target = E.build_target(work, case.family)
    drafter = E.build_drafter(work, case_id, case)
    obs_file = work / "obs" / (case_id.replace("/", "__") + ".jsonl")
    obs_file.parent.mkdir(parents=True, exist_ok=True)
    obs_file.unlink(missing_ok=True)
    stub_log = obs_file.with_suffix(".stub.log")
    stub_log.unlink(missing_ok=True)
    env = {**os.environ, **ENV, "SGLCPU_OBSERVE": str(obs_file), "SGLCPU_STUB_LOG": str(stub_log),
           "PYTHONPATH": os.pathsep.join([str(SITE), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    t0 = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, __file__, "--run-one", str(target), str(drafter)], env=env,
                              capture_output=True, text=True, timeout=timeout, start_new_session=True)
        log, rc = proc.stdout + proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        log, rc = (exc.stdout or b"").decode() + (exc.stderr or b"").decode(), None
    seconds = round(time.monotonic() - t0, 1)
    (obs_file.with_suffix(".log")).write_text(log)
    res: dict[str, Any] = {"seconds": seconds, "returncode": rc,
                           "target_config": json.loads((target / "config.json").read_text()),
                           "draft_config": json.loads((drafter / "config.json").read_text()),
                           "draft_tensors": E.safetensors_header(drafter / "model.safetensors")}
    started = re.search(r"^SGLCPU-STARTED ([\d.]+)", log, re.M)
    gen = re.search(r"^SGLCPU-GENERATED (.*)$", log, re.M)
    if gen:
        res.update(outcome="served", generated=json.loads(gen[1]))
    else:
        err, where = scheduler_error(log)
        res.update(outcome="hung" if rc is None else "crashed", phase="generate" if started else "engine-start",
                   error=err, raised_at=where)
    if started:
        res["engine_start_seconds"] = float(started[1])
    obs = [json.loads(ln) for ln in obs_file.read_text().splitlines()] if obs_file.is_file() else []
    res.update(summarize(obs))
    if stub_log.is_file():
        lines = stub_log.read_text().split("\n")
        res["sgl_kernel_shims_used"] = sorted({ln.split()[2] for ln in lines if " SHIM " in ln})
        res["sgl_kernel_stub_calls"] = sorted({ln.split()[2] for ln in lines if " CALL " in ln})
    return res


def versions() -> dict[str, str]:
    import importlib.metadata as md

    return {"sglang_version": md.version("sglang"), "torch": md.version("torch"), "triton": md.version("triton"),
            "transformers": md.version("transformers"), "python": platform.python_version()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--output", type=Path)
    ap.add_argument("--case", action="append", default=[])
    ap.add_argument("--work", type=Path)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--run-one", nargs=2, metavar=("TARGET", "DRAFTER"))
    args = ap.parse_args()
    if args.run_one:
        return run_one(*args.run_one)
    if args.list:
        print("\n".join(CASES))
        return 0
    if not args.output:
        ap.error("--output is required")
    ids = args.case or list(CASES)
    unknown = [c for c in ids if c not in CASES]
    if unknown:
        ap.error(f"unknown case(s): {', '.join(unknown)}")
    work = args.work or Path(tempfile.mkdtemp(prefix="sglcpu-"))
    # the checkpoints are built in this process: transformers imports torchvision, whose CUDA build needs the stub
    sys.path.insert(0, str(SITE))
    import sitecustomize  # noqa: F401
    out: dict[str, Any] = {"schema": SCHEMA, **versions(), "engine_kwargs": ENGINE_KW, "environment": ENV,
                           "prompt": PROMPT, "max_new_tokens": NEW_TOKENS, "cases": {}}
    for cid in ids:
        t = time.monotonic()
        out["cases"][cid] = run_case(cid, work, args.timeout)
        print(f"{cid}: {out['cases'][cid]['outcome']} ({time.monotonic() - t:.0f}s)", flush=True)
    args.output.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
