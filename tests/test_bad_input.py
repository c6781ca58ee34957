"""Hostile and broken input: each class ends in a one-line ``eagle3-lint: error:`` and exit 2, or in
a reported finding while the rest of the tree is still analysed, and never in a traceback.

The CLI runs in a subprocess (``python -m eagle3_lint``) with a private cache and no network, so
these are the answers a user gets. The "Bad input" table of docs/security.md lists the same classes.

Tests run as root, and root ignores permission bits. Where a real permission denial matters, the
CLI runs under ``setpriv`` with every capability dropped: still uid 0, but without
CAP_DAC_OVERRIDE a mode-000 file really cannot be read, and a read-only file cannot be written.
Where that is impossible (no setpriv, no ``chattr``), the test says so and falls back to an
in-process simulation, named as such.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from eagle3_lint import fixes, releases
from eagle3_lint import source as source_mod
from eagle3_lint.analysis import Options, analyze
from eagle3_lint.app import CheckRequest, run_check
from eagle3_lint.engines import dir_source
from eagle3_lint.source import DirSource
from tests.hostile import (
    SUPPORTED_MODEL,
    assert_one_line_error,
    base_tree,
    cli_env,
    fixable_case,
    registry,
    run_cli,
    small_tree,
    tree_digest,
    write,
)

MODELS = "vllm/model_executor/models"
NO_CAPS = ["setpriv", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--"]


def check_json(root: Path | str, tmp: Path, *extra: str, prefix: list[str] | None = None
               ) -> tuple[subprocess.CompletedProcess[str], dict]:
    """``check --format json``; asserts no traceback and no internal error, returns the report."""
    # --all: every architecture's row and finding, also with --arch (the rest of the tree is what is checked)
    args = ["check", str(root), "--output-format", "json", "--no-cache", "--all", *extra]
    if prefix:
        proc = subprocess.run([*prefix, sys.executable, "-m", "eagle3_lint", *args], capture_output=True, text=True,
                              timeout=300, env=cli_env(tmp))
    else:
        proc = run_cli(args, tmp)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), (proc.returncode, proc.stderr)
    rep = json.loads(proc.stdout)
    assert rep["errors"] == [], rep["errors"]
    return proc, rep


def arch(rep: dict, name: str) -> dict:
    return next(a for a in rep["architectures"] if a["name"] == name)


def egl000(rep: dict) -> dict[str, str]:
    return {f["path"]: f["message"] for f in rep["findings"] if f["rule"] == "EGL000"}


def assert_rest_analysed(rep: dict) -> None:
    """The healthy part of the tree still gets its verdicts."""
    assert arch(rep, "GoodForCausalLM")["status"] == "supported"
    assert arch(rep, "PlainForCausalLM")["status"] == "unsupported"


def can_drop_caps(tmp: Path) -> bool:
    if shutil.which("setpriv") is None:
        return False
    probe = tmp / "probe"
    probe.write_text("x")
    probe.chmod(0)
    proc = subprocess.run([*NO_CAPS, "cat", str(probe)], capture_output=True, timeout=30)
    probe.chmod(0o644)
    return proc.returncode != 0


# -- targets -------------------------------------------------------------------------------------------


def test_missing_path(tmp_path: Path) -> None:
    assert_one_line_error(run_cli(["check", str(tmp_path / "nope")], tmp_path), contains="does not exist")
    assert_one_line_error(run_cli(["trace", "X", str(tmp_path / "nope")], tmp_path), contains="does not exist")


def test_file_where_a_folder_is_expected(tmp_path: Path) -> None:
    f = write(tmp_path, "notes.txt", "hello")
    assert_one_line_error(run_cli(["check", str(f)], tmp_path), contains="not a wheel")
    # A vllm/ that is a file, not a package folder.
    write(tmp_path, "t/vllm", "not a folder")
    assert_one_line_error(run_cli(["check", str(tmp_path / "t")], tmp_path), contains="not a vLLM")


def test_folder_that_is_not_vllm(tmp_path: Path) -> None:
    write(tmp_path, "proj/pkg/a.py", "x = 1\n")
    assert_one_line_error(run_cli(["check", str(tmp_path / "proj")], tmp_path), contains="not a vLLM")
    (tmp_path / "empty").mkdir()
    assert_one_line_error(run_cli(["check", str(tmp_path / "empty")], tmp_path), contains="not a vLLM")
    # vllm/ exists but holds no Python at all.
    (tmp_path / "hollow" / "vllm" / "model_executor").mkdir(parents=True)
    assert_one_line_error(run_cli(["check", str(tmp_path / "hollow")], tmp_path), contains="no vllm/*.py")


def test_vllm_tree_without_registry(tmp_path: Path) -> None:
    root = base_tree(tmp_path / "t")
    write(root, f"{MODELS}/good.py", SUPPORTED_MODEL.format(name="Good"))
    assert_one_line_error(run_cli(["check", str(root)], tmp_path), contains="no model registry")
    assert_one_line_error(run_cli(["trace", "GoodForCausalLM", str(root)], tmp_path), contains="no model registry")
    # A registry with no architecture dict in a shape the tool understands: also an error, never "0 of 0".
    write(root, f"{MODELS}/registry.py", "MODELS = load_from_somewhere()\n")
    assert_one_line_error(run_cli(["check", str(root)], tmp_path), contains="no architectures could be read")


def test_broken_registry_is_a_finding(tmp_path: Path) -> None:
    root = small_tree(tmp_path / "t")
    write(root, f"{MODELS}/registry.py", "_VLLM_MODELS = {\n    'A': ('a', 'A'),\n")
    proc, rep = check_json(root, tmp_path)
    assert proc.returncode == 1
    assert "registry.py" in egl000(rep).get(f"{MODELS}/registry.py", "")


# -- file contents ---------------------------------------------------------------------------------------


def test_syntax_error_in_one_model_file(tmp_path: Path) -> None:
    root = small_tree(tmp_path / "t")
    write(root, f"{MODELS}/broken.py", "import torch\n\n\nclass Broken(torch.nn.Module:\n    pass\n")
    proc, rep = check_json(root, tmp_path)
    assert proc.returncode == 1
    hit = next(f for f in rep["findings"] if f["rule"] == "EGL000")
    assert hit["path"] == f"{MODELS}/broken.py" and hit["line"] == 4 and "syntax error" in hit["message"]
    assert_rest_analysed(rep)
    # A registered architecture whose module does not parse is unknown, with the reason.
    write(root, f"{MODELS}/registry.py", registry({"GoodForCausalLM": ("good", "GoodForCausalLM"),
                                                    "PlainForCausalLM": ("plain", "PlainForCausalLM"),
                                                    "BrokenForCausalLM": ("broken", "Broken")}))
    _, rep = check_json(root, tmp_path)
    b = arch(rep, "BrokenForCausalLM")
    assert b["status"] == "unknown" and b["supports_eagle3"] is None and "cannot be parsed" in b["reason"]


def test_non_utf8_bytes(tmp_path: Path) -> None:
    root = small_tree(tmp_path / "t")
    write(root, f"{MODELS}/latin.py", b"NAME = '\xe9t\xe9'\n\nclass Latin:\n    pass\n")
    write(root, f"{MODELS}/bogus_cookie.py", b"# -*- coding: no-such-codec -*-\nclass C:\n    pass\n")
    write(root, f"{MODELS}/nul.py", b"class N:\n    x = 1\x00\n")
    # A correct PEP 263 cookie decodes like the interpreter would: no finding.
    write(root, f"{MODELS}/cookie.py", b"# -*- coding: latin-1 -*-\nNAME = '\xe9t\xe9'\n\nclass Cookie:\n    pass\n")
    proc, rep = check_json(root, tmp_path)
    found = egl000(rep)
    assert "cannot decode" in found[f"{MODELS}/latin.py"]
    assert f"{MODELS}/bogus_cookie.py" in found and f"{MODELS}/nul.py" in found
    assert f"{MODELS}/cookie.py" not in found
    assert proc.returncode == 1
    assert_rest_analysed(rep)


def test_bom_parses_fine(tmp_path: Path) -> None:
    root = small_tree(tmp_path / "t")
    good = root / MODELS / "good.py"
    good.write_bytes(b"\xef\xbb\xbf" + good.read_bytes())
    proc, rep = check_json(root, tmp_path)
    assert proc.returncode == 0 and not rep["findings"]
    assert_rest_analysed(rep)
    class_line = "class GoodForCausalLM(nn.Module, SupportsPP, SupportsEagle3):"
    want = SUPPORTED_MODEL.format(name="Good").splitlines().index(class_line) + 1
    assert arch(rep, "GoodForCausalLM")["line"] == want  # lines are those of the text after the BOM


def test_symlink_loops(tmp_path: Path) -> None:
    root = small_tree(tmp_path / "t")
    models = root / MODELS
    os.symlink(".", models / "loopdir")  # a directory loop: not followed
    os.symlink("..", models / "up")
    os.symlink("b.py", models / "a.py")  # a file loop: reported, not followed forever
    os.symlink("a.py", models / "b.py")
    proc, rep = check_json(root, tmp_path)
    found = egl000(rep)
    assert set(found) == {f"{MODELS}/a.py", f"{MODELS}/b.py"}
    assert all("symbolic links" in m for m in found.values())
    assert_rest_analysed(rep)
    # The target itself loops.
    os.symlink("self", tmp_path / "self")
    assert_one_line_error(run_cli(["check", str(tmp_path / "self")], tmp_path), contains="looping symlink")
    # vllm/ is a loop.
    (tmp_path / "v").mkdir()
    os.symlink("vllm", tmp_path / "v" / "vllm")
    assert_one_line_error(run_cli(["check", str(tmp_path / "v")], tmp_path), contains="not a vLLM")


def test_unreadable_entries_dangling_symlink_and_fifo(tmp_path: Path) -> None:
    """Entries that are not readable regular files, whoever runs: a dangling symlink and a FIFO
    (which must not block the run, as opening it for reading would)."""
    root = small_tree(tmp_path / "t")
    os.symlink("/nonexistent/elsewhere.py", root / MODELS / "dangling.py")
    os.mkfifo(root / MODELS / "pipe.py")
    proc, rep = check_json(root, tmp_path)
    found = egl000(rep)
    assert "No such file" in found[f"{MODELS}/dangling.py"]
    assert "not a regular file" in found[f"{MODELS}/pipe.py"]
    assert proc.returncode == 1
    assert_rest_analysed(rep)


def test_unreadable_file_permissions(tmp_path: Path) -> None:
    """A mode-000 file, read by a process that really lacks permission: the CLI runs under setpriv
    with every capability dropped (uid 0 without CAP_DAC_OVERRIDE obeys mode bits)."""
    if not can_drop_caps(tmp_path):
        pytest.skip("cannot drop capabilities here (no setpriv); see the in-process variant below")
    root = small_tree(tmp_path / "t")
    secret = write(root, f"{MODELS}/secret.py", "class Secret:\n    pass\n")
    write(root, f"{MODELS}/registry.py", registry({"GoodForCausalLM": ("good", "GoodForCausalLM"),
                                                    "PlainForCausalLM": ("plain", "PlainForCausalLM"),
                                                    "SecretForCausalLM": ("secret", "Secret")}))
    secret.chmod(0)
    proc, rep = check_json(root, tmp_path, prefix=NO_CAPS)
    assert "Permission denied" in egl000(rep)[f"{MODELS}/secret.py"]
    assert arch(rep, "SecretForCausalLM")["status"] == "unknown"
    assert_rest_analysed(rep)
    # The unreadable file is the runner or interfaces.py: still no traceback, still a report.
    (root / "vllm/v1/worker/gpu_model_runner.py").chmod(0)
    (root / MODELS / "interfaces.py").chmod(0)
    proc, rep = check_json(root, tmp_path, prefix=NO_CAPS)
    assert rep["contract"]["found"] is False
    # An unreadable target folder.
    root.chmod(0)
    try:
        p = subprocess.run([*NO_CAPS, sys.executable, "-m", "eagle3_lint", "check", str(root)],
                           capture_output=True, text=True, timeout=120, env=cli_env(tmp_path))
        assert_one_line_error(p, contains="not readable")
    finally:
        root.chmod(0o755)


def test_unreadable_file_simulated_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Simulation (not a real permission denial): DirSource.read_bytes raises PermissionError for
    one model file, as it would for a user who may not read it."""
    root = small_tree(tmp_path / "t")
    real = DirSource.read_bytes

    def deny(self: DirSource, rel: str) -> bytes:
        if rel == f"{MODELS}/plain.py":
            raise PermissionError(13, "Permission denied", rel)
        return real(self, rel)

    monkeypatch.setattr(DirSource, "read_bytes", deny)
    ctx = analyze(dir_source(root), Options())
    assert not ctx.errors
    assert any(f.rule == "EGL000" and f.location.path == f"{MODELS}/plain.py" and "Permission denied" in f.message
               for f in ctx.findings)
    assert ctx.verdicts["GoodForCausalLM"].supports_eagle3 is True
    assert ctx.verdicts["PlainForCausalLM"].supports_eagle3 is None


