"""Observers installed in SGLang's scheduler process (spawned; loaded from sitecustomize when SGLCPU_OBSERVE is set)."""
import importlib.abc
import importlib.util
import json
import os
import sys
import traceback

OUT = os.environ.get("SGLCPU_OBSERVE")

def emit(**rec):
    with open(OUT, "a") as f:
        f.write(json.dumps(rec) + "\n")

def _decoder(model):
    import torch.nn as nn
    best = None
    for name, mod in model.named_modules():
        layers = getattr(mod, "layers", None)
        if isinstance(layers, nn.ModuleList) and (best is None or len(layers) > len(best[1].layers)):
            best = (name, mod)
    return best

def install(model, ids):
    import torch
    name, dec = _decoder(model)
    states = {}
    def pre_norm(idx):
        def hook(mod, args, kwargs):
            try:
                x = args[0] if args else kwargs.get("x")
                r = args[1] if len(args) > 1 else kwargs.get("residual")
                states[idx] = (x.float() + r.float()).to(x.dtype) if r is not None else x.clone()
            except Exception as e:  # never break the engine
                emit(kind="observer-error", where=f"norm {idx}", error=repr(e))
        return hook
    n = len(dec.layers)
    for i, layer in enumerate(dec.layers):
        layer.input_layernorm.register_forward_pre_hook(pre_norm(i), with_kwargs=True)
    dec.norm.register_forward_pre_hook(pre_norm(n), with_kwargs=True)
    orig = dec.forward
    def forward(*a, **k):
        states.clear()
        out = orig(*a, **k)
        try:
            if isinstance(out, tuple) and len(out) == 2:
                aux = out[1]
                if isinstance(aux, torch.Tensor):
                    h = states[0].shape[-1]
                    aux = list(aux.split(h, dim=-1))
                matched = [[j for j, s in sorted(states.items()) if s.shape == t.shape and torch.equal(s, t)]
                           for t in aux]
                emit(kind="aux", tokens=int(aux[0].shape[0]) if aux else 0, matched=matched,
                     widths=[int(t.shape[-1]) for t in aux])
            else:
                emit(kind="no-aux")
        except Exception as e:
            emit(kind="observer-error", where="decoder", error=repr(e))
        return out
    dec.forward = forward
    emit(kind="installed", decoder=name, layers=n, cls=type(model).__name__)

def fc_hook(model):
    fc = getattr(getattr(model, "model", None), "fc", None)
    if fc is None:
        return
    def hook(mod, args):
        emit(kind="fc", input_width=int(args[0].shape[-1]), fc_in=int(mod.weight.shape[1]))
    fc.register_forward_pre_hook(hook)
    emit(kind="fc-installed", cls=type(model).__name__, fc_in=int(fc.weight.shape[1]))

def patch_model_runner(mr):
    orig_conf = mr.configure_aux_hidden_state_capture
    def conf(*, model, eagle_use_aux_hidden_state, eagle_aux_hidden_state_layer_ids, **kw):
        emit(kind="setter-call", use_aux=bool(eagle_use_aux_hidden_state),
             ids=None if eagle_aux_hidden_state_layer_ids is None else list(eagle_aux_hidden_state_layer_ids),
             cls=type(model).__name__, has_setter=hasattr(model, "set_eagle3_layers_to_capture"))
        orig_conf(model=model, eagle_use_aux_hidden_state=eagle_use_aux_hidden_state,
                  eagle_aux_hidden_state_layer_ids=eagle_aux_hidden_state_layer_ids, **kw)
        if eagle_use_aux_hidden_state:
            try:
                _, dec = _decoder(model)
                emit(kind="after-setter", layers_to_capture=list(getattr(dec, "layers_to_capture", []) or []),
                     capture_flag=bool(getattr(model, "capture_aux_hidden_states", False)))
                install(model, eagle_aux_hidden_state_layer_ids)
            except Exception:
                emit(kind="observer-error", where="install", error=traceback.format_exc()[-800:])
        else:
            fc_hook(model)
    mr.configure_aux_hidden_state_capture = conf

class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != "sglang.srt.model_executor.model_runner":
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        loader = spec.loader
        orig_exec = loader.exec_module
        def exec_module(module):
            orig_exec(module)
            patch_model_runner(module)
        loader.exec_module = exec_module
        return spec

if OUT:
    sys.meta_path.insert(0, _Finder())
