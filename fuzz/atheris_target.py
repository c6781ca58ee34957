"""Coverage-guided fuzzing with atheris (libFuzzer), when it installs (``pip install atheris``).

    python -m fuzz.atheris_target --release 0.16.0 --corpus /tmp/e3l-corpus -- -runs=2000 -max_len=400000

The fuzzer's input picks a file of the release (first two bytes) and replaces it with the rest of
the input; the seed corpus is the release's own driver and favourite model files, so libFuzzer's
byte-level mutations start from real code. eagle3_lint is instrumented for coverage; a failing
input (exception, internal error, fix that breaks syntax) makes libFuzzer save a crash file.
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["eagle3_lint"]):
    import eagle3_lint.analysis  # noqa: F401 - instrumented for coverage
    import eagle3_lint.rules

    eagle3_lint.rules.all_rules()

from fuzz.harness import BaseTree, Case, memoized_facts, run_case  # noqa: E402

BASE: BaseTree | None = None
FILES: list[str] = []


def test_one_input(data: bytes) -> None:
    assert BASE is not None
    if len(data) < 2:
        return
    (which,) = struct.unpack(">H", data[:2])
    rel = FILES[which % len(FILES)]
    o = run_case(BASE, Case({rel: data[2:]}), ())
    if not o.ok:
        raise RuntimeError(f"{rel}: {o.problem}\n{o.detail}")


def main() -> None:
    global BASE, FILES
    ap = argparse.ArgumentParser()
    ap.add_argument("--release", default="0.16.0")
    ap.add_argument("--corpus", default="fuzz-corpus")
    ns, rest = ap.parse_known_args()
    from eagle3_lint import releases

    BASE = BaseTree(releases.fetch_release(ns.release))
    FILES = [*BASE.drivers, *BASE.favourites]
    corpus = Path(ns.corpus)
    corpus.mkdir(parents=True, exist_ok=True)
    for i, rel in enumerate(FILES):
        seed = corpus / f"seed-{i:03d}"
        if not seed.exists():
            seed.write_bytes(struct.pack(">H", i) + BASE.files[rel])
    with memoized_facts(BASE):
        atheris.Setup([sys.argv[0], *[a for a in rest if a != "--"], str(corpus)], test_one_input)
        atheris.Fuzz()


if __name__ == "__main__":
    main()
