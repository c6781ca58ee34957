"""Issue 23, item 4: ``eagle3-lint layers``, the ids each engine's drafter config needs for the trained layers.

Expectations from each engine's source (the state entering layer L is the output of layer L - 1):

- vLLM 0.33.0: the runner reads the drafter config's top-level ``eagle_aux_hidden_state_layer_ids``
  (``vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py:119``; ``gpu_model_runner.py:5207``). Llama collects
  ``_maybe_add_hidden_state(aux, idx + 1, ...)`` after layer ``idx`` (``models/llama.py:429-441``,
  ``interfaces.py:1647``): id k is the state entering layer k. The default is ``(2, n // 2, n - 3)``
  (``interfaces.py:1751-1772``): (2, 16, 29) for Llama-3.1-8B's 32 layers. DeepSeek-V2 (Kimi-K2.5's text model,
  ``kimi_k25.py:473-474`` delegates) tests ``idx in self.aux_hidden_state_layers`` before layer ``idx``
  (``deepseek_v2.py:1561``): id k is the state entering layer k; its default (``deepseek_v2.py:1958-1960``) is
  (2, 30, 58) for 61 layers.
- SGLang 0.5.23: the runner reads ``eagle_config["eagle_aux_hidden_state_layer_ids"]``
  (``model_executor/model_runner_components/spec_aux_hidden_state.py:192-193``). Llama's setter stores
  ``[val + 1 for val in layer_ids]`` (``models/llama.py:941``), default ``[2, n // 2, n - 3]`` (:936), and the
  forward captures the input of layer ``i`` for ``i in self.layers_to_capture`` (:491-492, the layer's
  ``attn_boundary.prepare(..., capture=...)`` at :402-403). DeepSeek-V2's setter adds 1 only when the first id
  is 1 (``deepseek_v2.py:3470-3473``), default ``[2, n // 2, n - 3]`` (:3465), and its forward hands layer ``i``
  the list when ``i in self.layers_to_capture`` (:3193-3195).
- TensorRT-LLM (``engines/layers.TRTLLM_SOURCES``): id k is the output of layer k, default
  ``(1, n // 2 - 1, n - 4)``: (1, 15, 28) for 32 layers, (1, 29, 57) for 61.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from eagle3_lint.app import CheckRequest, run_check
from eagle3_lint.engines import layers
from eagle3_lint.errors import UsageError
from tests.drafter.ckpt import CKPTS

if TYPE_CHECKING:
    from eagle3_lint.stages import Model

LLAMA_CFG = str(CKPTS / "llama-3.1-8b-instruct.json")
KIMI_CFG = str(CKPTS / "kimi-k2.5.json")


def _model_of(target_config: str) -> Callable[[str, tuple[str, ...]], Model]:
    """What ``eagle3-lint layers`` hands ``layers.answer``: each target's model from the check, no cache."""
    return lambda tree, archs: run_check(CheckRequest(tree, archs, None, False, target_config, None)).model


def _answer(targets: list[Path], target_config: str, trained_on: str | None = None,
            draft_config: str | None = None) -> dict[str, Any]:
    ans = layers.answer(layers.Request(tuple(str(t) for t in targets), None, target_config, None, trained_on,
                                       draft_config), _model_of(target_config))
    return dict(json.loads(ans.to_json()))


def _rows(ans: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["engine"]: r for r in ans["rows"]}


@pytest.fixture(scope="module")
def trees(real_trees: Any, sglang_trees: Any) -> list[Path]:
    return [real_trees.get("0.33.0"), sglang_trees.get("0.5.23")]


@pytest.mark.real
@pytest.mark.slow
def test_llama_3_1_8b_trained_on_sglang_ids(trees: list[Path]) -> None:
    ans = _answer(trees, LLAMA_CFG, "sglang:1,15,28")
    assert ans["num_layers"] == 32 and ans["trained_layers"] == [2, 16, 29]
    rows = _rows(ans)
    v, s, t = rows["vllm"], rows["sglang"], rows["trtllm"]
    assert (v["version"], v["field"], v["ids"], v["captures"]) == (
        "0.33.0", "eagle_aux_hidden_state_layer_ids", [2, 16, 29], [2, 16, 29])
    assert v["default_ids"] == [2, 16, 29] and v["default_is_trained"] is True and v["derived_from_tree"] is True
    assert (s["version"], s["field"], s["ids"], s["captures"]) == (
        "0.5.23", "eagle_config.eagle_aux_hidden_state_layer_ids", [1, 15, 28], [2, 16, 29])
    assert s["read_at"] == "sglang/srt/model_executor/model_runner_components/spec_aux_hidden_state.py:192"
    assert s["default_ids"] == [2, 16, 29] and s["default_layers"] == [2, 16, 29]
    assert (t["field"], t["ids"], t["default_ids"], t["derived_from_tree"]) == (
        "EagleDecodingConfig.eagle3_layers_to_capture", [1, 15, 28], [1, 15, 28], False)
    assert t["sources"] and all(src.startswith("tensorrt_llm/") for src in t["sources"])


