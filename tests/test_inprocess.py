"""The in-process CLI runner of the tests (tests/cihelp.py ``in_process``) answers as ``python -m eagle3_lint``
does, byte for byte, and leaves this process as it found it.

Most CLI tests run the command in the pytest process (no interpreter start-up per run); these runs compare
it with a real interpreter on what a process could see differently: the exit codes 0, 1 and 2, click's usage
error, the colour and width a pipe gets from ``FORCE_COLOR``, ``NO_COLOR`` and ``COLUMNS``, a relative path
against the working directory, a stale baseline that fails only with ``CI=true``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.cihelp import broken, cli, tree


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tree(tmp_path_factory.mktemp("inprocess") / "tree", {"bad": broken("BadForCausalLM")})
    with (root / "vllm/model_executor/models/good.py").open("a") as fh:
        fh.write("X = 1  # eagle3-lint: ignore[EGL001]\n")  # an unused suppression: EGL100, with a fix
    return root


# name -> (args, environment, exit code, what the output shows)
RUNS: dict[str, tuple[list[str], dict[str, str], int, str]] = {
    "json": (["check", "{root}", "--arch", "BadForCausalLM", "--output-format", "json"], {}, 1, '"schema_version"'),
    "text on a pipe with FORCE_COLOR and COLUMNS": (["check", "{root}", "--arch", "BadForCausalLM", "-v"],
                                                    {"FORCE_COLOR": "1", "COLUMNS": "100"}, 1, "\x1b[1m"),
    "fix diff, --color always but NO_COLOR, exit-zero": (["check", "{root}", "--fix", "--color", "always",
                                                         "--exit-zero"], {"NO_COLOR": "1"}, 0, "\n+X = 1\n"),
    "click usage error": (["check", "--no-such-option"], {}, 2, "Usage: python -m eagle3_lint check"),
    "relative target from the cwd": (["check", "no-such-folder"], {}, 2, "does not exist: no-such-folder"),
    "stale baseline with CI=true": (["check", "{root}", "--baseline", "{root}/../stale.json"], {"CI": "true"}, 1,
                                    "and CI is set"),
}


@pytest.mark.parametrize("name", list(RUNS))
def test_in_process_equals_the_interpreter(name: str, root: Path, tmp_path: Path) -> None:
    stale = root.parent / "stale.json"
    if not stale.exists():  # a baseline with entries no finding matches any more
        cli("check", str(root), "--arch", "BadForCausalLM", "--write-baseline", str(stale), "--no-cache",
            cwd=tmp_path)
        stale.write_text(stale.read_text().replace("BadForCausalLM", "GoneForCausalLM"))
    args, env, code, shows = RUNS[name]
    args = [a.replace("{root}", str(root)) for a in args] + ["--no-cache"]
    before = (dict(os.environ), os.getcwd(), sys.stdin, sys.stdout, sys.stderr, list(sys.argv))
    mine = cli(*args, env=env, cwd=tmp_path)
    assert (dict(os.environ), os.getcwd(), sys.stdin, sys.stdout, sys.stderr, list(sys.argv)) == before
    real = cli(*args, env=env, cwd=tmp_path, process=True)
    assert (mine.returncode, mine.stdout, mine.stderr) == (real.returncode, real.stdout, real.stderr)
    assert real.returncode == code and shows in real.stdout + real.stderr, (real.returncode, real.stderr)
    assert "Traceback" not in real.stderr
    assert ("\x1b[" in real.stdout) == ("FORCE_COLOR" in env)  # coloured on a pipe only when forced
