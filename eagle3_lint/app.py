"""What a command does, between argument parsing (cli.py) and rendering (report/).

Kept apart from click so tests and other front ends (pre-commit, the matrix) call the same code.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle3_lint import engines, releases
from eagle3_lint import target as target_mod
from eagle3_lint.checkpoint import load_json_file
from eagle3_lint.config import Settings
from eagle3_lint.errors import UsageError
from eagle3_lint.model import Finding, Severity
from eagle3_lint.reportcache import Replay
from eagle3_lint.source import SourceTree
from eagle3_lint.store import FactStore, no_gc

if TYPE_CHECKING:
    # The analysis is imported when one runs: a replayed check (report_once) never needs it.
    from eagle3_lint.stages import Analysis
    from eagle3_lint.weights import Checkpoint


# --platform's choices (facts.PLATFORMS adds vLLM's "unspecified" fallback, which the runtime oracle runs on).
CLI_PLATFORMS = ("cuda", "rocm", "cpu", "xpu")


@dataclass
class CheckRequest:
    target: str | None = None
    archs: tuple[str, ...] = ()
    cache_dir: str | None = None
    no_cache: bool = False
    target_config: str | None = None
    draft_config: str | None = None
    debug: bool = False
    select: Callable[[str], bool] | None = None
    progress: Callable[[str], None] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    plugins: tuple[str, ...] = ()  # --plugin PATH_OR_DIST (plugins.py)
    engine: str | None = None  # --engine: which engine's tree, when the target holds more than one
    pipeline_parallel: int | None = None
    pp_partition: str | None = None
    runner: str = "auto"  # --runner auto|v1|v2
    platform: str = "cuda"  # --platform cuda|rocm|cpu|xpu (facts.PLATFORMS)
    drafter_convention: str | None = None  # --drafter-convention vllm|sglang
    speculative_config: str | None = None  # --speculative-config JSON, as `vllm serve` takes it
    method: str | None = None  # --method: the speculative method (default: the engine's EAGLE-3), engine.spec_methods
    tensor_parallel: int | None = None  # --tensor-parallel-size: recorded, it does not change what is captured


def load_weights(path: str | None) -> Checkpoint | None:
    """The drafter checkpoint's tensor shapes when ``--draft-config`` names a folder holding safetensors files (their
    headers only: ``weights.py``); a header that breaks the format is a one-line error."""
    from eagle3_lint import weights as weights_mod

    if not path or not os.path.isdir(path) or not weights_mod.has_weights(path):
        return None
    try:
        return weights_mod.read_checkpoint(path)
    except weights_mod.WeightsError as exc:
        raise UsageError(f"--draft-config {path}: {exc}") from None


def open_target(req: CheckRequest) -> SourceTree:
    return target_mod.resolve(req.target, req.cache_dir, req.progress, req.engine)


def cache_dir(req: CheckRequest) -> Path | None:
    return None if req.no_cache else releases.cache_root(req.cache_dir)


def run_check(req: CheckRequest, source: SourceTree | None = None, store: FactStore | None = None,
              keep: bool = True) -> Analysis:
    """Analyze ``req``'s target (or ``source``, already opened, with ``store`` already holding its hashes)."""
    from eagle3_lint.analysis import Options, analyze

    if source is None:
        source = open_target(req)
    engine = engines.for_package(source.package)
    if req.plugins:
        source = engine.with_plugins(source, list(req.plugins))
    if not source.py_files():
        raise UsageError(f"not a {engine.display} tree: no {engine.package}/*.py files under {source.root_label}")
    registry_module = engine.registry_module
    if source.module_path(registry_module) is None and not (req.target_config or req.draft_config or req.plugins):
        # Without the registry no architecture can be judged, and without a model config there is no
        # gate to check either: a silent "0 of 0, exit 0" would pass CI.
        raise UsageError(f"no model registry in {source.root_label}: {registry_module.replace('.', '/')}.py is missing")
    tcfg = load_json_file(req.target_config, "--target-config") if req.target_config else None
    dcfg = load_json_file(req.draft_config, "--draft-config") if req.draft_config else None
    draft_path = req.draft_config
    weights = load_weights(req.draft_config)
    method = req.method
    if req.speculative_config is not None:
        if dcfg is not None:
            raise UsageError("give the drafter either with --draft-config or in --speculative-config, not both")
        dcfg, draft_path, spec_method = speculative_draft(req.speculative_config, engine.display, engine.spec_methods)
        weights = load_weights(_spec_model(req.speculative_config))  # a model folder's checkpoint, as --draft-config's
        if spec_method is not None and req.method is not None and spec_method != req.method:
            raise UsageError(f"--method {req.method!r} and --speculative-config method {spec_method!r} disagree")
        method = method or spec_method
    if method is not None:
        method = engine.method_spelling(source, method)
        check_method(method, "--method", engine.display, engine.spec_methods)
        refused = engine.method_refusal(source, method)
        if refused is not None:
            raise UsageError(refused)
    # Every config handed in is checked against the types the tool reads before anything reads it (userconfig.py).
    from eagle3_lint import userconfig

    if tcfg is not None:
        userconfig.validate_target(tcfg, f"--target-config {req.target_config}")
    if dcfg is not None:
        userconfig.validate_drafter(dcfg, f"--draft-config {draft_path}" if req.speculative_config is None
                                    else f"--speculative-config (drafter {draft_path})")
    archs = tuple(req.archs)
    if not archs and tcfg and isinstance(tcfg.get("architectures"), list):
        archs = tuple(str(a) for a in tcfg["architectures"])
    opts = Options(targets=archs, cache_dir=cache_dir(req), target_config=tcfg, target_config_path=req.target_config,
                   draft_config=dcfg, draft_config_path=draft_path, debug=req.debug, progress=req.progress,
                   pipeline_parallel=req.pipeline_parallel, pp_partition=req.pp_partition, runner=req.runner,
                   platform=req.platform,
                   tensor_parallel=req.tensor_parallel, drafter_convention=req.drafter_convention,
                   draft_weights=weights, method=method)
    an = analyze(source, opts, req.select, store, keep)
    # A broken registry, or (where the registry is read from the model files) broken model files, are EGL000
    # findings the report shows: an empty registry is then their consequence, not a tree the tool misread.
    from eagle3_lint.rules import Role, with_role

    broken = any(f.rule == with_role(Role.UNPARSABLE).id for f in an.findings)
    if an.registry.path and not an.registry.entries and not broken:
        raise UsageError(
            f"no architectures could be read from {an.registry.path} (no *_MODELS dict the tool understands)"
        )
    # A target no registry entry names but a broken model file does is not a typo: its entry could not be read,
    # and the serving verdict says so (semantic.broken_on_path).
    from eagle3_lint import semantic as sem

    unknown = [a for a in archs if a not in an.verdicts and not sem.broken_on_path(an.model, a)]
    if unknown:
        hints = []
        for a in unknown:
            close = suggest_arch(a, an)
            hints.append(f"{a}" + (f" (did you mean {' or '.join(close)}?)" if close else ""))
        raise UsageError(f"unknown architecture for {engine.display} {an.version}: {', '.join(hints)}")
    return an


