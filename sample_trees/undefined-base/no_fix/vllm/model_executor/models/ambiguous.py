from torch import nn


class AmbiguousForCausalLM(nn.Module, RotaryMixin):  # expect: EGL008
    pass
