"""An SGLang wheel read in place (``ZipSource``) gives what the unpacked folder gives."""

from __future__ import annotations

import zipfile
from pathlib import Path

from eagle3_lint.analysis import Options, analyze
from eagle3_lint.engines import dir_source, zip_source
from tests.conftest import SAMPLES, materialize

CASE = SAMPLES / "drafter-ids-replaced-by-default" / "sglang_graph_capture"


def test_sglang_wheel_reads_like_its_folder(tmp_path: Path) -> None:
    tree = materialize(CASE, tmp_path / "tree")
    wheel = tmp_path / "sglang-0.5.10-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for f in sorted(tree.rglob("*.py")):
            z.write(f, f.relative_to(tree).as_posix())
    src = zip_source(wheel)
    assert src.package == "sglang" and src.py_files() and all(p.startswith("sglang/") for p in src.py_files())
    from_zip = analyze(src, Options())
    from_dir = analyze(dir_source(tree), Options())
    assert from_zip.engine.name == from_dir.engine.name == "sglang"
    key = [(f.rule, f.location.path, f.location.line) for f in from_zip.findings]
    assert key == [(f.rule, f.location.path, f.location.line) for f in from_dir.findings]
    assert ("EGL010", "sglang/srt/model_executor/cuda_graph_runner.py", 5) in key
    assert {a: v.status for a, v in from_zip.verdicts.items()} == {a: v.status for a, v in from_dir.verdicts.items()}
    assert from_zip.verdicts["LlamaForCausalLM"].supports_eagle3 is True