# Keys of vLLM's SpeculativeConfig that are not the drafter's own config (``vllm serve --speculative-config``).
_SPEC_KEYS = {"method", "model", "num_speculative_tokens", "draft_tensor_parallel_size", "quantization", "revision",
              "code_revision", "max_model_len", "disable_by_batch_size", "prompt_lookup_max", "prompt_lookup_min",
              "speculative_token_tree", "parallel_drafting", "enforce_eager", "disable_padded_drafter_batch"}


def check_method(method: str, what: str, display: str, methods: tuple[str, ...]) -> None:
    if method not in methods:
        raise UsageError(f"{what} {method!r}: eagle3-lint checks {display}'s methods {', '.join(methods)}")


def speculative_draft(text: str, display: str = "", methods: tuple[str, ...] = ()
                      ) -> tuple[dict[str, Any], str, str | None]:
    """The drafter config a ``--speculative-config`` JSON names, with its overrides merged (and where it came from),
    and its ``method`` (None: not given; which methods the engine checks is the engine's, ``run_check``).

    ``model`` must be a local folder or config.json: nothing is downloaded. ``hf_overrides`` (a dict) and any key
    that is not one of SpeculativeConfig's own (``eagle_aux_hidden_state_layer_ids``) override the drafter config.
    """
    try:
        spec = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:  # nested too deep for the decoder: as jsonfile.read_json
        raise UsageError(f"--speculative-config is not JSON: {exc}") from None
    if not isinstance(spec, dict):
        raise UsageError("--speculative-config must be a JSON object")
    from eagle3_lint import userconfig

    userconfig.validate_speculative(spec, "--speculative-config")
    method = spec.get("method")
    if method is not None and not isinstance(method, str):
        raise UsageError(f"--speculative-config method must be a string, not {method!r}")
    if method is not None and methods:
        check_method(method, "--speculative-config method", display, methods)
    model = spec.get("model")
    if not isinstance(model, str) or not model:
        raise UsageError('--speculative-config needs "model": the drafter\'s local folder or config.json')
    if not os.path.exists(model):
        raise UsageError(f"--speculative-config model {model!r} is not a local folder or file (nothing is downloaded; "
                         "point it at a local snapshot of the drafter)")
    cfg = load_json_file(model, "--speculative-config model")
    overrides = spec.get("hf_overrides")
    if overrides is not None and not isinstance(overrides, dict):
        raise UsageError("--speculative-config hf_overrides must be a JSON object")
    cfg = {**cfg, **{k: v for k, v in spec.items() if k not in _SPEC_KEYS and k != "hf_overrides"}, **(overrides or {})}
    path = os.path.join(model, "config.json") if os.path.isdir(model) else model
    return cfg, path, method


