import importlib

_CLASS_TO_MODULE: dict[str, str] = {
    "ChatGLMConfig": "vllm.transformers_utils.configs.chatglm",
    "KimiK25Config": "vllm.transformers_utils.configs.kimi_k25",
    # DeepseekV3Config is re-exported from Transformers.
    "DeepseekV3Config": "transformers",
}


def __getattr__(name: str):
    if name in _CLASS_TO_MODULE:
        return getattr(importlib.import_module(_CLASS_TO_MODULE[name]), name)
    raise AttributeError(name)
