from setuptools import setup

setup(
    name="legacy-setup-plugin",
    version="0.1",
    packages=["legacy_toy"],
    entry_points={"vllm.general_plugins": ["legacy_toy = legacy_toy.plugin:register_all"]},
)
