"""Helpers for the reliability suites (tripwire, bad input, fix safety, fuzz): run the CLI the way a
user does, with a private cache and no network (in this process, or in a subprocess where the process
boundary is what is tested), and build small hostile trees."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from eagle3_lint import fixes
from eagle3_lint.app import CheckRequest, run_check
from tests import cihelp
from tests.conftest import SAMPLES, materialize

# Only loopback addresses: a pip that tries the network fails at once, and nothing leaves the machine.
NO_NETWORK = {
    "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
    "PIP_EXTRA_INDEX_URL": "",
    "PIP_FIND_LINKS": "",
    "PIP_RETRIES": "0",
    "PIP_TIMEOUT": "2",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "http_proxy": "http://127.0.0.1:9",
    "https_proxy": "http://127.0.0.1:9",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "",
}


def cli_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The environment of a CLI run: the guard on, a private cache, no network."""
    env = dict(os.environ)
    env.update(NO_NETWORK)
    env["EAGLE3_LINT_GUARD"] = "1"
    env["XDG_CACHE_HOME"] = str(tmp / "xdg-cache")
    env["COLUMNS"] = "160"
    env.pop("EAGLE3_LINT_REGEN", None)
    env.update(extra)
    return env


def run_cli(args: list[str], tmp: Path, *, cwd: Path | None = None, module: bool = True, timeout: float = 300,
            env: dict[str, str] | None = None, process: bool = False) -> subprocess.CompletedProcess[str]:
    """The CLI with ``args`` in the environment of ``cli_env`` (or ``env``): in this process, isolated as a
    subprocess would be (tests/cihelp.py); with ``process``, ``python -m eagle3_lint ARGS`` in a subprocess;
    with ``module=False``, the installed console script."""
    env = env if env is not None else cli_env(tmp)
    if not module:
        return subprocess.run([console_script(), *args], capture_output=True, text=True, timeout=timeout, cwd=cwd,
                              env=env)
    return cihelp.run_cli(args, cwd=cwd, env=env, process=process, timeout=timeout)


def console_script() -> str:
    exe = Path(sys.executable).with_name("eagle3-lint")
    return str(exe) if exe.exists() else (shutil.which("eagle3-lint") or "eagle3-lint")


def formats() -> list[str]:
    """The output formats ``check --help`` offers today (other engineers add sarif/github)."""
    out = cihelp.run_cli(["check", "--help"]).stdout
    m = re.search(r"--output-format\s+\[([^\]]+)\]", out)
    assert m, out
    return [f.strip() for f in m.group(1).split("|")]


def commands() -> list[str]:
    """The subcommands ``eagle3-lint --help`` lists."""
    out = cihelp.run_cli(["--help"]).stdout
    body = out.split("Commands:", 1)[1] if "Commands:" in out else ""
    return [ln.split()[0] for ln in body.splitlines() if ln.startswith("  ") and ln.split()]


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *, contains: str = "") -> str:
    """Exit 2, stderr exactly one line ``eagle3-lint: error: ...``, no traceback; returns the line."""
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2, (proc.returncode, proc.stderr, proc.stdout[-2000:])
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("eagle3-lint: error:"), lines[0]
    assert contains.lower() in lines[0].lower(), (contains, lines[0])
    return lines[0]


def tree_digest(root: Path) -> dict[str, str]:
    """Every file (and symlink target) under root -> sha256 / mode, to prove nothing was written."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames) + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            st = os.lstat(full)
            if os.path.islink(full):
                out[rel] = "link:" + os.readlink(full)
            elif os.path.isfile(full):
                with open(full, "rb") as fh:
                    out[rel] = f"{st.st_mode:o}:" + hashlib.sha256(fh.read()).hexdigest()
            else:
                out[rel] = f"{st.st_mode:o}"
    return out


def base_tree(dest: Path, base: str = "v016") -> Path:
    shutil.copytree(SAMPLES / "_bases" / base, dest, dirs_exist_ok=True)
    return dest


def write(root: Path, rel: str, text: str | bytes) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


REGISTRY_HEAD = "_TEXT_GENERATION_MODELS = {\n"
REGISTRY_TAIL = "}\n_VLLM_MODELS = {\n    **_TEXT_GENERATION_MODELS,\n}\n"


def registry(entries: dict[str, tuple[str, str]]) -> str:
    body = "".join(f"    {arch!r}: ({mod!r}, {cls!r}),\n" for arch, (mod, cls) in entries.items())
    return REGISTRY_HEAD + body + REGISTRY_TAIL


SUPPORTED_MODEL = '''from torch import nn

from .interfaces import SupportsEagle3, SupportsPP


class {name}Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList()
        self.aux_hidden_state_layers = ()

    def forward(self, hidden_states):
        aux_hidden_states = []
        for idx, layer in enumerate(self.layers):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states)
            hidden_states = layer(hidden_states)
        if aux_hidden_states:
            return hidden_states, aux_hidden_states
        return hidden_states


class {name}ForCausalLM(nn.Module, SupportsPP, SupportsEagle3):
    def __init__(self, config):
        super().__init__()
        self.model = {name}Model(config)

    def set_aux_hidden_state_layers(self, layers: tuple[int, ...]) -> None:
        self.model.aux_hidden_state_layers = layers

    def get_eagle3_aux_hidden_state_layers(self) -> tuple[int, ...]:
        return (2, 4, 6)
'''

PLAIN_MODEL = '''from torch import nn

from .interfaces import SupportsPP


class {name}ForCausalLM(nn.Module, SupportsPP):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList()
'''


def small_tree(dest: Path) -> Path:
    """A valid v016-shaped tree with one supported and one unsupported architecture."""
    base_tree(dest)
    write(dest, "vllm/model_executor/models/good.py", SUPPORTED_MODEL.format(name="Good"))
    write(dest, "vllm/model_executor/models/plain.py", PLAIN_MODEL.format(name="Plain"))
    write(dest, "vllm/model_executor/models/registry.py", registry({
        "GoodForCausalLM": ("good", "GoodForCausalLM"),
        "PlainForCausalLM": ("plain", "PlainForCausalLM"),
    }))
    return dest


def fixable_case(tmp: Path) -> Path:
    """A sample tree with at least one safe fix today (rules are added over time; pick what exists)."""
    for case_toml in sorted(SAMPLES.glob("*/*/case.toml")):
        case = case_toml.parent
        if case.parent.name.startswith("_") or not (case / "expected.diff").exists():
            continue
        if not (case / "expected.diff").read_text().strip() or "unsafe_fixes = true" in case_toml.read_text():
            continue
        root = materialize(case, tmp / case.name)
        ctx = run_check(CheckRequest(str(root), no_cache=True))
        plan = fixes.plan(ctx.source, ctx.findings, unsafe=False)
        if plan.files:
            return root
        shutil.rmtree(root)
    pytest.skip("no sample tree has a safe fix yet")
