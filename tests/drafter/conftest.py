"""The drafter tests run on real SGLang releases too: the SGLang tests' fixture, shared."""

from tests.sglang.conftest import sglang_trees

__all__ = ["sglang_trees"]
