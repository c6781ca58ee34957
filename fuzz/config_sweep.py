"""Exhaustive junk-value sweep over the user-supplied configs: ``python -m fuzz.config_sweep --cases 1``.

A target model's ``config.json`` and a drafter's come from the hub, not from us. For every key of
every sample case's configs (and of their ``text_config``), each junk value of another type
replaces it in turn, and the whole pipeline runs on an unmodified real release with those configs.
Failures (exceptions, internal errors) are printed as JSON lines; the exit code says if any.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys

from fuzz.harness import (
    _JUNK,
    BaseTree,
    Case,
    Configs,
    config_pool,
    memoized_facts,
    run_case,
)


def variants(cfg: dict) -> list[tuple[str, dict]]:
    out: list[tuple[str, dict]] = []
    for key in sorted(cfg):
        for junk in _JUNK:
            c = copy.deepcopy(cfg)
            c[key] = junk
            out.append((f"{key}={junk!r}"[:80], c))
        if isinstance(cfg[key], dict):
            for sub in sorted(cfg[key]):
                for junk in _JUNK:
                    c = copy.deepcopy(cfg)
                    c[key][sub] = junk
                    out.append((f"{key}.{sub}={junk!r}"[:80], c))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--release", default="0.16.0")
    ap.add_argument("--arch", default="LlamaForCausalLM", help="the target architecture the configs point at")
    ap.add_argument("--cases", type=int, default=1,
                    help="how many sample config pairs to sweep (one is 432 runs, about 4 minutes on 0.16.0)")
    ns = ap.parse_args(argv)
    from eagle3_lint import releases

    base = BaseTree(releases.fetch_release(ns.release))
    failures = runs = 0
    seen: set[str] = set()
    with memoized_facts(base):
        for name, tcfg, dcfg in config_pool()[: ns.cases]:
            tcfg = dict(tcfg, architectures=[ns.arch])
            for which, cfg in (("target", tcfg), ("draft", dcfg)):
                for label, c in variants(cfg):
                    pair = (c, dcfg) if which == "target" else (tcfg, c)
                    pp = 2 if runs % 2 else None  # every other run also splits the layers over 2 PP ranks
                    o = run_case(base, Case({}), (ns.arch,), Configs(pair[0], pair[1], name, pp))
                    runs += 1
                    if not o.ok:
                        failures += 1
                        sig = o.problem.split("\n")[0][:160]
                        if sig not in seen:
                            seen.add(sig)
                            print(json.dumps({"case": name, "config": which, "change": label, "pp": pp,
                                              "problem": o.problem, "detail": o.detail[-3000:]}), flush=True)
    print(json.dumps({"runs": runs, "failures": failures, "distinct": len(seen)}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
