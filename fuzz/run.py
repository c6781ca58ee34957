"""The long fuzz run: ``python -m fuzz.run --release 0.16.0 --release 0.33.0 --count 10000 --jobs 2``.

Every input is reproducible from (release, seed, index): ``--replay RELEASE:SEED:INDEX`` reruns one
and prints its mutations and outcome. Failures are written to ``--out`` (JSON lines, with the
mutated files' bytes base64-encoded so a regression test can be made from them); a summary line
per release is printed at the end. Releases come from the eagle3-lint cache (downloaded on first
use, like the ``real_trees`` test fixture).
"""

from __future__ import annotations

import argparse
import base64
import json
import multiprocessing
import random
import sys
import time
from collections import Counter
from pathlib import Path

from fuzz.harness import (
    BaseTree,
    Case,
    Configs,
    configs_for,
    memoized_facts,
    pick_case,
    run_case,
    targets_for,
)


def case_rng(release: str, seed: int, index: int) -> random.Random:
    return random.Random(f"{release}:{seed}:{index}")


def make_case(base: BaseTree, release: str, seed: int, index: int
              ) -> tuple[Case, tuple[str, ...], Configs | None]:
    rng = case_rng(release, seed, index)
    case = pick_case(base, rng)
    targets = targets_for(base, rng)
    return case, targets, configs_for(base, rng, targets)


def _root(release: str) -> Path:
    from eagle3_lint import releases

    return releases.fetch_release(release)


def worker(args: tuple[str, int, range, str]) -> dict[str, object]:
    release, seed, indices, out = args
    base = BaseTree(_root(release))
    stats: Counter[str] = Counter()
    t0 = time.perf_counter()
    with memoized_facts(base), open(out, "a", encoding="utf-8") as fh:
        for i in indices:
            case, targets, configs = make_case(base, release, seed, i)
            o = run_case(base, case, targets, configs)
            if configs is not None:
                stats["with_configs"] += 1
            stats["inputs"] += 1
            stats["parsed" if o.parsed else "unparsable"] += 1
            stats["findings"] += o.findings
            if any(rel in case.files for rel in ("vllm/model_executor/models/registry.py",
                                                 "vllm/model_executor/models/interfaces.py",
                                                 "vllm/v1/worker/gpu_model_runner.py", "vllm/config/speculative.py")):
                stats["driver_files"] += 1
            if not o.ok:
                stats["failures"] += 1
                fh.write(json.dumps({
                    "release": release, "seed": seed, "index": i, "problem": o.problem, "mutations": case.describe(),
                    "targets": list(targets), "detail": o.detail[-6000:],
                    "configs": None if configs is None else {
                        "source": configs.source, "target": configs.target, "draft": configs.draft,
                        "pipeline_parallel": configs.pipeline_parallel, "pp_partition": configs.pp_partition},
                    "files": {rel: base64.b64encode(d).decode() for rel, d in case.files.items()},
                }) + "\n")
                fh.flush()
    stats["seconds"] = int(time.perf_counter() - t0)
    return {"release": release, **stats}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--release", action="append", default=[], help="vLLM release (repeatable)")
    ap.add_argument("--count", type=int, default=1000, help="total inputs, split over the releases")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", default="fuzz-failures.jsonl")
    ap.add_argument("--replay", help="RELEASE:SEED:INDEX")
    ns = ap.parse_args(argv)
    if ns.replay:
        release, seed, index = ns.replay.split(":")
        base = BaseTree(_root(release))
        with memoized_facts(base):
            case, targets, configs = make_case(base, release, int(seed), int(index))
            o = run_case(base, case, targets, configs)
        print(case.describe())
        print("targets:", targets, "configs:", configs)
        print("ok" if o.ok else f"FAIL: {o.problem}\n{o.detail}")
        return 0 if o.ok else 1
    releases = ns.release or ["0.16.0"]
    per = ns.count // len(releases)
    chunks = max(1, ns.jobs) * 4
    work = []
    for k, rel in enumerate(releases):
        n = per + (ns.count - per * len(releases) if k == len(releases) - 1 else 0)
        step = (n + chunks - 1) // chunks
        for a in range(0, n, step):
            work.append((rel, ns.seed, range(a, min(n, a + step)), ns.out))
    Path(ns.out).touch()
    totals: dict[str, Counter[str]] = {}
    if ns.jobs > 1:
        with multiprocessing.get_context("fork").Pool(ns.jobs, maxtasksperchild=1) as pool:
            results = pool.imap_unordered(worker, work)
            for r in results:
                totals.setdefault(str(r["release"]), Counter()).update({k: v for k, v in r.items() if k != "release"})
                print(json.dumps(r), file=sys.stderr, flush=True)
    else:
        for w in work:
            r = worker(w)
            totals.setdefault(str(r["release"]), Counter()).update({k: v for k, v in r.items() if k != "release"})
            print(json.dumps(r), file=sys.stderr, flush=True)
    for rel, c in totals.items():
        print(json.dumps({"release": rel, **c}))
    return 1 if any(c["failures"] for c in totals.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
