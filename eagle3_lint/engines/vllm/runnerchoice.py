"""Which GPU model runner a plain EAGLE-3 set-up uses, read from the release's own decision code.

Releases from about 0.20 ship two runners (``runner.RunnerKind``). The worker picks one with
``VllmConfig.use_v2_model_runner`` (``vllm/config/vllm.py``) where that property exists, else with the
environment variable alone (``envs.VLLM_USE_V2_MODEL_RUNNER``, whose default the ``envs.py`` lambda
gives). The property is evaluated here with ``minieval`` (never imported) for the set-up the
question is about: ``--speculative-config '{"method": "eagle3", ...}'`` on a CUDA machine with Triton,
the environment variable unset, the target's architecture, and the pipeline-parallel size asked.

What that set-up means, as data with reasons (``PLAIN_EAGLE3``): speculative method ``eagle3`` without
parallel drafting or a heterogeneous vocabulary (neither is part of an EAGLE-3 drafter config), no
HiSparse attention and no watermarking (opt-in features), the ``mp`` executor (vLLM's default on one
node), no micro-batching or prefill context parallelism (opt-in), a generating model that is neither
diffusion, hybrid nor attention-free (EAGLE-3 targets are transformer decoders). Whether the model is
a mixture of experts comes from the target config when one is given; any other attribute the code
reads is unknown, and then the answer is unknown with the attribute named.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from eagle3_lint.facts import decode_source, platform_is
from eagle3_lint.lazyimport import lazy
from eagle3_lint.runner import RunnerKind, RunnerPath
from eagle3_lint.source import SourceTree

if TYPE_CHECKING:
    from eagle3_lint import minieval as me
    from eagle3_lint.stages import Model
else:
    me = lazy("eagle3_lint.minieval")  # imported on first use (lazyimport.py)

Parse = Callable[[str], "ast.Module | None"]  # a file of the tree, parsed (None: absent or unreadable)

VLLM_CONFIG = "vllm/config/vllm.py"
ENVS = "vllm/envs.py"
ENV_VAR = "VLLM_USE_V2_MODEL_RUNNER"
PROPERTY = "use_v2_model_runner"

PLAIN_EAGLE3: dict[tuple[str, ...], Any] = {
    ("self", "speculative_config", "method"): "eagle3",
    ("self", "speculative_config", "parallel_drafting"): False,
    ("self", "speculative_config", "use_heterogeneous_vocab"): False,
    ("self", "attention_config", "hisparse_config"): None,
    ("self", "watermark_config"): None,
    ("self", "parallel_config", "distributed_executor_backend"): "mp",
    ("self", "parallel_config", "use_ubatching"): False,
    ("self", "parallel_config", "prefill_context_parallel_size"): 1,
    ("self", "model_config", "is_diffusion"): False,
    ("self", "model_config", "runner_type"): "generate",
    ("self", "model_config", "is_hybrid"): False,
    ("self", "model_config", "is_attention_free"): False,
    # No sequence parallelism: off in every optimization level's defaults (0.30.0 vllm.py:263-332, IS_DENSE is
    # False at :145) and turned off with TP 1 (:1681-1684).
    ("self", "compilation_config", "pass_config", "enable_sp"): False,
    # Opt-in features at their defaults (0.30.0 config/parallel.py:217, model.py:370, cache.py:178).
    ("self", "parallel_config", "enable_elastic_ep"): False,
    ("self", "model_config", "logits_processors"): None,
    ("self", "cache_config", "mamba_cache_mode"): "none",
}
# Entry-point groups a plain install leaves empty: vLLM's own dist-info registers console_scripts and
# vllm.general_plugins only (0.30.0 vllm-0.30.0.dist-info/entry_points.txt), no logits processors.
EMPTY_ENTRY_POINTS = frozenset({"vllm.logits_processors"})
# Enum-valued facts of the same set-up, as (enum class, member) the tree's own enum gives the value of, per platform.
# ``compilation_config.mode``: CompilationConfig's default is None (0.30.0 config/compilation.py:454), and
# ``VllmConfig.__post_init__`` sets VLLM_COMPILE for an optimization level above O0 (vllm.py:1595-1599), whose
# default is O2 (vllm.py:440); no CUDA, ROCm or XPU platform default changes it. The CPU platform does
# (platforms/cpu.py:332-356: DYNAMO_TRACE_ONCE or NONE), so there it is left unknown.
PLAIN_EAGLE3_MEMBERS: dict[tuple[str, ...], tuple[str, str, frozenset[str]]] = {
    ("self", "compilation_config", "mode"): ("CompilationMode", "VLLM_COMPILE", frozenset({"cuda", "rocm", "xpu"})),
}
PLATFORM_WORDS = {"cuda": "CUDA with Triton", "rocm": "ROCm with Triton", "xpu": "XPU with Triton",
                  "cpu": "CPU without Triton", "unspecified": "an unspecified platform"}
# Keys a Hugging Face text config uses for its routed-expert count (Mixtral, Qwen-MoE, DeepSeek, ...).
_MOE_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")


@dataclass(frozen=True)
class RunnerChoice:
    """The runner a plain EAGLE-3 set-up gets; ``kind`` None when the tree's decision cannot be evaluated."""

    kind: RunnerKind | None
    path: str
    line: int
    reason: str


