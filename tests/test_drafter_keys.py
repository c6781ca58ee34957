"""EGL011 drafter-key-ignored: which drafter config keys a release's drafter code reads (engines/drafter_keys.py).

The reader is tested on the read forms drafter code uses; the real-release tests state, from each release's source
(file:line), on which side of the release that starts reading a key each release falls, and check the table
(data/drafter_keys.json) against the trees it was written from.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from eagle3_lint import engine_hooks
from eagle3_lint.analysis import Analysis, Options, analyze
from eagle3_lint.engines import dir_source
from eagle3_lint.engines import drafter_keys as dk
from eagle3_lint.engines.vllm.drafter import DRAFTER_MODULE_GLOBS
from eagle3_lint.serving import Gate, Outcome, StepResult
from tests.conftest import SAMPLES, session_cache

CHECKPOINTS = SAMPLES / "_checkpoints"
LLAMA = "vllm/model_executor/models/llama_eagle3.py"


def _reads(src: str) -> dict[str, int]:
    return dk.config_reads(ast.parse(src))


def test_reader_finds_each_read_form_on_the_config_object() -> None:
    src = '''
class M:
    def __init__(self, vllm_config, config=None):
        config = config or vllm_config.model_config.hf_config
        self.config = vllm_config.speculative_config.draft_model_config.hf_config
        a = config.hidden_size
        b = getattr(self.config, "norm_before_fc", False)
        if hasattr(self.config, "target_hidden_size"):
            pass
        eagle_config = getattr(self.config, "eagle_config", None) or {}
        c = eagle_config.get("use_aux_hidden_state", True)
        d = eagle_config["layer_ids"]
        e = "norm_output" in self.config
        self.config.draft_vocab_size = 3
        f = self.config.get_text_config()
        g = vllm_config.quant_config
'''
    r = _reads(src)
    assert r == {"hidden_size": 6, "norm_before_fc": 7, "target_hidden_size": 8, "eagle_config": 10,
                 "eagle_config.use_aux_hidden_state": 11, "eagle_config.layer_ids": 12, "norm_output": 13}
    # A write is not a read, a called attribute is a method, and another config object (vllm_config) is not the
    # drafter's: draft_vocab_size, get_text_config and quant_config are absent.


def test_reader_records_the_default_a_read_falls_back_to() -> None:
    src = ('def f(config, eagle_config):\n'
           '    a = eagle_config.get("norm_before_fc", getattr(config, "norm_before_fc", False))\n'
           '    b = getattr(config, "fc_norm", None)\n    c = config.num_hidden_layers\n')
    got = dk.config_reads_with_defaults(ast.parse(src))
    assert got == {"norm_before_fc": [2, False], "fc_norm": [3, None], "num_hidden_layers": [4]}
    assert dk.same_as_missing(False, False) and dk.same_as_missing(False, None)
    assert not dk.same_as_missing(True, False) and not dk.same_as_missing(False, dk.NO_DEFAULT)


def _ctx(root: Path, draft: dict[str, Any], tmp_path: Path, target: str = "llama-3.1-8b-instruct.json",
         arch: str = "LlamaForCausalLM") -> Analysis:
    dpath = tmp_path / "draft.json"
    dpath.write_text(json.dumps(draft, indent=1))
    tpath = CHECKPOINTS / target
    opts = Options(targets=(arch,), target_config=json.loads(tpath.read_text()), target_config_path=str(tpath),
                   draft_config=draft, draft_config_path=str(dpath), cache_dir=session_cache())
    ctx = analyze(dir_source(root), opts, select=lambda rule: rule in ("EGL007", "EGL011"))  # the drafter's rules
    assert not ctx.errors, [e.message for e in ctx.errors]
    return ctx


# An EAGLE 3.1 drafter for Llama-3.1-8B: the reference EAGLE-3 config with the three 3.1 keys switched on.
EAGLE31 = {**json.loads((CHECKPOINTS / "yuhuili-eagle3-llama3.1-8b.json").read_text()),
           "norm_before_fc": True, "fc_norm": True, "norm_output": True}


def _egl011(ctx: Analysis) -> dict[str, str]:
    return {f.symbol or "": f.message for f in ctx.findings if f.rule == "EGL011"}


def _eagle_reads(root: Path, key: str) -> dict[str, int]:
    """Every EAGLE drafter module (and speculators converter) of the tree that reads ``key``, with the line."""
    return {m: v[0] for m, reads in dk.examine(str(root), DRAFTER_MODULE_GLOBS).items()
            for k, v in reads.items() if k == key}


@pytest.mark.real
def test_real_vllm_norm_before_fc_first_read_in_0_18_0(real_trees: Any, tmp_path: Path) -> None:
    # 0.17.1, the release before 0.18.0: no EAGLE module reads norm_before_fc. 0.18.0's llama_eagle3.py:153
    # `self.norm_before_fc = getattr(self.config, "norm_before_fc", False)` (0.18.1 has the same file). The
    # issue put the first read in 0.18.1; the 0.18.0 wheel already has it.
    old, new = real_trees.get("0.17.1"), real_trees.get("0.18.0")
    assert _eagle_reads(old, "norm_before_fc") == {}
    assert _eagle_reads(new, "norm_before_fc") == {LLAMA: 153}
    assert _eagle_reads(real_trees.get("0.18.1"), "norm_before_fc") == {LLAMA: 153}
    c17 = _ctx(old, EAGLE31, tmp_path)
    msg = _egl011(c17)["norm_before_fc"]
    assert "vLLM 0.18.0 reads it (vllm/model_executor/models/llama_eagle3.py:153; 0.17.1" in msg
    sv = engine_hooks.serving_verdict(c17.model, "LlamaForCausalLM")
    assert sv is not None and sv.outcome is Outcome.DRAFTER_UNLOADABLE and sv.stage is Gate.DRAFTER_CLASS
    step = sv.step(Gate.DRAFTER_CLASS)
    assert step is not None and step.result is StepResult.FAIL and "norm_before_fc" in step.message
    c18 = _ctx(new, EAGLE31, tmp_path)
    assert "norm_before_fc" not in _egl011(c18)
    # A key set to the value the reading release falls back to (False) builds the same drafter: not flagged.
    assert "norm_before_fc" not in _egl011(_ctx(old, {**EAGLE31, "norm_before_fc": False}, tmp_path))


@pytest.mark.real
def test_real_vllm_fc_norm_and_norm_output_read_by_0_25_1_not_0_20_2(real_trees: Any, tmp_path: Path) -> None:
    # 0.25.1's llama_eagle3.py:197 `use_fc_norm = getattr(self.config, "fc_norm", False)` and :218
    # `self.norm_output = getattr(self.config, "norm_output", False)`; no EAGLE module of 0.20.2 reads either.
    old, new = real_trees.get("0.20.2"), real_trees.get("0.25.1")
    for key in ("fc_norm", "norm_output"):
        assert _eagle_reads(old, key) == {}
    assert _eagle_reads(new, "fc_norm")[LLAMA] == 197 and _eagle_reads(new, "norm_output")[LLAMA] == 218
    c20 = _ctx(old, EAGLE31, tmp_path)
    got = _egl011(c20)
    assert set(got) == {"fc_norm", "norm_output"}  # 0.20.2 reads norm_before_fc (llama_eagle3.py:153)
    assert "vLLM 0.25.1 reads it (vllm/model_executor/models/llama_eagle3.py:197; 0.20.2, the" in got["fc_norm"]
    assert "llama_eagle3.py:218" in got["norm_output"]
    # fc_norm's fc_norm.{i} tensors (0.25.1 llama_eagle3.py:197-206) have no parameter in 0.20.2's drafter model,
    # whose load_weights indexes params_dict[name] (0.20.2 llama_eagle3.py:266): the drafter does not load.
    sv = engine_hooks.serving_verdict(c20.model, "LlamaForCausalLM")
    assert sv is not None and sv.outcome is Outcome.DRAFTER_UNLOADABLE
    # norm_output alone has no weights (0.25.1 :218, :251-252 choose which state the drafter returns): 0.20.2 loads
    # the checkpoint and runs the drafter on the pre-norm state, another drafter than the one trained.
    only = _ctx(old, {k: v for k, v in EAGLE31.items() if k != "fc_norm"}, tmp_path)
    assert set(_egl011(only)) == {"norm_output"}
    sv = engine_hooks.serving_verdict(only.model, "LlamaForCausalLM")
    assert sv is not None and (sv.outcome, sv.stage) == (Outcome.DRAFTER_DIFFERS, Gate.DRAFTER_CLASS)
    assert sv.next_step is not None and "reads norm_output" in sv.next_step
    c25 = _ctx(new, EAGLE31, tmp_path)
    assert _egl011(c25) == {}
    sv = engine_hooks.serving_verdict(c25.model, "LlamaForCausalLM")
    step = sv.step(Gate.DRAFTER_CLASS) if sv is not None else None
    assert step is not None and step.result is StepResult.PASS


@pytest.mark.real
def test_real_vllm_table_rows_are_what_the_trees_read(real_trees: Any) -> None:
    """The table is data written from the trees: each fetched release's row is what the reader finds there."""
    rows = dk.table()["vllm"]["releases"]
    for v in ("0.17.1", "0.18.0", "0.20.2", "0.25.1", "0.33.0"):
        assert v in rows
        assert dk.examine(str(real_trees.get(v)), DRAFTER_MODULE_GLOBS) == rows[v], v
    assert dk.reason("vllm")


