"""Differential test of the incremental path under seeded sequences of mutations (issue 13 item 6's safety net).

Any reuse of a previous run's results (facts, derived contract and runner, per-query results of the semantic
model, whole reports) is only acceptable if a check that reuses them prints exactly what a check without any
cache prints. This test holds the CLI to that, and only the CLI: ``eagle3-lint check TREE --cache-dir DIR``
against ``eagle3-lint check TREE --no-cache``, so it does not depend on how the reuse is built.

A copy of a real release (vLLM 0.33.0; SGLang 0.5.23 in a second test) is primed, then changed by a seeded
sequence of mutations (tests/mutate.py), each on top of the previous ones, on the model files most
architectures depend on (llama.py, qwen2.py, deepseek_v2.py, the Kimi and LLaVA wrappers, vLLM's
interfaces.py) and on random others. After each one, the JSON report and the default text report of a cached
run must equal those of a fresh run byte for byte (and the exit codes must agree); a difference is reported as
the first JSON path that differs, with the seed and the sequence that led to it. The format that meets the
edit first alternates (the other one then reuses what it stored), and a third cached run, JSON again, must
replay the same bytes.

So the test cannot pass by ignoring edits, it counts the mutations that changed the report and requires some,
checks that an appended function (a no-op for the analysis) changed nothing, and that every kind of mutation
was applied at least once when the sequence is long enough to hold them all.

Every check is its own ``python -m eagle3_lint`` process, as a user runs it, so nothing a previous run left in
memory can stand in for the cache. The cache trusts a file's stat only once the file is older than the racy
window (``store._RACY_NS``, 2 s); the fresh runs go first, and the cached runs start only when the edited file
is older than that, so they find the edit by its changed stat, as for a user's tree edited a moment before.

Cost, on a 2-core machine shared with other work (load about 2.4): about 10 s a mutation, most of it the two
``--no-cache`` runs; the default sequence (one of each kind: 10 mutations on vLLM, 9 on SGLang) takes about
1.8 min per test. ``EAGLE3_LINT_MUTATIONS`` sets the number of mutations of each test,
``EAGLE3_LINT_MUTATION_SEED`` the seed (default 13), for long local runs:

    EAGLE3_LINT_MUTATIONS=60 EAGLE3_LINT_MUTATION_SEED=7 python -m pytest -q tests/test_incremental_mutations.py
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import mutate
from tests.mutate import Engine, Kind, Mutation

MUTATIONS_ENV = "EAGLE3_LINT_MUTATIONS"
SEED_ENV = "EAGLE3_LINT_MUTATION_SEED"
DEFAULT_SEED = 13
RACY_S = 2.1  # store._RACY_NS and a margin: an edited file older than this is found by its stat
HOT_FILE_BIAS = 0.6  # a step edits one of the hub files this often, a random other model file otherwise
DELETE_HOT_BIAS = 0.25  # deleting a hub file flattens every later verdict: rarer, so the sequence stays telling
PROG = "python -m eagle3_lint"


@dataclass(frozen=True)
class Layout:
    """Where an engine's model files are, and its hub files (those the most architectures depend on)."""

    package: str
    models: str
    hot: tuple[str, ...]


LAYOUTS = {
    Engine.VLLM: Layout("vllm", "vllm/model_executor/models", tuple(
        f"vllm/model_executor/models/{f}.py" for f in
        ("interfaces", "llama", "qwen2", "qwen3", "deepseek_v2", "kimi_vl", "kimi_k25", "llava"))),
    Engine.SGLANG: Layout("sglang", "sglang/srt/models", tuple(
        f"sglang/srt/models/{f}.py" for f in
        ("llama", "qwen2", "qwen3", "deepseek_v2", "kimi_vl", "kimi_k25", "llava", "qwen3_vl"))),
}


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise pytest.UsageError(f"{name}={raw!r} is not an integer") from None