def is_moe(text_config: dict[str, Any] | None) -> bool | None:
    if not text_config:
        return None
    return any(isinstance(text_config.get(k), int) and text_config[k] > 1 for k in _MOE_KEYS)


def _parse(source: SourceTree, rel: str) -> ast.Module | None:
    if not source.exists(rel):
        return None
    try:
        return me.parse(decode_source(source.read_bytes(rel)), rel)
    except (OSError, UnicodeError, SyntaxError):
        return None


def _constant_sets(tree: ast.Module) -> dict[str, Any]:
    """Module-level ``NAME = frozenset({...})`` (or set/tuple/list of a literal): the value, which
    ``ModuleEnv`` leaves opaque because it is a call (0.25's ``DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES``)."""
    out: dict[str, Any] = {}
    kinds = {"frozenset": frozenset, "set": set, "tuple": tuple, "list": list}
    for st in tree.body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) \
                and isinstance(st.value, ast.Call) and isinstance(st.value.func, ast.Name) \
                and st.value.func.id in kinds and len(st.value.args) == 1 and not st.value.keywords:
            try:
                out[st.targets[0].id] = kinds[st.value.func.id](ast.literal_eval(st.value.args[0]))
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
    return out


def imported_enum(source: SourceTree, tree: ast.Module, rel: str, name: str,
                  parse: Parse | None = None) -> dict[str, Any] | None:
    """The members of the enum class that module ``rel`` (parsed as ``tree``) imports as ``name`` from another module
    of the tree (``from .compilation import CompilationMode`` in vllm/config/vllm.py), read from that module's
    source (``me.enum_members``), never imported; None when ``name`` is no such enum."""
    for st in tree.body:
        if not isinstance(st, ast.ImportFrom):
            continue
        alias = next((a for a in st.names if (a.asname or a.name) == name), None)
        if alias is None:
            continue
        if st.level:
            base = rel.split("/")[: -st.level]
            mod = "/".join([*base, *(st.module or "").split(".")]) if st.module else "/".join(base)
        else:
            mod = (st.module or "").replace(".", "/")
        for cand in (f"{mod}.py", f"{mod}/__init__.py"):
            other = (parse or functools.partial(_parse, source))(cand)
            if other is not None:
                return me.enum_members(other, alias.name)
        return None
    return None


def env_default(source: SourceTree, parse: Parse | None = None) -> tuple[Any, int]:
    """The value ``envs.VLLM_USE_V2_MODEL_RUNNER`` has with the variable unset (``me.NOTHING``: unknown), and its
    line."""
    tree = (parse or functools.partial(_parse, source))(ENVS)
    if tree is None:
        return me.NOTHING, 0
    env = me.ModuleEnv.of(tree, ENVS)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict):
            continue
        for k, v in zip(node.keys, node.values, strict=True):
            if isinstance(k, ast.Constant) and k.value == ENV_VAR and isinstance(v, ast.Lambda):
                fn = ast.FunctionDef(  # type: ignore[call-arg]  # type_params: a field of 3.12+ ast only
                    name="_env", args=v.args, body=[ast.Return(v.body)], decorator_list=[], returns=None,
                    type_params=[])
                ast.fix_missing_locations(ast.copy_location(fn, v))

                def call(path: tuple[str, ...], args: list[Any], kwargs: dict[str, Any]) -> Any:
                    if path == ("os", "getenv"):  # unset: getenv returns its default
                        return args[1] if len(args) > 1 else kwargs.get("default")
                    return me.NOTHING

                try:
                    return me.Interpreter(me.World(call=call), strict=True).call(me.FuncValue(fn, env), []), v.lineno
                except (me.Unsupported, me.EvalRaise):
                    return me.NOTHING, v.lineno
    return me.NOTHING, 0


