from torch import nn


class ToyBlock(nn.Module):
    def forward(self, h):
        return h


class ToyLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList(ToyBlock() for _ in range(config.num_hidden_layers))
        self.taps = []

    def forward(self, h):
        taps = []
        for i, layer in enumerate(self.layers):
            if i in self.taps:
                taps.append(h)
            h = layer(h)
        if not taps:
            return h
        return h, taps


class ToyLMForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = ToyLM(config)
        self.emit_taps = False

    def tap_layers(self, layer_ids=None):
        if layer_ids is None:
            n = len(self.model.layers)
            layer_ids = [2, n // 2, n - 3]
        self.model.taps = list(layer_ids)
        self.emit_taps = True

    def forward(self, h):
        out = self.model(h)
        taps = None
        if self.emit_taps:
            out, taps = out
        return out, taps