# -- comparing reports --------------------------------------------------------------------------------------


def _short(v: Any) -> str:
    s = json.dumps(v, ensure_ascii=False)
    return s if len(s) <= 160 else s[:157] + "..."


def first_json_difference(a: Any, b: Any, path: str = "") -> str | None:
    """The first place (a JSON path, with list items named by their ``name`` or ``rule`` where they have one)
    where ``a`` and ``b`` differ, and how; None if they are equal, key order included."""
    where = path or "/"
    if type(a) is not type(b):
        return f"{where}: {_short(a)} != {_short(b)}"
    if isinstance(a, dict):
        for k in a:
            if k not in b:
                return f"{path}/{k}: only in the first ({_short(a[k])})"
            d = first_json_difference(a[k], b[k], f"{path}/{k}")
            if d:
                return d
        extra = [k for k in b if k not in a]
        if extra:
            return f"{path}/{extra[0]}: only in the second ({_short(b[extra[0]])})"
        return None if list(a) == list(b) else f"{where}: same keys in another order"
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            label = next((f"{i}({x[k]})" for k in ("name", "rule") if isinstance(x, dict) and k in x), str(i))
            d = first_json_difference(x, y, f"{path}/{label}")
            if d:
                return d
        if len(a) != len(b):
            longer, which = (a, "first") if len(a) > len(b) else (b, "second")
            more = _short(longer[min(len(a), len(b))])
            return f"{where}: {len(a)} items != {len(b)}; the {which} goes on with {more}"
        return None
    return None if a == b else f"{where}: {_short(a)} != {_short(b)}"


def json_difference(a: str, b: str) -> str | None:
    """How two JSON reports differ, in one line: the first differing path, or (same data, other bytes) the
    first differing offset; None if byte-identical."""
    if a == b:
        return None
    try:
        da, db = json.loads(a), json.loads(b)
    except json.JSONDecodeError as exc:
        return f"not JSON ({exc}): {a[:120]!r} vs {b[:120]!r}"
    d = first_json_difference(da, db)
    if d:
        return d
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"same data, bytes differ at offset {i}: {a[max(0, i - 40):i + 40]!r} vs {b[max(0, i - 40):i + 40]!r}"


def text_difference(a: str, b: str) -> str | None:
    """The first line where two text reports differ, or None if identical."""
    if a == b:
        return None
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb, strict=False), 1):
        if x != y:
            return f"line {i}: {x[:200]!r} != {y[:200]!r}"
    return f"{len(la)} lines != {len(lb)} lines (or line endings differ)"


# -- running the CLI ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Out:
    """What one check printed and how it exited."""

    stdout: str
    code: int
    stderr: str


