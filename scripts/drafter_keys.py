#!/usr/bin/env python3
"""Write eagle3_lint/data/drafter_keys.json: which drafter config keys each cached release's drafter code reads.

    python scripts/drafter_keys.py            # print the table from the releases in the cache
    python scripts/drafter_keys.py --write    # rewrite eagle3_lint/data/drafter_keys.json

Every release folder in the cache (``~/.cache/eagle3-lint/<package>-<version>``, what ``eagle3-lint check
vllm==X`` fetched) is read with the tool's own reader (``engines/drafter_keys.examine``) over each engine's
drafter modules (``DRAFTER_MODULE_GLOBS``). EGL011 uses the table only to say which other release reads a key
the checked tree does not; what the checked tree reads always comes from the tree. tests/test_drafter_keys.py
re-derives the rows of the releases it fetches and compares.
"""

from __future__ import annotations

import json
import re
import sys

from eagle3_lint.engines import drafter_keys as dk
from eagle3_lint.engines.sglang.drafter import DRAFTER_MODULE_GLOBS as SGLANG_GLOBS
from eagle3_lint.engines.vllm.drafter import DRAFTER_MODULE_GLOBS as VLLM_GLOBS
from eagle3_lint.target import cache_root

DATA = dk.DATA_FILE
GLOBS = {"vllm": VLLM_GLOBS, "sglang": SGLANG_GLOBS}
REASON = ("Which drafter config keys each examined release's drafter code reads, found by "
          "engines/drafter_keys.examine in the releases that were in the tool's cache when "
          "scripts/drafter_keys.py ran (fetching every release is a few hundred MB each). A release between two "
          "examined ones is not known: 'first read in X' means the first examined release, and the message names "
          "the examined release before it.")


def build() -> dict[str, object]:
    out: dict[str, object] = {}
    root = cache_root()
    for engine, globs in GLOBS.items():
        rels = {}
        for d in sorted(root.glob(f"{engine}-*")):
            m = re.fullmatch(rf"{engine}-(\d[\w.]*)", d.name)
            if m and d.is_dir() and (d / engine).is_dir():
                rels[m.group(1)] = dk.examine(str(d), globs)
        out[engine] = {"reason": REASON}
        # Hand-written, with its own reason: kept as the table has it (engines/drafter_keys.weightless).
        if "weightless" in dk.table().get(engine, {}):
            out[engine]["weightless"] = dk.table()[engine]["weightless"]
        out[engine]["releases"] = {r: rels[r] for r in sorted(rels, key=dk.version_key)}
    return out


def main(argv: list[str]) -> int:
    text = json.dumps(build(), indent=1, sort_keys=False) + "\n"
    if argv == ["--write"]:
        DATA.write_text(text, encoding="utf-8")
        return 0
    if argv:
        print("usage: python scripts/drafter_keys.py [--write]", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
