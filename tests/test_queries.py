"""Answers kept between runs (queries.py, deps.py): reused exactly where the files they read did not change.

Each test runs the analysis on a small engine-shaped tree (a sample case, plus an unrelated model where a
test needs one), edits it, and compares the cached run with a run without any cache, byte for byte, as
well as which answers were reused and which recomputed.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from eagle3_lint import queries
from eagle3_lint import store as store_mod
from eagle3_lint.analysis import Analysis, Options, analyze, keep_answers
from eagle3_lint.engines import dir_source
from eagle3_lint.report.build import build_report
from tests.conftest import SAMPLES, materialize

MODELS = "vllm/model_executor/models"

OTHER = '''from torch import nn

from .interfaces import SupportsEagle3


class OtherForCausalLM(nn.Module, SupportsEagle3):
    def __init__(self, config):
        super().__init__()
'''


@pytest.fixture(autouse=True)
def old_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Trust stat memos at once: freshly written test files are otherwise 'racily clean'."""
    monkeypatch.setattr(store_mod, "_RACY_NS", 0)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = materialize(SAMPLES / "core" / "wrapper_inner_supports", tmp_path / "tree")
    (root / MODELS / "other.py").write_text(OTHER)
    reg = root / MODELS / "registry.py"
    reg.write_text(reg.read_text().replace(
        '"InnerForCausalLM": ("inner", "InnerForCausalLM"),',
        '"InnerForCausalLM": ("inner", "InnerForCausalLM"),\n    "OtherForCausalLM": ("other", "OtherForCausalLM"),'))
    return root


def run(root: Path, cache: Path | None) -> Analysis:
    return analyze(dir_source(root), Options(cache_dir=cache))


def report(ctx: Analysis) -> str:
    return json.dumps(build_report(ctx, ctx.findings), indent=2)


def reused(ctx: Analysis) -> set[object]:
    return {k for k, e in ctx.model.queries._run.items() if e.layer is not None}


def computed(ctx: Analysis) -> set[object]:
    return {k for k, e in ctx.model.queries._run.items() if e.persist and e.layer is None}


def same_as_fresh(root: Path, cache: Path) -> Analysis:
    ctx = run(root, cache)
    assert report(ctx) == report(run(root, None))
    return ctx


def test_recordings_nest_and_keep_what_a_failing_computation_read() -> None:
    q = queries.Queries()

    def inner() -> None:
        q.note("b.py")
        raise ValueError

    def outer() -> int:
        q.note("a.py")
        with pytest.raises(ValueError):
            q.get("inner", inner)
        with q.unrecorded():
            q.note("c.py")
        return 1

    assert q.get("outer", outer) == 1
    assert q._run["outer"].atoms == {"a.py", "b.py"}  # whoever caught the error read b.py too; c.py was not a read
    assert "inner" not in q._run
    q.note("d.py")  # nothing records: a no-op
    assert q.frame is None


class _Run:
    """Answers over a pretend tree of files, computed through one ``Queries`` and kept as a check keeps them."""

    def __init__(self, files: dict[str, str], before: _Run | None = None) -> None:
        self.files = files
        self.calls: list[str] = []
        if before is None:
            self.q = queries.Queries()
        else:
            changed = {f for f in files.keys() | before.files.keys() if files.get(f) != before.files.get(f)}
            names = before.q.names
            self.q = queries.Queries(queries.Layer(before.kept(), (i for i, n in enumerate(names) if n in changed)),
                                     names=names)

    def kept(self) -> queries.Entries:
        index = {n: i for i, n in enumerate(self.q.names)}

        def ids(atoms: object) -> tuple[int, ...]:
            out = []
            for a in atoms:  # type: ignore[attr-defined]
                if a not in index:
                    index[a] = len(self.q.names)
                    self.q.names.append(a)
                out.append(index[a])
            return tuple(out)
        return {**self.q.kept(self.q.table), **self.q.computed_entries(ids)}

    @property
    def queries(self) -> queries.Queries:  # what a declared query is asked through
        return self.q

    def read(self, f: str) -> str:
        self.q.note(f)
        return self.files[f]

    def pick(self) -> int:  # reads c.py only when a.py starts with "x"
        def compute() -> int:
            self.calls.append("pick")
            a = self.read("a.py")
            return len(a) + (self.read("c.py") == "changed") if a.startswith("x") else len(a)
        return self.q.get(("pick",), compute, persist=True)

    def user(self) -> int:
        def compute() -> int:
            self.calls.append("user")
            return self.pick() + 1
        return self.q.get(("user",), compute, persist=True)

    def declared_total(self) -> int:
        def compute() -> int:
            self.calls.append("total")
            return _declared_length(self, "a.py") + _declared_length(self, "b.py")
        return self.q.get(("declared total",), compute, persist=True)

    def length(self, f: str) -> int:  # kept between runs, an answer others read
        def compute() -> int:
            self.calls.append(f"length {f}")
            return len(self.read(f))
        return self.q.get(("length", f), compute, persist=True)

    def total(self) -> int:
        def compute() -> int:
            self.calls.append("total")
            return self.length("a.py") + self.length("b.py")
        return self.q.get(("total",), compute, persist=True)