def _config_file(path: str | None) -> str | None:
    """The config.json a --*-config path means (a model folder holds one), for the report-cache key."""
    return os.path.join(path, "config.json") if path and os.path.isdir(path) else path


def _spec_model(text: str | None) -> str | None:
    try:
        model = json.loads(text).get("model") if text else None
    except (json.JSONDecodeError, RecursionError, AttributeError):
        return None
    return model if isinstance(model, str) else None


def _norm(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


def suggest_arch(name: str, an: Analysis) -> list[str]:
    """Close registered architectures for a name people type: a class-name typo, a model_type
    (``deepseek_v3``), an HF repo id (``moonshotai/Kimi-K2.5``) or a case/underscore variant."""
    archs = sorted(an.verdicts)
    key = _norm(name.rsplit("/", 1)[-1])
    by_norm = {_norm(a): a for a in archs}
    if key in by_norm:
        return [by_norm[key]]
    close = difflib.get_close_matches(name, archs, n=2)
    if close or not key:
        return close
    # The module an architecture lives in is its model_type by convention (``kimi_k25`` -> kimi_k25.py). An HF
    # repo name adds sizes and variants (``Llama-3.1-8B-Instruct``): drop those, then shorten from the end.
    modules = {a: _norm(an.registry.entries[a].module.rsplit(".", 1)[-1]) for a in archs}
    tokens = [t for t in re.split(r"[-_. ]", name.rsplit("/", 1)[-1].lower())
              if t and not re.fullmatch(r"(a?\d+(\.\d+)?[bmk]|instruct|chat|base|hf|it|fp8|bf16|awq|gptq|\d{4})", t)]
    for n in range(len(tokens), 0, -1):
        cand = "".join(tokens[:n])
        hits = [a for a in archs if modules[a] == cand] or (
            [a for a in archs if _norm(a).startswith(cand)] if n == len(tokens) else []
        )
        if hits:
            return sorted(hits, key=lambda a: (not a.endswith(("ForCausalLM", "ForConditionalGeneration")), len(a)))[:2]
    return []


# The last analysis report_once ran stays alive: cli.entry ends the process without freeing it
# (freeing a check's objects one at a time was about a fifth of a one-edit re-check). One at most,
# so a process that runs many checks (tests, a sweep) holds no more than one.
_LIVE: list[object] = []


def report_once(req: CheckRequest, settings: Settings, render: Callable[[Analysis], Replay],
                rendering: tuple[object, ...], cacheable: bool = True) -> Replay:
    """``render(run_check(req))``, or the report an identical earlier request rendered (reportcache.py).

    ``rendering`` is everything about the output the request does not say (format, destination,
    console). A run with an internal error (exit 2) is never stored.

    The cyclic garbage collector is paused for the whole check (store.no_gc): the analysis and the
    report make almost no reference cycles (about a thousand objects in a check of vLLM 0.33.0), yet
    the collector's passes over the facts, the class graph and fixgen's syntax trees were about 5% of
    a one-edit re-check. What is unreachable is still freed by reference counting.
    """
    with no_gc():
        return _report_once(req, settings, render, rendering, cacheable)


def _report_once(req: CheckRequest, settings: Settings, render: Callable[[Analysis], Replay],
                 rendering: tuple[object, ...], cacheable: bool) -> Replay:
    if req.no_cache or not cacheable:
        return render(run_check(req))
    from eagle3_lint.baseline import in_ci
    from eagle3_lint.catalog import help_uri
    from eagle3_lint.reportcache import ReportCache, file_token
    from eagle3_lint.weights import headers_token

    source = open_target(req)
    store = FactStore(source, cache_dir(req))
    assert store.cache_dir is not None
    key = (
        rendering, settings, req.target, req.archs, req.pipeline_parallel, req.pp_partition,
        req.target_config, req.draft_config,  # as given: reports show these paths
        req.runner, req.platform, req.drafter_convention, req.speculative_config, req.tensor_parallel, req.method,
        file_token(_config_file(req.target_config)), file_token(_config_file(req.draft_config)),
        file_token(_config_file(_spec_model(req.speculative_config))), file_token(settings.baseline),
        # The checkpoint's tensor names and shapes, when the drafter's folder has weights.
        headers_token(req.draft_config or _spec_model(req.speculative_config)),
        # The environment reaches a report in two places: CI=true makes a stale baseline fail,
        # and EAGLE3_LINT_DOCS_URL moves the SARIF help links.
        in_ci(), help_uri("{id}"),
    )
    cache = ReportCache(store.cache_dir, key, source, store)
    # A damaged facts pack is rebuilt by a full run even if the report could be replayed.
    hit = None if store.rebuilt else cache.get()
    if hit is not None:
        store.save()  # keeps refreshed stat memos (a touched but unchanged file is not hashed again)
        return hit
    from eagle3_lint.analysis import keep_answers

    an = run_check(req, source, store, keep=False)
    _LIVE[:] = [an]
    result = render(an)
    keep_answers(an)  # after rendering: the report's own answers are kept too (outcome.json_text)
    if result.code != 2:
        cache.put(result)
    return result


def exit_code(findings: list[Finding], fail_on: str, errors: int) -> int:
    if errors:
        return 2
    level = Severity(fail_on).rank
    return 1 if any(f.severity.rank >= level for f in findings) else 0


def check_output(output: str | None) -> None:
    """``--output`` must name a file in a folder that exists: a typo in the folder is the user's mistake to see,
    not a tree of folders to create (checked before the analysis, and again when writing)."""
    if output is None or output == "-":
        return
    p = Path(output)
    if p.exists() and p.is_dir():
        raise UsageError(f"cannot write {output}: it is a folder")
    if not p.parent.is_dir():
        raise UsageError(f"cannot write {output}: folder {p.parent} does not exist")


def write_output(text: str, output: str | None) -> None:
    if output is None or output == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    p = Path(output)
    try:
        if p.exists() and not p.is_file():
            # /dev/null, a FIFO, a terminal: written through. A temp file renamed over it would replace the
            # device node with a regular file (``-o /dev/null`` did that to /dev/null).
            with open(p, "w", encoding="utf-8") as fh:
                fh.write(text)
            return
        check_output(output)
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, p)
    except OSError as exc:
        raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None
