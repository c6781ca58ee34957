from torch import nn

from .interfaces import SupportsEagle3, SupportsPP

# A directive quoted in a string is not a comment and suppresses nothing:
NOTE = "# eagle3-lint: ignore[EGL001]"


class SilencedForCausalLM(nn.Module, SupportsPP):  # eagle3-lint: ignore[EGL001] -- served without EAGLE-3 in this fork
    def __init__(self, config):
        super().__init__()


# eagle3-lint: ignore[EGL001] -- tracked in FORK-123
class NextLineForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()


class StaleModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList()
        self.aux_hidden_state_layers = tuple[int, ...]()

    def forward(self, hidden_states, residual):
        aux_hidden_states = []
        for idx, layer in enumerate(self.layers):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states + residual)
            hidden_states, residual = layer(hidden_states, residual)
        if len(aux_hidden_states) > 0:
            return hidden_states, aux_hidden_states
        return hidden_states


class StaleForCausalLM(nn.Module, SupportsPP, SupportsEagle3):  # eagle3-lint: ignore[EGL001]  # expect: EGL100
    def __init__(self, config):
        super().__init__()
        self.model = StaleModel(config)

    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.model.aux_hidden_state_layers = layers

    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
        num_layers = len(self.model.layers)
        return (2, num_layers // 2, num_layers - 3)


class PartlyForCausalLM(nn.Module):  # eagle3-lint: ignore[EGL001, EGL999]  # expect: EGL100
    pass


class BlanketForCausalLM(nn.Module):  # eagle3-lint: ignore  # expect: EGL001, EGL100
    pass
