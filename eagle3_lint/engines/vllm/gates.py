"""vLLM's config-time refusals, read from the tree: the ``model_type`` the EAGLE-3 gate judges a target by,
the gate that refuses an architecture, and the refusal of every EAGLE-3 set-up with pipeline parallelism
when the drafter gets the target's PP size and no registered EAGLE-3 drafter class supports PP.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from eagle3_lint.graph import ClassKey
from eagle3_lint.semantic import DRAFTER_DICT_WORDS, method_of
from eagle3_lint.source_ast import read_module

if TYPE_CHECKING:
    from eagle3_lint.stages import Model


def target_model_type(sm: Model, config_attr: str) -> Any:
    """What ``<config_attr>.model_type`` (``hf_text_config``) this vLLM gives the ``--target-config``
    (``hfconfig.TextModelType``), worked out once per analysis for EGL009 and the serving verdict alike."""
    from eagle3_lint.engines.vllm import hfconfig

    cfg = sm.options.target_config
    assert cfg is not None
    return sm.memo.get(f"target-model-type:{config_attr}",
                        lambda: hfconfig.text_model_type(sm.graph, sm.source, cfg, config_attr))


def config_refusal(sm: Model, arch: str) -> tuple[Any, str] | None:
    """The config-time gate (``runner.Gate``) that refuses EAGLE-3 for ``arch`` without a target config, with
    the model_type it was judged by: the name of the module that defines the architecture, which is its
    ``model_type`` by the convention vLLM and Transformers share (``exaone4.py`` for ``exaone4``). With
    ``--target-config`` the serving verdict reads the real one; this answer only grades untargeted findings."""
    entry = sm.registry.entries.get(arch)
    if entry is None:
        return None
    mt = entry.module.rsplit(".", 1)[-1]
    for g in sm.runner.gates:
        if "eagle3" in g.methods and g.allow_list and not any(a in mt for a in g.allow_list):
            return g, mt
    return None


# Where ``SpeculativeConfig`` has lived: its own module from 0.11, the config package before, one file in 0.9.
SPECULATIVE_CONFIG_HOMES = ("vllm/config/speculative.py", "vllm/config/__init__.py", "vllm/config.py")


def drafter_pp_source(sm: Model) -> tuple[str | None, str, int]:
    """The ``pipeline_parallel_size=`` expression ``SpeculativeConfig`` gives the drafter's ``ParallelConfig``,
    with its file and line (0.16: the target's, so the drafter class must support PP; later releases: 1)."""
    def compute() -> tuple[str | None, str, int]:
        for rel in SPECULATIVE_CONFIG_HOMES:
            tree = read_module(sm, rel)
            cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SpeculativeConfig"),
                       None) if tree is not None else None
            for node in ast.walk(cls) if cls is not None else ():
                if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("ParallelConfig"):
                    for kw in node.keywords:
                        if kw.arg == "pipeline_parallel_size":
                            return ast.unparse(kw.value), rel, kw.value.lineno
        return None, "", 0

    return sm.memo.get("drafter-pp-source", compute)


def supports_pp(sm: Model, key: ClassKey) -> tuple[bool, bool]:
    """What vLLM's ``supports_pp`` asks of a class: (``forward`` takes ``intermediate_tensors``, the class has
    ``make_empty_intermediate_tensors``)."""
    fwd = method_of(sm, key, "forward")
    return (fwd is not None and "intermediate_tensors" in fwd[1].params,
            sm.graph.member_origin(key, "make_empty_intermediate_tensors") is not None)


def eagle3_pp_refused(sm: Model) -> str | None:
    """Why this tree refuses every EAGLE-3 set-up with pipeline parallelism at config time, or None: the drafter
    gets the target's pipeline-parallel size and no registered EAGLE-3 drafter class supports PP."""
    def compute() -> str | None:
        expr, path, line = drafter_pp_source(sm)
        if expr is None or expr.strip() == "1":
            return None
        drafters = [(a, k) for a, k in sm.keys.items() if k is not None and "eagle3" in a.lower()
                    and any(w in sm.registry.entries[a].source_dict.upper() for w in DRAFTER_DICT_WORDS)]
        if not drafters or any(all(supports_pp(sm, k)) for _a, k in drafters):
            return None
        return (f"the drafter gets the target's pipeline_parallel_size ({path}:{line}) and none of the "
                f"{len(drafters)} registered EAGLE-3 drafter classes supports PP, so vLLM refuses EAGLE-3 with "
                "pipeline parallelism at config time")

    return sm.memo.get("eagle3-pp-refused", compute)


