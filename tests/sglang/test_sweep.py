"""Every SGLang release from 0.4.7 to 0.5.23: the derived contract runs without a crash and is complete."""

from __future__ import annotations

import pytest

from eagle3_lint.engines.sglang.runner import IdsPassed
from eagle3_lint.engines.sglang.verdicts import Status, contract

# ``pip index versions sglang`` on 2026-12-01, final releases only (0.5.0 was never published).
RELEASES = ["0.4.7", "0.4.8", "0.4.9", "0.4.10"] + [f"0.5.{i}" for i in range(1, 24)]


@pytest.mark.real
@pytest.mark.slow
@pytest.mark.parametrize("version", RELEASES)
def test_release(sglang_trees, version: str) -> None:
    c = contract(sglang_trees.get(version))
    assert c.version == version
    assert c.registry.modules > 60 and not c.registry.duplicates
    assert all(e.kind.value == "class" for e in c.registry.entries)
    assert len(c.verdicts) == len({e.arch for e in c.registry.entries}) > 80
    assert all(v.status is not Status.UNKNOWN for v in c.verdicts)
    assert sum(v.status is Status.SUPPORTED for v in c.verdicts) >= 7
    assert c.call_sites, "the runner's capture call moved out of sight"
    # Custom drafter ids reach the model from 0.4.9 on; before, the runner only asked for defaults.
    minor = tuple(int(x) for x in version.split("."))
    assert any(s.ids is IdsPassed.DRAFTER for s in c.call_sites) == (minor >= (0, 4, 9))
    assert bool(c.id_sources) == (minor >= (0, 4, 9))