def test_sample_tree_ignores_norm_before_fc_until_its_drafter_reads_it(tmp_path: Path) -> None:
    """Offline: the v016_draft sample tree (version 0.16.0) whose drafter module reads no norm_before_fc. The
    finding names the table's first reader; once the tree's own drafter reads the key it is silent (what the
    tree reads comes from the tree, never from the table)."""
    from tests.conftest import materialize

    case = SAMPLES / "draft-layer-ids-invalid" / "count_mismatch_v016"
    root = materialize(case, tmp_path / "tree")
    draft = {**json.loads((case / "configs/draft.json").read_text()), "norm_before_fc": True,
             "eagle_aux_hidden_state_layer_ids": [2, 16, 29]}
    # The toy drafter reads neither rms_norm_eps nor draft_vocab_size, which the config sets: every examined
    # release reads those, so they are generic keys, not keys a release began reading, and are not flagged.
    tdir = tmp_path / "cfg"
    tdir.mkdir()
    ctx = _ctx(root, draft, tdir, target="../draft-layer-ids-invalid/count_mismatch_v016/configs/target.json",
               arch="ToyForCausalLM")
    got = _egl011(ctx)
    assert set(got) == {"norm_before_fc"}
    assert "vLLM 0.18.0 reads it (vllm/model_executor/models/llama_eagle3.py:153; 0.17.1" in got["norm_before_fc"]
    f = next(f for f in ctx.findings if f.rule == "EGL011")
    assert f.severity.value == "error" and f.location.path == str(tdir / "draft.json")
    sv = engine_hooks.serving_verdict(ctx.model, "ToyForCausalLM")
    assert sv is not None and sv.outcome is Outcome.DRAFTER_UNLOADABLE and sv.next_step is not None
    assert "reads norm_before_fc" in sv.next_step
    # The tree's drafter starts reading the key: no finding, the drafter-class step passes.
    mod = root / LLAMA
    mod.write_text(mod.read_text().replace(
        "        self.vocab_size = self.config.vocab_size\n",
        "        self.vocab_size = self.config.vocab_size\n"
        "        self.norm_before_fc = getattr(self.config, \"norm_before_fc\", False)\n"))
    ctx = _ctx(root, draft, tdir, target="../draft-layer-ids-invalid/count_mismatch_v016/configs/target.json",
               arch="ToyForCausalLM")
    assert _egl011(ctx) == {}
    sv = engine_hooks.serving_verdict(ctx.model, "ToyForCausalLM")
    step = sv.step(Gate.DRAFTER_CLASS) if sv is not None else None
    assert step is not None and step.result is StepResult.PASS


