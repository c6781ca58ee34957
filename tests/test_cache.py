"""The facts cache (store.py) never changes a result, and damage to it is detected and rebuilt.

Reports are compared byte for byte: without the cache, with a cold cache and with a warm one, on
a sample tree and on a real release; after truncating, flipping bytes in, or overwriting the pack;
after an in-place edit that keeps a file's size and mtime; and serial against parallel parsing.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from eagle3_lint import queries as queries_mod
from eagle3_lint import reportcache
from eagle3_lint import store as store_mod
from eagle3_lint.analysis import Analysis, Options, analyze
from eagle3_lint.engines import dir_source
from eagle3_lint.report.build import build_report
from eagle3_lint.store import FactStore
from tests.cihelp import run_cli
from tests.conftest import SAMPLES, materialize

CASE = SAMPLES / "core" / "wrapper_inner_supports"


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI, in this process (tests/cihelp.py); the cache it reads and writes is on disk either way."""
    return run_cli(args, env={**os.environ, **(env or {})})


def report(ctx: Analysis) -> str:
    return json.dumps(build_report(ctx, ctx.findings), indent=2)


def run(root: Path, cache: Path | None) -> Analysis:
    return analyze(dir_source(root), Options(cache_dir=cache))


def pack_of(cache: Path) -> Path:
    packs = list((cache / "trees").glob("*/facts.pack"))
    assert len(packs) == 1, packs
    return packs[0]


def pack_contents(pack: Path) -> dict[str, tuple[bytes, bool]]:
    """What a pack holds: each file's content hash and whether its facts are there. Not its size: a facts blob's
    pickle shares the strings the process happened to share (interned identifiers), so two runs that read the files
    in another order write equal facts in a few bytes more or less."""
    body = pickle.loads(store_mod.unseal(pack.read_bytes()))
    return {rel: (e[1], e[2] is not None) for rel, e in body["files"].items()}


def drop_answers(cache: Path) -> None:
    """Remove the kept answers (every option set's table and its delta), keeping the facts."""
    for p in (cache / "trees").glob("*/*"):
        if p.suffix == queries_mod.SUFFIX or (p.suffix == ".delta" and p.stem != "facts"):
            p.unlink()


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    return materialize(CASE, tmp_path / "tree")


