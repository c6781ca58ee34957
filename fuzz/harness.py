"""Mutation fuzzing of the whole analysis pipeline on real vLLM releases.

One input = one real release with one file replaced by a mutated copy (or, for a few inputs, two
files). The mutations are the kinds of damage real forks and half-finished edits produce: lines
deleted, duplicated or swapped, identifiers renamed (one use or every use), class bases dropped,
indentation broken, the file truncated, random bytes or stray tokens inserted, markup, escape
sequences and newlines put into string literals (registry keys, error messages). The mutated files
are the model files *and* the files that drive derivation: ``registry.py``, ``interfaces.py``, the
GPU runner and ``config/speculative.py``.

Each input runs the full pipeline: facts, class graph, registry, contract, runner and gates,
verdicts, every rule with its fixes, the fix planner and diff, and every output format (JSON,
SARIF, GitHub, the text report, ``trace`` of the architectures the mutation touches). An input
fails if any exception escapes, if ``ctx.errors`` is not empty, or if a fix turns a file that
parsed into one that does not.

Efficiency: the release is read into memory once (``MemoryTree``); facts of unchanged files, and
the contract and runner derivations when none of their input files is mutated, come from
in-memory memos keyed by content hash, exactly what the tool's own cache does on a warm run.
Whatever a mutation touches is computed afresh; registry, graph, verdicts and rules always run.

Used by ``fuzz/run.py`` (the long run, with ``random``), ``tests/test_fuzz.py`` (a short
hypothesis run in CI) and ``fuzz/atheris_target.py`` (coverage-guided, when atheris installs).
"""

from __future__ import annotations

import gc
import hashlib
import io
import json
import pickle
import random
import re
import signal
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from eagle3_lint import facts as facts_mod
from eagle3_lint import fixes
from eagle3_lint import store as store_mod
from eagle3_lint import trace as trace_mod
from eagle3_lint.analysis import Analysis, Options, analyze
from eagle3_lint.engines.vllm import contract as contract_mod
from eagle3_lint.engines.vllm import runner as runner_mod
from eagle3_lint.source import MAX_FILE_BYTES, SourceTree

DRIVERS = (
    "vllm/model_executor/models/registry.py",
    "vllm/model_executor/models/interfaces.py",
    "vllm/v1/worker/gpu_model_runner.py",
    "vllm/config/speculative.py",
)
# Files whose functions the restricted evaluator (minieval) runs when a drafter/target config is
# given: the PP layer split, the speculators converter, the runner's aux-id helpers, the drafter.
EVALUATED = (
    "vllm/distributed/utils.py",
    "vllm/transformers_utils/configs/speculators/algos.py",
    "vllm/transformers_utils/configs/speculators/base.py",
    "vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py",
    "vllm/model_executor/models/llama_eagle3.py",
)
# Model files whose shapes the rules care most about (wrappers, aux-state loops, factories); any
# other model file is picked too, at random.
FAVOURITES = ("llama.py", "qwen2.py", "deepseek_v2.py", "kimi_k25.py", "utils.py", "adapters.py",
              "llava.py", "qwen2_vl.py", "mllama4.py", "gpt_oss.py", "minicpm.py", "hunyuan_v1.py")

IDENT = re.compile(rb"\b[A-Za-z_][A-Za-z0-9_]*\b")
CLASS_LINE = re.compile(rb"^(\s*class\s+\w+\s*)\(([^)]*)\)(\s*:.*)$")
TOKENS = (b"(", b")", b"[", b"]", b":", b",", b"\\", b'"""', b"'", b"#", b"\t", b"\n", b"\r", b"\x00", b"\xff",
          b"\xef\xbb\xbf", b"if x:\n", b"else:\n", b"try:\n", b"class X(", b"def f(", b"import ", b"from . import *\n",
          b"**", b"lambda", b"yield", b"return", b"pass\n", b"...", b"@", b"=", b"global x\n")