@pytest.mark.real
def test_real_speculators_key_dropped_by_the_converter(real_trees: Any, tmp_path: Path) -> None:
    """A speculators-format drafter reaches the class only through the tree's converter: 0.18.0's
    speculators/algos.py copies no norm_before_fc (its update_eagle3 names draft_vocab_size and target_hidden_size),
    while 0.20.2's reads it at algos.py:38 (`config_dict.get("norm_before_fc", False)`), though 0.18.0's
    llama_eagle3.py:153 reads the key itself."""
    spec = {**json.loads((CHECKPOINTS / "nm-testing-qwen3-235b-eagle3-speculators.json").read_text()),
            "norm_before_fc": True}
    conv = "vllm/transformers_utils/configs/speculators/algos.py"
    assert _eagle_reads(real_trees.get("0.18.0"), "norm_before_fc") == {LLAMA: 153}
    assert _eagle_reads(real_trees.get("0.20.2"), "norm_before_fc")[conv] == 38
    c18 = _ctx(real_trees.get("0.18.0"), spec, tmp_path, "qwen3-235b-a22b.json", "Qwen3MoeForCausalLM")
    msg = _egl011(c18)["norm_before_fc"]
    assert f"vLLM 0.20.2 reads it ({conv}:38; 0.18.1, the examined release before it, does not)" in msg
    c20 = _ctx(real_trees.get("0.20.2"), spec, tmp_path, "qwen3-235b-a22b.json", "Qwen3MoeForCausalLM")
    assert _egl011(c20) == {}