@pytest.mark.real
@pytest.mark.slow
def test_llama_3_1_8b_off_default_layers_move_between_numberings(trees: list[Path]) -> None:
    ans = _answer(trees, LLAMA_CFG, "vllm:3,17,30")
    assert ans["trained_layers"] == [3, 17, 30]
    rows = _rows(ans)
    assert rows["vllm"]["ids"] == [3, 17, 30] and rows["vllm"]["default_is_trained"] is False
    assert rows["sglang"]["ids"] == [2, 16, 29] and rows["sglang"]["captures"] == [3, 17, 30]
    assert rows["trtllm"]["ids"] == [2, 16, 29] and rows["trtllm"]["default_is_trained"] is False


@pytest.mark.real
@pytest.mark.slow
def test_kimi_k2_5_61_layers_each_engine_and_its_default(trees: list[Path]) -> None:
    ans = _answer(trees, KIMI_CFG, "trtllm:1,29,57")
    assert ans["architecture"] == "KimiK25ForConditionalGeneration" and ans["num_layers"] == 61
    assert ans["trained_layers"] == [2, 30, 58]
    rows = _rows(ans)
    assert rows["vllm"]["ids"] == [2, 30, 58] and rows["vllm"]["default_ids"] == [2, 30, 58]
    # DeepSeek-V2's setter keeps ids whose first is not 1 as they are (deepseek_v2.py:3472-3473).
    assert rows["sglang"]["ids"] == [2, 30, 58] and rows["sglang"]["captures"] == [2, 30, 58]
    assert rows["sglang"]["default_ids"] == [2, 30, 58]
    assert rows["trtllm"]["ids"] == [1, 29, 57] and rows["trtllm"]["default_ids"] == [1, 29, 57]
    assert all(r["default_is_trained"] for r in rows.values())
    # SpecForge's numbering, [1, 29, 57]: the first id is 1, so the setter adds 1 (deepseek_v2.py:3470-3471).
    assert _answer(trees, KIMI_CFG, "sglang:1,29,57")["trained_layers"] == [2, 30, 58]
    # The SpecForge Kimi-K2.5 drafter's own ids, [2, 30, 58] in eagle_config: SGLang's default as the state
    # entering each layer (engines/sglang/drafter.trained).
    from_cfg = _answer(trees, KIMI_CFG, draft_config=str(CKPTS / "specforge-kimi-k25-eagle3.json"))
    assert from_cfg["trained_layers"] == [2, 30, 58] and "training default" in from_cfg["trained_from"]


@pytest.mark.real
def test_cli_text_first_line_answers_and_json(real_trees: Any, tmp_path: Path) -> None:
    tree = str(real_trees.get("0.33.0"))
    cmd = [sys.executable, "-m", "eagle3_lint", "layers", tree, "--target-config", LLAMA_CFG, "--draft-config",
           str(CKPTS / "yuhuili-eagle3-llama3.1-8b.json")]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    first = p.stdout.splitlines()[0]
    assert first == ("vllm 0.33.0: eagle_aux_hidden_state_layer_ids = [2, 16, 29]; "
                     "trtllm: EagleDecodingConfig.eagle3_layers_to_capture = {1, 15, 28}")
    assert "trtllm (not derived from a tree)" in p.stdout
    j = subprocess.run([*cmd, "--format", "json"], capture_output=True, text=True)
    assert j.returncode == 0 and json.loads(j.stdout)["trained_layers"] == [2, 16, 29]


def test_trtllm_alone_needs_no_tree() -> None:
    ans = _answer([], KIMI_CFG, "trtllm:1,29,57")
    (row,) = ans["rows"]
    assert row["engine"] == "trtllm" and row["ids"] == [1, 29, 57] and row["default_is_trained"] is True


@pytest.mark.parametrize(("trained_on", "says"), [
    ("sglang:1,15,28", "how sglang reads ids is read from its tree"),
    ("tgi:1,2", "ENGINE one of vllm, sglang, trtllm"),
    ("trtllm:a,b", "must be integers"),
    ("trtllm:1,99", "name states no 32-layer model has"),
])
def test_bad_trained_on_is_a_usage_error(trained_on: str, says: str) -> None:
    with pytest.raises(UsageError, match=says):
        _answer([], LLAMA_CFG, trained_on)