def test_huge_generated_file(tmp_path: Path) -> None:
    root = small_tree(tmp_path / "t")
    huge = root / MODELS / "generated.py"
    with open(huge, "wb") as fh:  # sparse: no disk, and the size check comes before any read
        fh.truncate(source_mod.MAX_FILE_BYTES + 1)
    # Large but under the limit: parsed normally.
    write(root, f"{MODELS}/table.py", "TABLE = [\n" + "    (1, 'x'),\n" * 100_000 + "]\n")
    proc, rep = check_json(root, tmp_path)
    found = egl000(rep)
    assert "too large" in found[f"{MODELS}/generated.py"] and f"{MODELS}/table.py" not in found
    assert_rest_analysed(rep)


def test_deeply_nested_and_very_long_bodies(tmp_path: Path) -> None:
    root = small_tree(tmp_path / "t")
    write(root, f"{MODELS}/parens.py", "x = " + "(" * 300 + "1" + ")" * 300 + "\n")
    write(root, f"{MODELS}/binop.py", "x = " + "+".join(["a"] * 100_000) + "\n")  # RecursionError paths
    write(root, f"{MODELS}/nested.py",
          "".join("    " * i + f"class C{i}:\n" for i in range(99)) + "    " * 99 + "pass\n")
    write(root, f"{MODELS}/indent.py",
          "".join("    " * i + f"class D{i}:\n" for i in range(120)) + "    " * 120 + "pass\n")
    write(root, f"{MODELS}/long.py", "from torch import nn\n\n\nclass Long(nn.Module):\n"
          + "".join(f"    def m{i}(self, x):\n        return x + {i}\n" for i in range(20_000)))
    # A 3,000-class inheritance chain, registered at its deepest class.
    write(root, f"{MODELS}/chain.py", "from torch import nn\n\nclass C0(nn.Module):\n    pass\n"
          + "".join(f"class C{i}(C{i - 1}):\n    pass\n" for i in range(1, 3000)))
    write(root, f"{MODELS}/registry.py", registry({"GoodForCausalLM": ("good", "GoodForCausalLM"),
                                                    "PlainForCausalLM": ("plain", "PlainForCausalLM"),
                                                    "LongForCausalLM": ("long", "Long"),
                                                    "ChainForCausalLM": ("chain", "C2999")}))
    proc, rep = check_json(root, tmp_path, "--arch", "ChainForCausalLM", "--arch", "LongForCausalLM")
    found = egl000(rep)
    assert "nested parentheses" in found[f"{MODELS}/parens.py"]
    assert "RecursionError" in found[f"{MODELS}/binop.py"] or "too deep" in found[f"{MODELS}/binop.py"]
    assert "indentation" in found[f"{MODELS}/indent.py"]
    assert f"{MODELS}/nested.py" not in found and f"{MODELS}/long.py" not in found
    assert arch(rep, "LongForCausalLM")["status"] == "unsupported"
    chain = arch(rep, "ChainForCausalLM")
    assert chain["status"] == "unknown" and "bases of C" in chain["reason"]
    assert_rest_analysed(rep)