@queries.query
def _declared_length(run: _Run, f: str) -> int:
    run.calls.append(f"length {f}")
    return len(run.read(f))


def test_an_answer_recomputed_to_the_same_value_stops_the_invalidation() -> None:
    first = _Run({"a.py": "aaa", "b.py": "bb"})
    assert first.total() == 5
    # a.py changes but keeps its length: its answer is recomputed (its reader asks it again), equal, and the total,
    # which did not read a.py itself, is not recomputed.
    second = _Run({"a.py": "xyz", "b.py": "bb"}, first)
    assert second.length("a.py") == 3 and second.total() == 5
    assert second.calls == ["length a.py"]
    # Its length changes: the total is recomputed, and it reuses b.py's length.
    third = _Run({"a.py": "xyzw", "b.py": "bb"}, second)
    assert third.total() == 6
    assert third.calls == ["total", "length a.py"]


def test_an_answer_kept_through_one_that_now_reads_more_rests_on_that_too() -> None:
    """The answer a reader read came out the same but read another file this time: the reader, kept, now rests on
    that file as well, so that an edit of it alone is not missed."""
    first = _Run({"a.py": "aaa", "c.py": "orig"})
    assert first.user() == 4
    second = _Run({"a.py": "xyz", "c.py": "orig"}, first)
    assert second.pick() == 3 and second.user() == 4
    assert second.calls == ["pick"]  # the user was kept: what it read came out the same
    third = _Run({"a.py": "xyz", "c.py": "changed"}, second)
    assert third.user() == 5  # not the kept 4: the pick it read now reads c.py
    assert third.calls == ["user", "pick"]


def test_a_kept_answer_is_checked_through_the_answers_it_read() -> None:
    """Asked first, the total finds a.py's kept length invalid and cannot recompute it: it is recomputed itself,
    asks for the length, and the next reader of that length is then checked against the recomputed one."""
    first = _Run({"a.py": "aaa", "b.py": "bb"})
    first.total()
    second = _Run({"a.py": "xyz", "b.py": "bb"}, first)
    assert second.total() == 5
    assert second.calls == ["total", "length a.py"]
    assert second.q.get(("length", "b.py"), lambda: -1, persist=True) == 2  # reused, never recomputed


def test_a_declared_query_is_recomputed_to_check_its_readers() -> None:
    """A declared query (queries.query) can be recomputed by the framework itself: the total asked first is
    checked by recomputing a.py's length, equal, and is not recomputed; the framework chose every key."""
    first = _Run({"a.py": "aaa", "b.py": "bb"})
    assert first.declared_total() == 5
    second = _Run({"a.py": "xyz", "b.py": "bb"}, first)
    second.q.bind(second)
    assert second.declared_total() == 5
    assert second.calls == ["length a.py"] and second.q.cutoff == 1
    third = _Run({"a.py": "x", "b.py": "bb"}, second)
    third.q.bind(third)
    assert third.declared_total() == 3
    assert third.calls == ["length a.py", "total"]  # recomputed to check the total, then the total itself


