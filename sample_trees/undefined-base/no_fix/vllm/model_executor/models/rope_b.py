class RotaryMixin:
    pass
