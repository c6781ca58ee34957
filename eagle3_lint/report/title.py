"""A finding's title: one short sentence that stands alone, for concise lines and JSON ``title``.

Rule messages are evidence paragraphs (the median is several hundred characters). The title says
what is wrong about which symbol in one sentence, from the finding's own fields (rule, severity,
architecture, symbol) and, where a rule's message opens with such a sentence, from that. The full
message stays in ``--output-format full`` and in JSON/SARIF.
"""

from __future__ import annotations

import re

from eagle3_lint.guard import printable
from eagle3_lint.model import MAX_TITLE, Finding, Severity

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
    arch, sym = f.architecture, f.symbol
    who = arch or sym or "this file"
    r = f.rule
    check = f.check or "the engine's EAGLE-3 check"
    # Each rule's sentence, then shorter forms for long names: the first that fits is used, so a title is
    # only ever clipped when even the shortest form is too long.
    forms: list[str]
    if r == "EGL003" and "has the EAGLE-3 plumbing but not" in f.message:
        forms = [f"{sym or who} has the EAGLE-3 plumbing but no setter, so {check} fails",
                 f"{sym or who} has the EAGLE-3 plumbing but no setter"]
    elif r == "EGL004" and "so it captures nothing" in f.message:
        forms = [f"{who}: the setter feeds a collection mechanism the layer owner's forward does not read",
                 f"{who}: the setter feeds a mechanism the decoder does not read"]
    elif r == "EGL003":
        forms = [f"{sym or who} carries part of the EAGLE-3 interface but not all of it, so {check} is False",
                 f"{sym or who} carries part of the EAGLE-3 interface, so {check} is False"]
    elif r == "EGL004":
        owner = f" {sym}" if sym and sym != arch else ""
        forms = [f"{who}: the layer owner{owner} never collects or returns the aux hidden states",
                 f"{who}:{owner} never collects the aux hidden states",
                 f"{who}: the aux hidden states are never collected"]
    elif r == "EGL005":
        risk = "wrong layers with pipeline parallelism" if f.severity is Severity.ERROR else "latent"
        short = "wrong layers under PP" if f.severity is Severity.ERROR else "latent"
        forms = [f"{sym or who} compares a slice-relative index with absolute aux-layer ids ({risk})",
                 f"{sym or who} compares a slice-relative index with absolute aux-layer ids ({short})",
                 f"{sym or who}: slice-relative index vs absolute aux-layer ids ({short})"]
    else:
        first = _first_sentence(f.message)
        forms = [first if len(first) <= MAX_TITLE else f"{who}: {first}"]
    t = next((x for x in forms if len(x) <= MAX_TITLE), forms[-1])
    return _clip(t)
