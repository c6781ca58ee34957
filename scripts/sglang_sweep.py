#!/usr/bin/env python3
"""Sweep SGLang releases with ``eagle3-lint check`` and write the SGLang section of docs/compatibility.md.

    python scripts/sglang_sweep.py                 # every sglang-<V>/ in the cache; writes docs/compatibility.md
    python scripts/sglang_sweep.py 0.5.10 0.5.23 --no-write
    python scripts/sglang_sweep.py --setters       # the setter/id-transform table (docs/sglang-releases.md)

Per release, the full analysis (``analysis.analyze``, every architecture targeted so EGL001 counts too):
verdict counts, EGL001/EGL002 counts and how many EGL002 have a fix, the runner call sites of the capture
method, the runner's notes (custom ids replaced under CUDA graphs), internal errors and time. The section sits
between markers at the end of docs/compatibility.md (scripts/sweep.py keeps it when it rewrites the vLLM part).
Exits 1 if any release crashed or had an internal error.
"""
from __future__ import annotations

import collections
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from eagle3_lint import (
    releases,  # noqa: E402
)
from eagle3_lint.engines.sglang import fetch  # noqa: E402
from eagle3_lint.engines.sglang.setter import Heuristic  # noqa: E402
from eagle3_lint.engines.sglang.verdicts import Status, contract  # noqa: E402


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(x) if x.isdigit() else 0 for x in v.replace("post", ".").split("."))


START = "<!-- sglang-sweep:start -->"
END = "<!-- sglang-sweep:end -->"
DOC = Path(__file__).resolve().parents[1] / "docs" / "compatibility.md"


def check_row(v: str) -> tuple[str, bool]:
    """One markdown row for release ``v`` and whether it is clean (no crash, no internal error)."""
    from eagle3_lint.analysis import Options, analyze
    from eagle3_lint.source import DirSource

    t0 = time.monotonic()
    try:
        src = DirSource(fetch.fetch_release(v), "sglang")
        plain = analyze(src, Options(cache_dir=releases.cache_root()))
        ctx = analyze(src, Options(cache_dir=releases.cache_root(), targets=tuple(plain.verdicts)))
    except Exception:  # noqa: BLE001 - a crash is a result of the sweep, recorded in the table
        return f"| {v} | CRASH: {traceback.format_exc().splitlines()[-1]} | | | | | | | | | | |", False
    n = collections.Counter(x.status for x in ctx.verdicts.values())
    rules = collections.Counter(f.rule for f in ctx.findings)
    fixable = sum(1 for f in ctx.findings if f.rule == "EGL002" and f.fix is not None)
    other = ", ".join(f"{r} {c}" for r, c in sorted(rules.items()) if r not in ("EGL001", "EGL002")) or "-"
    sites = "; ".join(f"{s.path.removeprefix('sglang/srt/')}:{s.line}" for s in ctx.runner.sites) or "-"
    notes = "CUDA-graph runner replaces custom ids" if any("no ids" in x for x in ctx.runner.notes) else "-"
    errs = len(ctx.errors) + len(plain.errors)
    row = (f"| {v} | {len(ctx.verdicts)} | {n[Status.SUPPORTED]} | {n[Status.WRAPPER_GAP]} | {n[Status.UNSUPPORTED]} "
           f"| {n[Status.UNKNOWN]} | {rules['EGL001']} | {rules['EGL002']} ({fixable} fixable) | {other} | {sites} "
           f"| {notes} | {errs} | {time.monotonic() - t0:.1f} |")
    return row, errs == 0


def section(rows: list[str], clean: int, total: float) -> str:
    return "\n".join([
        START,
        "## SGLang releases",
        "",
        "Regenerate: `python scripts/sglang_sweep.py`. One `check` per release with every architecture",
        "targeted (EGL001 counts the unsupported in-scope ones), read from the release's wheel, never imported.",
        "A status is what SGLang's own check says of the registered class: `set_eagle3_layers_to_capture`",
        "present through its MRO (the runner calls it on the top-level model); wrapper-gap: absent, but a model",
        "the class holds has it. EGL003-EGL005 read SGLang's collection (`layers_to_capture` lists, per-layer",
        "flags); EGL007 and the serving chain need a drafter config, EGL006 and EGL009 do not run on SGLang",
        "(docs/sglang-check.md); EGL002 fixes copy the release's own delegating setter.",
        "",
        "| release | registered | supported | wrapper-gap | unsupported | unknown | EGL001 | EGL002 | other rules "
        "| runner call sites | runner notes | internal errors | s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"{len(rows)} releases, {len(rows) - clean} with a crash or an internal error, {total:.0f} s for the sweep.",
        END,
        "",
    ])


def write_section(text: str, doc: Path = DOC) -> None:
    old = doc.read_text() if doc.exists() else ""
    head = old.split(START, 1)[0].rstrip("\n")
    tail = old.split(END, 1)[1].lstrip("\n") if END in old else ""
    doc.write_text(head + "\n\n" + text + tail)


def main(argv: list[str]) -> int:
    setters = "--setters" in argv
    write = "--no-write" not in argv
    argv = [a for a in argv if not a.startswith("--")]
    versions = argv or sorted((p.name[len("sglang-"):] for p in releases.cache_root().glob("sglang-*")
                               if (p / releases.COMPLETE_MARKER).exists()), key=_key)
    if setters:
        return setter_table(versions)
    rows: list[str] = []
    clean = 0
    t0 = time.monotonic()
    for v in versions:
        row, ok = check_row(v)
        rows.append(row)
        clean += ok
        print(row, flush=True)
    if write:
        write_section(section(rows, clean, time.monotonic() - t0))
        print(f"wrote {DOC}")
    return 0 if clean == len(rows) else 1


def setter_table(versions: list[str]) -> int:
    """The derived contract's setter and id-read detail, one row per release (docs/sglang-releases.md)."""
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
