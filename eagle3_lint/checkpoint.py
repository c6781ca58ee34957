"""What a Hugging Face checkpoint's ``config.json`` says, read the way Transformers reads it (engine-neutral), and
the one reader of such a file the commands share (``load_json_file``: a bad file is a one-line usage error)."""

from __future__ import annotations

import os
from typing import Any

from eagle3_lint.errors import UsageError
from eagle3_lint.jsonfile import read_json

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


def load_json_file(path: str, what: str) -> dict[str, Any]:
    """A config.json, or a model folder holding one (a local Hugging Face snapshot)."""
    if os.path.isdir(path):
        inner = os.path.join(path, "config.json")
        if not os.path.isfile(inner):
            raise UsageError(f"{what} is a folder without a config.json: {path}")
        path = inner
    data = read_json(path, what)
    if not isinstance(data, dict):
        raise UsageError(f"{what} must be a JSON object: {path}")
    return data
