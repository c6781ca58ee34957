"""The pre-commit hook (issue 5), run by the real ``pre-commit`` binary in a temporary git repository
holding a small vLLM-shaped tree.

The repository's ``.pre-commit-hooks.yaml`` declares ``language: python``: pre-commit then builds a
virtualenv and pip-installs eagle3-lint from the hook repository, which needs the network. The
offline test here runs the same hook (id, entry, files, pass_filenames, require_serial copied from
the manifest) as a ``repo: local`` hook with ``language: system``, which uses the eagle3-lint
installed beside this interpreter. ``EAGLE3_LINT_TRY_REPO=1`` also runs ``pre-commit try-repo`` of
this checkout (online, about a minute).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cihelp import REPO, sample

MANIFEST = REPO / ".pre-commit-hooks.yaml"
GOOD = "vllm/model_executor/models/good.py"


def hook() -> dict[str, Any]:
    (h,) = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    return h


def env_for(tmp: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if k not in ("CI", "GIT_DIR", "GIT_WORK_TREE")}
    # The user's git config (hooks paths, signing, templates) must not leak into the test repository.
    gitconfig = tmp / "gitconfig"
    gitconfig.write_text("[init]\n\tdefaultBranch = main\n")
    e.update({
        "PRE_COMMIT_HOME": str(tmp / "pre-commit-home"),
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": str(gitconfig), "GIT_CONFIG_NOSYSTEM": "1",
        # The console script installed with this interpreter, first: language: system finds it there.
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), e.get("PATH", "")]),
    })
    return e


def pre_commit() -> list[str]:
    if shutil.which("pre-commit") is None:
        try:
            import pre_commit  # noqa: F401
        except ImportError:
            pytest.fail("pre-commit is not installed (it is in the test extra: pip install '.[test]')")
    return [sys.executable, "-m", "pre_commit"]


def git(repo: Path, env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=check, timeout=600)


def make_repo(tmp: Path, env: dict[str, str], config: str) -> Path:
    repo = sample("workflow/clean_tree", tmp / "vllm-fork")
    (repo / "pyproject.toml").write_text('[project]\nname = "vllm"\n\n[tool.eagle3-lint]\n'
                                         'architectures = ["GoodForCausalLM"]\n', encoding="utf-8")
    (repo / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
    git(repo, env, "init", "-q", "-b", "main")
    git(repo, env, "add", "-A")
    git(repo, env, "commit", "-q", "-m", "a vLLM-shaped tree")
    return repo


def test_manifest_is_valid_and_gates_paths(tmp_path: Path) -> None:
    p = subprocess.run([*pre_commit(), "validate-manifest", str(MANIFEST)], capture_output=True, text=True,
                       env=env_for(tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
    h = hook()
    assert h["id"] == "eagle3-lint" and h["entry"] == "eagle3-lint check" and h["language"] == "python"
    assert h["pass_filenames"] is False and h["require_serial"] is True
    files = re.compile(h["files"])
    for path in ("vllm/model_executor/models/llama.py", "vllm/models/fam/nvidia/model.py",
                 "vllm/v1/worker/gpu_model_runner.py", "vllm/config/speculative.py", "vllm/config.py",
                 "vllm/model_executor/models/interfaces.py", "eagle3-lint.toml",
                 # An SGLang checkout: models, the runner (0.5.23's model_runner_components/), the drafter's id read
                 # (speculative/eagle_utils.py) and the PP assert (server_args.py).
                 "python/sglang/srt/models/llama.py",
                 "python/sglang/srt/model_executor/model_runner_components/attention_backend_setup.py",
                 "python/sglang/srt/speculative/eagle_utils.py", "python/sglang/srt/server_args.py"):
        assert files.search(path), path
    for path in ("README.md", "vllm/engine/llm_engine.py", "docs/vllm/config/x.md", "tests/models/test_x.py",
                 "vllm/config.pyi", "python/sglang/srt/server_args.pyi", "python/sglang/lang/api.py",
                 "test/srt/models/test_llama.py"):
        assert not files.search(path), path


def test_hook_fails_on_a_breaking_commit_and_passes_good_ones(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    h = hook()
    local = {k: h[k] for k in ("id", "name", "entry", "pass_filenames", "require_serial", "files")}
    local["language"] = "system"
    config = yaml.safe_dump({"repos": [{"repo": "local", "hooks": [local]}]}, sort_keys=False)
    repo = make_repo(tmp_path, env, config)
    pc = pre_commit()
    p = subprocess.run([*pc, "validate-config"], cwd=repo, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    p = subprocess.run([*pc, "install"], cwd=repo, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr

    # A change outside the gated paths: the hook is skipped.
    (repo / "README.md").write_text("fork notes\n")
    git(repo, env, "add", "README.md")
    c = git(repo, env, "commit", "-m", "docs", check=False)
    out = c.stdout + c.stderr
    assert c.returncode == 0 and "eagle3-lint" in out and "Skipped" in out, out

    # A good change to a model file: the hook runs the whole tree and passes.
    src = repo / GOOD
    src.write_text(src.read_text().replace("return (2, num_layers // 2, num_layers - 3)",
                                           "return (1, num_layers // 2, num_layers - 2)"))
    git(repo, env, "add", GOOD)
    c = git(repo, env, "commit", "-m", "tune aux layers", check=False)
    assert c.returncode == 0 and "Passed" in c.stdout + c.stderr, c.stdout + c.stderr

    # A breaking change: the class no longer implements SupportsEagle3. The commit is refused and
    # the output names the finding, its file and its line.
    text = src.read_text()
    src.write_text(text.replace("class GoodForCausalLM(nn.Module, SupportsPP, SupportsEagle3):",
                                "class GoodForCausalLM(nn.Module, SupportsPP):"))
    git(repo, env, "add", GOOD)
    c = git(repo, env, "commit", "-m", "refactor", check=False)
    out = c.stdout + c.stderr
    assert c.returncode != 0 and "Failed" in out, out
    line = text.splitlines().index("class GoodForCausalLM(nn.Module, SupportsPP, SupportsEagle3):") + 1
    assert f"{GOOD}:{line}:" in out and "EGL001" in out and "GoodForCausalLM" in out, out
    subjects = git(repo, env, "log", "--format=%s").stdout.split()
    assert subjects == ["tune", "aux", "layers", "docs", "a", "vLLM-shaped", "tree"]

    # An inline suppression of what the output named, with a reason, lets the commit through.
    named = sorted(set(re.findall(rf"{GOOD}:{line}:\d+: (?:error|warning|note): (EGL\d{{3}})", out)))
    assert "EGL001" in named
    src.write_text(src.read_text().replace(
        "class GoodForCausalLM(nn.Module, SupportsPP):",
        f"class GoodForCausalLM(nn.Module, SupportsPP):  # eagle3-lint: ignore[{', '.join(named)}] -- no drafter yet"))
    git(repo, env, "add", GOOD)
    c = git(repo, env, "commit", "-m", "suppress", check=False)
    assert c.returncode == 0, c.stdout + c.stderr


@pytest.mark.skipif(not os.environ.get("EAGLE3_LINT_TRY_REPO"), reason="online: set EAGLE3_LINT_TRY_REPO=1")
def test_try_repo_of_this_checkout(tmp_path: Path) -> None:
    """The manifest as published (language: python): pre-commit builds its own venv from this checkout."""
    env = env_for(tmp_path)
    repo = make_repo(tmp_path, env, "repos: []\n")
    src = repo / GOOD
    src.write_text(src.read_text().replace(", SupportsEagle3):", "):"))
    p = subprocess.run([*pre_commit(), "try-repo", str(REPO), "eagle3-lint", "--all-files"], cwd=repo, env=env,
                       capture_output=True, text=True, timeout=1800)
    assert p.returncode == 1 and "EGL001" in p.stdout, p.stdout + p.stderr


def test_no_target_inside_a_checkout_checks_its_vllm(tmp_path: Path) -> None:
    """What the hook relies on: with no TARGET, the checkout you are in (from any folder in it)."""
    from tests.cihelp import cli_json

    env = env_for(tmp_path)
    repo = make_repo(tmp_path, env, "repos: []\n")
    for cwd in (repo, repo / "vllm" / "model_executor" / "models"):
        p, rep = cli_json("check", "--output-format", "json", "--no-cache", cwd=cwd)
        assert p.returncode == 0, p.stderr
        assert rep["target"]["root"] == str(repo.resolve()) and rep["summary"]["targeted"] == ["GoodForCausalLM"]
        assert rep["config"] == str((repo / "pyproject.toml").resolve())  # found walking up from cwd