# Triton on each platform: CUDA, ROCm and XPU builds ship it; vLLM's CPU builds do not (the CPU worker then logs
# "Model Runner V2 requires Triton; using the V1 model runner instead", vllm/config/vllm.py:752-756 in 0.33.0).
HAS_TRITON = {"cuda": True, "rocm": True, "xpu": True, "cpu": False, "unspecified": False}


def choose(source: SourceTree, runner: RunnerPath, arch: str | None, text_config: dict[str, Any] | None,
           pp: int, platform: str = "cuda", parse: Parse | None = None, method: str = "eagle3") -> RunnerChoice:
    """The runner vLLM builds for ``arch``. ``parse``: how a file of the tree is read (default: parsed now);
    ``chosen`` hands the analysis' parsed modules, so that one choice per architecture parses each file once
    per analysis, not once per architecture (vllm/config/vllm.py is about 1,600 lines). ``method``: the
    speculative method of the set-up (``PLAIN_EAGLE3`` with its method replaced; ``--method``)."""
    parse = parse or functools.partial(_parse, source)
    kinds = runner.kinds
    if not kinds:
        return RunnerChoice(None, "", 0, "no runner of this tree asks the model for aux hidden states")
    if kinds == (RunnerKind.V1,):
        site = runner.site_for(RunnerKind.V1)
        assert site is not None
        return RunnerChoice(RunnerKind.V1, site.path, site.line, "the only runner of this tree that configures EAGLE-3")
    default, env_line = env_default(source, parse)
    tree = parse(VLLM_CONFIG)
    prop = me.find_function(tree, PROPERTY, "VllmConfig") if tree is not None else None
    if prop is None or tree is None:
        # Older two-runner releases: the worker reads the variable itself (``self.use_v2_model_runner = envs...``).
        if default is me.NOTHING:
            return RunnerChoice(None, ENVS, env_line, f"the default of {ENV_VAR} cannot be read")
        kind = RunnerKind.V2 if default else RunnerKind.V1
        return RunnerChoice(kind, ENVS, env_line, f"{ENV_VAR} defaults to {default!r} and nothing else decides")
    env = me.ModuleEnv.of(tree, VLLM_CONFIG, {"HAS_TRITON": HAS_TRITON[platform], **_constant_sets(tree)})
    facts = dict(PLAIN_EAGLE3)
    facts[("self", "speculative_config", "method")] = method
    setup = "a plain EAGLE-3 set-up" if method == "eagle3" else f"a plain set-up with speculative method {method!r}"
    facts[("self", "parallel_config", "pipeline_parallel_size")] = pp
    facts[("self", "model_config", "architectures")] = [arch] if arch else []
    moe = is_moe(text_config)
    if moe is not None:
        facts[("self", "model_config", "is_moe")] = moe
    if default is not me.NOTHING:
        facts[("envs", ENV_VAR)] = default
    enums: dict[str, dict[str, Any] | None] = {}

    def enum(name: str) -> dict[str, Any] | None:
        if name not in enums:
            enums[name] = imported_enum(source, tree, VLLM_CONFIG, name, parse)
        return enums[name]

    for path, (cls, member, platforms) in PLAIN_EAGLE3_MEMBERS.items():
        value = (enum(cls) or {}).get(member) if platform in platforms else None
        if value is not None:
            facts[path] = value
    unknown: list[str] = []
    prefixes = {k[:i] for k in facts for i in range(2, len(k))}  # objects on the way to a fact stay opaque

    def attr(path: tuple[str, ...]) -> Any:
        if path in facts:
            return facts[path]
        if path in prefixes:
            return me.NOTHING
        if len(path) == 2 and path[0] != "self":
            members = enum(path[0])  # ``CompilationMode.STOCK_TORCH_COMPILE``, an enum the module imports
            if members is not None and path[1] in members:
                return members[path[1]]
        if path[0] in ("self", "envs") and len(path) >= 2 and not (path[0] == "self" and len(path) == 2):
            unknown.append(".".join(path))
            return me.UNKNOWN
        return me.NOTHING

    interp: me.Interpreter

    def call(path: tuple[str, ...], args: list[Any], kwargs: dict[str, Any]) -> Any:
        if path[0] == "logger":
            return None
        if path == ("entry_points",) and not args and kwargs.keys() == {"group"} \
                and kwargs["group"] in EMPTY_ENTRY_POINTS:
            return []
        if len(path) == 2 and path[0] == "current_platform" and path[1].startswith("is_") and not args:
            return platform_is(platform, path[1][len("is_"):])
        if path[0] == "self" and len(path) == 2:
            fn = me.find_function(tree, path[1], "VllmConfig")
            if fn is not None:
                return interp.call(me.FuncValue(fn, env), [me.Opaque(("self",)), *args], kwargs)
        unknown.append(".".join(path) + "()")
        return me.UNKNOWN

    interp = me.Interpreter(me.World(attr=attr, call=call), strict=True)
    try:
        res = interp.call(me.FuncValue(prop, env), [me.Opaque(("self",))])
    except (me.Unsupported, me.EvalRaise) as exc:
        why = f"depends on {', '.join(dict.fromkeys(unknown))}" if unknown else str(exc)
        return RunnerChoice(
            None, VLLM_CONFIG, prop.lineno, f"VllmConfig.{PROPERTY} cannot be decided statically: {why}"
        )
    if not isinstance(res, bool):
        why = f"depends on {', '.join(dict.fromkeys(unknown))}" if unknown else f"returned {res!r}"
        return RunnerChoice(
            None, VLLM_CONFIG, prop.lineno, f"VllmConfig.{PROPERTY} cannot be decided statically: {why}"
        )
    kind = RunnerKind.V2 if res else RunnerKind.V1
    return RunnerChoice(kind, VLLM_CONFIG, prop.lineno,
                        f"VllmConfig.{PROPERTY} is {res} for {setup} on {PLATFORM_WORDS[platform]} "
                        f"and {ENV_VAR} unset")