class Checker:
    """``python -m eagle3_lint check ROOT`` in its own process: cached (a persistent ``--cache-dir``) or fresh
    (``--no-cache``), JSON or the default text; in a private working directory and cache home, so no project
    configuration and no user cache takes part."""

    def __init__(self, root: Path, work: Path) -> None:
        self.root, self.cache, self.cwd = root, work / "cache", work / "cwd"
        self.spent = {"fresh": 0.0, "cached": 0.0}  # wall seconds of the fresh and of the cached runs
        self.cwd.mkdir(parents=True)
        self.env = {k: v for k, v in os.environ.items() if k != "CI"}
        self.env["XDG_CACHE_HOME"] = str(work / "xdg")

    def start(self, cached: bool, as_json: bool) -> subprocess.Popen[str]:
        args = ["check", str(self.root), *(["--cache-dir", str(self.cache)] if cached else ["--no-cache"]),
                *(["--output-format", "json"] if as_json else [])]
        # The two fresh runs go side by side on a 2-core machine: each parses serially, which costs less CPU
        # than two pools of workers fighting for the same cores (the result is the same either way).
        env = self.env if cached else {**self.env, "EAGLE3_LINT_JOBS": "1"}
        return subprocess.Popen([sys.executable, "-m", "eagle3_lint", *args], cwd=self.cwd, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    @staticmethod
    def finish(p: subprocess.Popen[str]) -> Out:
        out, err = p.communicate(timeout=600)
        return Out(out, p.returncode, err)

    def fresh(self) -> tuple[Out, Out]:
        """JSON and text without any cache, both at once (they share nothing)."""
        t = time.monotonic()
        procs = self.start(False, True), self.start(False, False)
        out = self.finish(procs[0]), self.finish(procs[1])
        self.spent["fresh"] += time.monotonic() - t
        return out

    def cached(self, text_first: bool = False) -> tuple[Out, Out, Out]:
        """JSON and text with the cache, one after the other (the first meets the edit, the second reuses what
        the first stored; ``text_first`` swaps them), then JSON again: the replay of the stored report."""
        t = time.monotonic()
        if text_first:
            text = self.finish(self.start(True, False))
            js = self.finish(self.start(True, True))
        else:
            js = self.finish(self.start(True, True))
            text = self.finish(self.start(True, False))
        again = self.finish(self.start(True, True))
        self.spent["cached"] += time.monotonic() - t
        return js, text, again


# -- the sequence -------------------------------------------------------------------------------------------


def _model_files(root: Path, layout: Layout) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in (root / layout.models).rglob("*.py"))


def next_mutation(root: Path, layout: Layout, engine: Engine, rng: random.Random, queue: list[Kind],
                  tag: int) -> Mutation | None:
    """Apply the next kind of the queue (refilled with a shuffled round of every kind when empty) to a hub file
    or a random other model file (whichever the draw puts first, then the others, until one takes it), or the
    next kind if no file does; None if no kind applies anywhere."""
    for _ in range(len(mutate.KINDS[engine])):
        if not queue:
            queue.extend(rng.sample(mutate.KINDS[engine], len(mutate.KINDS[engine])))
        kind = queue.pop(0)
        files = _model_files(root, layout)
        hot = [f for f in layout.hot if f in files]
        others = [f for f in files if f not in layout.hot]
        rng.shuffle(hot)
        rng.shuffle(others)
        bias = DELETE_HOT_BIAS if kind is Kind.DELETE_FILE else HOT_FILE_BIAS
        order = hot + others if rng.random() < bias else others + hot
        for rel in order:
            got = mutate.apply(root, rel, kind, rng, tag)
            if got is not None:
                return got
    return None


def _copy_release(src: Path, dest: Path, package: str) -> None:
    shutil.copytree(src / package, dest / package, ignore=shutil.ignore_patterns("__pycache__"))
    for d in src.glob(f"{package}-*.dist-info"):
        shutil.copytree(d, dest / d.name)
    # The release cache is read-only: the copy must be writable to be mutated.
    for p in dest.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)


