def init_vllm_registered_model(vllm_config, *, hf_config=None, prefix="", architectures=None):
    raise NotImplementedError


def make_layers(num_hidden_layers, prefix=""):
    raise NotImplementedError
