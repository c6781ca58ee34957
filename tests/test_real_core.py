"""The core on real released vLLM trees (issue: core). Each release is downloaded once and cached."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from eagle3_lint.analysis import Analysis, Options, analyze
from eagle3_lint.engines import dir_source
from eagle3_lint.model import Status
from eagle3_lint.report import SCHEMA_VERSION
from tests.conftest import session_cache

pytestmark = pytest.mark.real

_CTX: dict[str, Analysis] = {}


def ctx_for(real_trees: object, version: str) -> Analysis:
    if version not in _CTX:
        root = real_trees.get(version)  # type: ignore[attr-defined]
        _CTX[version] = analyze(dir_source(root), Options(cache_dir=session_cache()))
    return _CTX[version]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "eagle3_lint", *args], capture_output=True, text=True, timeout=600)


def test_v016_verdicts(real_trees: object) -> None:
    ctx = ctx_for(real_trees, "0.16.0")
    assert ctx.version == "0.16.0"
    for arch in ("KimiK25ForConditionalGeneration", "DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM"):
        assert ctx.verdicts[arch].supports_eagle3 is False, arch
    for arch in ("LlamaForCausalLM", "Qwen2ForCausalLM"):
        assert ctx.verdicts[arch].supports_eagle3 is True, arch
        assert ctx.verdicts[arch].status is Status.SUPPORTED
    assert not ctx.errors


def test_v016_contract_runner_gate(real_trees: object) -> None:
    ctx = ctx_for(real_trees, "0.16.0")
    c, r = ctx.contract, ctx.runner
    assert c.found and c.check == "structural" and c.runtime_checkable
    assert c.path == "vllm/model_executor/models/interfaces.py"
    assert set(c.required) == {"supports_eagle3", "set_aux_hidden_state_layers", "get_eagle3_aux_hidden_state_layers",
                               "has_own_lm_head", "has_own_embed_tokens"}
    assert not c.methods_have_defaults and c.mixin is None
    site = r.primary
    assert site is not None and site.path == "vllm/v1/worker/gpu_model_runner.py"
    assert site.interrogated == "self.get_model()"
    assert site.fallback == "get_eagle3_aux_hidden_state_layers" and site.setter == "set_aux_hidden_state_layers"
    assert "Model does not support EAGLE3 interface" in site.error
    assert r.config_key == "eagle_aux_hidden_state_layer_ids"
    assert len(r.gates) == 1
    g = r.gates[0]
    assert g.path == "vllm/config/speculative.py" and g.config_attr == "hf_text_config"
    assert g.allow_list == ("llama", "qwen", "minicpm", "gpt_oss", "hunyuan_vl", "hunyuan_v1_dense", "afmoe")


def test_v016_kimi_check_exits_1_with_egl001(real_trees: object) -> None:
    root = real_trees.get("0.16.0")  # type: ignore[attr-defined]
    p = cli("check", str(root), "--arch", "KimiK25ForConditionalGeneration", "--output-format", "json", "--no-cache")
    assert p.returncode == 1, p.stderr
    rep = json.loads(p.stdout)
    assert rep["schema_version"] == SCHEMA_VERSION and rep["target"]["vllm_version"] == "0.16.0"
    egl001 = [f for f in rep["findings"] if f["rule"] == "EGL001"]
    assert len(egl001) == 1
    msg = egl001[0]["message"]
    assert "KimiK25ForConditionalGeneration" in msg and "DeepseekV2ForCausalLM" in msg
    assert egl001[0]["path"] == "vllm/model_executor/models/kimi_k25.py"
    kimi = next(a for a in rep["architectures"] if a["name"] == "KimiK25ForConditionalGeneration")
    assert kimi["supports_eagle3"] is False and kimi["status"] == "unsupported"
    assert any(s["kind"] == "delegation" and "DeepseekV2ForCausalLM" in s["text"] for s in kimi["evidence"])


def test_v016_kimi_delegates_to_deepseek(real_trees: object) -> None:
    ctx = ctx_for(real_trees, "0.16.0")
    kimi, inner = ctx.keys["KimiK25ForConditionalGeneration"], ctx.keys["DeepseekV2ForCausalLM"]
    assert kimi is not None
    (d,) = [d for d in ctx.graph.delegations(kimi) if d.attr == "language_model"]
    assert d.target == inner and d.how == "registered-model" and d.path.endswith("kimi_k25.py")


def test_v016_trace_shows_chain(real_trees: object) -> None:
    root = real_trees.get("0.16.0")  # type: ignore[attr-defined]
    p = cli("trace", "KimiK25ForConditionalGeneration", str(root))
    assert p.returncode == 0, p.stderr
    out = " ".join(p.stdout.split())
    assert "gpu_model_runner.py:4190" in out
    assert "self.language_model" in out and "DeepseekV2ForCausalLM" in out
    assert "kimi_k25.py:309" in out
    assert "speculative.py:698" in out
    assert "DeepseekV2Model via self.language_model.model" in out


@pytest.mark.parametrize("version", ["0.18.1", "0.33.0"])
def test_kimi_supported_after_upstream_fix(real_trees: object, version: str) -> None:
    ctx = ctx_for(real_trees, version)
    v = ctx.verdicts["KimiK25ForConditionalGeneration"]
    assert v.supports_eagle3 is True and v.status is Status.SUPPORTED


def test_v033_contract_has_defaults_and_mixin(real_trees: object) -> None:
    ctx = ctx_for(real_trees, "0.33.0")
    c, r = ctx.contract, ctx.runner
    assert c.methods_have_defaults and c.mixin == "EagleModelMixin"
    assert c.default_getter == "get_eagle3_default_aux_hidden_state_layers"
    assert r.fallback_names == ("get_eagle3_default_aux_hidden_state_layers",)
    assert {Path(s.path).name for s in r.sites} >= {"gpu_model_runner.py", "eagle3_utils.py"}
    assert r.pp_verifier == "verify_supports_aux_hidden_states_over_pp"
    assert r.gates == ()
    # The vllm/models/<family>/ dispatcher resolves to the default (NVIDIA) implementation.
    k3 = ctx.keys["KimiK3ForConditionalGeneration"]
    assert k3 is not None and k3.module == "vllm.models.kimi_k3.nvidia.model"


def test_v092_has_no_protocol_but_a_runner_path(real_trees: object) -> None:
    ctx = ctx_for(real_trees, "0.9.2")
    assert not ctx.contract.found and ctx.contract.check == "duck"
    assert set(ctx.contract.required) == {"set_aux_hidden_state_layers", "get_eagle3_aux_hidden_state_layers"}
    assert ctx.verdicts["LlamaForCausalLM"].supports_eagle3 is True
    assert ctx.runner.gates and ctx.runner.gates[0].allow_list == ("llama",)


def test_wheel_target_reads_zip_in_place(tmp_path: Path, real_trees: object) -> None:
    """A .whl is read member by member; build a small wheel from a real release's files."""
    import zipfile

    root = real_trees.get("0.16.0")  # type: ignore[attr-defined]
    whl = tmp_path / "vllm-0.16.0-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w", zipfile.ZIP_DEFLATED) as z:
        for p in sorted((root / "vllm").rglob("*.py")):
            rel = p.relative_to(root).as_posix()
            in_needed_dir = rel.startswith(("vllm/model_executor/models/", "vllm/v1/worker/", "vllm/config/"))
            if in_needed_dir or rel == "vllm/version.py":
                z.write(p, rel)
        for p in (root / "vllm-0.16.0.dist-info").iterdir():
            z.write(p, f"vllm-0.16.0.dist-info/{p.name}")
    # --exit-zero: 0.16.0's LlamaModel loop is an EGL005 error (slice-relative aux index); this test is about the wheel.
    p = cli("check", str(whl), "--arch", "LlamaForCausalLM", "--output-format", "json", "--no-cache", "--exit-zero")
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep["target"]["vllm_version"] == "0.16.0"
    llama = next(a for a in rep["architectures"] if a["name"] == "LlamaForCausalLM")
    assert llama["supports_eagle3"] is True
