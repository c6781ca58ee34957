"""Where EAGLE-3 drafter configs keep their aux-layer ids, who writes them there, and how they number layers.

Drafter ``config.json`` files are the same files whichever engine serves them; what differs is which
field each engine reads and what it does with the ids (``engines/<engine>/drafter.py``). This table is
about the files: the field, the training code or format that writes it, and its numbering (``INPUT``:
id k is the state entering layer k, vLLM's and the speculators format's convention; ``OUTPUT``: id k
is the output of layer k, SpecForge's, which SGLang turns into k + 1). Both engines' drafter readers
use it, so it lives beside them rather than in either.
"""

from __future__ import annotations

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
