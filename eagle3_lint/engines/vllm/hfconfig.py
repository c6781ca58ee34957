"""What ``hf_text_config.model_type`` a target's ``config.json`` gets in the analysed vLLM tree.

The config-time EAGLE-3 gate (``SpeculativeConfig``) reads ``hf_text_config.model_type``. vLLM
builds the config with one of its own classes when ``vllm/transformers_utils/config.py``'s
``_CONFIG_REGISTRY`` maps the checkpoint's ``model_type`` to one (``kimi_k25`` ->
``KimiK25Config``), else with Transformers' ``AutoConfig``; ``hf_text_config`` is then the text
sub-config (``get_text_config()``), or the config itself when it has none.

Everything that is in the tree is read from it, statically: the registry, the class (through the
``configs`` package, including its PEP 562 lazy ``_CLASS_TO_MODULE`` map), the attribute its
``__init__`` stores the text config in, and the class that attribute is built with. What is not in
the tree is said, not guessed: a text config class from Transformers has a ``model_type`` this tree
does not define. The ``config.json`` fills that gap: Transformers' ``PretrainedConfig`` keeps a
``model_type`` passed in the sub-config dict as the instance attribute, so the JSON's
``text_config.model_type`` is what the runtime reads whenever the JSON has one.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from eagle3_lint.facts import decode_source, dotted
from eagle3_lint.graph import ClassGraph, ClassKey
from eagle3_lint.source import SourceTree

CONFIG_MODULE = "vllm.transformers_utils.config"
CONFIGS_PACKAGE = "vllm.transformers_utils.configs"
REGISTRY_NAME = "_CONFIG_REGISTRY"
# Attributes Transformers' ``get_text_config()`` looks for (decoder side first, then encoder).
TEXT_CONFIG_NAMES = ("text_config", "decoder", "generator", "text_encoder")

@dataclass(frozen=True)
class TextModelType:
    model_type: str | None  # what the gate compares; None when it cannot be known
    top: str | None  # the checkpoint's own model_type
    exact: bool  # every link came from the tree or from the config.json itself
    steps: tuple[str, ...]  # how it was derived, each with where


@dataclass(frozen=True)
class _ClassInfo:
    key: ClassKey | None
    external: str | None  # dotted name when the class is outside the tree
    where: str


def _parse(source: SourceTree, rel: str | None) -> ast.Module | None:
    if rel is None:
        return None
    try:
        return ast.parse(decode_source(source.read_bytes(rel)), filename=rel)
    except (OSError, SyntaxError, UnicodeError, ValueError, RecursionError):
        return None


def config_registry(source: SourceTree) -> tuple[dict[str, tuple[str, int]], str]:
    """``_CONFIG_REGISTRY``: model_type -> (config class name, line), and the file it is in."""
    rel = source.module_path(CONFIG_MODULE)
    tree = _parse(source, rel)
    out: dict[str, tuple[str, int]] = {}
    if tree is None or rel is None:
        return out, ""
    for st in tree.body:
        target: ast.expr
        v: ast.expr | None
        if isinstance(st, ast.Assign) and len(st.targets) == 1:
            target, v = st.targets[0], st.value
        elif isinstance(st, ast.AnnAssign):
            target, v = st.target, st.value
        else:
            continue
        if not (isinstance(target, ast.Name) and target.id == REGISTRY_NAME) or v is None:
            continue
        if isinstance(v, ast.Dict):  # {"chatglm": ChatGLMConfig, ...}
            for k, val in zip(v.keys, v.values, strict=True):
                if isinstance(k, ast.Constant) and isinstance(k.value, str):
                    name = val.value if isinstance(val, ast.Constant) and isinstance(val.value, str) else dotted(val)
                    if name:
                        out[k.value] = (name, k.lineno)
        elif isinstance(v, ast.Call):  # LazyConfigDict(chatglm="ChatGLMConfig", ...)
            for kw in v.keywords:
                if kw.arg and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                    out[kw.arg] = (kw.value.value, kw.value.lineno)
    return out, rel


def _lazy_map(source: SourceTree) -> dict[str, str]:
    """The configs package's PEP 562 map, class name -> module (``"transformers"`` for re-exports)."""
    tree = _parse(source, source.module_path(CONFIGS_PACKAGE))
    out: dict[str, str] = {}
    if tree is None:
        return out
    for st in tree.body:
        v = st.value if isinstance(st, (ast.Assign, ast.AnnAssign)) else None
        if not isinstance(v, ast.Dict) or not v.keys:
            continue
        pairs = [(k.value, x.value) for k, x in zip(v.keys, v.values, strict=True)
                 if isinstance(k, ast.Constant) and isinstance(k.value, str)
                 and isinstance(x, ast.Constant) and isinstance(x.value, str)]
        if len(pairs) == len(v.keys):  # a dict of string constants only
            out.update(pairs)
    return out