@pytest.fixture
def old_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Trust stat memos at once: freshly written test files are otherwise 'racily clean'."""
    monkeypatch.setattr(store_mod, "_RACY_NS", 0)


def check_json(tree: Path, *flags: str, env: dict[str, str] | None = None) -> str:
    p = cli("check", str(tree), "--output-format", "json", *flags, env=env)
    assert p.returncode in (0, 1), p.stderr
    assert p.stderr == "", p.stderr  # JSON mode, not a terminal: no progress output at all
    return p.stdout


# -- the cache never changes results --------------------------------------------------------------
def test_sample_tree_reports_identical_without_cold_and_warm(sample: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    plain = check_json(sample, "--no-cache")
    assert not cache.exists()
    cold = check_json(sample, "--cache-dir", str(cache))
    assert pack_of(cache).stat().st_size > 0
    warm = check_json(sample, "--cache-dir", str(cache))
    assert plain == cold == warm
    ctx = run(sample, cache)
    assert ctx.store.misses == 0 and ctx.store.hits > 0 and ctx.store.derived_hits == 2


@pytest.mark.real
def test_real_release_reports_identical_without_cold_and_warm(real_trees: object, tmp_path: Path) -> None:
    root = real_trees.get("0.16.0")  # type: ignore[attr-defined]
    cache = tmp_path / "cache"
    plain = check_json(root, "--no-cache", env={store_mod.JOBS_ENV: "2"})  # parallel parse, forced
    serial = check_json(root, "--no-cache", env={store_mod.JOBS_ENV: "1"})
    cold = check_json(root, "--cache-dir", str(cache))
    warm = check_json(root, "--cache-dir", str(cache))
    assert plain == serial == cold == warm
    assert json.loads(warm)["target"]["vllm_version"] == "0.16.0"
    # Truncated pack on a real tree: same report, and the pack is whole again afterwards.
    pack = pack_of(cache)
    held = pack_contents(pack)
    pack.write_bytes(pack.read_bytes()[: pack.stat().st_size // 3])
    assert check_json(root, "--cache-dir", str(cache)) == plain
    assert pack_contents(pack) == held
    # The CLI's warm run above replayed the report (reportcache.py); the analysis on warm facts, too,
    # gives the report an analysis without any cache gives, and so does one reusing the answers kept.
    drop_answers(cache)
    fresh = report(run(root, None))
    warm_ctx = run(root, cache)
    assert warm_ctx.store.misses == 0 and warm_ctx.store.hits > 200 and not warm_ctx.model.queries.reused
    assert report(warm_ctx) == fresh
    kept_ctx = run(root, cache)
    kept = kept_ctx.model.queries
    assert kept_ctx.store.misses == 0 and kept.reused > 1000 and not kept.computed_entries(lambda atoms: ())
    assert report(kept_ctx) == fresh


# -- damage is detected and rebuilt ----------------------------------------------------------------
def _truncate(b: bytes) -> bytes:
    return b[: len(b) // 2]


def _flip(b: bytes) -> bytes:
    mid = len(b) // 2
    return b[:mid] + bytes(x ^ 0xFF for x in b[mid: mid + 16]) + b[mid + 16:]


def _garbage(b: bytes) -> bytes:
    return os.urandom(len(b))


def _empty(b: bytes) -> bytes:
    return b""


def _last_byte(b: bytes) -> bytes:
    return b[:-1] + bytes([b[-1] ^ 1])


@pytest.mark.parametrize("damage", [_truncate, _flip, _garbage, _empty, _last_byte])
def test_damaged_pack_is_detected_and_rebuilt(sample: Path, tmp_path: Path, damage: object) -> None:
    cache = tmp_path / "cache"
    expected = report(run(sample, None))
    assert report(run(sample, cache)) == expected
    pack = pack_of(cache)
    good_size = pack.stat().st_size
    pack.write_bytes(damage(pack.read_bytes()))  # type: ignore[operator]

    ctx = run(sample, cache)
    assert ctx.store.rebuilt and ctx.store.hits == 0  # nothing from the damaged pack was trusted
    assert report(ctx) == expected
    assert pack.stat().st_size == good_size
    again = run(sample, cache)
    assert not again.store.rebuilt and again.store.misses == 0
    assert report(again) == expected


def _rewrite_pack(pack: Path, edit: object) -> None:
    """Change the body of a pack and re-seal it, so only the per-entry checks can notice."""
    raw = pack.read_bytes()
    head = len(store_mod.MAGIC) + 32
    body = pickle.loads(raw[head:])
    edit(body)  # type: ignore[operator]
    payload = pickle.dumps(body)
    import hashlib

    pack.write_bytes(store_mod.MAGIC + hashlib.sha256(payload).digest() + payload)


@pytest.mark.parametrize("what", ["garbage-blob", "wrong-type-blob", "other-file-blob"])
def test_damaged_entry_in_a_sealed_pack_is_rebuilt(sample: Path, tmp_path: Path, what: str) -> None:
    cache = tmp_path / "cache"
    expected = report(run(sample, None))
    run(sample, cache)
    rel = "vllm/model_executor/models/registry.py"

    def edit(body: dict) -> None:
        files = body["files"]
        stat, digest, _blob = files[rel]
        if what == "garbage-blob":
            files[rel] = (stat, digest, b"\x80\x05garbage")
        elif what == "wrong-type-blob":
            files[rel] = (stat, digest, pickle.dumps({"not": "facts"}))
        else:
            other = next(r for r, e in files.items() if r != rel and e[2] is not None)
            files[rel] = (stat, digest, files[other][2])

    _rewrite_pack(pack_of(cache), edit)
    ctx = run(sample, cache)
    assert report(ctx) == expected
    assert ctx.store.misses == 1
    again = run(sample, cache)
    assert again.store.misses == 0 and report(again) == expected


def test_stale_code_fingerprint_drops_the_pack(sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    run(sample, cache)
    monkeypatch.setattr(store_mod, "_FINGERPRINT", "facts.py was edited")
    ctx = run(sample, cache)
    assert ctx.store.rebuilt and ctx.store.hits == 0


# -- what the stat memo may and may not skip -------------------------------------------------------
def test_unchanged_files_are_not_read_again(sample: Path, tmp_path: Path, old_files: None,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    run(sample, cache)
    first = pack_of(cache).read_bytes()
    reads: list[str] = []
    real_read = FactStore._read

    def counting(self: FactStore, rel: str) -> bytes | None:
        reads.append(rel)
        return real_read(self, rel)

    monkeypatch.setattr(FactStore, "_read", counting)
    ctx = run(sample, cache)
    assert ctx.store.misses == 0 and ctx.store.derived_hits == 2
    assert reads == []
    assert pack_of(cache).read_bytes() == first  # a warm hit rewrites nothing


def test_same_size_edit_with_restored_mtime_is_seen(sample: Path, tmp_path: Path, old_files: None) -> None:
    cache = tmp_path / "cache"
    target = sample / "vllm/model_executor/models/registry.py"
    before = run(sample, cache)
    arch = next(iter(before.registry.entries))
    st = target.stat()
    text = target.read_text()
    # Rename the first architecture in place: same size, and the mtime put back as it was.
    new_arch = arch[:-1] + ("X" if arch[-1] != "X" else "Y")
    edited = text.replace(f'"{arch}"', f'"{new_arch}"', 1)
    assert len(edited.encode()) == len(text.encode()) and edited != text
    time.sleep(0.05)
    target.write_text(edited)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert target.stat().st_mtime_ns == st.st_mtime_ns and target.stat().st_size == st.st_size

    after = run(sample, cache)
    assert new_arch in after.registry.entries and arch not in after.registry.entries
    assert report(after) == report(run(sample, None))


def test_non_model_edit_invalidates_the_runner_memo(sample: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    runner_file = sample / "vllm/v1/worker/gpu_model_runner.py"
    before = run(sample, cache)
    assert before.runner.primary is not None and "EAGLE3" in before.runner.primary.error
    runner_file.write_text(runner_file.read_text().replace("Model does not support EAGLE3", "No EAGLE-3 here"))
    after = run(sample, cache)
    assert after.runner.primary is not None and "No EAGLE-3 here" in after.runner.primary.error
    assert report(after) == report(run(sample, None))


def test_deleted_file_is_forgotten(sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    run(sample, cache)
    victim = "vllm/model_executor/models/__init__.py"
    (sample / victim).unlink()
    ctx = run(sample, cache)
    ctx.store._dirty = True
    ctx.store.save()
    assert victim in ctx.store._delta  # recorded as deleted, in the pack's delta
    assert victim not in FactStore(dir_source(sample), cache)._files  # and gone from what the next run reads
    ctx.store._dirty = True
    monkeypatch.setattr(store_mod, "_DELTA_MAX", -1)  # folded into the pack itself
    ctx.store.save()
    raw = pack_of(cache).read_bytes()
    body = pickle.loads(raw[len(store_mod.MAGIC) + 32:])
    assert victim not in body["files"]


# -- serial and parallel parsing agree -------------------------------------------------------------
def test_parallel_parse_equals_serial(sample: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(store_mod.JOBS_ENV, "1")
    serial = report(run(sample, None))
    monkeypatch.setenv(store_mod.JOBS_ENV, "3")
    monkeypatch.setattr(store_mod, "_PARALLEL_MIN_FILES", 1)
    monkeypatch.setattr(store_mod, "_PARALLEL_MIN_BYTES", 0)
    calls: list[int] = []
    real = FactStore._extract_parallel

    def spy(self: FactStore, todo: list[str], n: int, sizes: dict[str, int]) -> object:
        calls.append(len(todo))
        assert n == 3
        return real(self, todo, n, sizes)

    monkeypatch.setattr(FactStore, "_extract_parallel", spy)
    assert report(run(sample, None)) == serial
    assert report(run(sample, tmp_path / "cache")) == serial
    assert report(run(sample, tmp_path / "cache")) == serial  # warm, from facts the children made
    assert len(calls) == 2 and calls[0] > 1


def test_parallel_parse_files_the_facts_in_the_order_asked(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The processes of a parallel parse take files from one shared counter, so which process parses which file
    changes from run to run: the store still holds them in the order asked, and each file exactly once."""
    monkeypatch.setenv(store_mod.JOBS_ENV, "3")
    monkeypatch.setattr(store_mod, "_PARALLEL_MIN_FILES", 1)
    monkeypatch.setattr(store_mod, "_PARALLEL_MIN_BYTES", 0)
    src = dir_source(sample)
    asked = list(reversed(src.py_files()))  # neither the listing's order nor the largest-first order of the shares
    st = FactStore(src, None)
    st.preload(asked)
    assert [mf.path for mf in st.loaded()] == asked
    assert st.misses == len(asked)


