"""A drafter checkpoint's tensors, names and shapes, read from its safetensors headers (never the tensor data).

A safetensors file is an 8-byte little-endian header length N, then N bytes of JSON naming every tensor with
its ``dtype``, ``shape`` and ``data_offsets`` (an optional ``__metadata__`` entry holds strings), then the data
(the format's documented layout: huggingface/safetensors README, "Format"). A sharded checkpoint adds
``model.safetensors.index.json``, whose ``weight_map`` names the shard holding each tensor.

Why this reads the header itself rather than with the ``safetensors`` package: the package's
``safe_open(path, framework="numpy")`` parses the same header (``keys()``, ``get_slice(k).get_shape()``)
without loading data too, but it imports numpy (45 MB installed, 73 MB with its bundled libraries) for a
framework the check never uses. Measured with ``python scripts/bench_weights.py DIR`` on a 1.02 GB file of
300 tensors that safetensors 0.8.0 wrote: this reader 1.9 ms per file (the JSON parse is 0.3 ms of it, the
rest is checking every entry), ``safe_open`` plus every shape 0.5 ms per file, but 106 ms for the first file
of a process (the imports). A check reads a drafter's one to a few files once: the stdlib reader is the
cheaper one there, and it keeps the runtime free of numpy. The tests write real files with the package and
check that both readers agree.

A header that is not what the format says (a length past the file or above ``MAX_HEADER``, JSON that is not
an object of tensors, offsets outside the data) raises ``WeightsError``, which the CLI turns into a one-line
error and exit 2.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, field

# The safetensors Rust reader refuses headers above 100,000,000 bytes (``MAX_HEADER_SIZE``, safetensors/src/
# tensor.rs); a drafter's header is a few KB (one entry per tensor). Anything larger is not read at all.
MAX_HEADER = 100_000_000
INDEX_FILE = "model.safetensors.index.json"
# Element sizes of the format's dtypes, to check that each tensor's byte range matches its shape.
DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "I16": 2, "U16": 2,
               "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8, "C64": 8}


class WeightsError(ValueError):
    """A safetensors file or index that does not follow the format."""


@dataclass(frozen=True)
class Tensor:
    name: str
    dtype: str
    shape: tuple[int, ...]
    file: str  # the file it sits in, relative to the checkpoint folder


@dataclass
class Checkpoint:
    folder: str
    tensors: dict[str, Tensor] = field(default_factory=dict)
    files: tuple[str, ...] = ()  # the safetensors files read, relative to ``folder``
    index: str | None = None  # the index file, when the checkpoint is sharded

    def get(self, *names: str) -> Tensor | None:
        """The first of ``names`` the checkpoint holds."""
        return next((self.tensors[n] for n in names if n in self.tensors), None)


def read_header(path: str) -> dict[str, Tensor]:
    """Every tensor of the safetensors file at ``path`` (name, dtype, shape), from its header only."""
    base = os.path.basename(path)
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            head = fh.read(8)
            if len(head) < 8:
                raise WeightsError(f"{base}: {size} bytes, shorter than the 8-byte header length")
            (n,) = struct.unpack("<Q", head)
            if n > MAX_HEADER:
                raise WeightsError(f"{base}: header length {n:,} is above the format's limit of {MAX_HEADER:,} bytes")
            if 8 + n > size:
                raise WeightsError(f"{base}: header length {n:,} runs past the end of the {size:,}-byte file")
            raw = fh.read(n)
    except OSError as exc:
        raise WeightsError(f"{base}: cannot read: {exc.strerror or exc}") from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeError, json.JSONDecodeError) as exc:
        raise WeightsError(f"{base}: the header is not JSON: {exc}") from None
    except RecursionError:  # a hostile header of deeply nested arrays
        raise WeightsError(f"{base}: the header nests too deep to be a tensor table") from None
    if not isinstance(doc, dict):
        raise WeightsError(f"{base}: the header is not a JSON object")
    data_size = size - 8 - n
    out: dict[str, Tensor] = {}
    for name, info in doc.items():
        if name == "__metadata__":
            continue
        if not isinstance(info, dict):
            raise WeightsError(f"{base}: tensor {name!r} has no dtype/shape entry")
        dtype, shape, offs = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if not isinstance(dtype, str) or not isinstance(shape, list) \
                or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise WeightsError(f"{base}: tensor {name!r} has no valid dtype and shape ({info!r:.80})")
        if not (isinstance(offs, list) and len(offs) == 2 and all(isinstance(o, int) for o in offs)
                and 0 <= offs[0] <= offs[1] <= data_size):
            raise WeightsError(f"{base}: tensor {name!r} has data_offsets {offs!r} outside the file's "
                               f"{data_size:,} data bytes")
        width = DTYPE_BYTES.get(dtype)
        count = 1
        for d in shape:
            count *= d
        if width is not None and offs[1] - offs[0] != count * width:
            raise WeightsError(f"{base}: tensor {name!r} {dtype}{shape} needs {count * width:,} bytes, its "
                               f"data_offsets give {offs[1] - offs[0]:,}")
        out[name] = Tensor(name, dtype, tuple(shape), base)
    return out


def has_weights(folder: str) -> bool:
    """Whether ``folder`` holds a safetensors checkpoint (any ``*.safetensors`` or the sharded index)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return INDEX_FILE in names or any(n.endswith(".safetensors") for n in names)


