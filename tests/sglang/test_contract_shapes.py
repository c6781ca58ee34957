"""Shapes of EntryClass and of wrappers that the released trees have few or none of, on a small tree.

Each file below is written the way SGLang writes them; the expected answers are what SGLang's own
registry and ``hasattr`` would give if the tree were imported.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from eagle3_lint.engines.sglang.verdicts import Status, contract

FILES = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/models/__init__.py": "",
    "sglang/srt/models/llama.py": """
        from torch import nn

        class LlamaModel(nn.Module):
            pass

        class LlamaForCausalLM(nn.Module):
            def __init__(self, config):
                self.model = LlamaModel(config)

            def set_eagle3_layers_to_capture(self, layer_ids=None):
                if layer_ids is None:
                    num_layers = self.config.num_hidden_layers
                    self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
                else:
                    self.model.layers_to_capture = [val + 1 for val in layer_ids]

        class PlainForCausalLM(nn.Module):
            pass

        # An alias: SGLang keys the registry by __name__, so this registers "LlamaForCausalLM" once.
        LlamaAlias = LlamaForCausalLM
        EntryClass = [LlamaAlias] + [PlainForCausalLM]
    """,
    "sglang/srt/models/helper_common/__init__.py": "",
    "sglang/srt/models/helper_common/modeling.py": """
        from torch import nn
        from sglang.srt.models.llama import LlamaForCausalLM, LlamaModel

        class TextModel(LlamaModel):
            def set_eagle3_layers_to_capture(self, layer_ids=None):
                self.layers_to_capture = layer_ids

        class VLBase(nn.Module):
            def __init__(self, config, language_model_cls=LlamaModel):
                self.model = language_model_cls(config)

        class VLWithText(VLBase):
            def __init__(self, config, language_model_cls=TextModel):
                super().__init__(config, language_model_cls)

        class OcrWrapper(nn.Module):
            def __init__(self, config):
                if config.small:
                    self.model = PlainStub(config)
                else:
                    self.model = LlamaForCausalLM(config)

        class PlainStub(nn.Module):
            pass
    """,
    # A re-export: the registry module imports the list from elsewhere.
    "sglang/srt/models/vl.py": """
        from sglang.srt.models.vl_entries import EntryClass
    """,
    "sglang/srt/models/vl_entries.py": """
        from sglang.srt.models.helper_common.modeling import VLBase, VLWithText, OcrWrapper
        from sglang.srt.models.missing_module import GoneBase

        class Broken(GoneBase):
            pass

        EntryClass = [VLWithText, OcrWrapper, Broken]
    """,
    "sglang/srt/models/notes.py": "X = 1\n",
}


def _tree(tmp_path: Path) -> Path:
    for rel, text in FILES.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip())
    return tmp_path


def test_entry_shapes_and_wrappers(tmp_path: Path) -> None:
    c = contract(_tree(tmp_path))
    d = c.by_arch()
    # Alias registered under the class's own name; lists joined with +; EntryClass imported from
    # another module counts for both modules that bind it (SGLang would assert on the duplicate).
    assert set(d) == {"LlamaForCausalLM", "PlainForCausalLM", "VLWithText", "OcrWrapper", "Broken"}
    assert c.registry.without_entry == ("sglang/srt/models/notes.py",)
    assert "VLWithText" in c.registry.duplicates
    assert d["LlamaForCausalLM"].status is Status.SUPPORTED and (llama := d["LlamaForCausalLM"].setter) is not None \
        and llama.offset == 1
    assert d["PlainForCausalLM"].status is Status.UNSUPPORTED and d["PlainForCausalLM"].supports is False
    # The most derived constructor default is what the base's ``language_model_cls(...)`` builds.
    vl = d["VLWithText"]
    assert vl.status is Status.WRAPPER_GAP and vl.inner == ("TextModel",) and vl.supports is False
    # One branch of the config-dependent ``self.model`` holds a class with the setter.
    assert d["OcrWrapper"].status is Status.WRAPPER_GAP and d["OcrWrapper"].inner == ("LlamaForCausalLM",)
    # A base from an SGLang module the tree does not hold: no guess.
    assert d["Broken"].status is Status.UNKNOWN and d["Broken"].supports is None
    assert any("missing_module" in e.text for e in d["Broken"].evidence)


MORE = {
    # A wrapper that already delegates (Gemma3ForConditionalGeneration's idiom) and one that does not.
    "sglang/srt/models/mm.py": """
        from typing import List, Optional

        from torch import nn
        from sglang.srt.models.llama import LlamaForCausalLM

        class DelegatingVL(nn.Module):
            def __init__(self, config):
                self.language_model = LlamaForCausalLM(config)

            def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
                if hasattr(self.language_model, "set_eagle3_layers_to_capture"):
                    self.language_model.set_eagle3_layers_to_capture(layer_ids)

        EntryClass = [DelegatingVL]
    """,
    "sglang/srt/models/gap.py": """
        from torch import nn
        from sglang.srt.models.llama import LlamaForCausalLM

        class GapVL(nn.Module):
            def __init__(self, config):
                self.language_model = LlamaForCausalLM(config)

        def replace_linear(style):
            # A base bound by tuple unpacking inside the factory (SGLang's transformers.py): bound, not undefined.
            base_cls, kwargs = {"colwise": (nn.Linear, {})}[style]

            class Compat(base_cls):
                pass

            return Compat

        EntryClass = [GapVL]
    """,
    "sglang/srt/model_executor/__init__.py": "",
    "sglang/srt/model_executor/model_runner.py": """
        class ModelRunner:
            def init(self, ids):
                self.model.set_eagle3_layers_to_capture(ids)
    """,
}


def test_check_on_a_small_tree(tmp_path: Path) -> None:
    """The core's check with SGLang's engine: only the rules SGLang is modelled for, EGL002 on the wrappers
    with a fix copying the tree's own delegating setter, no EGL008 on a tuple-unpacked factory base."""
    from eagle3_lint import analysis, fixes
    from eagle3_lint.engines import dir_source

    root = _tree(tmp_path)
    for rel, text in MORE.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip())
    ctx = analysis.analyze(dir_source(root), analysis.Options(targets=("GapVL", "PlainForCausalLM")))
    assert ctx.engine.name == "sglang" and not ctx.errors
    assert ctx.verdicts["DelegatingVL"].status is Status.SUPPORTED
    (site,) = ctx.runner.sites
    assert site.interrogated == "self.model" and not site.checked and site.error.startswith("AttributeError")
    assert {f.rule for f in ctx.findings} <= {"EGL001", "EGL002"}
    (missing,) = [f for f in ctx.findings if f.rule == "EGL001"]
    assert missing.architecture == "PlainForCausalLM" and missing.fix is None
    assert "the runner's set_eagle3_layers_to_capture() check" in missing.message
    (gap,) = [f for f in ctx.findings if f.rule == "EGL002" and f.architecture == "GapVL"]
    assert gap.fix is not None and "as DelegatingVL does" in gap.fix.title
    assert {e.path for e in gap.fix.edits} == {"sglang/srt/models/gap.py"}  # the imports and the method
    plan = fixes.plan(ctx.source, [gap], unsafe=True)
    fixes.apply(root, plan)
    text = (root / "sglang/srt/models/gap.py").read_text()
    compile(text, "gap.py", "exec")
    # The header's names come with their import from the idiom's module: one statement, in a standard-library
    # section of its own above the file's other imports (isort's order), not two lines after the last import.
    assert text.startswith("from typing import List, Optional\n\nfrom torch import nn\n")
    again = analysis.analyze(dir_source(root), analysis.Options(targets=("GapVL",)))
    assert again.verdicts["GapVL"].status is Status.SUPPORTED
    assert not [f for f in again.findings if f.architecture == "GapVL"]