def test_circular_inheritance_across_modules(tmp_path: Path) -> None:
    root = small_tree(tmp_path / "t")
    write(root, f"{MODELS}/ca.py", "from .cb import B\nfrom .interfaces import SupportsEagle3\n\n\n"
          "class A(B, SupportsEagle3):\n    pass\n")
    write(root, f"{MODELS}/cb.py", "from .ca import A\n\n\nclass B(A):\n    pass\n")
    write(root, f"{MODELS}/self.py", "class S(S):\n    pass\n")
    write(root, f"{MODELS}/registry.py", registry({"GoodForCausalLM": ("good", "GoodForCausalLM"),
                                                    "PlainForCausalLM": ("plain", "PlainForCausalLM"),
                                                    "AForCausalLM": ("ca", "A"), "BForCausalLM": ("cb", "B"),
                                                    "SForCausalLM": ("self", "S")}))
    proc, rep = check_json(root, tmp_path, "--arch", "AForCausalLM")
    for name in ("AForCausalLM", "BForCausalLM"):
        a = arch(rep, name)
        assert a["status"] == "unknown" and a["supports_eagle3"] is None and "circular" in a["reason"], a
    assert arch(rep, "SForCausalLM")["supports_eagle3"] is not True
    assert_rest_analysed(rep)
    # trace follows the cycle without looping.
    p = run_cli(["trace", "AForCausalLM", str(root), "--no-cache"], tmp_path)
    assert p.returncode == 0 and "Traceback" not in p.stderr and "circular" in p.stdout


