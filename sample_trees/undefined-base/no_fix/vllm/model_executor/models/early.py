from torch import nn


class EarlyForCausalLM(nn.Module, LateMixin):  # expect: EGL008
    pass


class LateMixin:
    pass
