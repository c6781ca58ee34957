#!/usr/bin/env python3
"""Run SGLang's derived contract over every fetched SGLang release and print one table row per release.

    python scripts/sglang_sweep.py                 # every sglang-<V>/ in the cache
    python scripts/sglang_sweep.py 0.5.10 0.5.23   # these (fetched first when missing)

Columns: registered architectures, verdict counts, the runner call sites of the capture method
(file:line, whether the drafter's ids are passed, what a missing method does), and the drafter-id
reads. Exits 1 if any release raised (a crash of the tool is what the sweep exists to catch).
"""
from __future__ import annotations

import collections
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eagle3_lint import target  # noqa: E402
from eagle3_lint.engines.sglang import fetch  # noqa: E402
from eagle3_lint.engines.sglang.setter import Heuristic  # noqa: E402
from eagle3_lint.engines.sglang.verdicts import Status, contract  # noqa: E402


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(x) if x.isdigit() else 0 for x in v.replace("post", ".").split("."))


def main(argv: list[str]) -> int:
    versions = argv or sorted((p.name[len("sglang-"):] for p in target.cache_root().glob("sglang-*")
                               if (p / target.COMPLETE_MARKER).exists()), key=_key)
    print("| SGLang | registered | supported | wrapper-gap | unsupported | unknown | unresolved EntryClass "
          "| setters: +1 / other shift / conditional (first==1, max==n) / delegating / PP-guarded / unread "
          "| runner call sites | drafter-id reads | s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    bad = 0
    for v in versions:
        t0 = time.monotonic()
        try:
            c = contract(fetch.fetch_release(v))
        except Exception:  # noqa: BLE001 - reported and counted
            bad += 1
            print(f"| {v} | CRASH | | | | | | {traceback.format_exc().splitlines()[-1]} | | |")
            continue
        n = collections.Counter(x.status for x in c.verdicts)
        # One row per distinct setter (many classes inherit the same one).
        setters = {(x.evidence[0].path, x.evidence[0].line): x.setter
                   for x in c.verdicts if x.status is Status.SUPPORTED}
        ts = [t for t in setters.values() if t is not None]
        cond = collections.Counter(h for t in ts for h in t.conditional)
        st = (f"{len(setters)}: {sum(t.offset == 1 for t in ts)} / {sum(t.offset not in (1, None) for t in ts)} / "
              f"{cond[Heuristic.FIRST_IS_ONE]}, {cond[Heuristic.MAX_IS_N]} / {sum(bool(t.delegates_to) for t in ts)} / "
              f"{sum(t.pp_last_rank_only for t in ts)} / {len(setters) - len(ts)}")
        unres = sum(1 for e in c.registry.entries if e.kind.value != "class")
        sites = "; ".join(f"{s.path.removeprefix('sglang/srt/')}:{s.line} ({s.ids.value}, {s.missing.value})"
                          for s in c.call_sites)
        ids = "; ".join(f"{s.path.removeprefix('sglang/srt/')}:{s.line}"
                        + (f" (except{'' if not s.bare_except else ' bare'} -> {s.fallback})" if s.fallback else "")
                        for s in c.id_sources)
        print(f"| {v} | {len(c.verdicts)} | {n[Status.SUPPORTED]} | {n[Status.WRAPPER_GAP]} | "
              f"{n[Status.UNSUPPORTED]} | {n[Status.UNKNOWN]} | {unres} | {st} | {sites} | {ids} | "
              f"{time.monotonic() - t0:.1f} |",
              flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
