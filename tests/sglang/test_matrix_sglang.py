"""``matrix --engine sglang --releases A..B``: SGLang releases from the cache, with SGLang's legend.

Expectations from the source: KimiK25ForConditionalGeneration gains ``set_eagle3_layers_to_capture`` in 0.5.10
(``models/kimi_k25.py:841``, delegating to ``self.language_model``; 0.5.9's class has none while its language
model does: a wrapper gap); Qwen3VLForConditionalGeneration gains it in 0.5.11 (``models/qwen3_vl.py:1398``).
"""

from __future__ import annotations

import pytest

from eagle3_lint import matrix
from eagle3_lint.engines import get


@pytest.mark.real
def test_sglang_releases_in_a_matrix(sglang_trees) -> None:
    for v in ("0.5.9", "0.5.10", "0.5.11"):
        sglang_trees.get(v)  # in the cache (downloaded once)
    engine = get("sglang")
    specs = matrix.targets_from([], "0.5.9..0.5.11", str(sglang_trees.cache), False, engine)
    assert specs == ["sglang==0.5.9", "sglang==0.5.10", "sglang==0.5.11"]
    m = matrix.run(specs, str(sglang_trees.cache), 1)
    assert [r.label for r in m.releases] == ["0.5.9", "0.5.10", "0.5.11"] and not any(r.error for r in m.releases)
    kimi, qwen = m.row("KimiK25ForConditionalGeneration"), m.row("Qwen3VLForConditionalGeneration")
    assert kimi is not None and kimi.cells == ["wrapper-gap", "supported", "supported"]
    assert kimi.first_supported == "0.5.10"
    assert qwen is not None and qwen.first_supported == "0.5.11"
    assert m.engine.name == "sglang"
    text = matrix.to_markdown(m, [kimi], "eagle3-lint matrix --engine sglang --releases 0.5.9..0.5.11")
    assert text.startswith("# EAGLE-3 support matrix of SGLang releases")
    assert "set_eagle3_layers_to_capture" in text and "supports_eagle3" not in text
