from torch import nn

from vllm.model_executor.models.alias import AliasForCausalLM as _Base

try:
    from .fast_kernels import FastNorm
except ImportError:
    FastNorm = None


class ReexportForCausalLM(_Base):
    pass


class PlainForCausalLM(nn.Module):
    pass