def test_duplicate_class_names_in_one_module(tmp_path: Path) -> None:
    """Python binds the name to the last definition; so does the tool, in both orders."""
    root = small_tree(tmp_path / "t")
    supported = SUPPORTED_MODEL.format(name="Dup")
    plain_tail = "\n\nclass DupForCausalLM(nn.Module):\n    pass\n"
    write(root, f"{MODELS}/dup_last_plain.py", supported + plain_tail)
    body = supported.split("\n\n\n", 1)[1]
    write(root, f"{MODELS}/dup_last_good.py",
          "from torch import nn\n\nfrom .interfaces import SupportsEagle3, SupportsPP\n\n\n"
          "class DupForCausalLM(nn.Module):\n    pass\n\n\n" + body)
    write(root, f"{MODELS}/registry.py", registry({"GoodForCausalLM": ("good", "GoodForCausalLM"),
                                                    "PlainForCausalLM": ("plain", "PlainForCausalLM"),
                                                    "LastPlainForCausalLM": ("dup_last_plain", "DupForCausalLM"),
                                                    "LastGoodForCausalLM": ("dup_last_good", "DupForCausalLM")}))
    _, rep = check_json(root, tmp_path)
    assert arch(rep, "LastPlainForCausalLM")["supports_eagle3"] is False
    assert arch(rep, "LastGoodForCausalLM")["supports_eagle3"] is True
    assert_rest_analysed(rep)


