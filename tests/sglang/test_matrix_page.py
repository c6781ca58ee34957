"""docs/matrix/sglang.html is current: its newest release's column is what the tool says of SGLang 0.5.23."""

from __future__ import annotations

import pytest

from tests.test_matrix_html import assert_newest_column_is_current


@pytest.mark.real
def test_sglang_page_in_docs_is_current(sglang_trees) -> None:
    assert_newest_column_is_current("sglang", sglang_trees.get("0.5.23"))
