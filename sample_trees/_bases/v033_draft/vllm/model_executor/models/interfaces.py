from typing import ClassVar, Literal, Protocol, runtime_checkable


@runtime_checkable
class SupportsPP(Protocol):
    supports_pp: ClassVar[Literal[True]] = True


@runtime_checkable
class SupportsEagleBase(Protocol):
    has_own_lm_head: bool = False
    has_own_embed_tokens: bool = False


class EagleModelMixin:
    start_layer: int
    aux_hidden_state_layers: tuple[int, ...] = ()
    supports_aux_hidden_states_over_pp: ClassVar[bool] = False

    def _set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.aux_hidden_state_layers = tuple(sorted(set(layers)))

    def _maybe_add_hidden_state(self, aux_hidden_states, layer_idx, hidden_states, residual):
        if layer_idx in self.aux_hidden_state_layers:
            aux_hidden_states.append(hidden_states + residual if residual is not None else hidden_states)
        return aux_hidden_states


@runtime_checkable
class SupportsEagle(SupportsEagleBase, Protocol):
    supports_eagle: ClassVar[Literal[True]] = True


@runtime_checkable
class SupportsEagle3(SupportsEagleBase, Protocol):
    supports_eagle3: ClassVar[Literal[True]] = True

    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        parent_ref = self
        if hasattr(self, "get_language_model"):
            parent_ref = self.get_language_model()
        elif hasattr(self, "language_model"):
            parent_ref = self.language_model
        holder = getattr(parent_ref, "model", parent_ref)
        assert isinstance(holder, EagleModelMixin)
        holder._set_aux_hidden_state_layers(layers)

    def get_eagle3_default_aux_hidden_state_layers(self) -> tuple[int, ...]:
        parent_ref = self
        if hasattr(self, "get_language_model"):
            parent_ref = self.get_language_model()
        elif hasattr(self, "language_model"):
            parent_ref = self.language_model
        holder = getattr(parent_ref, "model", parent_ref)
        assert hasattr(holder, "layers")
        num_layers = len(holder.layers)
        return (2, num_layers // 2, num_layers - 3)


def supports_eagle3(model: object) -> bool:
    return isinstance(model, SupportsEagle3)
