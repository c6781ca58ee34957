from typing import TYPE_CHECKING

from torch.nn import *  # noqa: F403

from .mixins import *  # noqa: F403
from .lazy import LazyBase

try:
    from fast_kernels import KernelBase
except ImportError:
    KernelBase = object

if TYPE_CHECKING:
    from .typing_only import TypedBase

    class OnlyForTypes(TypedBase):
        pass


class StarForCausalLM(Module, CacheMixin):  # noqa: F405
    class Inner(Module):  # noqa: F405
        pass


class KernelModel(KernelBase, LazyBase):
    pass


class StarError(ValueError):
    pass


def as_wrapped(model_cls):
    Base = model_cls

    class Wrapped(model_cls):
        pass

    class Again(Base):
        pass

    return Wrapped
