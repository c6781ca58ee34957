from torch import nn


class FamForCausalLM(nn.Module):
    pass