NAME_POOL = (b"SupportsEagle3", b"SupportsEagle", b"SupportsPP", b"nn", b"Module", b"self", b"model",
             b"language_model", b"layers", b"aux_hidden_state_layers", b"forward", b"__init__", b"islice",
             b"enumerate", b"get_language_model", b"supports_eagle3", b"_VLLM_MODELS", b"object", b"x", b"None")


class BaseTree:
    """A release read into memory once: ``files[rel] -> bytes``."""

    def __init__(self, root: Path) -> None:
        from eagle3_lint.engines import dir_source

        src = dir_source(root)
        self.root = root
        self.py = src.py_files()
        self.other = src.other_files()
        self.files: dict[str, bytes] = {}
        for rel in [*self.py, *self.other]:
            with suppress(OSError):
                self.files[rel] = src.read_bytes(rel)
        models = [r for r in self.py if r.startswith("vllm/model_executor/models/") or r.startswith("vllm/models/")]
        self.models = models
        self.favourites = [r for r in models if r.rsplit("/", 1)[-1] in FAVOURITES]
        self.drivers = [r for r in (*DRIVERS, *EVALUATED) if r in self.files]


class MemoryTree(SourceTree):
    """``base`` with some files replaced; read-only like every tree."""

    def __init__(self, base: BaseTree, overlay: dict[str, bytes]) -> None:
        self.base = base
        self.overlay = overlay
        self.root = base.root  # the guard protects the real tree underneath
        self.root_label = f"{base.root}#fuzz"
        self.package = "vllm"  # the fuzzed bases are vLLM trees

    def py_files(self) -> list[str]:
        return self.base.py

    def other_files(self) -> list[str]:
        return self.base.other

    def read_bytes(self, rel: str) -> bytes:
        data = self.overlay.get(rel)
        if data is None:
            data = self.base.files.get(rel)
        if data is None:
            raise OSError(f"cannot read {rel}")
        if len(data) > MAX_FILE_BYTES:
            raise OSError(f"file too large to analyze ({len(data)} bytes): {rel}")
        return data


_MEMO: dict[tuple[str, bytes], bytes] = {}
_REAL_EXTRACT = facts_mod.extract


def _memo_extract(path: str, module: str, is_package: bool, data: bytes) -> facts_mod.ModuleFacts:
    key = (path, hashlib.sha1(data).digest())
    blob = _MEMO.get(key)
    if blob is not None:
        return pickle.loads(blob)  # a fresh copy: nothing downstream can alter the memo
    mf = _REAL_EXTRACT(path, module, is_package, data)
    if _MEMO_OPEN:
        _MEMO[key] = pickle.dumps(mf, protocol=pickle.HIGHEST_PROTOCOL)
    return mf


_MEMO_OPEN = False


_DERIVED: dict[tuple[object, ...], bytes] = {}
_MEMOIZED_BASES: set[int] = set()


def _memo_derive(
    name: str, real: Callable[..., object], inputs: Callable[[SourceTree], set[str]]
) -> Callable[..., object]:
    """``real(src, *args)`` memoised under ``args`` and the overlaid files among its inputs.

    Valid for the same reason as the tool's own ``store.memo``: the contract is read from
    interfaces.py only and the runner from the non-model files only, so a mutation elsewhere
    cannot change them. A mutation of one of their inputs always recomputes."""

    def wrapper(src: SourceTree, *args: object) -> object:
        overlay = getattr(src, "overlay", None)
        if overlay is None:
            return real(src, *args)
        ins = inputs(src)
        digests = sorted((rel, hashlib.sha1(d).digest()) for rel, d in overlay.items() if rel in ins)
        key = (name, repr(args), tuple(digests))
        blob = _DERIVED.get(key)
        if blob is not None:
            return pickle.loads(blob)
        value = real(src, *args)
        if len(_DERIVED) > 64:
            _DERIVED.clear()
        _DERIVED[key] = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        return value

    return wrapper


_RUNNER_INPUTS: dict[int, set[str]] = {}


