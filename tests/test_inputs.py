"""Inputs a deploying user has: model folders, vLLM's own --speculative-config spelling, -pp/-tp, names people type."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.cihelp import run_cli
from tests.conftest import SAMPLES, materialize

REPO = Path(__file__).resolve().parent.parent
CASE = SAMPLES / "draft-layer-ids-invalid" / "count_mismatch_v016"


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(["check", *args, "--no-cache"], cwd=cwd)


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    return materialize(CASE, tmp_path / "tree")


def _serving(p: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert p.returncode in (0, 1), p.stderr
    rep = json.loads(p.stdout)
    assert len(rep["serving"]) == 1
    return rep["serving"][0]


def test_model_folders_and_speculative_config_equal_the_config_files(tree: Path, tmp_path: Path) -> None:
    target, draft = tmp_path / "target-model", tmp_path / "drafter-model"
    target.mkdir()
    draft.mkdir()
    shutil.copy(CASE / "configs/target.json", target / "config.json")
    shutil.copy(CASE / "configs/draft.json", draft / "config.json")
    files = _serving(_run(str(tree), "--target-config", str(CASE / "configs/target.json"),
                          "--draft-config", str(CASE / "configs/draft.json"), "--output-format", "json", cwd=tmp_path))
    folders = _serving(_run(str(tree), "--target-config", str(target), "--draft-config", str(draft),
                            "--output-format", "json", cwd=tmp_path))
    spec = json.dumps({"method": "eagle3", "model": str(draft), "num_speculative_tokens": 3})
    spoken = _serving(_run(str(tree), "--target-config", str(target), "--speculative-config", spec, "-pp", "1",
                           "-tp", "4", "--output-format", "json", cwd=tmp_path))
    # The architecture comes from the target config's "architectures" (no --arch given).
    assert files["architecture"] == folders["architecture"] == spoken["architecture"] == "ToyForCausalLM"
    for key in ("outcome", "stage", "aux_layer_ids", "aux_layer_ids_source"):
        assert files[key] == folders[key] == spoken[key], key
    assert spoken["tensor_parallel"] == 4 and files["tensor_parallel"] is None


def test_speculative_config_overrides_reach_the_drafter_config(tree: Path, tmp_path: Path) -> None:
    spec = json.dumps({"method": "eagle3", "model": str(CASE / "configs/draft.json"),
                       "eagle_aux_hidden_state_layer_ids": [1, 2, 3]})
    sv = _serving(_run(str(tree), "--target-config", str(CASE / "configs/target.json"), "--speculative-config", spec,
                       "--output-format", "json", cwd=tmp_path))
    assert sv["aux_layer_ids"] == [1, 2, 3] and sv["aux_layer_ids_source"] == "drafter-config"


@pytest.mark.parametrize(("spec", "needle"), [
    ("not json", "--speculative-config is not JSON"),
    ('{"method": "ngram", "model": "x"}', "'ngram': eagle3-lint checks vLLM's methods eagle3, dflash"),
    ('{"method": "eagle3"}', 'needs "model"'),
    ('{"method": "eagle3", "model": "org/remote-drafter"}', "is not a local folder or file"),
])
def test_bad_speculative_config_is_one_line_exit_2(tree: Path, tmp_path: Path, spec: str, needle: str) -> None:
    p = _run(str(tree), "--speculative-config", spec, cwd=tmp_path)
    assert p.returncode == 2 and needle in p.stderr and p.stderr.count("\n") == 1, p.stderr


def test_json_nested_too_deep_is_one_line_exit_2(tree: Path, tmp_path: Path) -> None:
    # json's decoder recurses once per level: a file nested 200,000 deep raised RecursionError, which the CLI
    # reported as an internal error of ours; it is the user's file that cannot be read, as for any bad JSON.
    deep = "[" * 200_000 + "]" * 200_000
    bad = tmp_path / "deep.json"
    bad.write_text(deep)
    for args, needle in ((["--target-config", str(bad)], "--target-config is not readable JSON"),
                         (["--draft-config", str(bad)], "--draft-config is not readable JSON"),
                         (["--baseline", str(bad)], "baseline file is not readable JSON"),
                         (["--speculative-config", deep], "--speculative-config is not JSON")):
        p = _run(str(tree), *args, cwd=tmp_path)
        assert p.returncode == 2 and needle in p.stderr and "internal error" not in p.stderr, (args, p.stderr)
        assert p.stderr.count("\n") == 1, p.stderr


def test_folder_without_config_json_is_one_line_exit_2(tree: Path, tmp_path: Path) -> None:
    p = _run(str(tree), "--target-config", str(tmp_path), cwd=tmp_path)
    assert p.returncode == 2 and "is a folder without a config.json" in p.stderr


@pytest.mark.real
@pytest.mark.parametrize(("typed", "meant"), [
    ("moonshotai/Kimi-K2.5", "KimiK25ForConditionalGeneration"),  # HF repo id -> kimi_k25.py
    ("deepseek_v3", "DeepseekV3ForCausalLM"),  # model_type
    ("llamaforcausallm", "LlamaForCausalLM"),  # case
    ("Qwen/Qwen3-8B", "Qwen3ForCausalLM"),  # repo id with a size
    ("openai/gpt-oss-120b", "GptOssForCausalLM"),
])
def test_unknown_arch_suggests_what_people_meant(typed: str, meant: str, real_trees: Any, tmp_path: Path) -> None:
    tree = real_trees.get("0.33.0")
    for cmd in ("check", "trace"):
        p = run_cli([cmd, str(tree), "--arch", typed], cwd=tmp_path)
        assert p.returncode == 2 and f"did you mean {meant}" in p.stderr, (cmd, p.stderr)
