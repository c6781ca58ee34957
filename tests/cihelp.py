"""Helpers for the CI-surface tests (issue 5): run the real CLI, build sample trees, load schemas."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import subprocess
import sys
import traceback
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from eagle3_lint.model import Finding
from tests.conftest import REPO, SAMPLES, materialize

# The OASIS SARIF 2.1.0 schema, vendored unchanged so a bare clone validates SARIF without anything beside it
# (origin, hash and licence in tests/data/SARIF-SCHEMA-NOTICE.md).
SARIF_SCHEMA_PATH = REPO / "tests" / "data" / "sarif-schema-2.1.0.json"
SARIF_SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"


# The program name click prints in usage lines, as ``python -m eagle3_lint`` shows it.
PROG = "python -m eagle3_lint"


def cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None, stdin: str | None = None,
        process: bool = False) -> subprocess.CompletedProcess[str]:
    """``python -m eagle3_lint ARGS`` in a clean environment (no inherited CI flag unless given), run in this
    process (``run_cli``); ``process=True`` starts the real interpreter, where the process boundary is tested."""
    e = {k: v for k, v in os.environ.items() if k != "CI"}
    e.update(env or {})
    return run_cli(args, cwd=cwd, env=e, stdin=stdin, process=process)


def run_cli(args: Sequence[str], *, cwd: Path | str | None = None, env: Mapping[str, str] | None = None,
            stdin: str | None = None, process: bool = False, timeout: float = 600
            ) -> subprocess.CompletedProcess[str]:
    """Run the CLI with ``args`` as ``python -m eagle3_lint`` would, and what it printed and exited with.

    ``env`` is the whole environment of the run (``os.environ`` when None), as for ``subprocess.run``. By
    default the command runs in this process (``in_process``), which saves the interpreter start-up and
    imports (about 0.27 s a run); ``process=True`` runs ``python -m eagle3_lint`` in a subprocess."""
    if process:
        return subprocess.run([sys.executable, "-m", "eagle3_lint", *args], cwd=cwd, env=env, input=stdin,
                              capture_output=True, text=True, timeout=timeout)
    return in_process(args, cwd=cwd, env=env, stdin=stdin)


def in_process(args: Sequence[str], *, cwd: Path | str | None = None, env: Mapping[str, str] | None = None,
               stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The click entry point called in this process, isolated as a subprocess would be.

    What a run can read or change of the process is swapped for the call and restored after it: the
    environment (``CI``, ``NO_COLOR``, ``FORCE_COLOR``, ``COLUMNS``, the cache folder, the guard flag, all
    read when used), the working directory (config discovery, relative paths), ``sys.stdin/stdout/stderr``
    (pipes that are not terminals, so the text is not wrapped, coloured or given a progress bar; rich and
    click look the streams up at each write) and the terminal size of descriptors 1 and 2, the warning
    filters (the interpreter's defaults, printed on stderr), and ``sys.argv``. The exit code is
    ``SystemExit``'s, or 1 with the traceback on stderr for an exception nothing caught, as the interpreter
    does. A ``PYTHONPATH`` of its own cannot be honoured in a process whose ``sys.path`` is set: such a run
    has to use ``process=True``."""
    from eagle3_lint.cli import main

    env = dict(os.environ if env is None else env)
    if env.get("PYTHONPATH") and env["PYTHONPATH"] != os.environ.get("PYTHONPATH"):
        raise AssertionError("PYTHONPATH adds to sys.path at start-up only: run this one with process=True")
    out, err = _pipe(), _pipe(errors="backslashreplace")
    code: int
    with _isolated(env, cwd, out, err, _pipe(stdin or "")), warnings.catch_warnings():
        warnings.resetwarnings()  # the interpreter's default filters, not pytest's
        warnings.filterwarnings("default", category=DeprecationWarning, module="__main__", append=True)
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
            warnings.filterwarnings("ignore", category=category, append=True)
        warnings.showwarning = _show_warning
        try:
            main.main(args=list(args), prog_name=PROG, standalone_mode=True)
            code = 0
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except Exception:  # noqa: BLE001 - what the interpreter does with an uncaught exception
            traceback.print_exc(file=sys.stderr)
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
    return subprocess.CompletedProcess([PROG, *args], code, _text(out), _text(err))


