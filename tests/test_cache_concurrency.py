"""Two runs that fetch the same release into an empty cache at once (two terminals, a matrix beside a check,
two pytest-xdist workers) download it once and read the same whole tree (releases.fetch_release's lock and rename).

The release is a sample tree packaged as a wheel, ``vllm==9.9.9``, offered to pip by a local find-links folder
(``PIP_NO_INDEX``): no network. pip's own log (``PIP_LOG``, which pip appends to) counts the downloads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from eagle3_lint import releases
from tests.conftest import SAMPLES, materialize
from tests.hostile import cli_env

CASE = SAMPLES / "core" / "wrapper_inner_supports"
VERSION = "9.9.9"
DIST_INFO = f"vllm-{VERSION}.dist-info"


def release_wheel(tmp: Path) -> tuple[Path, Path]:
    """The sample case as the wheel ``vllm-9.9.9-py3-none-any.whl`` in a find-links folder; (folder, wheel)."""
    root = materialize(CASE, tmp / "tree")
    links = tmp / "links"
    links.mkdir()
    wheel = links / f"vllm-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted((root / "vllm").rglob("*.py")):
            z.write(f, f.relative_to(root).as_posix())
        z.writestr(f"{DIST_INFO}/METADATA", f"Metadata-Version: 2.1\nName: vllm\nVersion: {VERSION}\n")
        z.writestr(f"{DIST_INFO}/WHEEL",
                   "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{DIST_INFO}/RECORD", "")
    return links, wheel


def offline_env(tmp: Path, links: Path) -> dict[str, str]:
    """A private cache, no index, the wheel's folder as pip's only source, pip's log in ``tmp/pip.log``."""
    return cli_env(tmp, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(links), PIP_LOG=str(tmp / "pip.log"))


def downloads(tmp: Path) -> int:
    """How many times pip saved the wheel (pip logs ``Saved <path>`` once per download)."""
    log = tmp / "pip.log"
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    return sum(1 for line in text.splitlines() if "Saved " in line and f"vllm-{VERSION}-py3-none-any.whl" in line)


def assert_cache_holds_the_wheel(cache: Path, wheel: Path) -> None:
    """The cache holds one whole tree of the release, byte for byte the wheel's .py and dist-info members, and
    nothing half-made beside it (no download folder, no second copy)."""
    tree = cache / f"vllm-{VERSION}"
    assert (tree / releases.COMPLETE_MARKER).read_text() == VERSION
    with zipfile.ZipFile(wheel) as z:
        members = {n: z.read(n) for n in z.namelist()}
    got = {p.relative_to(tree).as_posix(): p.read_bytes() for p in tree.rglob("*")
           if p.is_file() and p.name != releases.COMPLETE_MARKER}
    assert got == members
    assert sorted(p.name for p in cache.iterdir() if not p.name.endswith(".lock")
                  and p.name != "trees") == [f"vllm-{VERSION}"]  # trees/: the analysis caches


def test_two_checks_of_an_uncached_release_at_once(tmp_path: Path) -> None:
    """Two ``check vllm==9.9.9`` processes started together on an empty cache: both succeed with the same report,
    the release is downloaded once, and the cache holds one whole tree. Before the lock, both downloaded, and
    the second deleted the first's tree (``shutil.rmtree``) while the first was reading it."""
    links, wheel = release_wheel(tmp_path)
    env = offline_env(tmp_path, links)
    cmd = [sys.executable, "-m", "eagle3_lint", "check", f"vllm=={VERSION}", "--output-format", "json", "--all"]
    procs = [subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err  # the whole tree, no --arch: the wrapper's gap is a warning (EGL002)
        assert "Traceback" not in err and "internal error" not in err, err
    assert outs[0][0] == outs[1][0]
    rep = json.loads(outs[0][0])
    # case.toml of the sample: the wrapper does not pass supports_eagle3(), its inner decoder does.
    status = {a["name"]: a["status"] for a in rep["architectures"]}
    assert status == {"InnerForCausalLM": "supported", "WrapForConditionalGeneration": "wrapper-gap"}
    assert downloads(tmp_path) == 1
    assert_cache_holds_the_wheel(tmp_path / "xdg-cache" / "eagle3-lint", wheel)
    # A third run, the release cached, says the same and downloads nothing.
    third = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert third.stdout == outs[0][0] and downloads(tmp_path) == 1


def test_a_fetch_waits_for_the_one_under_way_and_reuses_its_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    """While another holder has the release's lock, ``fetch_release`` says it is waiting and does not download;
    once the holder has published the tree and let go, it returns that tree, still without running pip."""
    links, wheel = release_wheel(tmp_path)
    for k, v in offline_env(tmp_path, links).items():
        monkeypatch.setenv(k, v)
    cache = tmp_path / "cache"
    cache.mkdir()
    dest = releases.release_dir(VERSION, cache, "vllm")
    said: list[str] = []
    got: list[Path] = []
    with releases.cache_lock(dest, "the test's holder"):
        waiter = threading.Thread(target=lambda: got.append(
            releases.fetch_release(VERSION, cache, said.append, package="vllm")))
        waiter.start()
        deadline = time.monotonic() + 60
        while not said and time.monotonic() < deadline:
            time.sleep(0.05)
        assert said == [f"waiting for another process to finish setting up vllm=={VERSION}"]
        assert waiter.is_alive() and not dest.exists()
        # The holder's own fetch, as another process would make it: unpacked aside, renamed into place.
        staging = tmp_path / "cache" / ".staging"
        releases._extract_py(wheel, staging)  # noqa: SLF001 - the unpacking step on its own
        (staging / releases.COMPLETE_MARKER).write_text(VERSION)
        os.replace(staging, dest)
    waiter.join(60)
    assert got == [dest] and said == [said[0]]  # no "downloading" line
    assert downloads(tmp_path) == 0


def test_an_incomplete_tree_left_in_the_cache_is_replaced_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    """A release folder without its marker (an older version's interrupted unpacking, or a marker deleted by
    hand) is never read: the next fetch downloads again and swaps in a whole tree."""
    links, wheel = release_wheel(tmp_path)
    for k, v in offline_env(tmp_path, links).items():
        monkeypatch.setenv(k, v)
    cache = tmp_path / "cache"
    half = releases.release_dir(VERSION, cache, "vllm") / "vllm"
    half.mkdir(parents=True)
    (half / "left_over.py").write_text("x = 1\n")
    assert releases.fetch_release(VERSION, cache, package="vllm") == half.parent
    assert downloads(tmp_path) == 1
    assert_cache_holds_the_wheel(cache, wheel)
