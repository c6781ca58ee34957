"""One model class per registration; all support EAGLE-3 through the tree's ToyForCausalLM."""

from vllm.model_executor.models.toy import ToyForCausalLM


class GuardedForCausalLM(ToyForCausalLM):
    pass


class GuardedCudaForCausalLM(ToyForCausalLM):
    pass


class GuardedRocmForCausalLM(ToyForCausalLM):
    pass


class GuardedNewForCausalLM(ToyForCausalLM):
    pass


class GuardedOldForCausalLM(ToyForCausalLM):
    pass


class GuardedFlashForCausalLM(ToyForCausalLM):
    pass


class GuardedExtraForCausalLM(ToyForCausalLM):
    pass


class GuardedTpuForCausalLM(ToyForCausalLM):
    pass
