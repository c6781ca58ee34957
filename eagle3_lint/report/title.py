"""A finding's title: one short sentence that stands alone, for concise lines and JSON ``title``.

Rule messages are evidence paragraphs (the median is several hundred characters). The title says
what is wrong about which symbol in one sentence. Each rule chooses it when it makes the finding
(``Finding.title``, ``rules.fit``: its sentence, then shorter forms for long names), from what it found,
not from the message's wording; a finding without one gets the message's first sentence. The full
message stays in ``--output-format full`` and in JSON/SARIF.
"""

from __future__ import annotations

import re

from eagle3_lint.guard import printable
from eagle3_lint.model import MAX_TITLE, Finding

_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]'\"`])[.;](?:\s|$)")


def _first_sentence(msg: str) -> str:
    m = _SENTENCE_END.search(msg)
    return (msg[: m.start()] if m else msg).strip()


def _clip(s: str, limit: int = MAX_TITLE) -> str:
    s = " ".join(printable(s).split())
    return s if len(s) <= limit else s[: limit - 3].rstrip(" ,;:") + "..."


def title(f: Finding) -> str:
    """One sentence, at most ``MAX_TITLE`` characters, no newline."""
    if f.title:
        return _clip(f.title)  # the rule's own (``rules.fit``), chosen when it made the finding
    # A finding without the rule's own title (EGL000, EGL008, EGL100, most of EGL007): the message's first
    # sentence, named by what it is about when that sentence alone is too long.
    who = f.architecture or f.symbol or "this file"
    first = _first_sentence(f.message)
    return _clip(first if len(first) <= MAX_TITLE else f"{who}: {first}")
