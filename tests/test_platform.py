"""``--platform cuda|rocm|cpu|xpu``: the runner vLLM picks there and the model classes a platform dispatch resolves to.

Expectations from the releases' source:

- vLLM 0.33.0 ``vllm/models/deepseek_v4/__init__.py`` imports ``DeepseekV4ForCausalLM`` from ``.amd.model`` under
  ``if current_platform.is_rocm():``, ``.xpu.model`` under ``elif current_platform.is_xpu():``, ``.cpu.model``
  under ``elif current_platform.is_cpu():`` and ``.nvidia.model`` in the final ``else``; the registry names
  ``("vllm.models.deepseek_v4", "DeepseekV4ForCausalLM")``.
- vLLM 0.33.0 ``vllm/models/minimax_m3/__init__.py``: ``if TYPE_CHECKING or not current_platform.is_rocm():``
  imports the NVIDIA classes, ``else`` the AMD ones.
- vLLM 0.33.0 ``VllmConfig.use_v2_model_runner`` (``vllm/config/vllm.py:731-767``) returns False when
  ``not HAS_TRITON and not current_platform.is_unspecified()`` (752): vLLM's CPU builds have no Triton, so the CPU
  worker builds the V1 ``CPUModelRunner`` (``vllm/v1/worker/cpu_worker.py:164``), a ``GPUModelRunner`` subclass
  (``vllm/v1/worker/cpu_model_runner.py:23``); on CUDA with Triton a plain EAGLE-3 set-up gets V2.
- vLLM 0.30.0 ``VllmConfig.use_v2_model_runner`` (``vllm/config/vllm.py:675-723``): without Triton (CPU) it returns
  False at 708-712; with it, ``_get_v2_model_runner_unsupported_features`` (2815) first tests
  ``self.compilation_config.mode == CompilationMode.STOCK_TORCH_COMPILE`` (2821; the enum is
  ``config/compilation.py:37-50``, STOCK_TORCH_COMPILE = 1). A plain set-up's mode is VLLM_COMPILE (3): the default
  is None (compilation.py:454) and ``__post_init__`` sets VLLM_COMPILE above O0 (vllm.py:1595-1597), O2 being the
  default (440); nothing else in that list applies to a plain EAGLE-3 set-up, so CUDA gets V2.
- vLLM 0.16.0 ``vllm/v1/worker/cpu_model_runner.py:25``: ``assert self.speculative_config is None, "spec decode is
  not supported."``, so on CPU an EAGLE-3 set-up never reaches the model.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from eagle3_lint.app import CLI_PLATFORMS
from eagle3_lint.facts import PLATFORMS, branch_platforms, extract, platform_test
from tests.cihelp import run_cli


def report(root: Path, tmp: Path, *args: str) -> dict:
    proc = run_cli(["check", str(root), "--output-format", "json", *args], cwd=tmp)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def arch_row(rep: dict, name: str) -> dict:
    return next(a for a in rep["architectures"] if a["name"] == name)


def test_platform_choices_are_evaluated() -> None:
    assert set(CLI_PLATFORMS) < set(PLATFORMS)
    cond = ast.parse("TYPE_CHECKING or not current_platform.is_rocm()", mode="eval").body
    assert {p: platform_test(cond, p) for p in PLATFORMS} == {
        "cuda": True, "rocm": False, "cpu": True, "xpu": True, "unspecified": True}
    alike = ast.parse("current_platform.is_cuda_alike()", mode="eval").body
    assert [p for p in PLATFORMS if platform_test(alike, p)] == ["cuda", "rocm"]
    dev = ast.parse("current_platform.device_type == 'cpu'", mode="eval").body
    assert [p for p in PLATFORMS if platform_test(dev, p)] == ["cpu"]


def test_an_elif_dispatch_gives_each_platform_one_binding() -> None:
    src = ("if current_platform.is_rocm():\n    from .amd import M\nelif current_platform.is_cpu():\n"
           "    from .cpu import M\nelse:\n    from .nvidia import M\n")
    mf = extract("vllm/models/x/__init__.py", "vllm.models.x", True, src.encode())
    got = {b.target: branch_platforms(b.branch) for b in mf.bindings["M"]}
    assert got == {"vllm.models.x.amd": {"rocm"}, "vllm.models.x.cpu": {"cpu"},
                   "vllm.models.x.nvidia": {"cuda", "xpu", "unspecified"}}


@pytest.mark.real
def test_platform_dispatched_classes_on_vllm_0_33_0(real_trees, tmp_path: Path) -> None:  # noqa: ANN001
    root = real_trees.get("0.33.0")
    want = {"cuda": "nvidia", "rocm": "amd", "cpu": "cpu", "xpu": "xpu"}
    for platform, vendor in want.items():
        rep = report(root, tmp_path, "--arch", "DeepseekV4ForCausalLM", "--platform", platform)
        row = arch_row(rep, "DeepseekV4ForCausalLM")
        assert row["path"] == f"vllm/models/deepseek_v4/{vendor}/model.py", (platform, row)
        assert rep["serving"][0]["platform"] == platform
    for platform, vendor in {"cuda": "nvidia", "rocm": "amd", "cpu": "nvidia"}.items():
        rep = report(root, tmp_path, "--arch", "MiniMaxM3SparseForCausalLM", "--platform", platform)
        assert arch_row(rep, "MiniMaxM3SparseForCausalLM")["path"] == f"vllm/models/minimax_m3/{vendor}/model.py"


@pytest.mark.real
def test_runner_choice_follows_the_platform_on_vllm_0_33_0(real_trees, tmp_path: Path) -> None:  # noqa: ANN001
    root = real_trees.get("0.33.0")
    cuda = report(root, tmp_path, "--arch", "LlamaForCausalLM")["serving"][0]
    cpu = report(root, tmp_path, "--arch", "LlamaForCausalLM", "--platform", "cpu")["serving"][0]
    assert (cuda["runner"], cuda["platform"]) == ("v2", "cuda")
    assert (cpu["runner"], cpu["platform"]) == ("v1", "cpu")
    assert "on CPU without Triton" in cpu["runner_reason"]
    text = run_cli(["check", str(root), "--arch", "LlamaForCausalLM", "--platform", "cpu"], cwd=tmp_path).stdout
    assert text.startswith("LlamaForCausalLM on vLLM 0.33.0 (CPU): ")
    trace = run_cli(["trace", str(root), "--arch", "LlamaForCausalLM", "--platform", "cpu"], cwd=tmp_path).stdout
    assert "on CPU, the V1 runner" in trace and "CPU without Triton" in trace


@pytest.mark.real
def test_cpu_runner_refuses_speculative_decoding_on_vllm_0_16_0(real_trees, tmp_path: Path) -> None:  # noqa: ANN001
    root = real_trees.get("0.16.0")
    sv = report(root, tmp_path, "--arch", "LlamaForCausalLM", "--platform", "cpu")["serving"][0]
    assert (sv["outcome"], sv["stage"]) == ("refused-at-load", "runner-interface")
    step = next(s for s in sv["steps"] if s["gate"] == "runner-interface")
    assert (step["path"], step["line"]) == ("vllm/v1/worker/cpu_model_runner.py", 25)
    assert "assert self.speculative_config is None" in step["message"]
    # On CUDA the same target passes that step.
    sv = report(root, tmp_path, "--arch", "LlamaForCausalLM")["serving"][0]
    assert next(s for s in sv["steps"] if s["gate"] == "runner-interface")["result"] == "pass"


def test_an_enum_member_of_the_tree_compares_as_in_python() -> None:
    """``mode == Mode.STOCK`` with the enum read from the module's source (never imported), as an IntEnum compares."""
    from eagle3_lint import minieval as me

    tree = ast.parse("import enum\nclass Mode(enum.IntEnum):\n    NONE = 0\n    STOCK = 1\n    BOTH = (NONE, STOCK)\n"
                     "def f(mode):\n"
                     "    return (mode == Mode.STOCK, mode != Mode.NONE, mode is Mode.STOCK, mode == 1)\n")
    members = me.enum_members(tree, "Mode")
    assert members is not None and set(members) == {"NONE", "STOCK"}  # BOTH is no literal: left out
    fn = me.FuncValue(me.find_function(tree, "f"), me.ModuleEnv.of(tree))  # type: ignore[arg-type]
    assert me.Interpreter().call(fn, [members["STOCK"]]) == (True, True, True, True)
    assert me.Interpreter().call(fn, [members["NONE"]]) == (False, False, False, False)
    assert me.enum_members(tree, "f") is None