def read_checkpoint(folder: str) -> Checkpoint:
    """The tensors of the checkpoint in ``folder``: the shards its index names, else every ``*.safetensors``."""
    ck = Checkpoint(folder)
    index = os.path.join(folder, INDEX_FILE)
    if os.path.isfile(index):
        try:
            with open(index, encoding="utf-8") as fh:
                doc = json.load(fh)
        except (OSError, UnicodeError, json.JSONDecodeError, RecursionError) as exc:
            raise WeightsError(f"{INDEX_FILE}: not readable JSON: {type(exc).__name__}: {exc}") from None
        wmap = doc.get("weight_map") if isinstance(doc, dict) else None
        if not isinstance(wmap, dict) or not all(isinstance(v, str) for v in wmap.values()):
            raise WeightsError(f"{INDEX_FILE}: no weight_map of tensor names to shard files")
        shards = sorted(set(wmap.values()))
        names: set[str] = set(wmap)
        for s in shards:
            if os.path.basename(s) != s or not os.path.isfile(os.path.join(folder, s)):
                raise WeightsError(f"{INDEX_FILE} names shard {s!r}, which is not in {folder}")
        ck.index = INDEX_FILE
    else:
        shards = sorted(n for n in os.listdir(folder) if n.endswith(".safetensors"))
    for s in shards:
        for name, t in read_header(os.path.join(folder, s)).items():
            if name in ck.tensors:
                raise WeightsError(f"tensor {name!r} is in both {ck.tensors[name].file} and {s}")
            ck.tensors[name] = t
    if ck.index is not None:
        missing = sorted(names - set(ck.tensors))
        if missing:
            raise WeightsError(f"{INDEX_FILE} maps {missing[0]!r} (and {len(missing) - 1} more) to shards that do "
                               "not hold it" if len(missing) > 1 else
                               f"{INDEX_FILE} maps {missing[0]!r} to a shard that does not hold it")
    ck.files = tuple(shards)
    return ck


def headers_token(folder: str | None) -> str:
    """The report-cache key's part for a checkpoint folder: a digest of its index and every header (the bytes
    that name tensors and shapes, never the data), or "-" for a path that holds no checkpoint."""
    import hashlib

    if not folder or not os.path.isdir(folder) or not has_weights(folder):
        return "-"
    h = hashlib.sha256()
    for name in sorted(os.listdir(folder)):
        p = os.path.join(folder, name)
        try:
            if name == INDEX_FILE:
                with open(p, "rb") as fh:
                    h.update(name.encode() + b"\0" + fh.read(MAX_HEADER))
            elif name.endswith(".safetensors"):
                with open(p, "rb") as fh:
                    head = fh.read(8)
                    n = struct.unpack("<Q", head)[0] if len(head) == 8 else 0
                    size = os.fstat(fh.fileno()).st_size
                    h.update(f"{name}\0{size}\0".encode() + head + fh.read(min(n, MAX_HEADER)))
        except OSError as exc:
            h.update(f"{name}\0unreadable:{type(exc).__name__}".encode())
    return h.hexdigest()