def _resolve_class(graph: ClassGraph, source: SourceTree, module: str, name: str, lazy: dict[str, str]) -> _ClassInfo:
    r = graph.resolve_dotted(module, name)
    if r.kind == "class" and r.key is not None:
        return _ClassInfo(r.key, None, f"{graph.path_of(r.key)}:{(graph.class_facts(r.key) or _NoLine).line}")
    if r.kind == "external":
        return _ClassInfo(None, r.name, "outside the tree")
    target = lazy.get(name.rsplit(".", 1)[-1])
    if target is not None:
        if target.split(".")[0] != "vllm":
            return _ClassInfo(None, f"{target}.{name}", f"the configs package maps it to {target}")
        key = ClassKey(target, name.rsplit(".", 1)[-1])
        cf = graph.class_facts(key)
        if cf is not None:
            return _ClassInfo(key, None, f"{graph.path_of(key)}:{cf.line}")
    return _ClassInfo(None, None, f"{name} cannot be resolved from {module}")


class _NoLine:
    line = 0


def _class_node(source: SourceTree, graph: ClassGraph, key: ClassKey) -> ast.ClassDef | None:
    tree = _parse(source, graph.path_of(key))
    if tree is None:
        return None
    for st in tree.body:
        if isinstance(st, ast.ClassDef) and st.name == key.qualname:
            return st
    return None


def _text_attr_and_classes(cls: ast.ClassDef) -> tuple[str | None, list[str], int]:
    """The attribute holding the text sub-config, the classes it is built with, and the line."""
    attr: str | None = None
    for st in cls.body:
        if isinstance(st, ast.FunctionDef) and st.name == "get_text_config":
            for n in ast.walk(st):
                if isinstance(n, ast.Return) and n.value is not None:
                    d = dotted(n.value)
                    if d.startswith("self.") and d.count(".") == 1:
                        attr = d[5:]
    init = next((st for st in cls.body if isinstance(st, ast.FunctionDef) and st.name == "__init__"), None)
    locals_: dict[str, list[str]] = {}
    assigned: dict[str, tuple[list[str], int]] = {}
    sub_configs: dict[str, str] = {}
    for st in cls.body:
        if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "sub_configs" for t in st.targets) \
                and isinstance(st.value, ast.Dict):
            for k, v in zip(st.value.keys, st.value.values, strict=True):
                if isinstance(k, ast.Constant) and isinstance(k.value, str) and dotted(v):
                    sub_configs[k.value] = dotted(v)
    if init is not None:
        for n in ast.walk(init):
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and dotted(n.value.func):
                for t in n.targets:
                    if isinstance(t, ast.Name):
                        locals_.setdefault(t.id, []).append(dotted(n.value.func))
        for n in ast.walk(init):
            if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                    d = dotted(t)
                    if not (d.startswith("self.") and d.count(".") == 1):
                        continue
                    name = d[5:]
                    v = n.value
                    built = ([dotted(v.func)] if isinstance(v, ast.Call) and dotted(v.func)
                             else locals_.get(v.id, []) if isinstance(v, ast.Name) else [])
                    if isinstance(n, ast.AnnAssign) and dotted(n.annotation):
                        built = built or [dotted(n.annotation)]
                    assigned[name] = (list(dict.fromkeys(built)), n.lineno)
    names = (attr,) if attr else TEXT_CONFIG_NAMES
    for name in names:
        if name in assigned:
            return name, assigned[name][0], assigned[name][1]
        if name in sub_configs:
            return name, [sub_configs[name]], cls.lineno
    return (attr, [], cls.lineno) if attr else (None, [], cls.lineno)