def test_registry_entry_to_missing_module_or_class(tmp_path: Path) -> None:
    root = small_tree(tmp_path / "t")
    write(root, f"{MODELS}/registry.py", registry({"GoodForCausalLM": ("good", "GoodForCausalLM"),
                                                    "PlainForCausalLM": ("plain", "PlainForCausalLM"),
                                                    "NoModForCausalLM": ("no_such_module", "X"),
                                                    "NoClassForCausalLM": ("good", "NoSuchClass")}))
    proc, rep = check_json(root, tmp_path, "--arch", "NoModForCausalLM", "--arch", "NoClassForCausalLM")
    m, c = arch(rep, "NoModForCausalLM"), arch(rep, "NoClassForCausalLM")
    assert m["status"] == "unknown" and "not in this tree" in m["reason"]
    assert c["status"] == "unknown" and "NoSuchClass" in c["reason"]
    assert_rest_analysed(rep)
    p = run_cli(["trace", "NoModForCausalLM", str(root), "--no-cache"], tmp_path)
    assert p.returncode == 0 and "Traceback" not in p.stderr


# -- wheels and releases -------------------------------------------------------------------------------


def make_wheel(root: Path, dest: Path) -> Path:
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted((root / "vllm").rglob("*.py")):
            z.write(f, f.relative_to(root).as_posix())
    return dest


