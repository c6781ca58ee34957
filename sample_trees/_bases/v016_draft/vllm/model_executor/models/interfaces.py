from typing import ClassVar, Literal, Protocol, runtime_checkable


@runtime_checkable
class SupportsPP(Protocol):
    supports_pp: ClassVar[Literal[True]] = True


@runtime_checkable
class SupportsEagleBase(Protocol):
    has_own_lm_head: bool = False
    has_own_embed_tokens: bool = False


@runtime_checkable
class SupportsEagle(SupportsEagleBase, Protocol):
    supports_eagle: ClassVar[Literal[True]] = True


@runtime_checkable
class SupportsEagle3(SupportsEagleBase, Protocol):
    supports_eagle3: ClassVar[Literal[True]] = True

    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        ...

    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
        ...


def supports_eagle3(model: object) -> bool:
    return isinstance(model, SupportsEagle3)
