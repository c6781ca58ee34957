def init_vllm_registered_model(vllm_config, *, hf_config=None, prefix="", architectures=None):
    raise NotImplementedError