# -- --cache-dir and --no-cache, for releases and facts --------------------------------------------
def test_cache_dir_holds_releases_and_facts(sample: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    rel_dir = cache / "vllm-9.9.9"  # a "downloaded" release: the cache layout target.py writes
    shutil.copytree(sample, rel_dir)
    (rel_dir / ".complete").write_text("9.9.9")
    plain = check_json(sample, "--no-cache")
    out = check_json(Path("vllm==9.9.9"), "--cache-dir", str(cache))
    assert list((cache / "trees").glob("*/facts.pack"))
    nocache_dir = tmp_path / "other"
    shutil.copytree(rel_dir, nocache_dir / "vllm-9.9.9")
    out2 = check_json(Path("vllm==9.9.9"), "--cache-dir", str(nocache_dir), "--no-cache")
    assert not (nocache_dir / "trees").exists()  # --no-cache: no facts written, release still found
    def strip(s: str) -> dict[str, object]:
        return {k: v for k, v in json.loads(s).items() if k != "target"}

    assert strip(out) == strip(out2) == strip(plain)


def test_unwritable_cache_only_costs_time(sample: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    ctx = run(sample, blocker)  # cache_dir is a file: the pack can be neither read nor written
    assert report(ctx) == report(run(sample, None))


# -- the report cache: a re-check of an unchanged tree replays the report --------------------------
def entries(cache: Path) -> list[Path]:
    return sorted((cache / "trees").glob("*/*" + reportcache.SUFFIX))


def entry_key(entry: Path) -> str:
    return str(json.loads(entry.read_bytes().split(b"\n", 1)[0])["key"])


def entry_report(entry: Path) -> str:
    r = reportcache.decode(entry.read_bytes(), entry_key(entry))
    assert r is not None, entry
    return r.report


def forge(entry: Path, report_text: str) -> None:
    """Rewrite an entry as a consistent one with another report: what a replay would print."""
    key = entry_key(entry)
    r = reportcache.decode(entry.read_bytes(), key)
    assert r is not None
    entry.write_bytes(reportcache.encode(key, reportcache.Replay(report_text, r.stderr, r.code)))


def outputs(p: subprocess.CompletedProcess[str]) -> tuple[str, str, int]:
    return p.stdout, p.stderr, p.returncode


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_replay_is_byte_identical_and_is_used(sample: Path, tmp_path: Path, fmt: str) -> None:
    cache = tmp_path / "cache"
    args = ("check", str(sample), "--output-format", fmt, "--arch", "WrapForConditionalGeneration")
    plain = outputs(cli(*args, "--no-cache"))
    assert plain[2] == 1 and plain[0]
    cold = outputs(cli(*args, "--cache-dir", str(cache)))
    [entry] = entries(cache)
    warm = outputs(cli(*args, "--cache-dir", str(cache)))
    assert plain == cold == warm
    forge(entry, "REPLAYED\n")
    assert cli(*args, "--cache-dir", str(cache)).stdout == "REPLAYED\n"  # the warm run did not analyze


def test_text_report_to_a_file_is_replayed_identically(sample: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    outs: list[str] = []
    for flags in (("--no-cache",), ("--cache-dir", str(cache)), ("--cache-dir", str(cache))):
        dest = tmp_path / f"report-{len(outs)}.txt"
        p = cli("check", str(sample), "--output", str(dest), "--arch", "WrapForConditionalGeneration", *flags)
        assert p.returncode == 1 and p.stdout == ""
        outs.append(dest.read_text())
    assert outs[0] == outs[1] == outs[2] and "\x1b[" not in outs[0]
    assert len(entries(cache)) == 1


def test_edited_model_file_is_not_replayed(sample: Path, tmp_path: Path, old_files: None) -> None:
    cache = tmp_path / "cache"
    before = check_json(sample, "--cache-dir", str(cache))
    victim = sample / "vllm/model_executor/models/inner.py"
    st = victim.stat()
    text = victim.read_text()
    assert "SupportsEagle3" in text
    # Same size, mtime restored: only the content hash can tell.
    victim.write_text(text.replace("SupportsEagle3", "SupportsEagleX", 1))
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = check_json(sample, "--cache-dir", str(cache))
    assert after != before and after == check_json(sample, "--no-cache")
    assert len(entries(cache)) == 2


def test_new_file_in_the_tree_is_not_replayed(sample: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    check_json(sample, "--cache-dir", str(cache))
    (sample / "vllm/model_executor/models/extra.py").write_text("class Broken(\n")
    after = check_json(sample, "--cache-dir", str(cache))
    assert "EGL000" in after and after == check_json(sample, "--no-cache")


def test_request_and_named_files_are_part_of_the_key(sample: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"architectures": ["WrapForConditionalGeneration"], "model_type": "llama"}))
    a = check_json(sample, "--cache-dir", str(cache), "--target-config", str(cfg))
    cfg.write_text(json.dumps({"architectures": ["WrapForConditionalGeneration"], "model_type": "no-such-type"}))
    b = check_json(sample, "--cache-dir", str(cache), "--target-config", str(cfg))
    assert a != b and b == check_json(sample, "--no-cache", "--target-config", str(cfg))
    c = check_json(sample, "--cache-dir", str(cache), "--select", "EGL001")
    assert c == check_json(sample, "--no-cache", "--select", "EGL001") and c not in (a, b)
    assert len(entries(cache)) == 3


def test_environment_that_reaches_the_report_is_part_of_the_key(sample: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    args = ("check", str(sample), "--output-format", "sarif", "--arch", "WrapForConditionalGeneration")
    a = cli(*args, "--cache-dir", str(cache)).stdout
    env = {"EAGLE3_LINT_DOCS_URL": "https://mirror.example/{version}/{id}.html"}
    b = cli(*args, "--cache-dir", str(cache), env=env).stdout
    assert "mirror.example" in b and "mirror.example" not in a
    assert b == cli(*args, "--no-cache", env=env).stdout
    # CI=true turns a stale baseline into a failure (baseline.py): a replay from outside CI must not hide it.
    base = tmp_path / "baseline.json"
    wrote = cli("check", str(sample), "--arch", "WrapForConditionalGeneration", "--write-baseline", str(base),
                "--no-cache")
    assert wrote.returncode == 0 and json.loads(base.read_text())["findings"]
    flags = ("check", str(sample), "--baseline", str(base))  # no --arch: no finding, every entry is stale
    outside = outputs(cli(*flags, "--cache-dir", str(cache), env={"CI": ""}))
    inside = outputs(cli(*flags, "--cache-dir", str(cache), env={"CI": "true"}))
    assert outside[2] == 0 and inside[2] == 1
    assert inside == outputs(cli(*flags, "--no-cache", env={"CI": "true"}))
    assert outside == outputs(cli(*flags, "--no-cache", env={"CI": ""}))


@pytest.mark.parametrize("damage", [_truncate, _flip, _garbage, _empty, _last_byte])
def test_damaged_report_entry_is_recomputed(sample: Path, tmp_path: Path, damage: object) -> None:
    cache = tmp_path / "cache"
    plain = check_json(sample, "--no-cache")
    check_json(sample, "--cache-dir", str(cache))
    [entry] = entries(cache)
    good = entry.read_bytes()
    entry.write_bytes(damage(good))  # type: ignore[operator]
    assert check_json(sample, "--cache-dir", str(cache)) == plain
    assert entry_report(entry) == plain  # rewritten whole


def test_report_entry_in_a_folder_others_can_write_is_not_trusted(sample: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    plain = check_json(sample, "--cache-dir", str(cache))
    [entry] = entries(cache)
    forge(entry, "PLANTED\n")
    os.chmod(entry.parent, 0o777)
    try:
        assert check_json(sample, "--cache-dir", str(cache)) == plain
    finally:
        os.chmod(entry.parent, 0o700)


def test_runs_that_write_or_fail_are_not_stored(sample: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert cli("check", str(sample), "--fix", "--cache-dir", str(cache)).returncode in (0, 1)
    assert cli("check", str(sample), "--write-baseline", str(tmp_path / "b.json"),
               "--cache-dir", str(cache)).returncode in (0, 1)
    assert entries(cache) == []  # (exit 2 is never stored either: test_internal_errors.py)


def test_oldest_entries_are_dropped_per_tree(sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reportcache, "MAX_PER_TREE", 2)
    monkeypatch.setattr(reportcache, "MAX_ENTRIES", 5)
    cache = tmp_path / "cache"
    other = materialize(CASE, tmp_path / "other")
    t = 0

    def put(root: Path, i: int) -> None:
        nonlocal t
        src = dir_source(root)
        rc = reportcache.ReportCache(cache, (i,), src, FactStore(src, cache))
        rc.put(reportcache.Replay(f"{root.name}{i}", (), 0))
        t += 1
        os.utime(rc.path, ns=(t * 10**9, t * 10**9))

    def kept() -> set[str]:
        return {entry_report(p) for p in entries(cache)}

    for i in range(2):
        put(other, i)
    for i in range(4):
        put(sample, i)
    # Each tree keeps its 2 newest: the other tree's entries survive the sample's four.
    assert kept() == {"other0", "other1", "tree2", "tree3"}
    put(other, 2)
    put(sample, 4)
    assert kept() == {"other1", "other2", "tree3", "tree4"}
    monkeypatch.setattr(reportcache, "MAX_ENTRIES", 3)  # and the folder keeps its newest overall
    put(other, 3)
    assert kept() == {"other3", "tree4", "other2"}


# -- progress ------------------------------------------------------------------------------------
def test_progress_counts_a_cold_parse(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_mod, "_PROGRESS_MIN_FILES", 1)
    seen: list[tuple] = []
    analyze(dir_source(sample), Options(progress=lambda *a: seen.append(a)))
    counted = [a for a in seen if len(a) == 3]
    assert counted and counted[0][1] == 0 and counted[-1][1] == counted[-1][2] > 0


def test_progress_is_off_without_a_terminal() -> None:
    from eagle3_lint import cli

    assert cli._progress(True) is None  # pytest captures stderr: not a TTY
    assert cli._progress(False) is None


def test_progress_bar_renders(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from rich.console import Console

    from eagle3_lint import cli

    buf = io.StringIO()
    p = cli._StderrProgress()
    p.console = Console(file=buf, force_terminal=True, width=80)
    p("downloading")
    p("parsing model files", 0, 3)
    p("parsing model files", 3, 3)
    assert "downloading" in buf.getvalue() and p._bar is None


def test_entry_holds_the_report_bytes_exactly() -> None:
    """The entry format (reportcache.encode/decode): any text round-trips, a foreign or mangled entry is refused."""
    text = "caf\u00e9 \u2192 \udcff lone surrogate\n\x00\n" * 3
    r = reportcache.Replay(text, ("warning: x", "\u00e9"), 1)
    raw = reportcache.encode("k" * 64, r)
    assert reportcache.decode(raw, "k" * 64) == r
    assert reportcache.decode(raw, "j" * 64) is None  # another request's entry
    head, body = raw.split(b"\n", 1)
    assert reportcache.decode(head + b"\n" + body + b" ", "k" * 64) is None
    assert reportcache.decode(b"[1, 2]\n" + body, "k" * 64) is None
    assert reportcache.decode(body, "k" * 64) is None


def test_lazy_fields_read_back_what_was_stored(sample: Path) -> None:
    """facts.facts_blob / facts_from_blob: every field of every file of the sample tree reads back equal,
    the lazy ones only when first read; pickled or copied, the object is plain ModuleFacts again."""
    import copy

    from eagle3_lint.facts import LAZY_FIELDS, LazyModuleFacts, ModuleFacts, extract, facts_blob, facts_from_blob

    src = dir_source(sample)
    rels = src.py_files()
    assert len(rels) > 5
    lazy_seen = 0
    for rel in rels:
        mf = extract(rel, src.path_module(rel), rel.endswith("/__init__.py"), src.read_bytes(rel))
        back = facts_from_blob(facts_blob(mf))
        assert type(back) is LazyModuleFacts
        pending = set(back.__dict__.get("_pending", {}))
        assert pending == {f for f in LAZY_FIELDS if getattr(mf, f)}  # empty fields are stored as they are
        lazy_seen += len(pending)
        plain = pickle.loads(pickle.dumps(back))
        assert type(plain) is ModuleFacts and plain == mf
        assert type(copy.deepcopy(back)) is ModuleFacts
        assert all(getattr(back, f) == getattr(mf, f) for f in LAZY_FIELDS)
        assert not back.__dict__.get("_pending")  # each read once, then kept
    assert lazy_seen > 0
    with pytest.raises(ValueError):
        facts_from_blob(pickle.dumps(({"path": "x"}, {})))  # fields missing: not a facts blob


def test_a_first_check_hashes_the_tree_at_its_end_and_keeps_nothing_if_a_file_changed_meanwhile(
        sample: Path, tmp_path: Path) -> None:
    """A tree's first check takes its content hashes as it reads the files, not in a pass over the whole tree before
    the analysis (reportcache.ReportCache, analysis.keep_answers): the report and the answers are then stored under
    hashes taken by the end. A file edited while the check ran would put them under content they were not made from,
    so they are not stored; with no edit they are, under the key the next check computes up front, and replayed."""
    cache = tmp_path / "cache"
    rel = "vllm/model_executor/models/inner.py"
    assert (sample / rel).is_file()
    src = dir_source(sample)
    store = FactStore(src, cache)
    rc = reportcache.ReportCache(cache, ("req",), src, store)
    assert rc.get() is None  # no entry for the tree yet: nothing hashed to find that out
    ctx = analyze(src, Options(cache_dir=cache), store=store, keep=False)
    (sample / rel).write_text((sample / rel).read_text() + "\n# edited while the check ran\n")
    from eagle3_lint.analysis import keep_answers

    keep_answers(ctx)
    rc.put(reportcache.Replay("report", (), 0))
    assert entries(cache) == [] and not list(cache.glob("trees/*/*.answers"))
    # Unchanged during the check: stored, and found by the next check's key, computed from the stat memos.
    src = dir_source(sample)
    store = FactStore(src, cache)
    rc = reportcache.ReportCache(cache, ("req",), src, store)
    assert rc.get() is None
    ctx = analyze(src, Options(cache_dir=cache), store=store, keep=False)
    keep_answers(ctx)
    rc.put(reportcache.Replay("report", (), 0))
    assert len(entries(cache)) == 1 and list(cache.glob("trees/*/*.answers"))
    src = dir_source(sample)
    hit = reportcache.ReportCache(cache, ("req",), src, FactStore(src, cache)).get()
    assert hit is not None and hit.report == "report"
