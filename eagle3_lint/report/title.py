"""A finding's title: one short sentence that stands alone, for concise lines and JSON ``title``.

Rule messages are evidence paragraphs (the median is several hundred characters). The title says
what is wrong about which symbol in one sentence. Each rule chooses it when it makes the finding
(``Finding.title``, ``rules.fit``: its sentence, then shorter forms for long names), from what it found,
not from the message's wording; a finding made without one gets the message's first sentence, or the rule's
summary when that sentence is too long (``rules.default_title``). Titles are never cut. The full message
stays in ``--output-format full`` and in JSON/SARIF.
"""

from __future__ import annotations

import re

from eagle3_lint.model import Finding
from eagle3_lint.safe_text import printable

_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]'\"`])[.;](?:\s|$)")


def first_sentence(msg: str) -> str:
    """The message up to its first full stop or semicolon, on one line."""
    m = _SENTENCE_END.search(msg)
    return " ".join((msg[: m.start()] if m else msg).split())


def title(f: Finding) -> str:
    """One whole sentence, on one line, with no control characters; never cut (``rules.fit`` keeps it short)."""
    return printable(" ".join((f.title or first_sentence(f.message)).split()))