@pytest.mark.real
@pytest.mark.parametrize(("platform", "runner", "words"), [("cuda", "v2", "True"), ("cpu", "v1", "False")])
def test_runner_choice_on_vllm_0_30_0(real_trees, platform: str, runner: str, words: str) -> None:  # noqa: ANN001
    from eagle3_lint.analysis import Options, analyze
    from eagle3_lint.engines import dir_source
    from eagle3_lint.engines.vllm import runnerchoice

    ctx = analyze(dir_source(real_trees.get("0.30.0")), Options(platform=platform, targets=("LlamaForCausalLM",)),
                  select=lambda _rule: False)
    choice = runnerchoice.chosen(ctx.model, "LlamaForCausalLM")
    assert choice.kind is not None and choice.kind.value == runner, choice.reason
    assert (choice.path, choice.line) == ("vllm/config/vllm.py", 675)
    assert f"use_v2_model_runner is {words} for a plain EAGLE-3 set-up" in choice.reason


@pytest.mark.real
def test_runner_choice_parses_its_files_once_per_analysis(real_trees, monkeypatch) -> None:  # noqa: ANN001
    """The choice is made per architecture (``VllmConfig.use_v2_model_runner`` reads
    ``self.model_config.architectures``, vLLM 0.33.0 ``vllm/config/vllm.py:731-767``), but the files it evaluates
    (``vllm/envs.py``, ``vllm/config/vllm.py``, the enum modules it imports) are parsed once per analysis, and
    the choice is the one a fresh parse gives."""
    from eagle3_lint import source_ast
    from eagle3_lint.analysis import Options, analyze
    from eagle3_lint.engines import dir_source
    from eagle3_lint.engines.vllm import runnerchoice

    ctx = analyze(dir_source(real_trees.get("0.33.0")), Options(), select=lambda _rule: False)
    parsed: list[str] = []
    real = source_ast._parse_module

    def counted(sm, rel: str):  # noqa: ANN001, ANN202
        parsed.append(rel)
        return real(sm, rel)
    monkeypatch.setattr(source_ast, "_parse_module", counted)
    archs = sorted(ctx.model.registry.entries)[:25]
    choices = [runnerchoice.chosen(ctx.model, a) for a in archs]
    assert parsed and len(parsed) == len(set(parsed)), parsed
    assert "vllm/config/vllm.py" in parsed
    assert {(c.path, c.line) for c in choices} == {("vllm/config/vllm.py", 731)}
    for a, c in list(zip(archs, choices, strict=True))[:3]:
        assert runnerchoice.choose(ctx.source, ctx.runner, a, None, 1) == c
