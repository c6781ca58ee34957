"""Strings from the analyzed tree made safe to print: a hostile tree's literals reach every report.

Kept apart from ``guard.py`` (which stops the analyzed code from being imported): the renderers and rules' titles
need only this, and guard reads the engines' packages.
"""

from __future__ import annotations

# C0/C1 controls (ESC starts terminal sequences that can retitle windows, write the clipboard or
# hide text) and the bidi overrides of "Trojan Source": a hostile tree can put any of them in a
# string literal (a registry key, an error message) that reports print.
_UNPRINTABLE = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0))}
_UNPRINTABLE.update({c: f"\\u{c:04x}" for c in (0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))})
_MULTILINE = {k: v for k, v in _UNPRINTABLE.items() if k not in (0x09, 0x0A)}


def printable(text: str, one_line: bool = True) -> str:
    """``text`` safe to print on a terminal: control and bidi characters shown as escapes.

    With ``one_line`` (the default) newlines and tabs are escaped too, so a message stays one line.
    """
    return text.translate(_UNPRINTABLE if one_line else _MULTILINE)
