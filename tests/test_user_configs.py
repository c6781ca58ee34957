"""Malformed user input is an error: one line naming the file, the key, what it must be and what was found, exit 2.

Every config a user hands in (``--target-config``, ``--draft-config``, ``--speculative-config``, and
``[tool.eagle3-lint]``, whose cases are in test_ci_config.py) is checked by type before anything reads it
(eagle3_lint/userconfig.py): a value the tool would otherwise read around (a layer count of "sixty", ids given as
a string) must not silently drop a check or let the model default stand in. Output into a missing folder, a
read-only cache and unreadable folders get their own one-line errors.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile import assert_one_line_error, cli_env, run_cli, small_tree
from tests.test_bad_input import NO_CAPS, can_drop_caps

MODELS = "vllm/model_executor/models"


def config(tmp: Path, name: str, data: object) -> Path:
    p = tmp / name
    p.write_text(json.dumps(data))
    return p


@pytest.mark.parametrize("data, message", [
    # The example: every key the tool reads has the wrong type; the first is named.
    ({"architectures": "KimiK25", "num_hidden_layers": "sixty", "hidden_size": [1], "model_type": 5},
     'architectures: expected a list, found "KimiK25"'),
    ({"architectures": ["X"], "num_hidden_layers": "sixty"}, 'num_hidden_layers: expected an integer, found "sixty"'),
    ({"num_hidden_layers": -2}, "num_hidden_layers: expected an integer >= 0, found -2"),
    ({"hidden_size": [1]}, "hidden_size: expected an integer, found [1]"),
    ({"model_type": 5}, "model_type: expected a string, found 5"),
    ({"architectures": [1]}, "architectures[0]: expected a string, found 1"),
    ({"text_config": {"hidden_size": 0}}, "text_config.hidden_size: expected an integer >= 1, found 0"),
    ({"num_hidden_layers": True}, "num_hidden_layers: expected an integer, found true"),
])
def test_malformed_target_config(tmp_path: Path, data: object, message: str) -> None:
    root = small_tree(tmp_path / "t")
    cfg = config(tmp_path, "target.json", data)
    line = assert_one_line_error(run_cli(["check", str(root), "--no-cache", "--target-config", str(cfg)], tmp_path))
    assert f"--target-config {cfg}: {message}" in line, line


@pytest.mark.parametrize("data, message", [
    # Top level: a string is not ids, and the model default must not replace what the user meant.
    ({"eagle_aux_hidden_state_layer_ids": "2,16"},
     'eagle_aux_hidden_state_layer_ids: expected a list of layer ids (integers >= 0), found "2,16"'),
    ({"eagle_config": {"eagle_aux_hidden_state_layer_ids": ["a", 1.5, None]}},
     'eagle_config.eagle_aux_hidden_state_layer_ids[0]: expected a layer id (an integer >= 0), found "a"'),
    ({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 1.5]}},
     "eagle_config.eagle_aux_hidden_state_layer_ids[1]: expected a layer id (an integer >= 0), found 1.5"),
    ({"eagle_aux_hidden_state_layer_ids": [-1, 16]},
     "eagle_aux_hidden_state_layer_ids[0]: expected a layer id (an integer >= 0), found -1"),
    ({"eagle_aux_hidden_state_layer_ids": [2, True]},
     "eagle_aux_hidden_state_layer_ids[1]: expected a layer id (an integer >= 0), found true"),
    ({"eagle_config": "yes"}, 'eagle_config: expected an object, found "yes"'),
    ({"eagle_config": {"use_aux_hidden_state": "true"}},
     'eagle_config.use_aux_hidden_state: expected true or false, found "true"'),
    ({"draft_vocab_size": "32000"}, 'draft_vocab_size: expected an integer, found "32000"'),
])
def test_malformed_drafter_config(tmp_path: Path, data: dict, message: str) -> None:
    root = small_tree(tmp_path / "t")
    cfg = config(tmp_path, "draft.json", {"architectures": ["LlamaForCausalLMEagle3"], **data})
    line = assert_one_line_error(run_cli(["check", str(root), "--no-cache", "--draft-config", str(cfg)], tmp_path))
    assert f"--draft-config {cfg}: {message}" in line, line


def test_a_repeated_id_is_an_error_finding_not_an_input_error(tmp_path: Path) -> None:
    """A repeated id is valid JSON whose consequence the target decides (membership collects it once): EGL007
    reports it as an error, exit 1 (sample_trees/draft-layer-ids-invalid/duplicates_v033 has the whole case)."""
    root = small_tree(tmp_path / "t")
    cfg = config(tmp_path, "draft.json", {"architectures": ["LlamaForCausalLMEagle3"],
                                          "eagle_aux_hidden_state_layer_ids": [2, 16, 16]})
    proc = run_cli(["check", str(root), "--no-cache", "--draft-config", str(cfg), "--output-format", "json"], tmp_path)
    assert proc.returncode == 1, proc.stderr
    rep = json.loads(proc.stdout)
    assert any(f["rule"] == "EGL007" and f["severity"] == "error" and "more than once" in f["message"]
               for f in rep["findings"])


def test_malformed_speculative_config(tmp_path: Path) -> None:
    root = small_tree(tmp_path / "t")
    draft = config(tmp_path, "draft.json", {"architectures": ["LlamaForCausalLMEagle3"]})
    spec = json.dumps({"method": "eagle3", "model": str(draft), "num_speculative_tokens": "3"})
    line = assert_one_line_error(run_cli(["check", str(root), "--no-cache", "--speculative-config", spec], tmp_path))
    assert '--speculative-config: num_speculative_tokens: expected an integer, found "3"' in line, line
    # The drafter it names is checked like --draft-config, overrides included.
    spec = json.dumps({"method": "eagle3", "model": str(draft), "eagle_aux_hidden_state_layer_ids": "1,2"})
    line = assert_one_line_error(run_cli(["check", str(root), "--no-cache", "--speculative-config", spec], tmp_path))
    assert 'eagle_aux_hidden_state_layer_ids: expected a list of layer ids (integers >= 0), found "1,2"' in line


def test_output_into_a_missing_folder(tmp_path: Path) -> None:
    root = small_tree(tmp_path / "t")
    out = tmp_path / "nope" / "dir" / "rep.txt"
    line = assert_one_line_error(run_cli(["check", str(root), "--no-cache", "-o", str(out)], tmp_path))
    assert f"folder {out.parent} does not exist" in line
    assert not (tmp_path / "nope").exists()
    line = assert_one_line_error(run_cli(["check", str(root), "--no-cache", "-o", str(tmp_path)], tmp_path))
    assert "is a folder" in line


def _no_caps(args: list[str], tmp: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*NO_CAPS, sys.executable, "-m", "eagle3_lint", *args], capture_output=True, text=True,
                          timeout=300, env=cli_env(tmp))


def test_read_only_cache_is_one_line(tmp_path: Path) -> None:
    """Fetching a release into a cache the user cannot write is said as such, before any download."""
    if not can_drop_caps(tmp_path):
        pytest.skip("cannot drop capabilities here (no setpriv)")
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o555)
    try:
        line = assert_one_line_error(_no_caps(["check", "vllm==0.16.0", "--cache-dir", str(cache)], tmp_path))
    finally:
        cache.chmod(0o755)
    assert f"the cache folder {cache} is not writable (Permission denied)" in line, line
    assert "internal error" not in line


def test_unreadable_folders_say_not_readable(tmp_path: Path) -> None:
    if not can_drop_caps(tmp_path):
        pytest.skip("cannot drop capabilities here (no setpriv)")
    root = small_tree(tmp_path / "t")
    for rel in (MODELS, "vllm/config"):
        folder = root / rel
        if not folder.is_dir():
            folder.mkdir(parents=True)
        folder.chmod(0)
        try:
            line = assert_one_line_error(_no_caps(["check", str(root), "--no-cache"], tmp_path))
        finally:
            folder.chmod(0o755)
        assert f"{rel}/ is not readable (Permission denied)" in line, line
        assert "missing" not in line