# vLLM's CPU worker builds this runner (vllm/v1/worker/cpu_worker.py); before 0.19 its ``__init__`` asserted that no
# speculative config was given (0.16.0 cpu_model_runner.py:25: ``assert self.speculative_config is None``).
CPU_RUNNER = "vllm/v1/worker/cpu_model_runner.py"


def platform_refusal(sm: Model) -> tuple[str, int, str] | None:
    """Where the model runner of ``--platform`` refuses speculative decoding outright, read from the tree: (path,
    line, the statement), or None."""
    if sm.options.platform != "cpu":
        return None

    def compute() -> tuple[str, int, str] | None:
        tree = _parse(sm.source, CPU_RUNNER)
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) \
                    and len(node.test.ops) == 1 and isinstance(node.test.ops[0], ast.Is) \
                    and isinstance(node.test.comparators[0], ast.Constant) and node.test.comparators[0].value is None \
                    and isinstance(node.test.left, ast.Attribute) and node.test.left.attr == "speculative_config":
                return CPU_RUNNER, node.lineno, ast.unparse(node)
        return None

    return sm.memo.get("cpu-runner-refusal", compute)


def chosen(sm: Model, arch: str | None) -> RunnerChoice:
    """The runner the analysis models for ``arch``: ``--runner v1|v2`` when given and present, else the default."""
    from eagle3_lint.checkpoint import text_config
    from eagle3_lint.source_ast import read_module

    pp = sm.options.pipeline_parallel or 1
    method = sm.options.method or "eagle3"
    key = f"runner-choice:{arch}:{pp}:{sm.options.runner}:{sm.options.platform}:{method}"

    def compute() -> RunnerChoice:
        asked = sm.options.runner
        if asked in (RunnerKind.V1.value, RunnerKind.V2.value):
            kind = RunnerKind(asked)
            site = sm.runner.site_for(kind)
            if site is None:
                return RunnerChoice(None, "", 0, f"--runner {asked}: this tree has no {asked.upper()} runner call site")
            return RunnerChoice(kind, site.path, site.line, f"--runner {asked}")
        return choose(sm.source, sm.runner, arch, text_config(sm.options.target_config), pp, sm.options.platform,
                      functools.partial(read_module, sm), method)

    return sm.memo.get(key, compute)
