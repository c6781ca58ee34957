from torch import nn


class Fam2ForCausalLM(nn.Module):
    pass
