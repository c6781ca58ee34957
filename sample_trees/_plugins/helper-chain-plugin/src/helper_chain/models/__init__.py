"""The package's register helper: delegates to helpers in sibling modules."""

from vllm import ModelRegistry

from helper_chain import vision
from helper_chain.text import register_text  # re-exported under this name


def register_model():
    register_text(ModelRegistry)
    vision.register_vision(with_text=False)
