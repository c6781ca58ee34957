"""A targeted architecture whose import path reaches a file that cannot be read or parsed is blocked.

vLLM imports the model module when it inspects the registered class (0.16.0
``vllm/model_executor/models/registry.py:872-878``: "Model architectures [...] failed to be inspected"), so a
syntax error, undecodable bytes or a permission denial in the module, in a package ``__init__`` above it, or in a
model module it imports at load time stops the model loading. SGLang imports every model module to build its
registry and skips one that raises (0.5.23 ``sglang/srt/models/registry.py:127-133``, "Ignore import error when
loading"), so an architecture defined or imported there is not registered. Either way: the verdict line names the
file and line, it counts as a blocker, exit 1, and targeting never makes the check more lenient than without it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.hostile import cli_env, run_cli, small_tree, write
from tests.test_bad_input import NO_CAPS, can_drop_caps

MODELS = "vllm/model_executor/models"


def check(root: Path, tmp: Path, *extra: str, prefix: list[str] | None = None) -> tuple[int, str, dict]:
    """(exit code, text report, JSON report) of one targeted check; no traceback, no internal error."""
    import subprocess
    import sys

    out: list[tuple[int, str]] = []
    for fmt in ("concise", "json"):
        args = ["check", str(root), "--no-cache", "--output-format", fmt, *extra]
        if prefix:
            proc = subprocess.run([*prefix, sys.executable, "-m", "eagle3_lint", *args], capture_output=True,
                                  text=True, timeout=300, env=cli_env(tmp))
        else:
            proc = run_cli(args, tmp)
        assert "Traceback" not in proc.stderr, proc.stderr
        assert "internal error" not in proc.stderr, proc.stderr
        out.append((proc.returncode, proc.stdout))
    assert out[0][0] == out[1][0], out
    return out[0][0], out[0][1], json.loads(out[1][1])


def serving(rep: dict, arch: str) -> dict:
    return next(s for s in rep["serving"] if s["architecture"] == arch)


def step(sv: dict, gate: str) -> dict:
    return next(s for s in sv["steps"] if s["gate"] == gate)


def first_line(text: str) -> str:
    return text.splitlines()[0]


def test_syntax_error_in_the_targets_own_file_blocks(tmp_path: Path) -> None:
    root = small_tree(tmp_path / "t")
    good = root / MODELS / "good.py"
    n = len(good.read_text().splitlines())
    with good.open("a") as fh:
        fh.write("def broken(:\n")
    code, text, rep = check(root, tmp_path, "--arch", "GoodForCausalLM")
    assert code == 1
    line = first_line(text)
    assert line.startswith("GoodForCausalLM on vLLM"), line
    assert f"cannot be imported ({MODELS}/good.py:{n + 1})" in line, line
    assert line.endswith("-- 1 blocker"), line
    assert "EGL000" in text and "no blocker found" not in text
    sv = serving(rep, "GoodForCausalLM")
    assert sv["outcome"] == "unimportable" and sv["stage"] == "import"
    imp = step(sv, "import")
    assert (imp["result"], imp["path"], imp["line"]) == ("fail", f"{MODELS}/good.py", n + 1)
    assert sv["next_step"].startswith(f"repair {MODELS}/good.py:{n + 1} by hand")
    # The healthy architecture beside it is still judged, and not blocked by a file it never imports.
    code2, text2, rep2 = check(root, tmp_path, "--arch", "PlainForCausalLM")
    assert serving(rep2, "PlainForCausalLM")["stage"] != "import"
    assert "EGL000" not in text2.split("Found")[0]
    # Without --arch the same tree fails as well: targeting is never more lenient.
    assert check(root, tmp_path)[0] == 1


def test_undecodable_bytes_point_at_their_line(tmp_path: Path) -> None:
    root = small_tree(tmp_path / "t")
    good = root / MODELS / "good.py"
    n = len(good.read_text().splitlines())
    with good.open("ab") as fh:
        fh.write(b"\n\n\x00\xff\xfe junk\n")
    code, text, rep = check(root, tmp_path, "--arch", "GoodForCausalLM")
    assert code == 1
    assert f"cannot be imported ({MODELS}/good.py:{n + 3})" in first_line(text)
    assert "cannot decode" in step(serving(rep, "GoodForCausalLM"), "import")["message"]


def test_a_broken_module_the_target_imports_blocks_it(tmp_path: Path) -> None:
    """The class's own file parses; a model module it imports at load time does not (through a package
    ``__init__`` too), while one imported only under ``if TYPE_CHECKING:`` never runs and does not block."""
    root = small_tree(tmp_path / "t")
    good = root / MODELS / "good.py"
    write(root, f"{MODELS}/helpers/__init__.py", "from .deep import thing\n")
    write(root, f"{MODELS}/helpers/deep.py", "thing = (\n")
    write(root, f"{MODELS}/typing_only.py", "class X(:\n")
    good.write_text("from typing import TYPE_CHECKING\n\nfrom .helpers import thing\n\nif TYPE_CHECKING:\n"
                    "    from .typing_only import X\n\n" + good.read_text())
    code, text, rep = check(root, tmp_path, "--arch", "GoodForCausalLM")
    assert code == 1
    imp = step(serving(rep, "GoodForCausalLM"), "import")
    assert imp["path"] == f"{MODELS}/helpers/deep.py", imp
    assert "typing_only" not in imp["message"]
    # The TYPE_CHECKING-only import alone: not a blocker of this target (still EGL000 without --arch).
    write(root, f"{MODELS}/helpers/deep.py", "thing = 1\n")
    code, text, rep = check(root, tmp_path, "--arch", "GoodForCausalLM")
    assert code == 0, text
    assert all(s["gate"] != "import" for s in serving(rep, "GoodForCausalLM")["steps"])
    assert check(root, tmp_path)[0] == 1


def test_unreadable_targeted_file_blocks(tmp_path: Path) -> None:
    """A real permission denial (setpriv drops CAP_DAC_OVERRIDE, so root obeys the mode bits)."""
    if not can_drop_caps(tmp_path):
        pytest.skip("cannot drop capabilities here (no setpriv)")
    root = small_tree(tmp_path / "t")
    (root / MODELS / "good.py").chmod(0)
    try:
        code, text, rep = check(root, tmp_path, "--arch", "GoodForCausalLM", prefix=NO_CAPS)
    finally:
        (root / MODELS / "good.py").chmod(0o644)
    assert code == 1
    assert f"cannot be imported ({MODELS}/good.py:1)" in first_line(text)
    assert "Permission denied" in step(serving(rep, "GoodForCausalLM"), "import")["message"]


def test_sglang_target_whose_file_is_broken_is_unregistered_not_a_typo(tmp_path: Path) -> None:
    """SGLang reads its registry from the model files' EntryClass: a broken file that names the target is why it
    is missing, so the check blocks (exit 1) instead of calling the name unknown (exit 2)."""
    root = tmp_path / "sg"
    shutil.copytree(Path(__file__).resolve().parent.parent / "sample_trees/_bases/sglang_small", root)
    llama = root / "sglang/srt/models/llama.py"
    assert "LlamaForCausalLM" in llama.read_text()
    n = len(llama.read_text().splitlines())
    with llama.open("a") as fh:
        fh.write("def broken(:\n")
    code, text, rep = check(root, tmp_path, "--arch", "LlamaForCausalLM")
    assert code == 1, text
    assert f"not registered, so the engine cannot load it (sglang/srt/models/llama.py:{n + 1})" in first_line(text)
    reg = step(serving(rep, "LlamaForCausalLM"), "registry")
    assert reg["result"] == "fail" and "which names it, does not parse" in reg["message"]
    # A real typo is still a usage error.
    proc = run_cli(["check", str(root), "--no-cache", "--arch", "LlamaForCausalLMX"], tmp_path)
    assert proc.returncode == 2 and "unknown architecture" in proc.stderr


@pytest.mark.real
def test_kimi_k25_with_a_broken_file_on_vllm_0_16_0(real_trees, tmp_path: Path) -> None:  # noqa: ANN001
    """The issue's reproduction: ``def broken(:`` appended to kimi_k25.py, and binary junk in deepseek_v2.py,
    the module of the language model the Kimi-K2.5 checkpoint names (text_config.architectures
    DeepseekV3ForCausalLM, registry.py: ``("deepseek_v2", "DeepseekV3ForCausalLM")``)."""
    src = real_trees.get("0.16.0")
    root = tmp_path / "v"
    shutil.copytree(src / "vllm", root / "vllm")
    kimi = root / MODELS / "kimi_k25.py"
    n = len(kimi.read_text().splitlines())
    with kimi.open("a") as fh:
        fh.write("def broken(:\n")
    code, text, rep = check(root, tmp_path, "--arch", "KimiK25ForConditionalGeneration")
    assert code == 1
    assert f"cannot be imported ({MODELS}/kimi_k25.py:{n + 1}) -- 1 blocker" in first_line(text)
    shutil.copy2(src / MODELS / "kimi_k25.py", kimi)
    ds = root / MODELS / "deepseek_v2.py"
    m = len(ds.read_bytes().splitlines())
    with ds.open("ab") as fh:
        fh.write(b"\n\xff\xfe")
    cfg = Path(__file__).resolve().parent.parent / "sample_trees/_checkpoints/kimi-k2.5.json"
    code, text, rep = check(root, tmp_path, "--arch", "KimiK25ForConditionalGeneration", "--target-config", str(cfg))
    assert code == 1
    imp = step(serving(rep, "KimiK25ForConditionalGeneration"), "import")
    assert (imp["path"], imp["line"]) == (f"{MODELS}/deepseek_v2.py", m + 2)  # a blank line, then the junk
    assert first_line(text).startswith("KimiK25ForConditionalGeneration on vLLM 0.16.0 (CUDA): cannot be imported")