def text_model_type(graph: ClassGraph, source: SourceTree, cfg: dict, config_attr: str) -> TextModelType:
    """The ``model_type`` the gate compares, for this tree and this ``config.json``."""
    top = cfg.get("model_type") if isinstance(cfg.get("model_type"), str) else None
    steps: list[str] = [f"config.json: model_type = {top!r}"]
    if config_attr != "hf_text_config":
        steps.append(f"the gate reads {config_attr}.model_type, the checkpoint's own")
        return TextModelType(top, top, top is not None, tuple(steps))
    registry, reg_path = config_registry(source)
    hit = registry.get(top or "")
    if hit is None:
        return _from_json(cfg, top, steps + [
            f"{top!r} is not in {REGISTRY_NAME} ({reg_path or CONFIG_MODULE}), so Transformers' AutoConfig builds it"],
            exact=False)
    cls_name, line = hit
    steps.append(f"{REGISTRY_NAME} maps {top!r} to {cls_name} ({reg_path}:{line})")
    info = _resolve_class(graph, source, CONFIGS_PACKAGE, cls_name, _lazy_map(source))
    if info.key is None:
        steps.append(f"{cls_name} is {info.external or 'not found'} ({info.where})")
        return _from_json(cfg, top, steps, exact=False)
    node = _class_node(source, graph, info.key)
    if node is None:
        return _from_json(cfg, top, steps + [f"{cls_name} ({info.where}) cannot be read"], exact=False)
    attr, built, aline = _text_attr_and_classes(node)
    path = graph.path_of(info.key)
    if attr is None:
        mt = _class_model_type(graph, info.key) or top
        steps.append(f"{cls_name} ({info.where}) has no text sub-config, so hf_text_config is the config itself")
        return TextModelType(mt, top, mt is not None, tuple(steps))
    origins: list[tuple[str, _ClassInfo]] = [(b, _resolve_class(graph, source, info.key.module, b, {})) for b in built]
    described = [f"{b} ({ti.where})" if ti.key is not None
                 else f"{b} (from {ti.external.rsplit('.', 1)[0]}, outside this tree)" if ti.external
                 else b for b, ti in origins]
    steps.append(f"{cls_name}.{attr} holds the text config ({path}:{aline})"
                 + (f", built as {' / '.join(described)}" if described else ""))
    sub = cfg.get(attr) if isinstance(cfg.get(attr), dict) else None
    if sub is not None and isinstance(sub.get("model_type"), str):
        steps.append(f"config.json: {attr}.model_type = {sub['model_type']!r}, "
                     "which the sub-config keeps as its model_type")
        return TextModelType(sub["model_type"], top, True, tuple(steps))
    for b, ti in origins:
        if ti.key is not None:
            mt = _class_model_type(graph, ti.key)
            if mt is not None:
                steps.append(f"{b}.model_type = {mt!r}")
                return TextModelType(mt, top, True, tuple(steps))
        elif ti.external:
            steps.append(f"{b}'s model_type is not in this tree, and config.json's {attr} gives none")
    return TextModelType(None, top, False, tuple(steps))


def _class_model_type(graph: ClassGraph, key: ClassKey) -> str | None:
    hit = graph.member_origin(key, "model_type")
    if hit is None or hit[1].value is None:
        return None
    try:
        v = ast.literal_eval(hit[1].value)
    except (ValueError, SyntaxError):
        return None
    return v if isinstance(v, str) else None


def _from_json(cfg: dict, top: str | None, steps: list[str], exact: bool) -> TextModelType:
    for name in TEXT_CONFIG_NAMES:
        sub = cfg.get(name)
        if isinstance(sub, dict) and isinstance(sub.get("model_type"), str):
            steps.append(f"config.json: {name}.model_type = {sub['model_type']!r} (the sub-config Transformers' "
                         "get_text_config() returns)")
            return TextModelType(sub["model_type"], top, exact, tuple(steps))
    steps.append("config.json has no text sub-config, so hf_text_config is the config itself")
    return TextModelType(top, top, exact and top is not None, tuple(steps))


# -- a registered inner model's architecture when its sub-config names none --------------------------------------
VLLM_CONFIG_MODULE = "vllm.config.vllm"
CAUSAL_LM_TABLE = "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES"


def causal_lm_fallback(source: SourceTree) -> int | None:
    """The line of ``VllmConfig.with_hf_config`` when it names a sub-config without ``architectures`` after
    Transformers' ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[model_type]`` (0.32.0 ``vllm/config/vllm.py:942-951``; 0.16.0
    has no such fallback), else None. ``init_vllm_registered_model(hf_config=config.text_config)`` goes through it."""
    rel = source.module_path(VLLM_CONFIG_MODULE)
    tree = _parse(source, rel)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "with_hf_config" and any(
                isinstance(n, ast.Name) and n.id == CAUSAL_LM_TABLE or
                isinstance(n, ast.alias) and n.name == CAUSAL_LM_TABLE for n in ast.walk(node)):
            return node.lineno
    return None


def causal_lm_names() -> dict[str, str]:
    """Transformers' table, as data (``data/causal_lm_names.json``, written by ``scripts/causal_lm_names.py``)."""
    import json
    from importlib import resources

    data = json.loads(resources.files("eagle3_lint").joinpath("data/causal_lm_names.json").read_text())
    names: dict[str, str] = data["names"]
    return names