def test_an_unchanged_tree_reuses_every_answer(tree: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = run(tree, cache)
    assert not reused(first) and ("verdict", "InnerForCausalLM") in computed(first)
    second = same_as_fresh(tree, cache)
    assert not computed(second)
    assert {("verdict", a) for a in first.verdicts} <= reused(second)
    # Facts load only for what is computed afresh (the findings' messages): no finding is about other.py.
    loaded = {mf.path for mf in second.store.loaded()}
    assert f"{MODELS}/other.py" in {mf.path for mf in first.store.loaded()} and f"{MODELS}/other.py" not in loaded


def test_an_edit_recomputes_the_answers_that_read_the_file_and_only_those(tree: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run(tree, cache)
    inner = tree / MODELS / "inner.py"
    inner.write_text(inner.read_text().replace("SupportsPP, SupportsEagle3)", "SupportsPP)"))
    ctx = same_as_fresh(tree, cache)
    assert ctx.verdicts["InnerForCausalLM"].status.value == "partial"  # the methods without the marker
    now = computed(ctx)
    # The wrapper builds the inner model through the registry: its verdict read inner.py too.
    assert {("verdict", "InnerForCausalLM"), ("verdict", "WrapForConditionalGeneration")} <= now
    assert ("verdict", "OtherForCausalLM") in reused(ctx)
    assert not any(isinstance(k, tuple) and "OtherForCausalLM" in k for k in now)
    # And back: the answers the first run made on this content are valid again.
    inner.write_text(inner.read_text().replace("SupportsPP)", "SupportsPP, SupportsEagle3)"))
    back = same_as_fresh(tree, cache)
    assert back.verdicts["InnerForCausalLM"].status.value == "supported"


def test_a_registry_edit_starts_afresh(tree: Path, tmp_path: Path) -> None:
    """The registry is derived before any answer, and kept answers rest on its value: a changed one reuses nothing
    but what the engine derived from files that did not change (the contract, the runner path)."""
    cache = tmp_path / "cache"
    run(tree, cache)
    reg = tree / MODELS / "registry.py"
    reg.write_text(reg.read_text().replace('    "OtherForCausalLM": ("other", "OtherForCausalLM"),\n', ""))
    ctx = same_as_fresh(tree, cache)
    assert {k[0] for k in reused(ctx) if isinstance(k, tuple)} == {"derived"} and all(
        isinstance(k, tuple) for k in reused(ctx)) and "OtherForCausalLM" not in ctx.verdicts


def test_added_and_deleted_files_change_what_names_resolve_to(tree: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run(tree, cache)
    (tree / MODELS / "other.py").unlink()  # the registry still names it: its verdict says it is missing
    assert same_as_fresh(tree, cache).verdicts["OtherForCausalLM"].status.value == "unknown"
    (tree / MODELS / "other.py").write_text(OTHER)
    assert same_as_fresh(tree, cache).verdicts["OtherForCausalLM"].status.value == "supported"


def test_checks_write_a_delta_that_folds_into_the_table(tree: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    run(tree, cache)
    (table,) = cache.glob("trees/*/*.answers")
    delta = table.with_suffix(".delta")
    assert not delta.exists()
    inner = tree / MODELS / "inner.py"
    for n in range(3):
        inner.write_text(inner.read_text() + f"\n\ndef _edit_{n}():\n    return {n}\n")
        table_bytes = table.read_bytes()
        same_as_fresh(tree, cache)
        assert delta.exists() and table.read_bytes() == table_bytes  # only the delta was written
    monkeypatch.setattr(queries, "_DELTA_MAX", 0)
    inner.write_text(inner.read_text() + "\n\ndef _edit_fold():\n    return 0\n")
    same_as_fresh(tree, cache)  # the delta now holds more than a quarter of the table: it folds
    assert not delta.exists()
    assert not computed(same_as_fresh(tree, cache))


@pytest.mark.parametrize("damage", ["truncate", "garbage", "flipped byte", "foreign delta"])
def test_a_damaged_table_costs_a_full_analysis_only(tree: Path, tmp_path: Path, damage: str) -> None:
    cache = tmp_path / "cache"
    run(tree, cache)
    inner = tree / MODELS / "inner.py"
    inner.write_text(inner.read_text() + "\n\ndef _edit():\n    return 1\n")
    run(tree, cache)  # writes a delta
    (table,) = cache.glob("trees/*/*.answers")
    delta = table.with_suffix(".delta")
    if damage == "truncate":
        table.write_bytes(table.read_bytes()[:100])
    elif damage == "garbage":
        delta.write_bytes(b"\x80\x05not a pickle")
    elif damage == "flipped byte":  # inside an answer: the checksum catches what unpickling would not
        raw = bytearray(table.read_bytes())
        raw[len(raw) // 2] ^= 1
        table.write_bytes(bytes(raw))
    else:  # a delta left by another table: its answers must not be mixed into this one
        data = pickle.loads(store_mod.unseal(delta.read_bytes()))
        data["base"] = "not this table"
        delta.write_bytes(b"".join(store_mod.seal(pickle.dumps(data))))
    inner.write_text(inner.read_text().replace("SupportsPP, SupportsEagle3)", "SupportsPP)"))
    same_as_fresh(tree, cache)


def test_an_internal_error_drops_the_table(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    run(tree, cache)
    from eagle3_lint.rules import all_rules

    def broken(ctx: Analysis) -> object:
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(next(r for r in all_rules() if r.meta.id == "EGL002"), "_check", broken)
    ctx = run(tree, cache)
    assert ctx.errors
    assert not list(cache.glob("trees/*/*.answers"))  # the next check starts afresh


@pytest.mark.parametrize("case", ["core/wrapper_inner_supports", "aux-states-not-collected/good_v033",
                                  "aux-states-not-collected/sglang_flags_no_feeder"])
def test_the_derived_digest_is_the_same_in_every_process(case: str, tmp_path: Path) -> None:
    """Kept answers are reused only if the engine derived the same registry, contract and runner as the last
    check (queries.derived_digest): a digest that changed with the string hash seed would never match."""
    root = materialize(SAMPLES / case, tmp_path / "tree")
    code = ("import sys; from pathlib import Path; from eagle3_lint import engines, queries; "
            "from eagle3_lint.store import FactStore; "
            "src = engines.dir_source(Path(sys.argv[1])); "
            "d = engines.for_package(src.package).derive(src, FactStore(src, None), lambda: None); "
            "assert d.registry.entries, 'no registry'; print(queries.derived_digest(d))")
    digests = {subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")}
    assert len(digests) == 1, digests


def test_the_classes_defining_a_method_are_one_answer_per_file_and_survive_an_unrelated_edit(
        tree: Path, tmp_path: Path) -> None:
    """``semantic.classes_defining`` (what EGL003's fix copies a setter header from) joins one declared answer per
    model file: an edit of a file that defines no such method re-reads that file alone, and the joined answer comes
    out equal, so what read it is kept (early cutoff)."""
    from eagle3_lint import semantic as sem

    # The case's inner.py:36 (InnerForCausalLM) and its base's interfaces.py (the SupportsEagle3 Protocol), in path
    # order; the wrapper (wrap.py) and other.py define none.
    setter = "set_aux_hidden_state_layers"
    cache = tmp_path / "cache"
    first = run(tree, cache)
    got = sem.classes_defining(first.model, setter)
    assert [(rel, k.name) for rel, k in got] == [(f"{MODELS}/inner.py", "InnerForCausalLM"),
                                                 (f"{MODELS}/interfaces.py", "SupportsEagle3")]
    assert ("eagle3_lint.semantic:_file_classes_defining", f"{MODELS}/other.py", setter) in first.model.queries._run
    keep_answers(first)  # again, with the answers asked since
    other = tree / MODELS / "other.py"
    other.write_text(other.read_text() + "\n\ndef _unrelated():\n    return 1\n")
    second = run(tree, cache)
    q = second.model.queries
    assert sem.classes_defining(second.model, setter) == got
    assert q.was_kept(("eagle3_lint.semantic:classes_defining", setter))
    assert ("eagle3_lint.semantic:_file_classes_defining", f"{MODELS}/other.py", setter) in computed(second)
    assert q.was_kept(("eagle3_lint.semantic:_file_classes_defining", f"{MODELS}/inner.py", setter))


SGLANG_OTHER = '''from torch import nn


class OtherForCausalLM(nn.Module):
    def forward(self, x):
        return x


EntryClass = [OtherForCausalLM]
'''


def test_sglang_registry_entries_are_one_answer_per_model_module(tmp_path: Path) -> None:
    """SGLang's registry reads ``EntryClass`` from every top-level ``models/*.py`` (its ``models/registry.py``
    imports each module and reads that attribute): each module's entries are one kept answer, so an edit of one
    model file reads that module's entries again and keeps the others', and the registry is what a fresh check
    derives."""
    root = materialize(SAMPLES / "aux-states-not-collected" / "sglang_flags_no_feeder", tmp_path / "tree")
    models = root / "sglang" / "srt" / "models"
    (models / "other.py").write_text(SGLANG_OTHER)
    cache = tmp_path / "cache"
    first = same_as_fresh(root, cache)
    assert {"FlagForCausalLM", "OtherForCausalLM"} <= set(first.model.registry.entries)
    assert ("sglang-entries", "sglang/srt/models/other.py") in computed(first)
    keep_answers(first)  # again, with the answers asked since
    (models / "other.py").write_text(SGLANG_OTHER + "\n\ndef _unrelated():\n    return 1\n")
    second = same_as_fresh(root, cache)
    assert ("sglang-entries", "sglang/srt/models/other.py") in computed(second)
    assert ("sglang-entries", "sglang/srt/models/flag.py") in reused(second)
    assert second.model.registry == first.model.registry