def _runner_inputs(src: SourceTree) -> set[str]:
    base = getattr(src, "base", None)
    k = id(base)
    if k not in _RUNNER_INPUTS:
        _RUNNER_INPUTS[k] = set(runner_mod.input_files(src))
    return _RUNNER_INPUTS[k]


def _contract_inputs(src: SourceTree) -> set[str]:
    rel = src.module_path(contract_mod.INTERFACES_MODULE)
    return {rel} if rel else set()


@contextmanager
def memoized_facts(base: BaseTree) -> Iterator[None]:
    """Within the block, unchanged inputs come from memos (filled by one clean run) like a warm run."""
    global _MEMO_OPEN
    # The store imports facts.extract when it extracts, so patching the facts module reaches it.
    saved = (facts_mod.extract, runner_mod.derive, contract_mod.derive)
    facts_mod.extract = _memo_extract
    runner_mod.derive = _memo_derive("runner", saved[1], _runner_inputs)  # type: ignore[assignment]
    contract_mod.derive = _memo_derive("contract", saved[2], _contract_inputs)  # type: ignore[assignment]
    try:
        if id(base) not in _MEMOIZED_BASES:
            _MEMO_OPEN = True
            try:
                analyze(MemoryTree(base, {}), Options())
            finally:
                _MEMO_OPEN = False
            _MEMOIZED_BASES.add(id(base))
        yield
    finally:
        facts_mod.extract, runner_mod.derive, contract_mod.derive = saved


# -- mutations -----------------------------------------------------------------------------------------


@dataclass
class Mutation:
    kind: str
    detail: str


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [b""]


def mutate(data: bytes, rng: random.Random, n_ops: int) -> tuple[bytes, list[Mutation]]:
    """Apply ``n_ops`` random mutations to ``data``."""
    done: list[Mutation] = []
    for _ in range(n_ops):
        op = rng.choice(OPS)
        data, detail = op(data, rng)
        done.append(Mutation(op.__name__.lstrip("_"), detail))
    return data, done


