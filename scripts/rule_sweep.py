#!/usr/bin/env python3
r"""Run the rules over every cached vLLM release and print findings per rule per release.

    python scripts/rule_sweep.py                      # every cached release, every rule
    python scripts/rule_sweep.py --rules EGL002,EGL003,EGL004,EGL006 --details out.json
    python scripts/rule_sweep.py --versions 0.16.0,0.33.0 --show EGL004
    python scripts/rule_sweep.py --rules EGL009 \
        --target-config sample_trees/eagle3-model-type-gate/kimi_k25_v016/hf/config.json

Releases are read from the eagle3-lint cache (``$XDG_CACHE_HOME/eagle3-lint/vllm-<V>/``, the
folders ``eagle3-lint check vllm==V`` fills); nothing is downloaded. No architecture is targeted
unless ``--arch`` / ``--target-config`` say so, so by default the table is what a maintainer running
the tool over the whole tree would see. A cell is
``errors/warnings`` (notes are counted with warnings). ``--details`` writes every finding, for
hand-checking against the source.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eagle3_lint import releases
from eagle3_lint.analysis import Options, analyze
from eagle3_lint.engines import dir_source
from eagle3_lint.model import Severity
from eagle3_lint.rules import all_rules


def _vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v))


def cached_versions(cache: Path) -> list[str]:
    out = []
    for d in cache.glob("vllm-*"):
        if (d / releases.COMPLETE_MARKER).exists():
            out.append(d.name[len("vllm-"):])
    return sorted(out, key=_vkey)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=None, help="cache root (default: eagle3-lint's)")
    ap.add_argument("--versions", default="", help="comma-separated releases (default: every cached one)")
    ap.add_argument("--rules", default="", help="comma-separated rule ids (default: all)")
    ap.add_argument("--details", type=Path, default=None, help="write every finding as JSON here")
    ap.add_argument("--show", default="", help="also print the findings of these rule ids")
    ap.add_argument("--arch", default="", help="comma-separated architectures to target (default: none)")
    ap.add_argument("--target-config", type=Path, default=None, help="the target's HF config.json (for EGL009)")
    args = ap.parse_args(argv)

    cache = args.cache or releases.cache_root()
    versions = [v for v in args.versions.split(",") if v] or cached_versions(cache)
    rules = [r for r in args.rules.split(",") if r] or [r.meta.id for r in all_rules()]
    show = {r for r in args.show.split(",") if r}
    select = set(rules)
    table: dict[str, dict[str, tuple[int, int]]] = {}
    details: list[dict[str, object]] = []
    errors = 0
    for v in versions:
        root = releases.release_dir(v, cache, "vllm")
        t0 = time.perf_counter()
        opts = Options(cache_dir=cache, targets=tuple(x for x in args.arch.split(",") if x),
                       target_config=json.loads(args.target_config.read_text()) if args.target_config else None,
                       target_config_path=str(args.target_config) if args.target_config else None)
        ctx = analyze(dir_source(root), opts, lambda rid: rid in select)
        dt = time.perf_counter() - t0
        row: dict[str, tuple[int, int]] = {}
        for rid in rules:
            fs = [f for f in ctx.findings if f.rule == rid]
            e = sum(1 for f in fs if f.severity is Severity.ERROR)
            row[rid] = (e, len(fs) - e)
        table[v] = row
        errors += len(ctx.errors)
        for f in ctx.findings:
            if f.rule not in select:
                continue
            details.append({"version": v, "rule": f.rule, "severity": f.severity.value, "path": f.location.path,
                            "line": f.location.line, "architecture": f.architecture, "symbol": f.symbol,
                            "message": f.message, "fix": f.fix.applicability.value if f.fix else None})
            if f.rule in show:
                where = f"{f.location.path}:{f.location.line}"
                print(f"{v} {f.rule} {f.severity.value} {where} {f.message}", file=sys.stderr)
        for e in ctx.errors:
            print(f"{v}: internal error in {e.where}: {e.message}", file=sys.stderr)
        print(f"{v}: {dt:.1f}s", file=sys.stderr)

    w = max(len(v) for v in versions) if versions else 7
    print("release".ljust(w) + "".join(f" {r:>8}" for r in rules))
    for v in versions:
        cells = []
        for r in rules:
            e, wn = table[v][r]
            cells.append(f" {(f'{e}/{wn}' if e or wn else '-'):>8}")
        print(v.ljust(w) + "".join(cells))
    print("(cells: errors/warnings; '-' none)")
    if args.details:
        args.details.write_text(json.dumps(details, indent=1) + "\n")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