def test_truncated_or_corrupted_wheel(tmp_path: Path) -> None:
    root = small_tree(tmp_path / "t")
    good = make_wheel(root, tmp_path / "vllm-0.16.0-py3-none-any.whl")
    data = good.read_bytes()
    for name, blob in (("truncated", data[: len(data) // 2]), ("garbage", b"PK\x03\x04 not really a zip"),
                       ("empty", b"")):
        w = tmp_path / f"{name}.whl"
        w.write_bytes(blob)
        assert_one_line_error(run_cli(["check", str(w)], tmp_path), contains="cannot read wheel")
    # One damaged member (its deflate stream scrambled): that file is a finding, the rest is analysed.
    buf = bytearray(data)
    info = zipfile.ZipFile(good).getinfo(f"{MODELS}/plain.py")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for k in range(start + 4, start + 24):
        buf[k] ^= 0x5A
    bad = tmp_path / "damaged.whl"
    bad.write_bytes(bytes(buf))
    proc, rep = check_json(bad, tmp_path)
    assert "cannot read" in egl000(rep)[f"{MODELS}/plain.py"]
    assert arch(rep, "GoodForCausalLM")["status"] == "supported"
    # A zip with no vllm/ inside.
    empty = tmp_path / "other.whl"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("other/__init__.py", "")
    assert_one_line_error(run_cli(["check", str(empty)], tmp_path), contains="not a vLLM")
    # --apply on a wheel is refused, the wheel untouched.
    before = good.read_bytes()
    p = run_cli(["check", str(good), "--fix", "--apply", "--unsafe-fixes", "--arch", "PlainForCausalLM"], tmp_path)
    assert "Traceback" not in p.stderr and good.read_bytes() == before
    if p.returncode == 2:
        assert_one_line_error(p, contains="wheel")


def test_wheel_members_cannot_escape_the_cache(tmp_path: Path) -> None:
    """fetch_release unpacks a downloaded wheel: members with absolute or ``..`` paths are skipped."""
    w = tmp_path / "evil.whl"
    with zipfile.ZipFile(w, "w") as z:
        z.writestr("vllm/__init__.py", "")
        z.writestr("../escape.py", "x = 1\n")
        z.writestr("vllm/../../escape2.py", "x = 1\n")
        z.writestr("/abs_escape.py", "x = 1\n")
    dest = tmp_path / "cache" / "tree"
    releases._extract_py(w, dest)  # noqa: SLF001 - the unpacking step on its own
    assert (dest / "vllm" / "__init__.py").exists()
    assert not list(tmp_path.rglob("escape*.py")) and not Path("/abs_escape.py").exists()


def test_release_that_does_not_exist_and_no_network(tmp_path: Path) -> None:
    """Only loopback addresses: pip is pointed at 127.0.0.1:9, where nothing listens."""
    env = cli_env(tmp_path)
    line = assert_one_line_error(run_cli(["check", "vllm==99.99.99"], tmp_path, env=env), contains="cannot fetch")
    assert "99.99.99" in line
    # A real version, uncached, with no index at all.
    env2 = dict(env, PIP_NO_INDEX="1")
    assert_one_line_error(run_cli(["check", "vllm==0.16.0"], tmp_path, env=env2), contains="cannot fetch vllm==0.16.0")
    # Nothing was left half-extracted in the cache.
    cache = tmp_path / "xdg-cache" / "eagle3-lint"
    assert not list(cache.glob("vllm-*")) and not list(cache.glob(".dl-*"))
    for spec in ("vllm==", "vllm>=0.16", "vllm==../../etc"):
        assert_one_line_error(run_cli(["check", spec], tmp_path, env=env), contains="version spec")


# -- --fix --apply on trees that cannot or must not be written -------------------------------------------------


def test_read_only_tree_with_fix_apply(tmp_path: Path) -> None:
    root = fixable_case(tmp_path)
    before = tree_digest(root)
    targets = [p for p in root.rglob("*.py")]
    immutable: list[Path] = []
    try:
        for p in targets:
            if subprocess.run(["chattr", "+i", str(p)], capture_output=True).returncode != 0:
                break
            immutable.append(p)
        if len(immutable) != len(targets):
            pytest.skip("chattr +i is not available on this filesystem")
        proc = run_cli(["check", str(root), "--fix", "--apply", "--backup"], tmp_path)
        assert_one_line_error(proc, contains="not writable")
    finally:
        for q in immutable:
            subprocess.run(["chattr", "-i", str(q)], capture_output=True)
    assert tree_digest(root) == before
    assert not [q for q in root.rglob("*") if q.name.startswith(".") and q.is_file()], "temp files left behind"


def test_read_only_permissions_with_fix_apply(tmp_path: Path) -> None:
    """Mode bits a-w, with the CLI run without capabilities so they bind (see the module docstring)."""
    if not can_drop_caps(tmp_path):
        pytest.skip("cannot drop capabilities here (no setpriv)")
    root = fixable_case(tmp_path)
    for p in [root, *root.rglob("*")]:
        p.chmod(p.stat().st_mode & ~0o222)
    before = tree_digest(root)
    try:
        proc = subprocess.run([*NO_CAPS, sys.executable, "-m", "eagle3_lint", "check", str(root), "--fix", "--apply",
                               "--no-cache"], capture_output=True, text=True, timeout=300, env=cli_env(tmp_path))
        assert_one_line_error(proc, contains="not writable")
        assert tree_digest(root) == before
    finally:
        for p in [root, *root.rglob("*")]:
            p.chmod(p.stat().st_mode | 0o200)


def test_write_failure_mid_apply_simulated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Simulation: os.replace fails with EROFS (a read-only mount) on the rename. The error is
    ApplyError, the file keeps its bytes, and no temp file is left behind."""
    root = fixable_case(tmp_path)
    ctx = run_check(CheckRequest(str(root), no_cache=True))
    plan = fixes.plan(ctx.source, ctx.findings, unsafe=False)
    before = tree_digest(root)

    def erofs(src: object, dst: object) -> None:
        raise OSError(30, "Read-only file system", str(dst))

    monkeypatch.setattr(fixes.os, "replace", erofs)
    with pytest.raises(fixes.ApplyError, match="Read-only file system"):
        fixes.apply(ctx.source.writable_root, plan, backup=False)
    monkeypatch.undo()
    assert tree_digest(root) == before


def test_file_changed_between_analysis_and_apply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = fixable_case(tmp_path)
    ctx = run_check(CheckRequest(str(root), no_cache=True))
    plan = fixes.plan(ctx.source, ctx.findings, unsafe=False)
    assert plan.files
    paths = sorted(plan.files)
    # Someone edits the last file to be patched after the analysis read it.
    victim = root / paths[-1]
    victim.write_text(victim.read_text() + "\n# edited meanwhile\n")
    before = tree_digest(root)
    with pytest.raises(fixes.ApplyError, match="changed since it was analyzed"):
        fixes.apply(ctx.source.writable_root, plan, backup=True)
    # Refused as a whole: the other files were not patched either, no backups, no temp files.
    assert tree_digest(root) == before
    # The same through the CLI's error path: one line, exit 2.
    from click.testing import CliRunner

    from eagle3_lint import cli

    real_plan = fixes.plan

    def plan_then_edit(*a: object, **k: object) -> fixes.Plan:
        p = real_plan(*a, **k)  # type: ignore[arg-type]
        for rel in p.files:
            (root / rel).write_text((root / rel).read_text() + "# again\n")
        return p

    monkeypatch.setattr(fixes, "plan", plan_then_edit)
    res = CliRunner().invoke(cli.main, ["check", str(root), "--fix", "--apply", "--no-cache"])
    out = res.output  # click >= 8.2: stdout and stderr interleaved, as a terminal shows them
    assert res.exit_code == 2, out
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert lines == [ln for ln in lines if ln.startswith("eagle3-lint: error:")] and len(lines) == 1, out
    assert "changed since it was analyzed" in out and "Traceback" not in out


def test_hostile_names_reach_no_terminal_raw(tmp_path: Path) -> None:
    """Registry keys, module strings and file names are the tree's to choose: rich markup in them
    must not break the text report (MarkupError) and terminal escapes, bidi overrides and newlines
    must not reach the terminal raw, in any format or command."""
    from tests.hostile import commands, formats

    root = small_tree(tmp_path / "t")
    evil = "Evil[/]For[bold red]X[/bold red]\x1b]0;pwned\x07\x1b[31m\u202eLM"
    write(root, f"{MODELS}/[x]\x1b[1m.py", "class Broken(:\n    pass\n")
    write(root, f"{MODELS}/registry.py", registry({"GoodForCausalLM": ("good", "GoodForCausalLM"),
                                                    "PlainForCausalLM": ("plain", "PlainForCausalLM"),
                                                    evil: ("plain", "PlainForCausalLM"),
                                                    "Line\nBreakForCausalLM": ("no[/]such", "X\x1b[2J")}))
    runs = [["check", str(root), "--output-format", f] for f in formats()]
    # -v: the status table (one row per architecture, names included) is shown when asked.
    runs += [["check", str(root), "-v", "--output-format", "text"], ["check", str(root), "--arch", evil, "--all"],
             ["trace", evil, str(root)],
             ["trace", "Line\nBreakForCausalLM", str(root)], ["check", str(root), "--arch", "Nope\x1b[31m\nX"]]
    if "matrix" in commands():
        runs += [["matrix", str(root)], ["matrix", str(root), "--output-format", "markdown"]]
    for args in runs:
        p = run_cli(args, tmp_path)
        out = p.stdout + p.stderr
        assert "Traceback" not in out and "MarkupError" not in out, (args, out[-2000:])
        assert "\x1b" not in out and "\u202e" not in out, (args, repr(out[-2000:]))
        if p.returncode == 2:
            assert_one_line_error(p)
        if args[-1] == "text" and "-v" in args or args[0] == "trace" and "Line" not in args[1]:
            assert "Evil[/]For" in p.stdout, args  # shown literally (the table may wrap the rest)


BOMBS = {
    "string doubling": "x = 'a' * 1000000\n    for i in range(40):\n        x = x + x\n    return len(x)",
    "list extends itself": "x = [0] * 1000\n    for i in range(40):\n        x.extend(x)\n    return len(x)",
    "repeated repetition": "x = [0] * 1000000\n    return len(x * 1000000)",
    "integer squaring": "n = 10\n    for i in range(40):\n        n = n * n\n    return n % 7",
    "huge power base": "n = 10 ** 60\n    for i in range(12):\n        n = n ** 60\n    return n % 7",
    "sum of lists": "x = [[0] * 1000000] * 1000000\n    return len(sum(x, []))",
    "replace amplification": "s = 'a' * 1000000\n    return len(s.replace('', s))",
    "join amplification": "s = 'a' * 1000000\n    return len(s.join([s] * 1000))",
    "format width": "return len('{:>1000000000}'.format(1))",
    "nested format width": "return len('{:>{}}'.format(1, 10 ** 9))",
    "star unpacking doubling": "x = [0] * 1000\n    for i in range(40):\n        x = [*x, *x]\n    return len(x)",
    "percent width": "return len('%1000000000s' % 'x')",
    "float overflow": "return float(int('9' * 400))",
    "float power overflow": "return 1e308 ** 2",
    "recursion": "return f(n + 1)",
    "endless loop": "while True:\n        n = n + 1\n    return n",
}


@pytest.mark.parametrize("name", list(BOMBS))
def test_evaluator_refuses_resource_bombs(name: str) -> None:
    """The restricted evaluator (minieval, used on the tree's get_pp_indices, default aux-layer
    methods, speculators conversion) must refuse growth bombs before allocating, and turn
    arithmetic errors into evaluation errors: a hostile tree must not exhaust memory or crash."""
    import ast
    import time

    from eagle3_lint import minieval as me

    src = f"def f(n):\n    {BOMBS[name]}\n"
    tree = ast.parse(src)
    found = me.find_function(tree, "f")
    assert found is not None
    fn = me.FuncValue(found, me.ModuleEnv.of(tree, "bomb.py"))
    t = time.perf_counter()
    with pytest.raises((me.Unsupported, me.EvalRaise)):
        me.Interpreter(me.World(), strict=True).call(fn, [1])
    assert time.perf_counter() - t < 60  # a generous bound: a bomb that ran would take hours or OOM


def test_evaluator_bomb_in_a_tree(tmp_path: Path) -> None:
    """End to end: a default aux-layer method that doubles a string 40 times, checked with the
    drafter and target configs that make the tool evaluate it. The subprocess runs under a 3 GB
    address-space limit, so a regression fails here instead of exhausting the machine."""
    import resource

    from tests.conftest import materialize
    from tests.hostile import SAMPLES

    case = SAMPLES / "draft-layer-ids-invalid" / "good_default_v033"
    if not case.exists():
        pytest.skip("the drafter sample case is not in this checkout")
    root = materialize(case, tmp_path / "t")
    iface = root / MODELS / "interfaces.py"
    text = iface.read_text()
    anchor = "        num_layers = len(holder.layers)\n"
    assert anchor in text
    iface.write_text(text.replace(anchor, anchor + "        x = 'a' * 1000000\n        for i in range(40):\n"
                                  "            x = x + x\n        num_layers = num_layers + len(x)\n", 1))

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    proc = subprocess.run([sys.executable, "-m", "eagle3_lint", "check", str(root), "--arch", "ToyForCausalLM",
                           "--target-config", str(root / "configs/target.json"),
                           "--draft-config", str(root / "configs/draft.json"), "--output-format", "json", "--no-cache"],
                          capture_output=True, text=True, timeout=300, env=cli_env(tmp_path), preexec_fn=limit)
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stdout + proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), proc.stderr
    assert json.loads(proc.stdout)["errors"] == []


def test_facts_cache_planted_by_someone_else_is_not_unpickled(tmp_path: Path) -> None:
    """The facts cache is a pickle: a pack another user could have written (wrong owner, or a
    group/world-writable file or folder, as in XDG_CACHE_HOME=/tmp) is ignored, never loaded."""
    import pickle

    from eagle3_lint.store import FactStore

    root = small_tree(tmp_path / "t")
    cache = tmp_path / "cache"
    ctx = analyze(dir_source(root), Options(cache_dir=cache))
    pack = ctx.store.pack_path()
    assert pack is not None and pack.exists()
    assert (pack.parent.stat().st_mode & 0o777) == 0o700
    assert FactStore(dir_source(root), cache).hits == 0  # loading is lazy; the pack is trusted
    marker = tmp_path / "PWNED"

    class Payload:
        def __reduce__(self) -> tuple[object, tuple[str, str]]:
            return (open, (str(marker), "w"))

    import hashlib

    from eagle3_lint import store as store_mod

    body = pickle.dumps({"header": None, "files": {}, "derived": {}, "x": Payload()})
    pack.write_bytes(store_mod.MAGIC + hashlib.sha256(body).digest() + body)
    for mode_file, mode_dir in ((0o666, 0o700), (0o600, 0o777), (0o620, 0o700)):
        pack.chmod(mode_file)
        pack.parent.chmod(mode_dir)
        FactStore(dir_source(root), cache)
        assert not marker.exists(), (oct(mode_file), oct(mode_dir))
    os.chown(pack, 4321, 4321)
    pack.chmod(0o600)
    pack.parent.chmod(0o700)
    FactStore(dir_source(root), cache)
    assert not marker.exists()
    # A run still works (and rebuilds its own pack) with the untrusted one in place.
    ctx = analyze(dir_source(root), Options(cache_dir=cache))
    assert not ctx.errors and not marker.exists()
    # Positive control: the same pack, owned by us and private, is loaded (which is why the
    # ownership and mode checks are the protection; the checksum only catches damage).
    body = pickle.dumps({"header": None, "files": {}, "derived": {}, "x": Payload()})
    pack.write_bytes(store_mod.MAGIC + hashlib.sha256(body).digest() + body)
    pack.chmod(0o600)
    FactStore(dir_source(root), cache)
    assert marker.exists()


def test_output_to_a_fifo_writes_through_and_keeps_it_a_fifo(tmp_path: Path) -> None:
    """``-o /dev/null`` used to rename a temp file over the device node, making /dev/null a regular file
    (and breaking every program that opens it afterwards). A non-regular destination is written through."""
    import os
    import stat
    import threading

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    from eagle3_lint.app import write_output

    write_output('{"ok": true}\n', str(fifo))
    reader.join(timeout=10)
    assert got == [b'{"ok": true}\n']
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