def test_cli_bad_input_is_one_line_exit_2() -> None:
    p = subprocess.run([sys.executable, "-m", "eagle3_lint", "layers", "--trained-on", "trtllm:1,2,3"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "layer count is needed" in p.stderr


# Each engine's numbering of the same trained layers, its default (the states entering (2, n // 2, n - 3)) given
# in each engine's own convention, from the sources above: vLLM names the state entering layer k; SGLang's Llama
# setter adds 1 to every id (models/llama.py:941), DeepSeek-V2's only when the first id is 1
# (deepseek_v2.py:3470-3473); TensorRT-LLM names the output of layer k.
_DEFAULTS = {
    LLAMA_CFG: ([2, 16, 29], {"vllm": [2, 16, 29], "sglang": [1, 15, 28], "trtllm": [1, 15, 28]}),
    KIMI_CFG: ([2, 30, 58], {"vllm": [2, 30, 58], "sglang": [2, 30, 58], "trtllm": [1, 29, 57]}),
}


@pytest.mark.real
@pytest.mark.slow
@pytest.mark.parametrize(("config", "given"), [
    # Llama given in SGLang's numbering and Kimi in TensorRT-LLM's are the tests above.
    (LLAMA_CFG, "vllm"), (LLAMA_CFG, "trtllm"), (KIMI_CFG, "vllm"), (KIMI_CFG, "sglang"),
], ids=["llama-3.1-8b-vllm", "llama-3.1-8b-trtllm", "kimi-k2.5-vllm", "kimi-k2.5-sglang"])
def test_each_default_given_in_each_numbering(trees: list[Path], config: str, given: str) -> None:
    layers_, want = _DEFAULTS[config]
    ans = _answer(trees, config, f"{given}:{','.join(map(str, want[given]))}")
    assert ans["trained_layers"] == layers_
    rows = _rows(ans)
    assert {e: r["ids"] for e, r in rows.items()} == want
    assert all(r["default_is_trained"] for r in rows.values())
    assert rows["sglang"]["captures"] == layers_ and rows["vllm"]["captures"] == layers_


def _words(text: str) -> list[str]:
    return text.split()


def test_text_on_a_terminal_is_word_wrapped_with_the_answer_first() -> None:
    """On an 80-column terminal every line fits and no name or path is split (a hard wrap at 80 cut
    ``eagle_config.eagle_aux...`` into ``eagl`` / ``e_config``); each engine's setting is a line of its own at the
    top. Piped, the same words, and the answer stays one line."""
    ans = layers.answer(layers.Request((), None, KIMI_CFG, None, "trtllm:1,29,57", None), _model_of(KIMI_CFG))
    piped, tty = ans.to_text(), ans.to_text(80)
    assert _words(piped) == _words(tty)
    assert all(len(line) <= 80 for line in tty.splitlines()), tty
    assert tty.splitlines()[0] == "trtllm: EagleDecodingConfig.eagle3_layers_to_capture = {1, 29, 57}"
    assert piped.splitlines()[0] == tty.splitlines()[0]  # one engine: the same first line
    assert max(len(line) for line in piped.splitlines()) > 80  # the case needs wrapping
    # Each line either begins a line of the piped text, or continues one, 4 columns deeper than a line's indent.
    starts = piped.splitlines()
    for line in tty.splitlines():
        assert any(p.startswith(line) for p in starts) or line.startswith("    "), line


def test_text_taller_than_the_terminal_ends_with_the_answer() -> None:
    """On a terminal the command leaves its last rows on the screen: where the wrapped text is taller than the
    terminal, the settings come again at its end, so the answer is on the screen (here an 80x12 window; two engines
    and TensorRT-LLM fill more than 24 rows); a path longer than its indent allows is moved left to fit instead of
    being cut at the edge. Not on a taller terminal."""
    ans = layers.answer(layers.Request((), None, KIMI_CFG, None, "trtllm:1,29,57", None), _model_of(KIMI_CFG))
    lines = ans.to_text(80, 12).splitlines()
    assert len(ans.to_text(80).splitlines()) >= 12  # the case is taller than the window
    assert lines[-2:] == ["so set:", "  trtllm: EagleDecodingConfig.eagle3_layers_to_capture = {1, 29, 57}"]
    assert all(len(line) <= 80 for line in lines)
    assert ans.to_text(80, 200) == ans.to_text(80)
    path = "x/" * 36 + "y.py:1"  # 78 columns: too long under the continuation's 10-column indent
    wrapped = layers._wrap("      read at " + path, 80)
    assert wrapped == ["      read at", "  " + path]


def test_cli_wraps_on_a_terminal_only() -> None:
    """Through a pseudo-terminal of 60 columns (COLUMNS) the CLI wraps to 60; into a pipe it does not."""
    import os
    import pty

    args = [sys.executable, "-m", "eagle3_lint", "layers", "--target-config", KIMI_CFG, "--trained-on",
            "trtllm:1,29,57"]
    env = {**os.environ, "COLUMNS": "60"}
    piped = subprocess.run(args, capture_output=True, text=True, env=env, check=True).stdout
    leader, follower = pty.openpty()
    proc = subprocess.Popen(args, stdout=follower, stderr=subprocess.DEVNULL, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.wait() == 0
    tty = b"".join(chunks).decode().replace("\r\n", "\n")
    assert max(len(line) for line in piped.splitlines()) > 60
    assert all(len(line) <= 60 for line in tty.splitlines()), tty
    assert _words(tty) == _words(piped)