def test_weightless_keys_are_data_that_names_the_read_it_rests_on() -> None:
    """``weightless`` (the vLLM section of the table) is version knowledge no checked tree can derive: each entry
    names the release, file and line where that release reads the key, and the examined table records exactly
    that read (0.25.1 llama_eagle3.py:218, ``self.norm_output = getattr(self.config, "norm_output", False)``)."""
    import re

    section = dk.table()["vllm"]["weightless"]
    assert section["reason"] and dk.weightless("vllm") == frozenset(section["keys"]) == {"norm_output"}
    assert dk.weightless("sglang") == frozenset()
    for key, where in section["keys"].items():
        m = re.match(r"(\S+) (\S+\.py):(\d+) ", where)
        assert m, where
        release, path, line = m.group(1), m.group(2), int(m.group(3))
        assert dk.table()["vllm"]["releases"][release][path][key][0] == line, (key, where)


@pytest.mark.real
def test_parts_are_data_that_names_the_part_the_reading_release_builds(real_trees: Any) -> None:
    """``parts`` (a key that turns on a part with weights -> the part's tensor-name component) is version knowledge
    the release that ignores the key cannot give: each entry names the reading release's lines, and there the key is
    read and the part is built (0.18.0 llama_eagle3.py:179-180 ``if self.norm_before_fc: self.input_norm =
    RMSNorm(``, and :417-418 ``skip_substrs.append("input_norm.")`` when it is off; 0.25.1 :197-199
    ``use_fc_norm = getattr(self.config, "fc_norm", False)`` ... ``self.fc_norm = nn.ModuleList(``)."""
    import re

    section = dk.table()["vllm"]["parts"]
    assert section["reason"] and dk.parts("vllm") == {"norm_before_fc": "input_norm.", "fc_norm": "fc_norm."}
    assert dk.parts("sglang") == {}
    for key, entry in section["keys"].items():
        m = re.match(r"(\S+) (\S+\.py):(\d+)-(\d+) ", entry["where"])
        assert m, entry
        lines = (real_trees.get(m.group(1)) / m.group(2)).read_text(encoding="utf-8").splitlines()
        span = "\n".join(lines[int(m.group(3)) - 1:int(m.group(4))])
        assert key in span and f"self.{entry['tensors'].rstrip('.')} = " in span, (key, span)


# The reference EAGLE-3 drafter for Llama-3.1-8B (hidden_size 4096, no target_hidden_size, no num_aux_hidden_states).
REF = json.loads((CHECKPOINTS / "yuhuili-eagle3-llama3.1-8b.json").read_text())


