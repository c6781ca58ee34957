"""``source_ast.read_function``: a method parsed from its own lines is the node a parse of its whole module gives.

SGLang's drafter checks walk a few model methods' syntax while the engine derives its data (``method_node``; the
semantic model reads the facts' ``Body`` instead); they used to parse the whole model file for each one
(``read_module``). ``read_function`` parses the def's span from
the facts (first decorator to last line) under an ``if 1:``; every field and position must be what
``minieval.function_at`` finds in the whole module, or the walks would read another tree.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from eagle3_lint import minieval as me
from eagle3_lint import source_ast as sem
from eagle3_lint.engines import dir_source
from eagle3_lint.facts import decode_source
from eagle3_lint.queries import Memo, Queries
from eagle3_lint.store import FactStore

# Shapes a span must survive: decorators over several lines with a comment between them, a body line less
# indented than the def inside a string and a bracket, a continuation, tabs, async, a one-line def, CRLF and CR
# line ends, a form feed, non-ASCII text before a column, and a def inside a class made by a function.
TRICKY = (
    "import torch\n"
    "\n"
    "class A(torch.nn.Module):\n"
    "    @torch.no_grad(\n"
    "        )\n"
    "    # a comment between decorators, at column 0 below\n"
    "# here\n"
    "    @staticmethod\n"
    "    def f(x, y=(1,\n"
    "2)):\n"
    "        s = '''\n"
    "text at column 0\n"
    "'''\n"
    "        return x + \\\n"
    "            y\n"
    "\n"
    "    async def g(self):  # é\n"
    "        await self.h(getattr(self.layers[0], 'capture', False))\n"
    "\n"
    "    def one(self): return super().forward(self.x)\n"
    "\f\n"
    "    def after_ff(self):\n"
    "        self.layers_to_capture = [i + 1 for i in range(3)]\r\n"
    "        return 'ü', self.layers_to_capture\r"
    "\n"
    "\n"
    "def factory():\n"
    "\tclass B:\n"
    "\t\tdef tabbed(self):\n"
    "\t\t\treturn 1\n"
    "\treturn B\n"
)


class _Model:
    def __init__(self, root: Path) -> None:
        self.source = dir_source(root)
        self.queries = Queries()
        self.memo = Memo(self.queries)


def _defs(sm: _Model, store: FactStore, rel: str) -> int:
    """Compare every def of every class of ``rel``; returns how many were compared."""
    mf = store.load_path(rel)
    assert mf is not None and not mf.error, rel
    tree = me.parse(decode_source(sm.source.read_bytes(rel)), rel)
    assert tree is not None
    n = 0
    for cf in mf.classes.values():
        for m in cf.members.values():
            if m.kind != "def":
                continue
            want = me.function_at(tree, m.line)
            got = sem.read_function(sm, rel, m.first_line or m.line, m.line, m.end_line)  # type: ignore[arg-type]
            assert want is not None and got is not None, (rel, m.name)
            assert ast.dump(got, include_attributes=True) == ast.dump(want, include_attributes=True), (rel, m.name)
            n += 1
    return n


def test_a_span_parses_to_the_node_the_whole_module_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def whole(*a: object) -> None:
        raise AssertionError("read the whole module")

    monkeypatch.setattr(sem, "_whole", whole)  # every def here is read from its own lines
    rel = "vllm/model_executor/models/tricky.py"
    (tmp_path / rel).parent.mkdir(parents=True)
    (tmp_path / rel).write_bytes(TRICKY.encode())
    sm = _Model(tmp_path)
    store = FactStore(sm.source)
    assert store.load_path(rel).classes["A"].members["f"].first_line == 4  # type: ignore[union-attr]
    assert _defs(sm, store, rel) == 5


@pytest.mark.real
def test_methods_of_real_sglang_files_parse_alone_as_in_their_module(tmp_path: Path) -> None:
    from tests.sglang.conftest import SglangTrees

    root = SglangTrees().get("0.5.23")
    sm = _Model(root)
    store = FactStore(sm.source)
    # The files the collection walks read most (the decoders and wrappers most architectures reach).
    files = [f"sglang/srt/models/{f}.py" for f in ("llama", "qwen2", "qwen3_vl", "deepseek_v2", "kimi_vl")]
    assert sum(_defs(sm, store, rel) for rel in files) > 150  # every def of those files: 198 in 0.5.23
