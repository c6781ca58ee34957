"""The mutation library of the incremental differential test (tests/mutate.py) and its report diff helper do
what they say on real model files (the sample trees' vLLM and SGLang llama.py) and on the awkward spellings
ast positions have to survive: non-ASCII text before a column, a lone base with a trailing comma, decorators,
a method that is its class's only statement."""

from __future__ import annotations

import ast
import json
import random
from pathlib import Path

import pytest

from tests import mutate
from tests.conftest import SAMPLES
from tests.mutate import Kind
from tests.test_incremental_mutations import first_json_difference, json_difference, text_difference

VLLM_LLAMA = SAMPLES / "slice-relative-aux-index/good_v016/vllm/model_executor/models/llama.py"
SGLANG_LLAMA = SAMPLES / "_bases/sglang_draft/sglang/srt/models/llama.py"


def _classes(text: str) -> dict[str, ast.ClassDef]:
    return {c.name: c for c in ast.walk(ast.parse(text)) if isinstance(c, ast.ClassDef)}


def _methods(cls: ast.ClassDef) -> list[str]:
    return [f.name for f in cls.body if isinstance(f, ast.FunctionDef)]


def _edit(kind: Kind, text: str, seed: int = 0) -> mutate.Edit:
    e = mutate.mutate_text(kind, text, random.Random(seed), tag=5)
    assert e is not None, kind
    return e