def _pipe(text: str | None = None, errors: str = "strict") -> io.TextIOWrapper:
    """A text stream over bytes, UTF-8 like a pipe's, not a terminal; ``text`` is what it holds to read."""
    return io.TextIOWrapper(io.BytesIO((text or "").encode()), encoding="utf-8", errors=errors, newline="\n",
                            write_through=True)


def _text(stream: io.TextIOWrapper) -> str:
    """What was written, read back as ``subprocess.run(text=True)`` reads a pipe (universal newlines)."""
    raw = stream.buffer.getvalue()  # type: ignore[attr-defined]  # the BytesIO _pipe made
    return raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


@contextlib.contextmanager
def _isolated(env: Mapping[str, str], cwd: Path | str | None, out: TextIO, err: TextIO, inp: TextIO
              ) -> Iterator[None]:
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved = sys.stdin, sys.stdout, sys.stderr, sys.argv
    terminal_size = os.get_terminal_size

    def piped_terminal_size(fd: int = 1) -> os.terminal_size:
        # rich and shutil ask the file descriptors for a width: 1 and 2 are pipes in a captured subprocess,
        # even when pytest runs with -s on a terminal; 0 is inherited, as there.
        if fd in (1, 2):
            raise OSError(errno.ENOTTY, "not a terminal")
        return terminal_size(fd)

    os.environ.clear()
    os.environ.update(env)
    try:
        if cwd is not None:
            os.chdir(cwd)
        sys.stdin, sys.stdout, sys.stderr = inp, out, err
        sys.argv = [PROG]
        os.get_terminal_size = piped_terminal_size
        yield
    finally:
        os.get_terminal_size = terminal_size
        sys.stdin, sys.stdout, sys.stderr, sys.argv = saved
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def cli_json(*args: str, **kw: Any) -> tuple[subprocess.CompletedProcess[str], Any]:
    p = cli(*args, **kw)
    try:
        data = json.loads(p.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"not JSON (exit {p.returncode}): {p.stdout[:500]!r} {p.stderr[:2000]}") from None
    return p, data


def sample(case: str, dest: Path) -> Path:
    """Materialize ``sample_trees/<case>`` (its base plus its files) into ``dest``."""
    return materialize(SAMPLES / case, dest)


def sarif_schema() -> dict[str, Any]:
    """The official SARIF 2.1.0 schema (the vendored OASIS file; it ships with the tests, so never a skip)."""
    return json.loads(SARIF_SCHEMA_PATH.read_text(encoding="utf-8"))


def validate_sarif(doc: Any) -> None:
    import jsonschema

    schema = sarif_schema()
    errors = sorted(jsonschema.Draft4Validator(schema).iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:20])


def report_schema() -> dict[str, Any]:
    """The report schema as the typed model generates it (eagle3_lint/report/schema.py); the shipped file
    is checked against the same generator (tests/test_ci_schema.py)."""
    from eagle3_lint.report.schema import report_schema as generated

    return generated()


def breaking_changes(old: Any, new: Any, where: str = "") -> list[str]:
    """What a report valid against ``old`` could fail in ``new``, or a consumer of ``old`` could miss: a
    property or definition removed, the required set changed, any keyword of an existing node changed,
    added or removed. New optional properties, new definitions and description texts are additive."""
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return [] if old == new else [f"{where or '/'}: {json.dumps(old)[:80]} -> {json.dumps(new)[:80]}"]
    out: list[str] = []
    for key in old.keys() | new.keys():
        at = f"{where}/{key}"
        if key == "description":
            continue
        if key not in new:
            out.append(f"{at}: removed")
        elif key not in old:
            out.append(f"{at}: added to an existing node")
        elif key in ("properties", "$defs"):
            for name in old[key]:
                out += [f"{at}/{name}: removed"] if name not in new[key] else breaking_changes(
                    old[key][name], new[key][name], f"{at}/{name}")
        elif key == "required":
            if old[key] != new[key]:
                out.append(f"{at}: {sorted(set(new[key]) - set(old[key]))} now required, "
                           f"{sorted(set(old[key]) - set(new[key]))} no longer")
        else:
            out += breaking_changes(old[key], new[key], at)
    return sorted(out)


