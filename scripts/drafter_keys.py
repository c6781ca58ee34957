#!/usr/bin/env python3
"""Write eagle3_lint/data/drafter_keys.json: which drafter config keys each cached release's drafter code reads.

    python scripts/drafter_keys.py            # print the table from the releases in the cache
    python scripts/drafter_keys.py --write    # rewrite eagle3_lint/data/drafter_keys.json

Every complete release folder in the cache (``~/.cache/eagle3-lint/<package>-<version>`` with its ``.complete``
marker, what ``eagle3-lint check vllm==X`` fetched) is read with the tool's own reader
(``engines/drafter_keys.examine``) over each engine's drafter modules (``DRAFTER_MODULE_GLOBS``). A release the
table has that is not in this cache keeps its row: it was read from its tree when it was cached, and a cache that
holds fewer releases (a fresh machine, a cleaned cache) must not take rows out of the table, as it did before
(run on a cache of six vLLM releases, ``--write`` dropped 0.10.1, 0.14.1, 0.15.0, 0.17.1, 0.18.0 and 0.25.1, and
with them EGL011's "0.25.1 reads fc_norm"). What changed against the table (rows added, rows re-read that
differ) is printed to stderr. EGL011 uses the table only to say which other release reads a key the checked tree
does not; what the checked tree reads always comes from the tree. tests/test_drafter_keys.py re-derives the rows
of the releases it fetches and compares.
"""

from __future__ import annotations

import json
import re
import sys

from eagle3_lint.engines import drafter_keys as dk
from eagle3_lint.engines.sglang.drafter import DRAFTER_MODULE_GLOBS as SGLANG_GLOBS
from eagle3_lint.engines.vllm.drafter import DRAFTER_MODULE_GLOBS as VLLM_GLOBS
from eagle3_lint.releases import COMPLETE_MARKER, cache_root

DATA = dk.DATA_FILE
GLOBS = {"vllm": VLLM_GLOBS, "sglang": SGLANG_GLOBS}
REASON = ("Which drafter config keys each examined release's drafter code reads, found by "
          "engines/drafter_keys.examine in the releases that were in the tool's cache when "
          "scripts/drafter_keys.py ran, that time or an earlier one (a row, once read from its tree, stays; "
          "fetching every release is a few hundred MB each). A release between two "
          "examined ones is not known: 'first read in X' means the first examined release, and the message names "
          "the examined release before it.")


def build(changes: list[str] | None = None) -> dict[str, object]:
    """The table: each complete cached release's row read from its tree, the table's other rows as they are.
    ``changes`` gets one line per row added or re-read to a different value."""
    out: dict[str, object] = {}
    root = cache_root()
    for engine, globs in GLOBS.items():
        rels: dict[str, object] = dict(dk.table().get(engine, {}).get("releases", {}))
        for d in sorted(root.glob(f"{engine}-*")):
            m = re.fullmatch(rf"{engine}-(\d[\w.]*)", d.name)
            if not (m and d.is_dir() and (d / engine).is_dir() and (d / COMPLETE_MARKER).exists()):
                continue  # not a release tree, or one still being fetched
            row = dk.examine(str(d), globs)
            if changes is not None and rels.get(m.group(1)) != row:
                changes.append(f"{engine} {m.group(1)}: " + ("row re-read, differs" if m.group(1) in rels else
                                                             "row added"))
            rels[m.group(1)] = row
        out[engine] = {"reason": REASON}
        # Hand-written, each with its own reason: kept as the table has them (engines/drafter_keys.weightless, .parts,
        # .fc_states).
        for section in ("weightless", "parts", "fc_states"):
            if section in dk.table().get(engine, {}):
                out[engine][section] = dk.table()[engine][section]
        out[engine]["releases"] = {r: rels[r] for r in sorted(rels, key=dk.version_key)}
    return out


def main(argv: list[str]) -> int:
    changes: list[str] = []
    text = json.dumps(build(changes), indent=1, sort_keys=False) + "\n"
    for line in changes:
        print(line, file=sys.stderr)
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
