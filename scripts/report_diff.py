#!/usr/bin/env python3
"""Compare two ``check --format json`` reports: every difference that is not a field added by the second.

    python scripts/report_diff.py before.json after.json     # exit 1 on a changed or removed value

Used to hold the vLLM results still across engine work (the issue-14 acceptance: the JSON of 0.11.0, 0.16.0,
0.20.2 and 0.33.0 unchanged apart from added fields). Timings are ignored.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

IGNORED = {"timings"}


def walk(a: Any, b: Any, path: str, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a:
            if k in IGNORED:
                continue
            if k not in b:
                out.append(f"removed {path}.{k}")
            else:
                walk(a[k], b[k], f"{path}.{k}", out)
        out.extend(f"added {path}.{k}" for k in b if k not in a and k not in IGNORED)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"length of {path}: {len(a)} -> {len(b)}")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            walk(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append(f"changed {path}: {str(a)[:150]!r} -> {str(b)[:150]!r}")


def main(argv: list[str]) -> int:
    with open(argv[0]) as fa, open(argv[1]) as fb:
        a, b = json.load(fa), json.load(fb)
    out: list[str] = []
    walk(a, b, "", out)
    added = sorted({re.sub(r"\[\d+\]", "[]", o.split(" ", 1)[1]) for o in out if o.startswith("added")})
    other = [o for o in out if not o.startswith("added")]
    print(f"{argv[1]}: {len(other)} differences besides added fields; fields added: {', '.join(added) or '-'}")
    for o in other[:50]:
        print("  " + o)
    return 1 if other else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
