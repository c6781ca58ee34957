#!/usr/bin/env python3
"""Sweep every released vLLM from 0.9.2 to 0.33.0 and write the support matrix.

    python scripts/sweep.py                      # all releases, writes docs/compatibility.md
    python scripts/sweep.py 0.16.0 0.33.0 --no-write

For each release: what the tool derived (contract members, check kind, runner path, gates), the
counts by status and by rule, and the wall time. Any crash or internal error is recorded in the
table and makes the script exit 1. Releases are fetched once into the user cache.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from eagle3_lint import releases  # noqa: E402
from eagle3_lint.analysis import Options, analyze  # noqa: E402
from eagle3_lint.engines import dir_source  # noqa: E402
from eagle3_lint.model import Status  # noqa: E402

# Every release on PyPI between these bounds (``pip index versions vllm``); data, with its source.
RELEASES = [
    "0.9.2", "0.10.0", "0.10.1", "0.10.1.1", "0.10.2", "0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.13.0",
    "0.14.0", "0.14.1", "0.15.0", "0.15.1", "0.16.0", "0.17.0", "0.17.1", "0.18.0", "0.18.1", "0.19.0",
    "0.19.1", "0.20.0", "0.20.1", "0.20.2", "0.21.0", "0.22.0", "0.22.1", "0.23.0", "0.24.0", "0.25.0",
    "0.25.1", "0.26.0", "0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0",
]

STATUSES = [s.value for s in Status]


def sweep_one(version: str) -> dict[str, Any]:
    row: dict[str, Any] = {"release": version}
    t0 = time.perf_counter()
    try:
        root = releases.fetch_release(version, package="vllm")
        ctx = analyze(dir_source(root), Options(cache_dir=releases.cache_root()))
    except Exception as exc:  # noqa: BLE001 - a crash is a result of the sweep, recorded in the table
        row.update(crash=f"{type(exc).__name__}: {exc}", trace=traceback.format_exc(), seconds=time.perf_counter() - t0)
        return row
    c, r = ctx.contract, ctx.runner
    row["seconds"] = time.perf_counter() - t0
    row["version"] = ctx.version
    row["check"] = c.check
    row["members"] = [m.name + ("()" if m.kind == "method" else "")
                      + ("*" if m.kind == "method" and m.has_default else "") for m in c.members]
    row["mixin"] = c.mixin
    site = r.primary
    row["runner"] = "-" if site is None else f"{site.path.removeprefix('vllm/')}:{site.line}"
    row["sites"] = len(r.sites)
    row["fallback"] = ", ".join(r.fallback_names) or "-"
    row["pp"] = r.pp_verifier or "-"
    row["gate"] = "-" if not r.gates else "; ".join(
        f"{len(g.allow_list)} types at {g.path.removeprefix('vllm/')}:{g.line}" for g in r.gates)
    row["status"] = Counter(v.status.value for v in ctx.verdicts.values())
    row["rules"] = Counter(f.rule for f in ctx.findings)
    row["archs"] = len(ctx.verdicts)
    row["errors"] = [f"{e.where}: {e.message}" for e in ctx.errors]
    return row


def markdown(rows: list[dict[str, Any]], total: float) -> str:
    """The sweep section: what each release's analysis found and cost (the matrix sections hold the rest)."""
    rules = sorted({rule for r in rows for rule in r.get("rules", {})})
    out = [
        "## Sweep: runner path, findings by rule, time",
        "",
        "One full `check` (every architecture, every rule, no `--arch`) per release, warm cache. Rule counts are",
        "untargeted: architecture-scoped rules such as EGL001 and EGL009 fire only with `--arch`.",
        "",
        "| release | runner call site | sites | archs | " + " | ".join(rules) + " | internal errors | seconds |",
        "|" + "---|" * (6 + len(rules)),
    ]
    for r in rows:
        if "crash" in r:
            out.append(f"| {r['release']} | CRASH: {r['crash']} |" + " |" * (4 + len(rules)))
            continue
        out.append(
            f"| {r['release']} | {r['runner']} | {r['sites']} | {r['archs']} | "
            + " | ".join(str(r["rules"].get(rule, 0)) for rule in rules)
            + f" | {len(r['errors'])} | {r['seconds']:.1f} |"
        )
    crashes = sum(1 for r in rows if "crash" in r)
    errs = sum(len(r.get("errors", [])) for r in rows)
    out += ["", f"{len(rows)} releases, {crashes} crashes, {errs} internal errors, {total:.0f} s for the sweep.", ""]
    return "\n".join(out)


def document(releases: list[str], rows: list[dict[str, Any]], total: float) -> str:
    """docs/compatibility.md: the matrix (releases, architectures) followed by the sweep section."""
    from eagle3_lint import matrix

    m = matrix.run([f"vllm=={v}" if v[:1].isdigit() else v for v in releases], jobs=1)
    failed = [r.label for r in m.releases if r.error]
    if failed:
        raise SystemExit(f"sweep: error: the matrix could not read {', '.join(failed)}")
    head = matrix.to_markdown(m, matrix.select_rows(m), "python scripts/sweep.py")
    return head.rstrip("\n") + "\n\n" + markdown(rows, total)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("releases", nargs="*", default=RELEASES)
    ap.add_argument("--output", type=Path, default=REPO / "docs" / "compatibility.md")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    rows = []
    t0 = time.perf_counter()
    for v in args.releases:
        row = sweep_one(v)
        rows.append(row)
        state = "CRASH " + row["crash"] if "crash" in row else \
            f"{dict(row['status'])} rules {dict(row['rules'])} errors {len(row['errors'])}"
        print(f"{v:>9} {row['seconds']:5.1f}s {state}", flush=True)
    total = time.perf_counter() - t0
    if not args.no_write:
        md = document(list(args.releases), rows, total)
        args.output.parent.mkdir(parents=True, exist_ok=True)
        # The SGLang section (scripts/sglang_sweep.py) sits between its markers at the end: kept as it is.
        old = args.output.read_text() if args.output.exists() else ""
        start = "<!-- sglang-sweep:start -->"
        if start in old:
            md = md.rstrip("\n") + "\n\n" + start + old.split(start, 1)[1]
        args.output.write_text(md)
        print(f"wrote {args.output}")
    bad = [r for r in rows if "crash" in r or r.get("errors")]
    for r in bad:
        print(f"{r['release']}: {r.get('crash') or r['errors']}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