@pytest.mark.real
def test_real_vllm_num_aux_hidden_states_read_by_0_25_1_not_0_20_2(real_trees: Any, tmp_path: Path) -> None:
    """0.25.1's llama_eagle3.py:176-177 ``self.num_aux_hidden_states = getattr(self.config, "num_aux_hidden_states",
    None)`` (else len(eagle_config's ids) or 3, :179-182) and :187 ``self.fc_input_size = target_hidden_size *
    self.num_aux_hidden_states``; deepseek_eagle3.py:201 and qwen3_eagle3.py:191 read it too. No module of 0.20.2
    reads it, and its fc is built for 3 states (llama_eagle3.py:175-178 ``fc_input_size =
    self.config.target_hidden_size * 3``, else ``hidden_size * 3``). So 4 states give the checkpoint an fc.weight of
    4 x 4096 inputs where 0.20.2's has 3 x 4096, which ReplicatedLinear's weight_loader refuses (0.20.2
    layers/linear.py:381 ``assert param.size() == loaded_weight.size()``): drafter-unloadable; 3 states are the fc
    0.20.2 builds anyway: the same drafter, not flagged."""
    old, new = real_trees.get("0.20.2"), real_trees.get("0.25.1")
    assert _eagle_reads(old, "num_aux_hidden_states") == {}
    assert _eagle_reads(new, "num_aux_hidden_states") == {
        LLAMA: 176, "vllm/model_executor/models/deepseek_eagle3.py": 201,
        "vllm/model_executor/models/qwen3_eagle3.py": 191}
    four = _ctx(old, {**REF, "num_aux_hidden_states": 4}, tmp_path)
    msg = _egl011(four)["num_aux_hidden_states"]
    assert "vLLM 0.25.1 reads it (vllm/model_executor/models/llama_eagle3.py:176; 0.20.2, the" in msg
    assert "the checkpoint's fc takes 16384 inputs" in msg and "the fc this release builds 12288" in msg
    sv = engine_hooks.serving_verdict(four.model, "LlamaForCausalLM")
    assert sv is not None and (sv.outcome, sv.stage) == (Outcome.DRAFTER_UNLOADABLE, Gate.DRAFTER_CLASS)
    three = _ctx(old, {**REF, "num_aux_hidden_states": 3}, tmp_path)
    assert "num_aux_hidden_states" not in _egl011(three)
    sv = engine_hooks.serving_verdict(three.model, "LlamaForCausalLM")
    assert sv is not None and sv.outcome is Outcome.SERVABLE
    # 0.25.1 reads it: never EGL011's, whatever the count (its fc step judges 4 states against 3 ids).
    assert _egl011(_ctx(new, {**REF, "num_aux_hidden_states": 4}, tmp_path)) == {}
    assert _egl011(_ctx(new, {**REF, "num_aux_hidden_states": 3}, tmp_path)) == {}


@pytest.mark.real
def test_real_vllm_target_hidden_size_and_draft_vocab_size_read_from_0_9_2(real_trees: Any, tmp_path: Path) -> None:
    """0.9.2, the earliest release the table covers, reads both: llama_eagle3.py:109 ``if hasattr(self.config,
    "target_hidden_size"):`` (fc = Linear(target_hidden_size * 3, ...), :110) and :188 ``self.config.draft_vocab_size``
    (its ParallelLMHead). Every later examined release's llama_eagle3.py reads them too, so no release is on the other
    side: EGL011 never flags them (a generic key of the drafter module)."""
    t = real_trees.get("0.9.2")
    assert dk.releases("vllm")[0] == "0.9.2"
    assert _eagle_reads(t, "target_hidden_size") == {LLAMA: 109}
    assert _eagle_reads(t, "draft_vocab_size") == {LLAMA: 188}
    assert dk.examine(str(t), DRAFTER_MODULE_GLOBS) == dk.table()["vllm"]["releases"]["0.9.2"]
    for key in ("target_hidden_size", "draft_vocab_size"):
        assert [r.release for r in dk.readers("vllm", key, (LLAMA,))] == dk.releases("vllm"), key
    draft = {**REF, "target_hidden_size": 4096}
    for v in ("0.9.2", "0.20.2"):
        got = _egl011(_ctx(real_trees.get(v), draft, tmp_path))
        assert not {"target_hidden_size", "draft_vocab_size"} & set(got), (v, got)