def strict(schema: Any) -> Any:
    """The report schema with ``additionalProperties: false`` wherever it lists properties and says
    nothing else: the shipped schema lets consumers ignore new fields, the tests do not let the
    report grow fields the schema does not document."""
    if isinstance(schema, dict):
        out = {k: strict(v) for k, v in schema.items()}
        if "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [strict(v) for v in schema]
    return schema


def validate_report(doc: Any) -> None:
    import jsonschema

    v = jsonschema.Draft202012Validator(strict(report_schema()))
    errors = sorted(v.iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:20])


def tree(dest: Path, modules: dict[str, str] | None = None) -> Path:
    """The clean sample tree (GoodForCausalLM, which supports EAGLE-3) plus ``modules``
    (module name -> source); every ``class XxxForCausalLM`` in them is registered."""
    import re

    root = sample("workflow/clean_tree", dest)
    models = root / "vllm" / "model_executor" / "models"
    entries = {"GoodForCausalLM": "good"}
    for mod, text in (modules or {}).items():
        (models / f"{mod}.py").write_text(text, encoding="utf-8")
        for cls in re.findall(r"^class (\w+ForCausalLM)\b", text, re.M):
            entries[cls] = mod
    body = "".join(f'    "{a}": ("{m}", "{a}"),\n' for a, m in entries.items())
    (models / "registry.py").write_text(
        "_TEXT_GENERATION_MODELS = {\n" + body + "}\n_VLLM_MODELS = {\n    **_TEXT_GENERATION_MODELS,\n}\n",
        encoding="utf-8")
    return root


def broken(*names: str) -> str:
    """A module of classes that fail the EAGLE-3 check (EGL001 when targeted)."""
    return "from torch import nn\n" + "".join(
        f"\n\nclass {n}(nn.Module):\n    def __init__(self, config):\n        super().__init__()\n" for n in names)


def sample_cases() -> list[Path]:
    return sorted(p.parent for p in SAMPLES.glob("*/*/case.toml") if not p.parent.parent.name.startswith("_"))


def run_case(case: Path, dest: Path, settings: Any = None) -> tuple[Any, Any]:
    """Analyze one sample case in-process as the sample-tree harness does (its archs, target and
    drafter configs), then post-process it as ``check`` does: (Context, Outcome)."""
    from eagle3_lint._compat import tomllib
    from eagle3_lint.analysis import Options, analyze
    from eagle3_lint.config import Settings
    from eagle3_lint.engines import dir_source
    from eagle3_lint.outcome import finalize

    meta = tomllib.loads((case / "case.toml").read_text(encoding="utf-8"))
    root = materialize(case, dest)

    def case_file(key: str) -> tuple[dict[str, Any] | None, str | None]:
        rel = meta.get(key)
        if not rel:
            return None, None
        path = root / rel if (root / rel).is_file() else case / rel
        return json.loads(path.read_text(encoding="utf-8")), str(path)

    tcfg, tpath = case_file("target_config")
    dcfg, dpath = case_file("draft_config")
    opts = Options(targets=tuple(meta.get("archs", ())), target_config=tcfg, target_config_path=tpath,
                   draft_config=dcfg, draft_config_path=dpath, pipeline_parallel=meta.get("pipeline_parallel"),
                   pp_partition=meta.get("pp_partition"))
    ctx = analyze(dir_source(root), opts)
    return ctx, finalize(ctx, settings or Settings())


def patched_copy(source: Any, fixed: Sequence[Finding], tmp_path: Path) -> Path:
    """A writable copy of the (read-only) release tree ``source`` reads, with the fixes of ``fixed`` applied by
    ``git apply`` as a user would apply ``--fix`` output; every file they touch must compile. Returns the copy."""
    import py_compile
    import shutil

    from eagle3_lint import fixes

    patch = fixes.unified_diff(fixes.plan(source, list(fixed), unsafe=True))
    copy = tmp_path / "tree"
    shutil.copytree(source.root, copy)
    for p in copy.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    (tmp_path / "fix.patch").write_text(patch)
    run = subprocess.run(["git", "apply", str(tmp_path / "fix.patch")], cwd=copy, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    for rel in sorted({e.path for f in fixed for e in (f.fix.edits if f.fix else ())}):
        py_compile.compile(str(copy / rel), doraise=True)
    return copy
