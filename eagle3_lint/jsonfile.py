"""The one reader of the JSON files users hand the tool (configs, baselines): a file that is missing or is not JSON
is a one-line usage error (exit 2) naming what it was for, never a traceback."""

from __future__ import annotations

import json
from typing import Any

from eagle3_lint.errors import UsageError


def read_json(path: str, what: str, not_found_hint: str = "") -> Any:
    """The JSON value in ``path``; ``what`` names the file in errors (``--target-config``, ``baseline file``)."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise UsageError(f"{what} not found: {path}{not_found_hint}") from None
    # RecursionError: json's decoder recurses per nesting level, so a document nested some thousand deep is one the
    # user must mend, not a bug of ours (weights.py reads safetensors index files the same way).
    except (OSError, UnicodeError, json.JSONDecodeError, RecursionError) as exc:
        raise UsageError(f"{what} is not readable JSON: {path}: {exc}") from None
