"""What a Hugging Face checkpoint's ``config.json`` says, read the way Transformers reads it (engine-neutral)."""

from __future__ import annotations

from typing import Any

# Sub-configs that hold the language model's config, in the order HF's ``get_text_config()``
# tries them (``decoder``, ``generator``, ``text_config``), then names multimodal configs use.
TEXT_CONFIG_KEYS = ("decoder", "generator", "text_config", "llm_config", "language_config")


def text_config(cfg: dict[str, Any] | None) -> dict[str, Any] | None:
    if not cfg:
        return cfg
    for k in TEXT_CONFIG_KEYS:
        sub = cfg.get(k)
        if isinstance(sub, dict) and sub:
            return sub
    thinker = cfg.get("thinker_config")
    if isinstance(thinker, dict) and isinstance(thinker.get("text_config"), dict):
        return thinker["text_config"]
    return cfg
