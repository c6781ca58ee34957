"""Where EAGLE-3 drafter configs keep their aux-layer ids, who writes them there, and how they number layers.

Drafter ``config.json`` files are the same files whichever engine serves them; what differs is which
field each engine reads and what it does with the ids (``engines/<engine>/drafter.py``). This table is
about the files: the field, the training code or format that writes it, and its numbering (``INPUT``:
id k is the state entering layer k, vLLM's and the speculators format's convention; ``OUTPUT``: id k
is the output of layer k, SpecForge's, which SGLang turns into k + 1). Both engines' drafter readers
use it, and so do the user-config reader and EGL007, so it stands below the engines rather than in either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eagle3_lint.drafter import INPUT, OUTPUT, IdsField, json_line

# Where drafter configs keep aux ids, who writes them there, and how they number layers.
ID_FIELDS: tuple[tuple[tuple[str, ...], int | None, str, str], ...] = (
    (("eagle_aux_hidden_state_layer_ids",), INPUT, "vLLM and the speculators format",
     "id k is the hidden state entering layer k"),
    (("eagle_config", "eagle_aux_hidden_state_layer_ids"), OUTPUT, "SpecForge/SGLang",
     "id k is the output of layer k; SGLang captures at k + 1"),
    (("eagle_config", "layer_ids"), None, "eagle_config", "numbering not documented"),
    (("dflash_config", "target_layer_ids"), OUTPUT, "DFlash", "id k is the output of layer k"),
    (("dflash_config", "layer_ids"), None, "dflash_config", "numbering not documented"),
    (("target_layer_ids",), OUTPUT, "DFlash/DSpark", "id k is the output of layer k"),
    (("dspark_target_layer_ids",), None, "DSpark", "numbering depends on the target family"),
)


def dig(cfg: dict[str, Any], path: tuple[str, ...]) -> Any:
    """``cfg[path[0]][path[1]]...``, or None where a level is missing or not a dict."""
    cur: Any = cfg
    for p in path:
        if not isinstance(cur, dict) or p not in cur:
            return None
        cur = cur[p]
    return cur


def id_fields(cfg: dict[str, Any], json_path: str) -> list[IdsField]:
    """Every non-empty id field of ``cfg``, in ``ID_FIELDS`` order, with its line in the file at ``json_path``."""
    out: list[IdsField] = []
    for path, conv, origin, meaning in ID_FIELDS:
        v = dig(cfg, path)
        if isinstance(v, (list, tuple)) and v:
            out.append(IdsField(path, tuple(v), conv, origin, meaning, json_line(json_path, path[-1])))
    return out


# -- the trained layers ----------------------------------------------------------------------------------
# A drafter config without ids was trained on its training framework's default layers. Both EAGLE-3
# training codes agree on the states entering layers (2, n // 2, n - 3): SafeAILab EAGLE collects HF
# ``hidden_states[2], [n // 2], [n - 3]`` (eagle/traineagle3/modeling_llama_kv.py:1137-1140, index k = the
# state entering layer k), SpecForge's default is ``[1, n // 2 - 1, n - 4]`` in "output of layer k"
# numbering (specforge/core/eagle3.py:100-106 at v0.1.0). Data with a reason, not derivable from the tree.
def training_default(n: int) -> tuple[int, ...]:
    return (2, n // 2, n - 3)


@dataclass(frozen=True)
class Trained:
    layers: tuple[int, ...] | None  # the states entering these layers
    convention: str | None  # "vllm" (input numbering) | "sglang" (output numbering), as decided
    why: str  # how it was decided (stated, matched to a default, or assumed from the field)


def trained(fields: list[IdsField], stated: str | None, n: int | None) -> Trained:
    """The layers a drafter config says it was trained on, for every engine's serving chain and ``layers``: one
    reading of the file, whichever engine serves it. ``stated`` is ``--drafter-convention``, ``n`` the target's
    layer count."""
    ints = [f for f in fields if all(isinstance(i, int) and not isinstance(i, bool) for i in f.ids)]
    if not ints:
        if n is None:
            return Trained(None, None, "the drafter config names no aux layers, and without the target's layer "
                                       "count the training default is not known")
        return Trained(training_default(n), None, "the drafter config names no aux layers: assumed trained on the "
                                                  "EAGLE-3 training default, the states entering (2, n // 2, n - 3)")
    f = ints[0]
    ids = tuple(int(i) for i in f.ids)
    if stated is not None:
        shift = 1 if stated == "sglang" else 0
        return Trained(tuple(i + shift for i in ids), stated, f"--drafter-convention {stated} for {f.name}")
    default = training_default(n) if n is not None else None
    if default is not None and len(ids) == len(default):
        minus_one = all(a == b - 1 for a, b in zip(ids, default, strict=True))
        if minus_one and f.convention == OUTPUT:
            return Trained(default, "sglang", f"{f.name} {list(ids)} is the training default minus one: SpecForge's "
                                              "output numbering")
        if minus_one:
            # vLLM's field holding SpecForge's numbers: converted configs lift eagle_config's ids as they are (the
            # nm-testing speculators conversion of lmsys/Qwen3-235B-A22B-EAGLE3 does). Either reading is possible.
            return Trained(None, None, f"{f.name} {list(ids)} is the training default minus one: SpecForge's output "
                                       f"numbering carried into {f.origin}'s field, or ids chosen in that field's "
                                       "numbering; state which with --drafter-convention vllm|sglang")
        if ids == default and f.convention == OUTPUT:
            return Trained(default, "vllm", f"{f.name} {list(ids)} is the training default as the state entering "
                                            "each layer (the 'input to layer X' convention SGLang PR #25454 reads "
                                            "first ids other than 1 in; assumed: --drafter-convention states it)")
    if f.convention == OUTPUT and n is not None and ids and max(ids) == n:
        # Layer n has no output: ids naming n number the state entering each layer, n being the last layer's
        # output (what 0.5.2x's gpt_oss setter preserves with its max(layer_ids) == num_layers test).
        return Trained(ids, "vllm", f"{f.name} {list(ids)} names index {n} = the layer count, which no layer's "
                                    "output has: the ids number the state entering each layer")
    if f.convention is None:
        return Trained(None, None, f"{f.name} ({f.origin}) does not say how it numbers layers; state it with "
                                   "--drafter-convention vllm|sglang")
    conv = "sglang" if f.convention == OUTPUT else "vllm"
    return Trained(tuple(i + f.convention for i in ids), conv,
                   f"{f.name} is {f.origin}'s field: {f.meaning} (assumed from where the ids sit; "
                   "--drafter-convention states it)")