def run_sequence(src: Path, engine: Engine, tmp_path: Path) -> None:
    layout = LAYOUTS[engine]
    n = _env_int(MUTATIONS_ENV, len(mutate.KINDS[engine]))
    seed = _env_int(SEED_ENV, DEFAULT_SEED)
    rng = random.Random(seed)
    root = tmp_path / "tree"
    _copy_release(src, root, layout.package)
    check = Checker(root, tmp_path)
    done: list[Mutation] = []
    changed: set[int] = set()  # the steps (1-based) whose mutation changed the report

    def where() -> str:
        steps = "\n".join(f"  {i}. {'*' if i in changed else ' '} {m}" for i, m in enumerate(done, 1)) \
            or "  (none: the primed tree)"
        return (f"\n{engine.value} {src.name}, {SEED_ENV}={seed} {MUTATIONS_ENV}={n}; mutations so far "
                f"(* changed the report):\n{steps}")

    def compare(edited_at: float) -> tuple[Out, Out, Out]:
        fresh = check.fresh()
        # The cached runs find the edit by its stat, as for a user's tree: wait out the racy window.
        time.sleep(max(0.0, edited_at + RACY_S - time.monotonic()))
        # Which format meets the edit first alternates, so both are checked right after an edit.
        cached = check.cached(text_first=len(done) % 2 == 0)
        for name, got, want, diff in (("JSON", cached[0], fresh[0], json_difference),
                                      ("text", cached[1], fresh[1], text_difference),
                                      ("replayed JSON", cached[2], fresh[0], json_difference)):
            for run, out in (("cached", got), ("fresh", want)):
                assert out.code in (0, 1), f"{name}, {run}: exit {out.code}:\n{out.stderr[-3000:]}{where()}"
            d = diff(got.stdout, want.stdout)
            if d is not None:  # both outputs kept beside the tree, for a closer look
                for run, out in (("cached", got), ("fresh", want)):
                    (tmp_path / f"step{len(done)}-{name.lower().replace(' ', '-')}.{run}").write_text(
                        out.stdout, encoding="utf-8")
            assert d is None, (f"{name} of the cached run differs from --no-cache (cached vs fresh): {d}\n"
                               f"(outputs in {tmp_path}/step{len(done)}-*){where()}")
            assert got.code == want.code, f"{name}: exit {got.code} cached, {want.code} fresh{where()}"
        return cached

    # Prime the cache (a cold run: whether it equals a fresh one is the warm/cold equality other tests check).
    # The copy is new, so its files' stats are trusted only from the second run on, as in a fresh checkout.
    prev = check.cached()
    assert all(o.code in (0, 1) for o in prev), prev[0].stderr[-3000:] + prev[1].stderr[-3000:] + where()
    queue: list[Kind] = []
    for tag in range(1, n + 1):
        m = next_mutation(root, layout, engine, rng, queue, tag)
        assert m is not None, f"no mutation applies any more{where()}"
        done.append(m)
        edited_at = time.monotonic()
        cur = compare(edited_at)
        if cur[0].stdout != prev[0].stdout:
            changed.add(len(done))
        if m.kind in mutate.NO_OP_KINDS:
            d = json_difference(prev[0].stdout, cur[0].stdout) or text_difference(prev[1].stdout, cur[1].stdout)
            assert d is None, f"{m.kind.value} changed the report (before vs after): {d}{where()}"
        prev = cur

    kinds = Counter(m.kind for m in done)
    print(f"\n{engine.value} seed {seed}: {n} mutations, {len(changed)} changed the report; "
          f"fresh runs {check.spent['fresh']:.0f} s, cached runs {check.spent['cached']:.0f} s; "
          + ", ".join(f"{k.value} {c}" for k, c in sorted(kinds.items(), key=lambda kc: kc[0].value)) + where())
    # Edits the analysis reads must show: a cache that ignored edits would print the primed report throughout.
    meaningful = [m for m in done if m.kind not in mutate.NO_OP_KINDS | {Kind.ADD_SUBCLASS_FILE}]
    assert len(changed) >= max(1, len(meaningful) // 3), \
        f"only {len(changed)} of {len(done)} mutations changed the report{where()}"
    if n >= len(mutate.KINDS[engine]):
        missing = set(mutate.KINDS[engine]) - set(kinds)
        assert not missing, f"kinds never applied: {sorted(k.value for k in missing)}{where()}"


@pytest.mark.real
@pytest.mark.slow
def test_cached_checks_equal_fresh_checks_under_mutations_vllm(real_trees: Any, tmp_path: Path) -> None:
    run_sequence(real_trees.get("0.33.0"), Engine.VLLM, tmp_path)


@pytest.mark.real
@pytest.mark.slow
def test_cached_checks_equal_fresh_checks_under_mutations_sglang(tmp_path: Path) -> None:
    from tests.sglang.conftest import SglangTrees

    run_sequence(SglangTrees().get("0.5.23"), Engine.SGLANG, tmp_path)
