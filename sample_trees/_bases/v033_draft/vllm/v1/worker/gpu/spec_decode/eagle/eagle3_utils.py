from vllm.model_executor.models.interfaces import supports_eagle3


def set_eagle3_aux_hidden_state_layers(model, spec_config, use_pp=False) -> None:
    if not supports_eagle3(model):
        raise RuntimeError("Model does not support EAGLE3 interface")
    aux_layers = get_eagle3_aux_layers_from_config(spec_config)
    if not aux_layers:
        aux_layers = model.get_eagle3_default_aux_hidden_state_layers()
    model.set_aux_hidden_state_layers(aux_layers)
    if use_pp:
        verify_supports_aux_hidden_states_over_pp(model, spec_config.method)


def verify_supports_aux_hidden_states_over_pp(model, method) -> None:
    inner = getattr(model.get_language_model() if hasattr(model, "get_language_model") else model, "model", None)
    if not getattr(inner, "supports_aux_hidden_states_over_pp", False):
        raise ValueError(f"{type(model).__name__} does not support {method} with pipeline parallelism")
