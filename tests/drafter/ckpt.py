"""Drafter checkpoint folders for the tests: a published drafter's ``config.json`` and safetensors files.

Two ways of writing the weights, both real safetensors files:

- ``write_real``: the ``safetensors`` package writes them (``safetensors.numpy.save_file``), with data, for small
  shapes;
- ``write_sparse``: the published shapes (an EAGLE-3 Llama-3.1-8B drafter's ``fc`` alone is 4096 x 12288 BF16,
  96 MiB), laid out as the format says (8-byte little-endian header length, the JSON header padded with spaces
  to a multiple of 8 as safetensors pads it, then the data) with the data region left as a hole in a sparse
  file: no bytes are written for it. ``safe_open`` reads every such file back (the tests check it), so the file
  is one the package accepts.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CKPTS = REPO / "sample_trees" / "_checkpoints"
BYTES = {"BF16": 2, "F16": 2, "F32": 4, "I64": 8, "BOOL": 1}


def llama_drafter_tensors(hidden: int = 4096, target_hidden: int = 4096, states: int = 3, vocab: int = 128256,
                          draft_vocab: int = 32000, inter: int = 14336, heads: int = 32, kv: int = 8,
                          layers: tuple[str, ...] = ("midlayer",)) -> dict[str, tuple[str, tuple[int, ...]]]:
    """The tensors of an EAGLE-3 Llama drafter (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B's layout: ``midlayer.*``,
    ``fc``, ``norm``, ``lm_head``, ``d2t``, ``t2d``): name -> (dtype, shape). The first layer's attention takes
    the embedding and the fused state side by side (2 x hidden)."""
    hd = hidden // heads
    out: dict[str, tuple[str, tuple[int, ...]]] = {
        "fc.weight": ("BF16", (hidden, states * target_hidden)),
        "norm.weight": ("BF16", (hidden,)),
        "lm_head.weight": ("BF16", (draft_vocab, hidden)),
        "d2t": ("I64", (draft_vocab,)),
        "t2d": ("BOOL", (vocab,)),
    }
    for p in layers:
        out.update({
            f"{p}.hidden_norm.weight": ("BF16", (hidden,)),
            f"{p}.input_layernorm.weight": ("BF16", (hidden,)),
            f"{p}.post_attention_layernorm.weight": ("BF16", (hidden,)),
            f"{p}.self_attn.q_proj.weight": ("BF16", (heads * hd, 2 * hidden)),
            f"{p}.self_attn.k_proj.weight": ("BF16", (kv * hd, 2 * hidden)),
            f"{p}.self_attn.v_proj.weight": ("BF16", (kv * hd, 2 * hidden)),
            f"{p}.self_attn.o_proj.weight": ("BF16", (hidden, heads * hd)),
            f"{p}.mlp.gate_proj.weight": ("BF16", (inter, hidden)),
            f"{p}.mlp.up_proj.weight": ("BF16", (inter, hidden)),
            f"{p}.mlp.down_proj.weight": ("BF16", (hidden, inter)),
        })
    return out


def header_bytes(tensors: dict[str, tuple[str, tuple[int, ...]]]) -> tuple[bytes, int]:
    """The 8-byte length and JSON header safetensors writes for ``tensors`` (in name order), and the data size."""
    doc: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    off = 0
    for name in sorted(tensors):
        dtype, shape = tensors[name]
        n = BYTES[dtype]
        for d in shape:
            n *= d
        doc[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    js = json.dumps(doc, separators=(",", ":")).encode()
    js += b" " * (-len(js) % 8)
    return struct.pack("<Q", len(js)) + js, off


def write_sparse(path: Path, tensors: dict[str, tuple[str, tuple[int, ...]]]) -> None:
    head, size = header_bytes(tensors)
    with open(path, "wb") as fh:
        fh.write(head)
        fh.truncate(len(head) + size)  # the data: a hole, no bytes written


def write_real(path: Path, tensors: dict[str, tuple[str, tuple[int, ...]]]) -> None:
    import numpy as np
    from safetensors.numpy import save_file

    kinds = {"BF16": np.float16, "F16": np.float16, "F32": np.float32, "I64": np.int64, "BOOL": np.bool_}
    save_file({n: np.zeros(s, dtype=kinds[d]) for n, (d, s) in tensors.items()}, str(path))


def drafter_folder(dest: Path, config: str | dict[str, Any], tensors: dict[str, tuple[str, tuple[int, ...]]],
                   shards: int = 1, real: bool = False) -> Path:
    """``dest`` holding ``config.json`` (a file of sample_trees/_checkpoints/, or a dict) and the weights, in
    ``shards`` files with ``model.safetensors.index.json`` when more than one."""
    dest.mkdir(parents=True, exist_ok=True)
    if isinstance(config, str):
        shutil.copy(CKPTS / config, dest / "config.json")
    else:
        (dest / "config.json").write_text(json.dumps(config), encoding="utf-8")
    write = write_real if real else write_sparse
    names = sorted(tensors)
    if shards == 1:
        write(dest / "model.safetensors", tensors)
        return dest
    wmap: dict[str, str] = {}
    for k in range(shards):
        fname = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: tensors[n] for n in names[k::shards]}
        write(dest / fname, part)
        wmap.update(dict.fromkeys(part, fname))
    (dest / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": wmap}),
                                                       encoding="utf-8")
    return dest