@pytest.mark.parametrize("path", [VLLM_LLAMA, SGLANG_LLAMA], ids=["vllm", "sglang"])
def test_every_text_kind_applies_to_llama_and_does_what_it_says(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    before = _classes(text)
    for seed in range(6):
        after = _classes(_edit(Kind.DROP_BASE, text, seed).text)
        assert sum(len(c.bases) for c in after.values()) == sum(len(c.bases) for c in before.values()) - 1

        after = _classes(_edit(Kind.DELETE_METHOD, text, seed).text)
        lost = [(n, m) for n, c in before.items() for m in _methods(c) if m not in _methods(after[n])]
        assert len(lost) == 1 and lost[0][1] in mutate.METHODS, lost

        e = _edit(Kind.RENAME_CLASS, text, seed)
        old = e.detail.split()[1]
        tree = ast.parse(e.text)
        assert f"{old}Mut5" in _classes(e.text) and old not in _classes(e.text)
        assert not any(isinstance(n, ast.Name) and n.id == old for n in ast.walk(tree))

        # Same seed, same edit: a sequence replays from its seed.
        assert _edit(Kind.RETARGET_INNER, text, seed) == _edit(Kind.RETARGET_INNER, text, seed)

    e = _edit(Kind.DROP_AUX_RETURN, text)
    assert "-> return hidden_states" in e.detail
    returns = [ast.unparse(r) for r in ast.walk(ast.parse(e.text)) if isinstance(r, ast.Return)]
    assert returns.count("return (hidden_states, aux_hidden_states)") < \
        [ast.unparse(r) for r in ast.walk(ast.parse(text)) if isinstance(r, ast.Return)].count(
            "return (hidden_states, aux_hidden_states)")

    e = _edit(Kind.DROP_AUX_CAPTURE, text)
    assert ast.unparse(ast.parse(e.text)).count("aux_hidden_states") < ast.unparse(ast.parse(text)).count(
        "aux_hidden_states"), e.detail

    e = _edit(Kind.APPEND_FUNCTION, text)
    assert e.text.startswith(text) and "def _mutation_probe_5() -> int:" in e.text


def test_add_eagle3_base_imports_it_the_way_the_file_imports_interfaces() -> None:
    text = VLLM_LLAMA.read_text(encoding="utf-8")
    e = _edit(Kind.ADD_EAGLE3_BASE, "from .interfaces import SupportsPP\n\n\nclass A(SupportsPP):\n    pass\n")
    assert e.text.splitlines()[:2] == ["from .interfaces import SupportsPP", "from .interfaces import SupportsEagle3"]
    assert [ast.unparse(b) for b in _classes(e.text)["A"].bases] == ["SupportsPP", "SupportsEagle3"]
    # llama.py already imports it: only the class changes.
    for seed in range(4):
        e = _edit(Kind.ADD_EAGLE3_BASE, text, seed)
        cls = e.detail.split()[0]
        assert "SupportsEagle3" in [ast.unparse(b) for b in _classes(e.text)[cls].bases]
        assert e.text.count("import") == text.count("import")


def test_positions_survive_non_ascii_trailing_commas_decorators_and_lone_methods() -> None:
    # ast columns are UTF-8 bytes: the text before "SupportsPP" holds two 2-byte characters.
    src = ('"""Modèle."""\n\n\nclass Modèle(Base, SupportsPP):  # é\n    @property\n    @staticmethod\n'
           '    def forward(self):\n        return 1\n\n\nclass Lone(\n    Base,\n):\n    x = "ü"\n')
    seen_bases, seen_methods = set(), set()
    for seed in range(40):
        for kind in (Kind.DROP_BASE, Kind.DELETE_METHOD, Kind.RENAME_CLASS, Kind.ADD_EAGLE3_BASE):
            e = mutate.mutate_text(kind, src, random.Random(seed), tag=1)
            assert e is not None
            after = _classes(e.text)  # parses: mutate_text raises otherwise
            if kind is Kind.DROP_BASE:
                seen_bases.add(e.detail)
                assert "# é" in e.text
            if kind is Kind.DELETE_METHOD:
                seen_methods.add(e.detail)
                assert "@property" not in e.text and "        pass\n" not in e.text
                assert _methods(after["Modèle"]) == []
            if kind is Kind.RENAME_CLASS:
                assert set(after) in ({"ModèleMut1", "Lone"}, {"Modèle", "LoneMut1"}), set(after)
    assert seen_bases == {"Modèle loses base Base", "Modèle loses base SupportsPP", "Lone loses base Base"}
    assert seen_methods == {"Modèle.forward deleted"}
    lone = mutate.mutate_text(Kind.DELETE_METHOD, "class A:\n    def __init__(self):\n        pass\n", random.Random(0))
    assert lone is not None and lone.text == "class A:\n    pass\n"
    # Nothing to apply to, or a file that does not parse: None, never a broken file.
    assert mutate.mutate_text(Kind.DROP_AUX_RETURN, src, random.Random(0)) is None
    assert mutate.mutate_text(Kind.DROP_BASE, "class Broken(\n", random.Random(0)) is None


def test_apply_on_a_tree_deletes_adds_and_skips_what_an_engine_lacks(tmp_path: Path) -> None:
    models = tmp_path / "sglang/srt/models"
    models.mkdir(parents=True)
    (models / "llama.py").write_text(SGLANG_LLAMA.read_text(encoding="utf-8"), encoding="utf-8")
    rel = "sglang/srt/models/llama.py"
    assert mutate.apply(tmp_path, rel, Kind.ADD_EAGLE3_BASE, random.Random(0), 1) is None  # vLLM's interface
    m = mutate.apply(tmp_path, rel, Kind.ADD_SUBCLASS_FILE, random.Random(0), 2)
    assert m is not None and m.path == "sglang/srt/models/zz_mutation_2.py"
    added = (tmp_path / m.path).read_text(encoding="utf-8")
    assert "from sglang.srt.models.llama import " in added and "EntryClass" not in added
    m = mutate.apply(tmp_path, rel, Kind.DELETE_FILE, random.Random(0), 3)
    assert m is not None and not (models / "llama.py").exists()
    assert mutate.apply(tmp_path, rel, Kind.DROP_BASE, random.Random(0), 4) is None


def test_report_differences_are_named_by_their_first_path() -> None:
    a = {"architectures": [{"name": "A", "status": "supported"}, {"name": "B", "status": "supported"}],
         "findings": []}
    b = json.loads(json.dumps(a))
    b["architectures"][1]["status"] = "unsupported"
    assert first_json_difference(a, b) == '/architectures/1(B)/status: "supported" != "unsupported"'
    b = json.loads(json.dumps(a))
    b["findings"].append({"rule": "EGL001"})
    assert json_difference(json.dumps(a), json.dumps(b)) == \
        '/findings: 0 items != 1; the second goes on with {"rule": "EGL001"}'
    spaced = json_difference(json.dumps(a), json.dumps(a, indent=1))
    assert spaced is not None and spaced.startswith("same data, bytes differ at offset 1"), spaced
    assert json_difference(json.dumps(a), json.dumps(a)) is None
    assert text_difference("x\ny\n", "x\nz\n") == "line 2: 'y' != 'z'"