def _delete_lines(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    ls = _lines(data)
    i = rng.randrange(len(ls))
    n = rng.choice((1, 1, 1, 2, 3, 5, 20))
    del ls[i:i + n]
    return b"".join(ls), f"lines {i + 1}..{i + n}"


def _duplicate_lines(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    ls = _lines(data)
    i = rng.randrange(len(ls))
    n = rng.choice((1, 1, 2, 4, 12))
    ls[i:i] = ls[i:i + n]
    return b"".join(ls), f"lines {i + 1}..{i + n}"


def _swap_lines(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    ls = _lines(data)
    i, j = rng.randrange(len(ls)), rng.randrange(len(ls))
    ls[i], ls[j] = ls[j], ls[i]
    return b"".join(ls), f"lines {i + 1}<->{j + 1}"


def _rename_identifier(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    ms = list(IDENT.finditer(data))
    if not ms:
        return data, "none"
    m = rng.choice(ms)
    old = m.group(0)
    new = rng.choice((*NAME_POOL, old + b"_x", old[:-1] or b"y", rng.choice(ms).group(0)))
    if rng.random() < 0.5:  # every use of the name
        out = re.sub(rb"\b" + re.escape(old) + rb"\b", new.replace(b"\\", b"\\\\"), data)
        return out, f"all {old.decode('latin-1')} -> {new.decode('latin-1')}"
    return data[:m.start()] + new + data[m.end():], f"one {old.decode('latin-1')} -> {new.decode('latin-1')}"


def _drop_bases(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    ls = _lines(data)
    cands = [i for i, ln in enumerate(ls) if CLASS_LINE.match(ln.rstrip(b"\r\n"))]
    if not cands:
        return data, "no class"
    i = rng.choice(cands)
    m = CLASS_LINE.match(ls[i].rstrip(b"\r\n"))
    assert m is not None
    end = ls[i][len(ls[i].rstrip(b"\r\n")):]
    bases = [b.strip() for b in m.group(2).split(b",") if b.strip()]
    if bases and rng.random() < 0.6:
        bases.pop(rng.randrange(len(bases)))
        ls[i] = m.group(1) + b"(" + b", ".join(bases) + b")" + m.group(3) + end
        return b"".join(ls), f"line {i + 1}: one base"
    ls[i] = m.group(1) + m.group(3) + end
    return b"".join(ls), f"line {i + 1}: all bases"


def _break_indentation(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    ls = _lines(data)
    i = rng.randrange(len(ls))
    how = rng.choice(("dedent", "indent", "tab", "strip"))
    if how == "dedent":
        ls[i] = ls[i][4:] if ls[i].startswith(b"    ") else ls[i].lstrip(b" ")
    elif how == "indent":
        ls[i] = b" " * rng.choice((1, 2, 4, 8)) + ls[i]
    elif how == "tab":
        ls[i] = b"\t" + ls[i].lstrip(b" ")
    else:
        for k in range(i, min(len(ls), i + rng.randrange(1, 30))):
            ls[k] = ls[k].lstrip(b" \t")
    return b"".join(ls), f"line {i + 1}: {how}"


def _insert_bytes(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    at = rng.randrange(len(data) + 1)
    random_bytes = rng.random() < 0.5
    blob = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9))) if random_bytes else rng.choice(TOKENS)
    return data[:at] + blob + data[at:], f"at {at}: {blob!r}"


def _truncate(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    at = rng.randrange(len(data) + 1)
    return data[:at], f"at {at}"


STRING = re.compile(rb"""(["'])([A-Za-z0-9_.]*)\1""")
# What a hostile or careless tree can put in a string literal that reports print.
# Raw bytes and their source escapes (``\\x1b`` in the literal gives the same string at run time).
POISON = (b"[/]", b"[bold red]", b"[link=http://x]", b"\x1b[31m", b"\\x1b[31m", b"\x1b]0;t\x07", "\u202e".encode(),
          b"\\u202e", b"\\n", b"\\r\\n", b"%0A::error::x", b"|", b"::", b"${{ x }}", b"\\x00", b"</script>", b"\\\\",
          b"\t", b"\n")


def _poison_string(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    ms = list(STRING.finditer(data))
    if not ms:
        return data, "no string"
    m = rng.choice(ms)
    at = rng.randrange(m.start(2), m.end(2) + 1)
    blob = rng.choice(POISON)
    return data[:at] + blob + data[at:], f"at {at}: {blob!r}"


# Weighted by repetition. Structure-keeping damage (renames, dropped bases, whole-line edits) is
# favoured over byte noise, so that about half the inputs still parse and reach the deep paths.
OPS: tuple[Callable[[bytes, random.Random], tuple[bytes, str]], ...] = (
    *(_delete_lines,) * 3, *(_duplicate_lines,) * 2, _swap_lines, *(_rename_identifier,) * 5,
    *(_drop_bases,) * 4, _break_indentation, _insert_bytes, _truncate, *(_poison_string,) * 2,
)


# -- one input -------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    ok: bool
    problem: str = ""
    detail: str = ""
    findings: int = 0
    parsed: bool = True


@dataclass
class Case:
    files: dict[str, bytes]
    mutations: dict[str, list[Mutation]] = field(default_factory=dict)

    def describe(self) -> str:
        return "; ".join(f"{rel}: " + ", ".join(f"{m.kind}({m.detail})" for m in ms)
                         for rel, ms in self.mutations.items())


def pick_case(base: BaseTree, rng: random.Random) -> Case:
    """A random input: one file (sometimes two), 1 to 4 mutations each."""
    files: dict[str, bytes] = {}
    muts: dict[str, list[Mutation]] = {}
    for _ in range(2 if rng.random() < 0.1 else 1):
        r = rng.random()
        pool = base.drivers if r < 0.3 else base.favourites if r < 0.6 else base.models
        rel = rng.choice(pool or base.models)
        data, done = mutate(files.get(rel, base.files[rel]), rng, rng.choice((1, 1, 1, 2, 2, 3, 4)))
        files[rel] = data
        muts.setdefault(rel, []).extend(done)
    return Case(files, muts)


def _parses(data: bytes) -> bool:
    try:
        compile(facts_mod.decode_source(data), "<fuzz>", "exec", dont_inherit=True, flags=0x400)  # PyCF_ONLY_AST
        return True
    except Exception:  # noqa: BLE001 - any failure means "does not parse"
        return False


@dataclass
class Configs:
    """A target model's HF config and a drafter config (from the sample trees, possibly damaged)."""

    target: dict
    draft: dict
    source: str
    pipeline_parallel: int | None = None
    pp_partition: str | None = None

    def options(self, targets: tuple[str, ...]) -> Options:
        return Options(targets=targets, target_config=self.target, target_config_path=f"{self.source}/target.json",
                       draft_config=self.draft, draft_config_path=f"{self.source}/draft.json",
                       pipeline_parallel=self.pipeline_parallel, pp_partition=self.pp_partition)


def config_pool() -> list[tuple[str, dict, dict]]:
    """(case, target config, drafter config) of every sample case that has both."""
    root = Path(__file__).resolve().parent.parent / "sample_trees"
    out = []
    for t in sorted(root.glob("*/*/configs/target.json")):
        d = t.with_name("draft.json")
        if d.exists():
            try:
                out.append((f"{t.parent.parent.parent.name}/{t.parent.parent.name}", json.loads(t.read_text()),
                            json.loads(d.read_text())))
            except (OSError, ValueError):
                continue
    return out


_JUNK: tuple[object, ...] = (None, True, -1, 0, 1, 2**70, 1e308, float("nan"), "", "x", [], [1, 2, 3], [[1]], {},
                            {"a": 1}, "[/]\x1b[31m")


def configs_for(base: BaseTree, rng: random.Random, targets: tuple[str, ...]) -> Configs | None:
    """Some inputs also get a target and drafter config, so EGL007, the PP split and the evaluator
    run over the (mutated) tree; the target is pointed at a registered architecture, and a few
    configs get one value replaced by junk of another type (configs come from the hub, not us)."""
    pool = config_pool()
    if not pool or rng.random() < 0.65:
        return None
    name, tcfg, dcfg = rng.choice(pool)
    tcfg, dcfg = json.loads(json.dumps(tcfg)), json.loads(json.dumps(dcfg))
    if targets:
        tcfg["architectures"] = [targets[0]]
    for cfg in (tcfg, dcfg):
        if rng.random() < 0.3 and cfg:
            key = rng.choice(sorted(cfg))
            cfg[key] = rng.choice(_JUNK)
    return Configs(tcfg, dcfg, name, rng.choice((None, None, 2, 3, 4)), rng.choice((None, None, None, "8,24", "x,1")))


class InputTimeout(BaseException):
    """One input ran longer than ``INPUT_SECONDS``: a hang is a failure like a crash.

    A BaseException, so the pipeline's own ``except Exception`` (one rule's error must not sink the
    others) cannot swallow it and let the next caller of the same loop hang again."""


# A 0.33.0 input takes about 5 CPU-seconds; this leaves room for a loaded machine.
INPUT_SECONDS = 300


def _alarm(signum: int, frame: object) -> None:
    raise InputTimeout(f"input still running after {INPUT_SECONDS} s")


def run_case(base: BaseTree, case: Case, targets: tuple[str, ...] = (), configs: Configs | None = None) -> Outcome:
    """The full pipeline on ``base`` with ``case.files`` overlaid, for at most ``INPUT_SECONDS``
    (SIGALRM: the main thread of a POSIX process, as in fuzz/run.py's workers and pytest)."""
    tree = MemoryTree(base, case.files)
    timed = hasattr(signal, "SIGALRM")
    old = signal.signal(signal.SIGALRM, _alarm) if timed else None
    if timed:
        signal.alarm(INPUT_SECONDS)
    try:
        return _run_case(tree, base, case, targets, configs)
    except InputTimeout as exc:
        return Outcome(False, f"timeout: {exc}", traceback.format_exc())
    finally:
        if timed:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
        # store.no_gc freezes what an analysis leaves alive and, at the next analysis, thaws it and
        # runs a full collection: a heap walk per input. Thaw now and collect every few inputs.
        gc.unfreeze()
        store_mod._FROZE = False  # noqa: SLF001 - a no-op if the store changes
        _RUNS[0] += 1
        if _RUNS[0] % 8 == 0:
            gc.collect()  # an analysis leaves ~25 MB in reference cycles; one collection per 8 inputs


_RUNS = [0]


def _run_case(tree: MemoryTree, base: BaseTree, case: Case, targets: tuple[str, ...],
              configs: Configs | None) -> Outcome:
    try:
        ctx: Analysis = analyze(tree, configs.options(targets) if configs else Options(targets=targets))
        plan = fixes.plan(ctx.source, ctx.findings, True)
        fixes.unified_diff(plan)
        shown = render_all(ctx, targets, case)
    except Exception as exc:  # noqa: BLE001 - this is what the fuzzer looks for
        return Outcome(False, f"exception {type(exc).__name__}: {exc}"[:300], traceback.format_exc())
    if ctx.errors:
        e = ctx.errors[0]
        return Outcome(False, f"internal error in {e.where}: {e.message}"[:300], e.traceback)
    # A non-terminal Console emits no escape codes of its own: any in the output came from the tree.
    raw = sorted({c for c in shown if c in "\x1b\x07\x00\u202e\u2066"})
    if raw:
        return Outcome(False, f"raw control characters {raw!r} in printed output", shown[-4000:])
    for rel, (old, new, _sha) in plan.files.items():
        # Fixes of untouched files are the fix-safety suite's business; here, the mutated ones.
        if rel in case.files and _parses(old.encode("utf-8")) and not _parses(new.encode("utf-8")):
            return Outcome(False, f"fix breaks syntax of {rel}", fixes.unified_diff(plan)[:4000])
    parsed = all(_parses(d) for d in case.files.values())
    return Outcome(True, findings=len(ctx.findings), parsed=parsed)


def render_all(ctx: Analysis, targets: tuple[str, ...], case: Case) -> str:
    """Every output a user can ask for: JSON, SARIF, GitHub annotations, the text report, and the
    trace of the targeted architectures and of those defined in the mutated files."""
    from eagle3_lint import config as config_mod
    from eagle3_lint import outcome as outcome_mod
    from eagle3_lint.report import github, sarif, text

    settings = config_mod.resolve(no_config=True, archs=targets)
    out = outcome_mod.finalize(ctx, settings)
    json.dumps(outcome_mod.json_report(ctx, out))
    json.dumps(sarif.build_sarif(ctx, out))
    gh = github.render([out.paths.finding(f) for f in out.findings])
    buf = io.StringIO()
    console = Console(file=buf, width=140)
    text.render_check(out.paths.context(ctx), console, [out.paths.finding(f) for f in out.findings], True)
    mods = {tree_module(rel) for rel in case.files}
    traced = [a for a in ctx.verdicts if a in targets or ctx.verdicts[a].module in mods][:4]
    for arch in traced:
        node = trace_mod.build(ctx, arch)
        console.print(text.trace_tree(node))
        json.dumps(trace_mod.to_json(node))
        trace_mod.to_dot(node)
        trace_mod.to_mermaid(node)
    if ctx.options.draft_config is not None or ctx.options.target_config is not None:
        from eagle3_lint.report import draft

        json.dumps(draft.report_json(ctx))
        draft.render_text(ctx, console)
    return gh + buf.getvalue()


def tree_module(rel: str) -> str:
    return SourceTree.path_module(rel)


def targets_for(base: BaseTree, rng: random.Random) -> tuple[str, ...]:
    """Target a few architectures some of the time, so architecture-scoped rules run too."""
    if rng.random() < 0.5:
        return ()
    names = sorted(set(re.findall(rb'"(\w+For\w+)"\s*:', base.files.get(DRIVERS[0], b""))))
    return tuple(n.decode() for n in rng.sample(names, min(len(names), 3))) if names else ()
