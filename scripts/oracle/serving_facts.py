#!/usr/bin/env python3
"""vLLM's own answers to the questions behind the serving verdict, for real drafter/target configs.

Run this with the python of an oracle venv (see build_venv.py); it imports vLLM on purpose.
The analyzer never imports this file.

    <venv>/bin/python scripts/oracle/serving_facts.py --output tests/differential/oracle/serving-vllm-0.16.0.json
    <venv>/bin/python scripts/oracle/serving_facts.py --output out.json --checkpoints DIR

Every ``*.json`` in the checkpoints folder (default ``sample_trees/_checkpoints``) is a drafter when it
has ``eagle_config``, ``speculators_config`` or ``speculators_model_type``, an architecture whose name
contains ``Eagle``, or ``draft_vocab_size``; otherwise it is a target. Each file is copied alone as
``<tmp>/models/<stem>/config.json`` (a local model folder) and given to vLLM's own code. Nothing is skipped:
each answer is ``{"call", "ok", "value", "error"}``; ``ok`` is False when the call raised and then
``error`` holds ``ExcType: first line`` and ``value`` is null. What is called, exactly:

Drafters (``drafters[<file>]``)
  * ``hf_config``: ``vllm.transformers_utils.config.get_config(<dir>, trust_remote_code=False)``, the
    loader ``ModelConfig`` uses (a config with ``speculators_config`` and no ``model_type`` becomes a
    ``SpeculatorsConfig``, converted by vLLM).
  * ``speculators`` (speculators-format configs only, else null): ``SpeculatorsConfig.
    extract_transformers_pre_trained_config(config_dict)`` (the converted HF fields),
    ``SpeculatorsConfig.extract_vllm_speculative_config(config_dict)`` and
    ``maybe_override_with_speculators(<dir>, None, False)`` (what ``vllm serve <drafter>`` turns into).
  * ``eagle_config``: ``EAGLEConfig(hf_config, method="eagle3", model_type="eagle")``, the very call of
    ``SpeculativeConfig.__post_init__``; ``speculative_config_keeps_hf_config`` is that code's
    ``isinstance(hf_config, (EAGLEConfig, SpeculatorsConfig))`` test (True: the draft keeps ``hf_config``,
    no renaming). ``draft_hf_config`` says which of the two the runners then read.
  * ``draft_architectures[<arch>]`` for the architectures of that draft config: membership in
    ``ModelRegistry.models`` and ``registry._SPECULATIVE_DECODING_MODELS``, and
    ``ModelRegistry._try_load_model_cls(arch)`` (the class vLLM would build).
  * ``aux_ids.v1``: ``GPUModelRunner._get_eagle3_aux_layers_from_config(self)`` with ``self`` a stand-in
    carrying only ``speculative_config.draft_model_config.hf_config`` (the function reads nothing else).
    ``aux_ids.v2``: ``vllm.v1.worker.gpu.spec_decode.eagle.eagle3_utils.get_eagle3_aux_layers_from_config
    (spec)`` with ``spec`` the same stand-in chain (0.33.0; older releases record the ImportError).

Targets (``targets[<file>]``)
  * ``hf_config``: ``get_config`` as above, plus ``get_hf_text_config`` (the text config's model_type,
    num_hidden_layers, hidden_size).
  * ``model_config``: ``ModelConfig(model=<dir>)`` (real, offline; its registry inspection runs in vLLM's
    own subprocess, which gets the same torchvision stub through a ``sitecustomize`` on PYTHONPATH).
  * ``model_type_gate``: the real pydantic ``model_validator`` ``SpeculativeConfig._verify_args`` (reached
    through ``SpeculativeConfig.__pydantic_decorators__``), called on a real ``SpeculativeConfig(method=
    "ngram", num_speculative_tokens=3)`` copied and given ``method="eagle3"`` and ``target_model_config`` =
    the target's real ``ModelConfig`` (or, if that could not be built, a stand-in carrying only
    ``hf_text_config``). In 0.16.0 the gate is the ``eagle3_target_supported`` model_type allow-list in that
    validator. Value ``{accepted, model_type, message, raised_at}``: ``accepted`` is False when the
    validator's own body raised ValueError (``raised_at`` = ``vllm/config/speculative.py:<line>``); any other
    raise is ``ok: false``. The full construction below is the authority; this isolates the target's part.
  * ``architectures[<arch>]`` for each name in the config's ``architectures``: ``registered``,
    ``supports_eagle3(cls)``, and ``default_aux_ids[<method>]`` for both
    ``get_eagle3_aux_hidden_state_layers`` and ``get_eagle3_default_aux_hidden_state_layers``, each called
    unbound on an instance made by ``object.__new__(cls)`` (``__init__`` never runs) whose ``__dict__``
    holds only: ``config`` (the HF config), ``text_config`` (its text config), ``model`` (a stand-in decoder
    with ``layers`` = num_hidden_layers placeholders, ``config``, ``start_layer``/``end_layer``) and, for a
    multimodal class (``supports_multimodal(cls)``), ``language_model`` = such a bare instance of the text
    config's registered architecture and ``_language_model_names = ["language_model"]`` (what
    ``_mark_language_model`` records when ``__init__`` assigns ``self.language_model``). The methods read
    ``self.model.layers`` (llama, qwen3_moe, the 0.33.0 interface default through ``get_language_model()``),
    ``self.text_config`` (Transformers backend) or delegate to ``self.language_model``. ``runner_method``
    names the one the V1 runner of this release calls (found in ``gpu_model_runner``'s source).

Pairs (``pairs[<drafter>][<target>]``)
  * ``speculative_config``: the real ``SpeculativeConfig(method="eagle3", model=<drafter dir>,
    num_speculative_tokens=3, target_model_config=<target ModelConfig>, target_parallel_config=
    ParallelConfig())``: draft ModelConfig, EAGLEConfig wrapping, registry inspection of the draft class and
    every validator (0.16.0's model_type gate included).
  * ``aux_ids.v1`` / ``aux_ids.v2``: the two readers on that real SpeculativeConfig.
  * ``runner``: ``VllmConfig.use_v2_model_runner`` evaluated on a VllmConfig made by ``object.__new__``
    whose fields are their dataclass defaults and ``model_config``/``speculative_config``/
    ``parallel_config`` = the real ones above (a real ``VllmConfig.__post_init__`` needs a device), with
    ``VLLM_USE_V2_MODEL_RUNNER`` unset, ``vllm.config.vllm.HAS_TRITON`` patched to True and
    ``vllm.config.vllm.current_platform`` patched to a stand-in reporting CUDA that records what was
    asked of it (``runner_patches``). Value "v2" or "v1". A release without that property (0.16.0) decides in
    ``gpu_worker.Worker.__init__`` with ``envs.VLLM_USE_V2_MODEL_RUNNER`` alone; that is evaluated instead
    (after checking the worker's source still reads it), with nothing patched.

Environment: HF_HUB_OFFLINE=1, CUDA_VISIBLE_DEVICES="", VLLM_LOGGING_LEVEL=ERROR, VLLM_CACHE_ROOT=<tmp>
(vLLM's model-info cache starts empty), ``torchvision._meta_registrations`` stubbed (see
runtime_verdicts.py). Temporary paths are written as ``<tmp>``, the venv as ``<site-packages>``, so runs
compare byte for byte.
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import os
import shutil
import sys
import sysconfig
import tempfile
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SCHEMA = 1
SITECUSTOMIZE = (
    "import sys, types\n"
    "sys.modules.setdefault('torchvision._meta_registrations',"
    " types.ModuleType('torchvision._meta_registrations'))\n"
)
V1_RUNNER_METHOD_NAMES = ("get_eagle3_aux_hidden_state_layers", "get_eagle3_default_aux_hidden_state_layers")
NUM_SPECULATIVE_TOKENS = 3
# The stand-in decoder holds one placeholder per layer; eagle3-lint ignores layer counts above this too.
MAX_LAYERS = 100_000


def _install_torchvision_stub() -> None:
    """Same as runtime_verdicts.py: PyPI's torchvision registers a fake kernel for an op its CUDA
    extension defines; against CPU torch that import fails. An empty module skips only that."""
    name = "torchvision._meta_registrations"
    if name not in sys.modules:
        sys.modules[name] = types.ModuleType(name)


class Scrub:
    """Replaces machine-specific paths in recorded text."""

    def __init__(self, tmp: Path, site: str) -> None:
        self.pairs = [(str(tmp), "<tmp>"), (site, "<site-packages>")]

    def __call__(self, text: str) -> str:
        for old, new in self.pairs:
            text = text.replace(old, new)
        return text


def _jsonable(v: Any) -> Any:
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return repr(v)


class Asker:
    """Runs one call and records it as {call, ok, value, error}; never lets an exception through."""

    def __init__(self, scrub: Scrub, show_tracebacks: bool) -> None:
        self.scrub = scrub
        self.show = show_tracebacks

    def __call__(self, call: str, fn: Callable[[], Any]) -> tuple[dict[str, Any], Any]:
        try:
            raw = fn()
        except BaseException as exc:  # noqa: BLE001 - any failure is an answer here
            if isinstance(exc, KeyboardInterrupt):
                raise
            if self.show:
                print(f"--- {call}", file=sys.stderr)
                traceback.print_exception(exc, file=sys.stderr)
            return {"call": call, "ok": False, "value": None, "error": self.error(exc)}, None
        return {"call": call, "ok": True, "value": None, "error": None}, raw

    def error(self, exc: BaseException) -> str:
        lines = self.scrub(str(exc)).strip().splitlines()
        # pydantic wraps validator errors: the useful line is the "Value error, ..." one.
        first = next((ln.strip() for ln in lines if "Value error" in ln), lines[0] if lines else "")
        if type(exc).__name__ == "ValidationError" and "Value error" not in first:
            # "1 validation error for X" says nothing alone: add the field and its message lines.
            rest = [ln.strip() for ln in lines[1:] if ln.strip() and not ln.strip().startswith("For further")]
            first = " | ".join([first] + rest[:2])
        first = first.split(" [type=")[0]  # drop pydantic's input repr
        text = f"{type(exc).__name__}: {first}".rstrip(": ").rstrip()
        return text if len(text) <= 600 else text[:597] + "..."


def answer(ask: Asker, call: str, fn: Callable[[], Any], shape: Callable[[Any], Any] = _jsonable) -> tuple[dict, Any]:
    # fn and shape are called before this returns, never kept: a lambda that reads a loop variable sees the
    # current iteration's value, which is why the callers' B023 findings carry a noqa.
    rec, raw = ask(call, fn)
    if rec["ok"]:
        try:
            rec["value"] = _jsonable(shape(raw))
        except Exception as exc:  # noqa: BLE001 - a shaping failure is recorded, not hidden
            rec["ok"], rec["error"] = False, "while recording the result: " + ask.error(exc)
    return rec, raw


def _in_tree(filename: str) -> str:
    """``.../site-packages/vllm/config/x.py`` -> ``vllm/config/x.py`` (comparable with a source tree)."""
    parts = Path(filename).parts
    return "/".join(parts[len(parts) - 1 - parts[::-1].index("vllm"):]) if "vllm" in parts else filename


def drafter_reasons(cfg: dict[str, Any]) -> list[str]:
    why = [k for k in ("eagle_config", "speculators_config", "speculators_model_type", "draft_vocab_size") if k in cfg]
    archs = cfg.get("architectures") or []
    archs = archs if isinstance(archs, list) else []
    why += [f"architecture {a}" for a in archs if isinstance(a, str) and "Eagle" in a]
    return why


def cfg_summary(cfg: Any) -> dict[str, Any]:
    return {
        "class": type(cfg).__name__,
        "model_type": getattr(cfg, "model_type", None),
        "architectures": getattr(cfg, "architectures", None),
        "eagle_aux_hidden_state_layer_ids": getattr(cfg, "eagle_aux_hidden_state_layer_ids", None),
        "eagle_config": getattr(cfg, "eagle_config", None),
    }


class StandInDecoder:
    """Stands for a decoder module (``<Model>.model``): only what the default-id methods read."""

    def __init__(self, n: int, config: Any) -> None:
        self.layers = [None] * n
        self.config = config
        self.start_layer = 0
        self.end_layer = n

    def __repr__(self) -> str:
        return f"<stand-in decoder: {len(self.layers)} layers>"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", required=True, help="JSON file to write")
    ap.add_argument("--checkpoints", default=str(REPO / "sample_trees" / "_checkpoints"),
                    help="folder of drafter/target config.json files (default: sample_trees/_checkpoints)")
    ap.add_argument("--traceback", action="store_true", help="print the traceback of every failed call to stderr")
    args = ap.parse_args(argv)

    # Set before vllm (and torch / huggingface_hub) are imported, which happens in run(); importing this
    # module (the tests do, for drafter_reasons) changes nothing.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
    os.environ["VLLM_LOGGING_LEVEL"] = "ERROR"
    v2_env_was = os.environ.pop("VLLM_USE_V2_MODEL_RUNNER", None)  # the runner question is "env var unset"
    ck_dir = Path(args.checkpoints).resolve()
    if not ck_dir.is_dir():
        print(f"serving_facts: error: --checkpoints {args.checkpoints}: not a folder", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="eagle3-serving-facts-"))
    try:
        return run(args, ck_dir, tmp, v2_env_was)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(args: argparse.Namespace, ck_dir: Path, tmp: Path, v2_env_was: str | None) -> int:
    # vLLM inspects model classes in a subprocess (registry._run_in_subprocess): it needs the same stub.
    sc_dir = tmp / "sitecustomize"
    sc_dir.mkdir()
    (sc_dir / "sitecustomize.py").write_text(SITECUSTOMIZE)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(sc_dir)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    os.environ["VLLM_CACHE_ROOT"] = str(tmp / "vllm-cache")
    _install_torchvision_stub()

    import vllm  # noqa: E402  (after env setup on purpose)
    from vllm.config import ModelConfig, ParallelConfig, SpeculativeConfig
    from vllm.model_executor.models import registry as reg_mod
    from vllm.model_executor.models.interfaces import supports_eagle3, supports_multimodal
    from vllm.model_executor.models.registry import ModelRegistry
    from vllm.transformers_utils.config import get_config, get_hf_text_config, maybe_override_with_speculators
    from vllm.transformers_utils.configs.eagle import EAGLEConfig
    from vllm.transformers_utils.configs.speculators.base import SpeculatorsConfig

    site = sysconfig.get_paths()["purelib"]
    ask = Asker(Scrub(tmp, site), args.traceback)
    NS = types.SimpleNamespace

    # --- discover and classify the configs -------------------------------------------------------
    raw: dict[str, dict[str, Any]] = {}
    unreadable: dict[str, str] = {}
    for f in sorted(ck_dir.glob("*.json")):
        try:
            data = json.loads(f.read_text())
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as exc:
            unreadable[f.name] = ask.error(exc)
            continue
        raw[f.name] = data
        folder = tmp / "models" / f.stem
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(json.dumps(data))
    dirs = {name: str(tmp / "models" / Path(name).stem) for name in raw}
    drafter_files = [n for n in raw if drafter_reasons(raw[n])]
    target_files = [n for n in raw if not drafter_reasons(raw[n])]

    # --- runner readers (may not exist in this release) --------------------------------------------
    v1_reader = None
    rec_v1_import, mod_v1 = ask("import vllm.v1.worker.gpu_model_runner",
                                lambda: __import__("vllm.v1.worker.gpu_model_runner", fromlist=["GPUModelRunner"]))
    if mod_v1 is not None:
        v1_reader = mod_v1.GPUModelRunner._get_eagle3_aux_layers_from_config
    rec_v2_import, mod_v2 = ask("import vllm.v1.worker.gpu.spec_decode.eagle.eagle3_utils",
                                lambda: __import__("vllm.v1.worker.gpu.spec_decode.eagle.eagle3_utils",
                                                   fromlist=["get_eagle3_aux_layers_from_config"]))
    v2_reader = getattr(mod_v2, "get_eagle3_aux_layers_from_config", None) if mod_v2 is not None else None
    runner_method = None
    if mod_v1 is not None:
        src = Path(mod_v1.__file__).read_text()
        found = [m for m in V1_RUNNER_METHOD_NAMES if f".{m}()" in src]
        runner_method = found[-1] if found else None

    def read_aux(spec: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        call1 = "GPUModelRunner._get_eagle3_aux_layers_from_config(self) with self.speculative_config = " + spec[0]
        if v1_reader is None:
            out["v1"] = dict(rec_v1_import, call=call1)
        else:
            out["v1"], _ = answer(ask, call1, lambda: v1_reader(NS(speculative_config=spec[1])))
        call2 = "eagle3_utils.get_eagle3_aux_layers_from_config(spec) with spec = " + spec[0]
        if v2_reader is None:
            out["v2"] = dict(rec_v2_import, call=call2) if not rec_v2_import["ok"] else {
                "call": call2, "ok": False, "value": None,
                "error": "AttributeError: eagle3_utils has no get_eagle3_aux_layers_from_config"}
        else:
            out["v2"], _ = answer(ask, call2, lambda: v2_reader(spec[1]))
        return out

    # --- drafters ------------------------------------------------------------------------------------
    drafters: dict[str, Any] = {}
    draft_cfgs: dict[str, Any] = {}
    for name in drafter_files:
        d: dict[str, Any] = {"drafter_because": drafter_reasons(raw[name])}
        d["hf_config"], hf = answer(
            ask, f"get_config('<tmp>/models/{Path(name).stem}', trust_remote_code=False)",
            lambda: get_config(dirs[name], trust_remote_code=False),  # noqa: B023 - called at once
            cfg_summary)
        if "speculators_config" in raw[name] or "speculators_model_type" in raw[name]:
            spec_d: dict[str, Any] = {}
            spec_d["transformers_config"], _ = answer(
                ask, "SpeculatorsConfig.extract_transformers_pre_trained_config(config_dict)",
                lambda: SpeculatorsConfig.extract_transformers_pre_trained_config(
                    copy.deepcopy(raw[name])),  # noqa: B023 - called at once
                lambda c: {k: c.get(k) for k in ("architectures", "eagle_aux_hidden_state_layer_ids",
                                                 "draft_vocab_size", "target_hidden_size", "norm_before_residual")})
            spec_d["vllm_speculative_config"], _ = answer(
                ask, "SpeculatorsConfig.extract_vllm_speculative_config(config_dict)",
                lambda: SpeculatorsConfig.extract_vllm_speculative_config(
                    copy.deepcopy(raw[name])))  # noqa: B023 - called at once
            spec_d["serve_override"], _ = answer(
                ask, f"maybe_override_with_speculators('<tmp>/models/{Path(name).stem}', None, False)",
                lambda: maybe_override_with_speculators(dirs[name], None, False),  # noqa: B023 - called at once
                lambda r: {"model": ask.scrub(r[0]), "tokenizer": r[1] and ask.scrub(r[1]),
                           "speculative_config": {k: (ask.scrub(v) if isinstance(v, str) else v)
                                                  for k, v in (r[2] or {}).items()}})
            d["speculators"] = spec_d
        else:
            d["speculators"] = None
        eagle = None
        if hf is not None:
            d["eagle_config"], eagle = answer(
                ask, "EAGLEConfig(hf_config, method='eagle3', model_type='eagle')",
                lambda: EAGLEConfig(hf, method="eagle3", model_type="eagle"),  # noqa: B023 - called at once
                cfg_summary)
            keeps = isinstance(hf, (EAGLEConfig, SpeculatorsConfig))
            d["speculative_config_keeps_hf_config"] = keeps
            draft = hf if keeps else eagle
            d["draft_hf_config"] = "hf_config" if keeps else "eagle_config"
        else:
            d["eagle_config"] = {"call": "EAGLEConfig(hf_config, method='eagle3', model_type='eagle')", "ok": False,
                                 "value": None, "error": "not called: get_config raised"}
            d["speculative_config_keeps_hf_config"] = None
            d["draft_hf_config"] = None
            draft = None
        archs_d: dict[str, Any] = {}
        for arch in (getattr(draft, "architectures", None) or []) if draft is not None else []:
            a: dict[str, Any] = {
                "in_model_registry": arch in ModelRegistry.models,
                "in_speculative_decoding_models": arch in getattr(reg_mod, "_SPECULATIVE_DECODING_MODELS", {}),
            }
            a["load"], _ = answer(ask, f"ModelRegistry._try_load_model_cls({arch!r})",
                                  lambda: ModelRegistry._try_load_model_cls(arch),  # noqa: B023 - called at once
                                  lambda c: None if c is None else f"{c.__module__}.{c.__qualname__}")
            archs_d[arch] = a
        d["draft_architectures"] = archs_d
        if draft is not None:
            label = f"stand-in(draft_model_config=stand-in(hf_config=<{d['draft_hf_config']}>))"
            d["aux_ids"] = read_aux((label, NS(draft_model_config=NS(hf_config=draft))))
        else:
            d["aux_ids"] = None
        draft_cfgs[name] = draft
        drafters[name] = d

    # --- targets -------------------------------------------------------------------------------------
    targets: dict[str, Any] = {}
    model_cfgs: dict[str, Any] = {}
    verify = None
    decos = getattr(SpeculativeConfig, "__pydantic_decorators__", None)
    if decos is not None and "_verify_args" in decos.model_validators:
        verify = decos.model_validators["_verify_args"].func
    rec_ngram, ngram = ask(f"SpeculativeConfig(method='ngram', num_speculative_tokens={NUM_SPECULATIVE_TOKENS})",
                           lambda: SpeculativeConfig(method="ngram", num_speculative_tokens=NUM_SPECULATIVE_TOKENS))

    def text_summary(c: Any) -> dict[str, Any]:
        t = get_hf_text_config(c)
        s = cfg_summary(c)
        del s["eagle_aux_hidden_state_layer_ids"], s["eagle_config"]
        s.update(text_class=type(t).__name__, text_model_type=getattr(t, "model_type", None),
                 text_architectures=getattr(t, "architectures", None),
                 num_hidden_layers=getattr(t, "num_hidden_layers", None), hidden_size=getattr(t, "hidden_size", None))
        return s

    def bare(cls: type, hf: Any, text: Any, n: int, depth: int = 0) -> tuple[Any, str]:
        inst = object.__new__(cls)
        dec = StandInDecoder(n, text)
        inst.__dict__.update(config=hf, text_config=text, model=dec)
        parts = [f"object.__new__({cls.__name__})", "config", "text_config", f"model=<stand-in decoder: {n} layers>"]
        if depth == 0 and supports_multimodal(cls):
            inner_arch = (getattr(text, "architectures", None) or [None])[0]
            inner_cls = ModelRegistry._try_load_model_cls(inner_arch) if inner_arch in ModelRegistry.models else None
            if inner_cls is None:
                parts.append(f"language_model=<none: text architecture {inner_arch!r} not loadable>")
            else:
                lm, lm_desc = bare(inner_cls, text, text, n, depth + 1)
                inst.__dict__.update(language_model=lm, _language_model_names=["language_model"])
                parts.append(f"language_model=<{lm_desc}>")
                parts.append("_language_model_names=['language_model']")
        return inst, ", ".join(parts)

    for name in target_files:
        t: dict[str, Any] = {}
        stem = Path(name).stem
        t["hf_config"], hf = answer(
            ask, f"get_config('<tmp>/models/{stem}', trust_remote_code=False)",
            lambda: get_config(dirs[name], trust_remote_code=False),  # noqa: B023 - called at once
            text_summary)
        t["model_config"], mc = answer(ask, f"ModelConfig(model='<tmp>/models/{stem}')",
                                       lambda: ModelConfig(model=dirs[name]),  # noqa: B023 - called at once
                                       lambda m: {"architectures": m.architectures, "architecture": m.architecture,
                                                  "hf_text_config_model_type": m.hf_text_config.model_type})
        model_cfgs[name] = mc
        # the model_type gate, isolated
        if verify is None:
            t["model_type_gate"] = {"call": "SpeculativeConfig._verify_args", "ok": False, "value": None,
                                    "error": "AttributeError: no _verify_args model_validator on SpeculativeConfig"}
        elif ngram is None:
            t["model_type_gate"] = dict(rec_ngram, error="not called: " + str(rec_ngram["error"]))
        elif hf is None and mc is None:
            t["model_type_gate"] = {"call": "SpeculativeConfig._verify_args", "ok": False, "value": None,
                                    "error": "not called: neither get_config nor ModelConfig succeeded"}
        else:
            tgt = mc if mc is not None else NS(hf_text_config=get_hf_text_config(hf))
            tgt_desc = "<the target's ModelConfig>" if mc is not None else "stand-in(hf_text_config=<text config>)"

            def gate(tgt: Any = tgt) -> Any:
                sc = copy.copy(ngram)
                sc.method = "eagle3"
                sc.target_model_config = tgt
                mt = tgt.hf_text_config.model_type
                try:
                    verify(sc)
                except ValueError as exc:
                    # A ValueError raised by the validator's own body is its refusal; anything raised
                    # deeper (or of another type) means the question could not be answered: re-raise.
                    tb = traceback.extract_tb(exc.__traceback__)
                    if tb and tb[-1].name == "_verify_args":
                        return {"accepted": False, "model_type": mt, "message": ask.error(exc),
                                "raised_at": f"{_in_tree(tb[-1].filename)}:{tb[-1].lineno}"}
                    raise
                return {"accepted": True, "model_type": mt, "message": None, "raised_at": None}

            t["model_type_gate"], _ = answer(
                ask, "SpeculativeConfig._verify_args(copy of SpeculativeConfig(method='ngram', "
                f"num_speculative_tokens={NUM_SPECULATIVE_TOKENS}) with method='eagle3', target_model_config="
                f"{tgt_desc})", gate)
        archs_t: dict[str, Any] = {}
        text = get_hf_text_config(hf) if hf is not None else None
        n_layers = getattr(text, "num_hidden_layers", None)
        declared = raw[name].get("architectures") or []
        if not isinstance(declared, list) or not all(isinstance(x, str) for x in declared):
            t["architectures_error"] = f"'architectures' is not a list of strings: {declared!r}"[:300]
            declared = []
        for arch in declared:
            a: dict[str, Any] = {"registered": arch in ModelRegistry.models}
            a["load"], cls = answer(ask, f"ModelRegistry._try_load_model_cls({arch!r})",
                                    lambda: ModelRegistry._try_load_model_cls(arch),  # noqa: B023 - called at once
                                    lambda c: None if c is None else f"{c.__module__}.{c.__qualname__}")
            if cls is None:
                a["supports_eagle3"] = None
                a["default_aux_ids"] = None
                archs_t[arch] = a
                continue
            a["supports_eagle3"] = bool(supports_eagle3(cls))
            dflt: dict[str, Any] = {}
            for meth in V1_RUNNER_METHOD_NAMES:
                if hf is None or not isinstance(n_layers, int) or not 0 <= n_layers <= MAX_LAYERS:
                    dflt[meth] = {"call": f"{cls.__name__}.{meth}(bare instance)", "ok": False, "value": None,
                                  "error": "not called: no usable num_hidden_layers in the target config "
                                           f"({n_layers!r}; 0..{MAX_LAYERS} accepted)"}
                    continue
                rec_b, built = ask("object.__new__",
                                   lambda: bare(cls, hf, text, n_layers))  # noqa: B023 - called at once
                if built is None:
                    dflt[meth] = dict(rec_b, call=f"{cls.__name__}.{meth}(bare instance)")
                    continue
                inst, desc = built
                dflt[meth], _ = answer(ask, f"{cls.__name__}.{meth}(instance) with instance = {desc}",
                                       lambda: getattr(cls, meth)(inst))  # noqa: B023 - called at once
            a["default_aux_ids"] = dflt
            archs_t[arch] = a
        t["architectures"] = archs_t
        targets[name] = t

    # --- pairs ---------------------------------------------------------------------------------------
    import vllm.config.vllm as vllm_cfg_mod
    from pydantic.fields import FieldInfo
    from vllm.config import VllmConfig

    class CudaPlatformStandIn:
        """Reports CUDA; records every attribute the code asks for."""

        def __init__(self, real: Any) -> None:
            self._real = real
            self.asked: list[str] = []

        def __getattr__(self, item: str) -> Any:
            self.asked.append(item)
            answers = {"is_unspecified": lambda: False, "is_cuda": lambda: True, "is_cuda_alike": lambda: True,
                       "is_rocm": lambda: False, "is_cpu": lambda: False, "is_xpu": lambda: False,
                       "is_tpu": lambda: False, "device_type": "cuda", "device_name": "cuda"}
            return answers[item] if item in answers else getattr(self._real, item)

    runner_patch_note: dict[str, Any] = {
        "env": {"VLLM_USE_V2_MODEL_RUNNER": "unset (was set)" if v2_env_was is not None else "unset"},
        "patched": ["vllm.config.vllm.HAS_TRITON = True",
                    "vllm.config.vllm.current_platform = stand-in reporting CUDA (is_unspecified False, is_cuda True)"],
        "platform_attributes_asked": [],
        # fields whose default could not be made on this machine (e.g. DeviceConfig() needs a device)
        "vllm_config_fields_none": [],
    }

    def use_v2(mc: Any, sc: Any) -> Any:
        prop = getattr(VllmConfig, "use_v2_model_runner", None)
        if not isinstance(prop, property):
            # Older releases (0.16.0): gpu_worker.Worker decides with the env var alone.
            import vllm.envs as envs
            import vllm.v1.worker.gpu_worker as gw
            if "use_v2_model_runner = envs.VLLM_USE_V2_MODEL_RUNNER" not in Path(gw.__file__).read_text():
                raise LookupError("neither VllmConfig.use_v2_model_runner nor gpu_worker's env-var read found")
            return "v2" if envs.VLLM_USE_V2_MODEL_RUNNER else "v1"
        vc = object.__new__(VllmConfig)
        for f in dataclasses.fields(VllmConfig):
            if f.default is not dataclasses.MISSING:
                val = f.default
            elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
                try:
                    val = f.default_factory()  # type: ignore[misc]
                except Exception:  # noqa: BLE001 - a default that needs a device stays None
                    val = None
            else:
                val = None
            if isinstance(val, FieldInfo):  # pydantic ``Field(default_factory=...)`` as a dataclass default
                try:
                    val = val.get_default(call_default_factory=True)
                except Exception:  # noqa: BLE001 - same rule as above
                    val = None
            if val is None and f.name not in runner_patch_note["vllm_config_fields_none"] and f.default is not None:
                runner_patch_note["vllm_config_fields_none"].append(f.name)
            object.__setattr__(vc, f.name, val)
        object.__setattr__(vc, "model_config", mc)
        object.__setattr__(vc, "speculative_config", sc)
        object.__setattr__(vc, "parallel_config", ParallelConfig())
        saved = (getattr(vllm_cfg_mod, "HAS_TRITON", None), vllm_cfg_mod.current_platform)
        plat = CudaPlatformStandIn(saved[1])
        vllm_cfg_mod.HAS_TRITON = True
        vllm_cfg_mod.current_platform = plat
        try:
            return "v2" if prop.fget(vc) else "v1"
        finally:
            vllm_cfg_mod.HAS_TRITON, vllm_cfg_mod.current_platform = saved
            for item in plat.asked:
                if item not in runner_patch_note["platform_attributes_asked"]:
                    runner_patch_note["platform_attributes_asked"].append(item)

    if isinstance(getattr(VllmConfig, "use_v2_model_runner", None), property):
        runner_call = ("VllmConfig.use_v2_model_runner on object.__new__(VllmConfig) with field defaults, "
                       "model_config/speculative_config = the real ones, parallel_config=ParallelConfig() "
                       "(see runner_patches)")
    else:
        runner_call = ("vllm.envs.VLLM_USE_V2_MODEL_RUNNER, env var unset (what gpu_worker.Worker.__init__ reads; "
                       "this release has no VllmConfig.use_v2_model_runner)")
        runner_patch_note["patched"] = []
    pairs: dict[str, dict[str, Any]] = {}
    for dname in drafter_files:
        pairs[dname] = {}
        for tname in target_files:
            p: dict[str, Any] = {}
            call = (f"SpeculativeConfig(method='eagle3', model='<tmp>/models/{Path(dname).stem}', "
                    f"num_speculative_tokens={NUM_SPECULATIVE_TOKENS}, target_model_config=<ModelConfig of "
                    f"{tname}>, target_parallel_config=ParallelConfig())")
            mc = model_cfgs.get(tname)
            if mc is None:
                p["speculative_config"] = {"call": call, "ok": False, "value": None,
                                           "error": "not called: the target's ModelConfig could not be built"}
                sc = None
            else:
                p["speculative_config"], sc = answer(
                    ask, call,
                    lambda: SpeculativeConfig(method="eagle3", model=dirs[dname],  # noqa: B023 - called at once
                                              num_speculative_tokens=NUM_SPECULATIVE_TOKENS,
                                              target_model_config=mc,  # noqa: B023 - called at once
                                              target_parallel_config=ParallelConfig()),
                    lambda s: {"method": s.method,
                               "draft_hf_config_class": type(s.draft_model_config.hf_config).__name__,
                               "draft_architectures": s.draft_model_config.architectures,
                               "draft_architecture": s.draft_model_config.architecture,
                               "num_speculative_tokens": s.num_speculative_tokens})
            if sc is None:
                p["aux_ids"] = None
                p["runner"] = {"call": "VllmConfig.use_v2_model_runner", "ok": False, "value": None,
                               "error": "not called: SpeculativeConfig was not built"}
            else:
                p["aux_ids"] = read_aux(("<the real SpeculativeConfig above>", sc))
                p["runner"], _ = answer(ask, runner_call, lambda: use_v2(mc, sc))  # noqa: B023 - called at once
            pairs[dname][tname] = p

    result = {
        "schema": SCHEMA,
        "vllm_version": getattr(vllm, "__version__", "unknown"),
        "python": sys.version.split()[0],
        "checkpoints": ask.scrub(str(ck_dir)).replace(str(REPO) + os.sep, ""),
        "drafter_files": drafter_files,
        "target_files": target_files,
        "unreadable": unreadable,
        "runner_method": runner_method,
        "runner_patches": runner_patch_note,
        "drafters": drafters,
        "targets": targets,
        "pairs": pairs,
    }
    out = Path(args.output)
    if out.parent != Path(""):
        out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    n_fail = sum(1 for _ in _failed(result))
    print(f"vllm {result['vllm_version']}: {len(drafter_files)} drafters, {len(target_files)} targets, "
          f"{n_fail} calls raised -> {out}")
    return 0


def _failed(node: Any):
    if isinstance(node, dict):
        if set(node) >= {"call", "ok", "value", "error"} and node["ok"] is False:
            yield node
        for v in node.values():
            yield from _failed(v)
    elif isinstance(node, list):
        for v in node:
            yield from _failed(v)


if __name__ == "__main__":
    sys.exit(main())
