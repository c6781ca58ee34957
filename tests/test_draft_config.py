"""EGL007 draft-layer-ids-invalid: drafter configs checked against the target and the analyzed tree.

Sample cases live in ``sample_trees/draft-layer-ids-invalid/<case>/``: a ``case.toml`` (base, target
and drafter configs under ``configs/``, optional ``pipeline_parallel`` / ``pp_partition``) whose
``[[expect]]`` tables list every EGL007 finding exactly (where, line, severity, a message excerpt).
The generic sample-tree test runs the same trees without a drafter config, where they must be
clean for every rule. Real-tree tests use the public-checkpoint configs in ``sample_trees/_checkpoints``.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from eagle3_lint import minieval
from eagle3_lint._compat import tomllib
from eagle3_lint.analysis import Analysis, Options, analyze
from eagle3_lint.engines import dir_source
from eagle3_lint.engines.vllm import drafter, pp
from tests.cihelp import run_cli
from tests.conftest import SAMPLES, materialize, session_cache

CASES = SAMPLES / "draft-layer-ids-invalid"
CHECKPOINTS = SAMPLES / "_checkpoints"


def _cases() -> list[Path]:
    return sorted(p.parent for p in CASES.glob("*/case.toml"))


def _run(root: Path, target_cfg: Path, draft_cfg: Path, archs: tuple[str, ...], pp_size: int | None = None,
         partition: str | None = None, runner: str = "auto") -> Analysis:
    opts = Options(targets=archs, target_config=json.loads(target_cfg.read_text()), target_config_path=str(target_cfg),
                   draft_config=json.loads(draft_cfg.read_text()), draft_config_path=str(draft_cfg),
                   pipeline_parallel=pp_size, pp_partition=partition, runner=runner, cache_dir=session_cache())
    return analyze(dir_source(root), opts, select=lambda r: r == "EGL007")


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.name)
def test_case(case: Path, tmp_path: Path) -> None:
    meta = tomllib.loads((case / "case.toml").read_text())
    root = materialize(case, tmp_path / "tree")
    draft = case / meta["draft_config"]
    ctx = _run(root, case / meta["target_config"], draft, tuple(meta["archs"]), meta.get("pipeline_parallel"),
               meta.get("pp_partition"))
    assert not ctx.errors, [e.message + e.traceback for e in ctx.errors]
    got = [("draft" if f.location.path == str(draft) else f.location.path, f.location.line, f.severity.value, f.message)
           for f in ctx.findings]
    want = meta.get("expect", [])
    unmatched = list(got)
    for w in want:
        key = (w["where"], w["line"], w["severity"])
        hit = next((g for g in unmatched if g[:3] == key and w["contains"] in g[3]), None)
        assert hit is not None, f"missing {w} in {got}"
        unmatched.remove(hit)
    assert not unmatched, f"unexpected findings: {unmatched}"


# -- the evaluator ------------------------------------------------------------------------------------
def _fn(src: str) -> minieval.FuncValue:
    tree = ast.parse(src)
    env = minieval.ModuleEnv.of(tree)
    fn = env.function(tree.body[-1].name)  # type: ignore[attr-defined]
    assert fn is not None
    return fn


def test_minieval_evaluates_the_default_body_with_n_bound() -> None:
    fn = _fn("def get(self):\n    holder = getattr(self.get_language_model(), 'model', self)\n"
             "    num_layers = len(holder.layers)\n    return (2, num_layers // 2, num_layers - 3)\n")
    world = minieval.World(length=lambda p: 61 if p[-1] == "layers" else minieval.NOTHING)
    assert minieval.Interpreter(world).call(fn, [minieval.Opaque(("self",))]) == (2, 30, 58)


def test_minieval_never_runs_what_it_does_not_model(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    fn = _fn(f"def f():\n    open({str(marker)!r}, 'w').write('x')\n    __import__('os').system('touch {marker}')\n"
             "    return 1\n")
    with pytest.raises(minieval.Unsupported):
        minieval.Interpreter().call(fn)
    partial = minieval.Interpreter(strict=False)
    assert partial.call(fn) == 1  # the calls became unknown statements, nothing ran
    assert not marker.exists()


def test_minieval_budget_and_raise() -> None:
    loop = _fn("def f():\n    x = 0\n    while True:\n        x += 1\n")
    with pytest.raises(minieval.Unsupported, match="budget"):
        minieval.Interpreter(max_steps=10_000).call(loop)
    boom = _fn("def f(n):\n    if n > 2:\n        raise ValueError(f'too many: {n}')\n    return n\n")
    with pytest.raises(minieval.EvalRaise, match="too many: 3"):
        minieval.Interpreter().call(boom, [3])
    assert minieval.Interpreter().call(boom, [2]) == 2


def test_partial_mode_keeps_what_both_branches_agree_on() -> None:
    # ``undefined`` is unknown (partial mode): both branches run, ``b`` differs, ``c`` agrees.
    fn = _fn("def f(cfg):\n    a = 3\n    if undefined:\n        b, c = 1, 5\n    else:\n        b, c = 2, 5\n"
             "    return (a, b, c, bool(cfg.some_object))\n")
    r = minieval.Interpreter(strict=False).call(fn, [minieval.Opaque(("cfg",))])
    # Objects the code reaches through attributes are taken to exist (truthy), as the runner assumes.
    assert r[0] == 3 and r[1] is minieval.UNKNOWN and r[2] == 5 and r[3] is minieval.UNKNOWN


# -- pipeline split ---------------------------------------------------------------------------------
@pytest.mark.parametrize("n,size", [(32, 2), (61, 4), (94, 4), (10, 4), (80, 8), (5, 3)])
def test_pp_split_from_the_sample_tree_matches_the_reference(n: int, size: int) -> None:
    src = dir_source(SAMPLES / "_bases" / "v033_draft")
    sp = pp.split(src, n, size)
    assert sp.source == "tree" and sp.path == "vllm/distributed/utils.py" and sp.reads_partition_env
    assert sp.ranges == pp.reference_split(n, size)
    assert sum(e - s for s, e in sp.ranges) == n


def test_pp_partition_override_and_its_errors() -> None:
    src = dir_source(SAMPLES / "_bases" / "v016_draft")
    assert pp.split(src, 32, 2, "8,24").ranges == ((0, 8), (8, 32))
    bad = pp.split(src, 32, 2, "8,8")
    assert bad.ranges == () and "does not match num_hidden_layers" in bad.note


def test_text_config_of_a_multimodal_target() -> None:
    kimi = json.loads((CHECKPOINTS / "kimi-k2.5.json").read_text())
    assert drafter.text_config(kimi)["num_hidden_layers"] == 61  # type: ignore[index]


# -- the CLI ------------------------------------------------------------------------------------------
def test_cli_json_and_text_show_the_pipeline_layout(tmp_path: Path) -> None:
    case = CASES / "pp_no_relay_v016"
    root = materialize(case, tmp_path / "tree")
    args = ["check", str(root), "--no-cache",
            "--target-config", str(case / "configs/target.json"), "--draft-config", str(case / "configs/draft.json"),
            "--pipeline-parallel", "2"]
    p = run_cli([*args, "--output-format", "json"], cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    rep: dict[str, Any] = json.loads(p.stdout)
    d = rep["draft"]
    assert d["effective_ids"] == [2, 16, 29] and d["effective_from"] == "default"
    ranks = d["pipeline_parallel"]["ranks"]
    assert [(r["start"], r["end"]) for r in ranks] == [(0, 16), (16, 32)]
    assert [[c["id"] for c in r["captures"]] for r in ranks] == [[2], [16, 29]]
    assert any(f["rule"] == "EGL007" and f["severity"] == "error" for f in rep["findings"])
    t = run_cli(args, cwd=tmp_path, env={"COLUMNS": "200", "PATH": ""})
    assert "pipeline parallel 2" in t.stdout and "captures aux ids" in t.stdout, t.stdout + t.stderr


# -- real releases -----------------------------------------------------------------------------------
# (target config, drafter config, architecture) in sample_trees/_checkpoints.
KIMI_SPECFORGE = ("kimi-k2.5.json", "specforge-kimi-k25-eagle3.json", "KimiK25ForConditionalGeneration")
LLAMA_REFERENCE = ("llama-3.1-8b-instruct.json", "yuhuili-eagle3-llama3.1-8b.json", "LlamaForCausalLM")


def _real(real_trees: Any, version: str, target: str, draft: str, arch: str, pp_size: int | None = None,
          runner: str = "auto") -> Analysis:
    ctx = _run(real_trees.get(version), CHECKPOINTS / target, CHECKPOINTS / draft, (arch,), pp_size, runner=runner)
    assert not ctx.errors, [e.message for e in ctx.errors]
    return ctx


def _msgs(ctx: Analysis, severity: str | None = None) -> list[str]:
    return [f.message for f in ctx.findings if severity is None or f.severity.value == severity]


@pytest.mark.real
def test_real_kimi_specforge_drafter_across_runner_generations(real_trees: Any) -> None:
    # 0.18: the runner reads only the top-level key, so eagle_config's ids are ignored for the default.
    c18 = _real(real_trees, "0.18.0", *KIMI_SPECFORGE)
    da = drafter.analyze(c18.model)
    assert da is not None and da.runner_ids is None and da.default_ids == (2, 30, 58)
    # Its ids (2, 30, 58) are the training default, which SGLang reads as "input to layer X" since
    # sgl-project/sglang#25454 (0.5.23 deepseek_v2.py:3468-3473: +1 only when the first id is 1): trained on the
    # states entering (2, 30, 58), the default the runner falls back to, so ignoring them costs nothing.
    assert not [m for m in _msgs(c18) if "is ignored" in m or "trained on" in m]
    # 0.33, V1 (gpu_model_runner.py:5180 _get_eagle3_aux_layers_from_config): eagle_config is read as-is and the
    # decoder captures the states entering (2, 30, 58): what the drafter was trained on.
    c33 = _real(real_trees, "0.33.0", *KIMI_SPECFORGE, 4, runner="v1")
    da = drafter.analyze(c33.model)
    assert da is not None and da.runner_ids == (2, 30, 58) and da.fc is not None and da.fc.in_size == 3 * 7168
    assert not [m for m in _msgs(c33) if "trained on" in m]
    # 0.33, V2, the default (config/vllm.py:731 use_v2_model_runner is True for a plain EAGLE-3 set-up):
    # eagle3_utils.get_eagle3_aux_layers_from_config reads only eagle_config["layer_ids"], so the SpecForge ids are
    # ignored and the model default (2, n//2, n-3) = (2, 30, 58) is used; V2's verifier refuses PP 4
    # (eagle3_utils.py:57: DeepseekV2Model does not set supports_aux_hidden_states_over_pp).
    v2 = _real(real_trees, "0.33.0", *KIMI_SPECFORGE, 4)
    da2 = drafter.analyze(v2.model)
    assert da2 is not None and da2.runner is not None and da2.runner.value == "v2"
    assert da2.runner_ids is None and da2.default_ids == (2, 30, 58) and da2.effective_from == "default"
    assert any("refuses EAGLE-3" in m for m in _msgs(v2, "error"))


@pytest.mark.real
def test_real_deepseek_specforge_drafter_matches_the_default(real_trees: Any) -> None:
    ctx = _real(real_trees, "0.18.0", "deepseek-v3.json", "specforge-deepseek-v3-eagle3.json", "DeepseekV3ForCausalLM")
    assert _msgs(ctx) == []  # (1, 29, 57) in output numbering is the default (2, 30, 58)


@pytest.mark.real
def test_real_speculators_conversion_by_the_tree(real_trees: Any) -> None:
    ctx = _real(real_trees, "0.33.0", "qwen3-235b-a22b.json", "nm-testing-qwen3-235b-eagle3-speculators.json",
                "Qwen3MoeForCausalLM", 4)
    da = drafter.analyze(ctx.model)
    assert da is not None and da.speculators and da.converted is not None
    assert da.converted["architectures"] == ["Eagle3LlamaForCausalLM"]  # set by the tree's update_eagle3
    assert da.runner_ids == (1, 46, 90) and da.default_ids == (2, 47, 91) and da.fc and da.fc.in_size == 3 * 4096
    assert any("minus one" in m for m in _msgs(ctx, "warning"))
    assert any("refuses EAGLE-3" in m for m in _msgs(ctx, "error"))


@pytest.mark.real
def test_real_llama_reference_drafter_with_pipeline_parallelism(real_trees: Any) -> None:
    old = _real(real_trees, "0.16.0", *LLAMA_REFERENCE, 2)
    note = next(f.message for f in old.findings if f.severity.value == "note")
    # 0.16's llama.py enumerates a slice without start=: rank 1 compares slice-relative indices.
    assert "rank 1 captures 2 (as the state entering layer 18)" in note and "no rank captures (16, 29)" in note
    assert any("receives 1 of 3" in m for m in _msgs(old, "error"))
    # ... and refuses the set-up at config time anyway: the drafter gets the target's PP size (speculative.py:645)
    # and Eagle3LlamaForCausalLM's forward takes no intermediate_tensors (verify_with_parallel_config, :678).
    assert any("verify_with_parallel_config raises" in m for m in _msgs(old, "error"))
    new = _real(real_trees, "0.33.0", *LLAMA_REFERENCE, 2)
    assert sorted(f.severity.value for f in new.findings) == ["note", "warning"]
    note = next(f.message for f in new.findings if f.severity.value == "note")
    assert "rank 0 captures 2, 16; rank 1 captures 29" in note
    # V2 (the default) reserves relay slots (eagle3_utils.py:41) and serves; V1 builds the drafter on the last rank
    # only and every rank reads it at start-up (gpu_model_runner.py:598, :6802-6808): rank 0 raises AttributeError,
    # pp-refused (tests/test_real_rank_guard.py), whatever its relay (its last rank would raise too, interfaces.py:1676
    # 'Missing ... from PP intermediate tensors'). The two runners disagree.
    warn = next(f.message for f in new.findings if f.severity.value == "warning")
    assert "the two runners of this vLLM read this drafter differently" in warn and "pp-refused" in warn


@pytest.mark.real
@pytest.mark.parametrize("version", ["0.9.2", "0.16.0", "0.33.0"])
def test_real_get_pp_indices_is_evaluated_from_the_tree(real_trees: Any, version: str) -> None:
    src = dir_source(real_trees.get(version))
    for n, size in [(32, 2), (61, 4), (94, 8), (10, 4)]:
        sp = pp.split(src, n, size)
        assert sp.source == "tree" and not sp.note, sp.note
        assert sp.ranges == pp.reference_split(n, size)
    assert pp.split(src, 61, 4, "16,16,16,13").ranges == ((0, 16), (16, 32), (32, 48), (48, 61))


def test_implausible_layer_count_is_ignored_with_a_note(tmp_path: Path) -> None:
    """A hostile num_hidden_layers (2**70: fuzz/regressions/) must not make the PP layout walk every layer."""
    case = CASES / "pp_no_relay_v016"
    root = materialize(case, tmp_path / "tree")
    target = json.loads((case / "configs/target.json").read_text())
    target["num_hidden_layers"] = 2**70
    tpath = tmp_path / "target.json"
    tpath.write_text(json.dumps(target))
    p = run_cli(["check", str(root), "--no-cache", "--output-format", "json", "--target-config", str(tpath),
                 "--draft-config", str(case / "configs/draft.json"), "--pipeline-parallel", "2"], cwd=tmp_path)
    assert p.returncode in (0, 1), p.stderr
    d = json.loads(p.stdout)["draft"]
    assert d["target"]["num_hidden_layers"] is None
    assert any("not a plausible layer count" in n for n in d["notes"]), d["notes"]
