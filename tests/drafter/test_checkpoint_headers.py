"""Issue 23, item 2: a drafter folder's safetensors headers against the release's drafter class and the target.

The reader is tested on files the ``safetensors`` package wrote and on published shapes laid out as the format
says (``ckpt.py``), both read back by ``safe_open``. The serving-chain expectations come from the engines' source:

- vLLM 0.33.0 ``vllm/model_executor/models/llama_eagle3.py``: ``self.layers`` holds
  ``range(self.config.num_hidden_layers)`` decoder layers (:198-206); ``num_aux_hidden_states`` defaults to 3
  (:211-217) and ``fc_input_size = target_hidden_size * self.num_aux_hidden_states`` (:221), the in-width of
  ``self.fc = ReplicatedLinear(input_size=self.fc_input_size, output_size=hidden_size)`` (:242-244);
  ``midlayer.`` loads as ``layers.0.`` (:291); ``d2t`` loads into ``draft_id_to_target_id`` of length
  ``draft_vocab_size`` (:339-342, :428-429).
- vLLM 0.16.0, same file: ``fc_input_size = self.config.hidden_size * 3`` (:175-177), fc at :178.
- SGLang 0.5.23 ``sglang/srt/models/llama_eagle3.py``: ``self.fc = torch.nn.Linear(self.hidden_size_in *
  self.num_aux_hidden_states, config.hidden_size)`` (:163-167) with ``hidden_size_in = target_hidden_size``
  (:151-154) and 3 aux states without ids (:157-161); ``range(config.num_hidden_layers)`` layers (:199-202).
- The EAGLE-3 Llama-3.1-8B drafter (``yuhuili-eagle3-llama3.1-8b.json``): hidden 4096, draft vocab 32000, one
  layer; Llama-3.1-8B's hidden size 4096, so fc is 4096 x (3 x 4096 = 12288).
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from eagle3_lint import drafter_weights as dw
from eagle3_lint import weights
from eagle3_lint.serving import Gate, Outcome, StepResult
from tests.drafter.ckpt import CKPTS, drafter_folder, llama_drafter_tensors, write_sparse

LLAMA = "LlamaForCausalLM"
KIMI = "KimiK25ForConditionalGeneration"
YUHUILI = "yuhuili-eagle3-llama3.1-8b.json"
KIMI_DRAFTER = "specforge-kimi-k25-eagle3.json"
KIMI_SHAPES: dict[str, Any] = {"hidden": 7168, "target_hidden": 7168, "vocab": 163840, "inter": 18432, "heads": 64,
                               "kv": 64}


def _safe_open_shapes(path: Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    from safetensors import safe_open

    out = {}
    with safe_open(str(path), framework="numpy") as f:
        for k in f.keys():  # noqa: SIM118  # safe_open is not a dict: keys() is its API
            sl = f.get_slice(k)
            out[k] = (sl.get_dtype(), tuple(sl.get_shape()))
    return out


# -- the reader ----------------------------------------------------------------------------------------------
def test_reader_agrees_with_safe_open_on_sharded_files_safetensors_wrote(tmp_path: Path) -> None:
    tensors = {"fc.weight": ("F32", (8, 24)), "midlayer.mlp.up_proj.weight": ("F16", (16, 8)),
               "d2t": ("I64", (5,)), "t2d": ("BOOL", (11,)), "norm.weight": ("F32", (8,))}
    folder = drafter_folder(tmp_path / "d", {"architectures": ["LlamaForCausalLMEagle3"]}, tensors, shards=2,
                            real=True)
    ck = weights.read_checkpoint(str(folder))
    assert ck.index == weights.INDEX_FILE and len(ck.files) == 2
    want: dict[str, tuple[str, tuple[int, ...]]] = {}
    for f in ck.files:
        want.update(_safe_open_shapes(folder / f))
    assert {n: (t.dtype, t.shape) for n, t in ck.tensors.items()} == want
    assert want["fc.weight"] == ("F32", (8, 24)) and want["t2d"] == ("BOOL", (11,))


def test_published_shapes_written_sparse_are_files_safe_open_reads(tmp_path: Path) -> None:
    tensors = llama_drafter_tensors()
    path = tmp_path / "model.safetensors"
    write_sparse(path, tensors)
    assert path.stat().st_blocks * 512 < 1 << 20  # a hole, not 900 MB of zeros
    assert _safe_open_shapes(path) == {n: (d, s) for n, (d, s) in tensors.items()}
    got = weights.read_header(str(path))
    assert got["fc.weight"].shape == (4096, 12288) and got["d2t"].shape == (32000,)


@pytest.mark.parametrize(("head", "says"), [
    (struct.pack("<Q", 1 << 40), "above the format's limit"),
    (struct.pack("<Q", 4096) + b"{}", "runs past the end"),
    (struct.pack("<Q", 4) + b"nope", "not JSON"),
    (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
    (b"\x01\x02", "shorter than the 8-byte header length"),
    (struct.pack("<Q", 200_000) + b"[" * 100_000 + b"]" * 100_000, "nests too deep"),
])
def test_a_malformed_header_is_an_error_not_a_traceback(tmp_path: Path, head: bytes, says: str) -> None:
    p = tmp_path / "model.safetensors"
    p.write_bytes(head)
    with pytest.raises(weights.WeightsError, match=says):
        weights.read_header(str(p))


def test_offsets_outside_the_data_and_an_index_naming_a_missing_shard_are_errors(tmp_path: Path) -> None:
    js = json.dumps({"fc.weight": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}).encode()
    p = tmp_path / "model.safetensors"
    p.write_bytes(struct.pack("<Q", len(js)) + js + b"\0" * 8)  # 8 data bytes for a 16-byte tensor
    with pytest.raises(weights.WeightsError, match="outside the file's 8 data bytes"):
        weights.read_header(str(p))
    (tmp_path / weights.INDEX_FILE).write_text(json.dumps({"weight_map": {"fc.weight": "model-2.safetensors"}}))
    with pytest.raises(weights.WeightsError, match="names shard 'model-2.safetensors'"):
        weights.read_checkpoint(str(tmp_path))


# -- the checks, on the headers alone -------------------------------------------------------------------------
def _check(tmp_path: Path, tensors: dict[str, Any], cfg: dict[str, Any], built: dw.Built | None = None,
           states: int | None = 3, target_hidden: int | None = 4096) -> dw.Report:
    write_sparse(tmp_path / "model.safetensors", tensors)
    return dw.check(weights.read_checkpoint(str(tmp_path)), cfg, built, states, target_hidden)


def _yuhuili() -> dict[str, Any]:
    return dict(json.loads((CKPTS / YUHUILI).read_text()))


def test_d2t_of_the_wrong_length_names_both_shapes(tmp_path: Path) -> None:
    t = llama_drafter_tensors()
    t["d2t"] = ("I64", (16000,))
    rep = _check(tmp_path, t, _yuhuili())
    assert [m.message for m in rep.mismatches] == [
        "d2t is [16000], but draft_vocab_size is 32000 (expected [32000])"]


def test_two_layers_in_the_checkpoint_against_a_class_that_builds_one(tmp_path: Path) -> None:
    rep = _check(tmp_path, llama_drafter_tensors(layers=("layers.0", "layers.1")), _yuhuili(),
                 dw.Built("Eagle3LlamaForCausalLM", layers=1, layers_text="self.config.num_hidden_layers"))
    (m,) = rep.mismatches
    assert m.message.startswith("the checkpoint holds 2 decoder layer(s) [0, 1]")
    assert "Eagle3LlamaForCausalLM builds 1 (self.config.num_hidden_layers)" in m.message


def test_no_lm_head_and_no_d2t_with_a_smaller_draft_vocabulary(tmp_path: Path) -> None:
    t = llama_drafter_tensors()
    del t["lm_head.weight"], t["d2t"]
    msgs = [m.message for m in _check(tmp_path, t, _yuhuili()).mismatches]
    assert len(msgs) == 2
    assert msgs[0].startswith("draft_vocab_size 32000 differs from vocab_size 128256, but the checkpoint has no d2t")
    assert msgs[1].startswith("no lm_head.weight") and "[32000, 4096]" in msgs[1]


# -- the serving chain, on real releases ---------------------------------------------------------------------
def _verdict(tree: Path, arch: str, target: str, folder: Path) -> Any:
    from eagle3_lint import engine_hooks
    from eagle3_lint.app import CheckRequest, run_check

    ctx = run_check(CheckRequest(str(tree), (arch,), target_config=str(CKPTS / target), draft_config=str(folder)))
    sv = engine_hooks.serving_verdict(ctx.model, arch)
    # EGL007 reports a drafter-fc failure the headers decided, at the checkpoint's file (exit 1, not 0).
    mine = [f for f in ctx.findings if f.rule == "EGL007" and f.location.path.startswith(str(folder))]
    assert sv is not None, arch
    fc = sv.step(Gate.DRAFTER_FC)
    if fc is not None and fc.result is StepResult.FAIL and fc.location is not None \
            and fc.location.path.startswith(str(folder)):
        assert len(mine) == 1 and fc.message in mine[0].message and mine[0].severity.value == "error"
    else:
        assert not mine
    return sv


@pytest.mark.real
@pytest.mark.slow
def test_vllm_0_33_0_published_llama_drafter_passes_and_a_two_state_fc_fails(real_trees: Any, tmp_path: Path
                                                                             ) -> None:
    tree = real_trees.get("0.33.0")
    ok = _verdict(tree, LLAMA, "llama-3.1-8b-instruct.json",
                  drafter_folder(tmp_path / "ok", YUHUILI, llama_drafter_tensors(), shards=3))
    fc = ok.step(Gate.DRAFTER_FC)
    assert fc.result is StepResult.PASS and ok.outcome is Outcome.SERVABLE
    assert "fc takes 12288 = 3 x 4096" in fc.message
    assert "3 shard(s) via model.safetensors.index.json, 15 tensors" in fc.message
    assert "fc.weight [4096, 12288]" in fc.message and "1 decoder layer(s)" in fc.message

    bad = _verdict(tree, LLAMA, "llama-3.1-8b-instruct.json",
                   drafter_folder(tmp_path / "bad", YUHUILI, llama_drafter_tensors(states=2)))
    assert bad.outcome is Outcome.DRAFTER_SHAPE_MISMATCH and bad.stage is Gate.DRAFTER_FC
    assert bad.step(Gate.DRAFTER_FC).message == (
        "fc.weight is [4096, 8192]: it takes 8192 inputs, but 3 aux states x target hidden 4096 = 12288 arrive "
        "(expected [4096, 12288])")
    assert bad.step(Gate.DRAFTER_FC).location.path.endswith("bad/model.safetensors")

    two = _verdict(tree, LLAMA, "llama-3.1-8b-instruct.json",
                   drafter_folder(tmp_path / "two", YUHUILI, llama_drafter_tensors(layers=("layers.0", "layers.1"))))
    msg = two.step(Gate.DRAFTER_FC).message
    assert two.outcome is Outcome.DRAFTER_SHAPE_MISMATCH
    assert msg == ("the checkpoint holds 2 decoder layer(s) [0, 1] (layers.0.hidden_norm.weight, ...), but "
                   "Eagle3LlamaForCausalLM builds 1 (self.config.num_hidden_layers, "
                   "vllm/model_executor/models/llama_eagle3.py:198)")


@pytest.mark.real
@pytest.mark.slow
def test_vllm_0_16_0_fc_is_hidden_size_times_three(real_trees: Any, tmp_path: Path) -> None:
    bad = _verdict(real_trees.get("0.16.0"), LLAMA, "llama-3.1-8b-instruct.json",
                   drafter_folder(tmp_path / "bad", YUHUILI, llama_drafter_tensors(states=4)))
    assert bad.outcome is Outcome.DRAFTER_SHAPE_MISMATCH and bad.stage is Gate.DRAFTER_FC
    assert bad.step(Gate.DRAFTER_FC).message.startswith("fc.weight is [4096, 16384]: it takes 16384 inputs, but 3 "
                                                        "aux states x target hidden 4096 = 12288 arrive")


@pytest.mark.real
@pytest.mark.slow
def test_sglang_0_5_23_kimi_drafter_fc_from_the_checkpoint(sglang_trees: Any, tmp_path: Path) -> None:
    tree = sglang_trees.get("0.5.23")
    ok = _verdict(tree, KIMI, "kimi-k2.5.json",
                  drafter_folder(tmp_path / "ok", KIMI_DRAFTER, llama_drafter_tensors(**KIMI_SHAPES)))
    fc = ok.step(Gate.DRAFTER_FC)
    assert fc.result is StepResult.PASS, fc.message
    assert fc.message.startswith("LlamaForCausalLMEagle3's fc takes 21504 = 3 x 7168"), fc.message
    assert fc.location.path == "sglang/srt/models/llama_eagle3.py" and fc.location.line == 163
    bad = _verdict(tree, KIMI, "kimi-k2.5.json",
                   drafter_folder(tmp_path / "bad", KIMI_DRAFTER, llama_drafter_tensors(**{**KIMI_SHAPES,
                                                                                           "states": 2})))
    assert bad.outcome is Outcome.DRAFTER_SHAPE_MISMATCH and bad.stage is Gate.DRAFTER_FC
    assert bad.step(Gate.DRAFTER_FC).message.startswith(
        "fc.weight is [7168, 14336]: it takes 14336 inputs, but 3 aux states x target hidden 7168 = 21504 arrive")


@pytest.mark.real
def test_cli_a_huge_header_length_is_one_line_and_exit_2(real_trees: Any, tmp_path: Path) -> None:
    folder = drafter_folder(tmp_path / "d", YUHUILI, {"fc.weight": ("F32", (2, 2))}, real=True)
    raw = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", 1 << 62) + raw[8:])
    p = subprocess.run([sys.executable, "-m", "eagle3_lint", "check", str(real_trees.get("0.33.0")), "--arch", LLAMA,
                        "--draft-config", str(folder), "--no-cache"], capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip().count("\n") == 0, p.stderr
    assert "header length 4,611,686,018,427,387,904 is above the format's limit" in p.stderr


@pytest.mark.real
@pytest.mark.slow
def test_a_replayed_report_follows_the_headers(real_trees: Any, tmp_path: Path) -> None:
    """The report cache keys on the headers (weights.headers_token): rewriting fc's shape is not answered from the
    report of the folder as it was."""
    from tests.conftest import real_cache_dir

    folder = drafter_folder(tmp_path / "d", YUHUILI, llama_drafter_tensors())
    cmd = [sys.executable, "-m", "eagle3_lint", "check", str(real_trees.get("0.33.0")), "--arch", LLAMA,
           "--target-config", str(CKPTS / "llama-3.1-8b-instruct.json"), "--draft-config", str(folder),
           "--output-format", "json", "--cache-dir", str(real_cache_dir())]

    def outcome() -> str:
        p = subprocess.run(cmd, capture_output=True, text=True)
        assert p.returncode in (0, 1), p.stderr
        (sv,) = json.loads(p.stdout)["serving"]
        return str(sv["outcome"])

    assert outcome() == "servable"
    write_sparse(folder / "model.safetensors", llama_drafter_tensors(states=2))
    assert outcome() == "drafter-shape-mismatch"


@pytest.mark.real
def test_speculative_config_model_folder_has_its_headers_checked_too(real_trees: Any, tmp_path: Path) -> None:
    from eagle3_lint import engine_hooks
    from eagle3_lint.app import CheckRequest, run_check

    folder = drafter_folder(tmp_path / "bad", YUHUILI, llama_drafter_tensors(states=2))
    spec = json.dumps({"method": "eagle3", "model": str(folder), "num_speculative_tokens": 3})
    ctx = run_check(CheckRequest(str(real_trees.get("0.33.0")), (LLAMA,),
                                 target_config=str(CKPTS / "llama-3.1-8b-instruct.json"), speculative_config=spec))
    sv = engine_hooks.serving_verdict(ctx.model, LLAMA)
    assert sv is not None and sv.outcome is Outcome.DRAFTER_SHAPE_MISMATCH and sv.stage is Gate.DRAFTER_FC
    fc = sv.step(Gate.DRAFTER_FC)
    assert fc is not None and fc.message.startswith("fc.weight is [4096, 8192]")
