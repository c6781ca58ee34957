"""``trace`` is data the semantic model builds: its owner and collection agree with the rules and the
serving verdict for every registered architecture of real releases, and its JSON/dot/mermaid forms
carry the same tree."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from eagle3_lint import semantic as sem
from eagle3_lint import trace as trace_mod
from eagle3_lint.analysis import Options, analyze
from eagle3_lint.engines import dir_source
from eagle3_lint.trace import NodeKind
from tests import cihelp
from tests.conftest import session_cache

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.real
@pytest.mark.slow
@pytest.mark.parametrize("version", ["0.16.0", "0.33.0"])
def test_trace_rules_and_serving_agree_on_every_architecture(version: str, real_trees: Any) -> None:
    ctx = analyze(dir_source(real_trees.get(version)), Options(cache_dir=session_cache()))
    egl004 = {f.architecture: f for f in ctx.findings if f.rule == "EGL004" and f.architecture}
    checked = 0
    for arch, key in sorted(ctx.keys.items()):
        if key is None:
            continue
        node = trace_mod.build(ctx, arch)
        layers = next(n for n in node.children if n.kind is NodeKind.LAYERS)
        own = sem.owner(ctx.model, key)
        # The trace's owner is the semantic model's owner ...
        assert layers.ref == (str(own.key) if own else None), arch
        if own is None:
            continue
        # ... which is the owner the drafter/serving capture reads ...
        cap = sem.capture(ctx.model, key)
        assert cap is not None and cap.owner == own.key, arch
        # ... and the forward the trace shows is the one the rules judge.
        fwd = sem.forward_of(ctx.model, own.key)
        coll = [n for n in layers.walk() if n.kind is NodeKind.COLLECTION]
        if fwd is not None:
            assert coll and coll[0].ref == str(fwd.owner) and coll[0].location is not None, arch
            assert coll[0].location.path == ctx.graph.path_of(fwd.owner), arch
            f = egl004.get(arch)
            if f is not None and "forward" in f.message and f.location.path.endswith(".py"):
                # EGL004 on a forward names the file of the forward the trace shows, or a setter/holder in the chain.
                chain = (fwd.owner, own.key, key, *[h.key for h in own.hops])
                assert f.location.path in {ctx.graph.path_of(k) for k in chain}
        checked += 1
    assert checked > 150


@pytest.mark.real
def test_trace_formats_carry_the_same_tree(real_trees: Any, tmp_path: Path) -> None:
    tree = real_trees.get("0.16.0")
    out = {}
    for fmt in ("json", "dot", "mermaid"):
        p = subprocess.run([sys.executable, "-m", "eagle3_lint", "trace", "KimiK25ForConditionalGeneration", str(tree),
                            "--output-format", fmt], capture_output=True, text=True, cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        out[fmt] = p.stdout
    data = json.loads(out["json"])

    def count(n: dict[str, Any]) -> int:
        return 1 + sum(count(c) for c in n.get("children", ()))

    n = count(data)
    assert data["kind"] == "architecture" and data["class"].endswith("KimiK25ForConditionalGeneration")
    kinds = [c["kind"] for c in data["children"]]
    assert kinds[0] == "serving" and "layers" in kinds and "class" in kinds
    edge = re.compile(r"^  n\d+ -{1,2}> n\d+;?$", re.M)
    assert out["dot"].startswith("digraph trace {") and len(edge.findall(out["dot"])) == n - 1
    assert out["mermaid"].startswith("flowchart LR") and len(edge.findall(out["mermaid"])) == n - 1
    # The serving chain heads the trace: refused at load (no SupportsEagle3) without a target config.
    assert "runner-interface: fail" in out["mermaid"]


@pytest.mark.real
def test_piped_trace_keeps_one_line_per_node(real_trees: Any, tmp_path: Path) -> None:
    """Piped, the text trace does not fold at 80 columns: one line per node of the JSON trace, each location
    a whole ``path:line`` that exists in the tree (a terminal keeps rich's wrapping)."""
    tree = real_trees.get("0.16.0")
    args = ["trace", str(tree), "--arch", "KimiK25ForConditionalGeneration"]
    text = cihelp.cli(*args).stdout
    data = json.loads(cihelp.cli(*args, "--output-format", "json").stdout)

    def count(n: dict[str, Any]) -> int:
        return 1 + sum(count(c) for c in n.get("children", ()))

    lines = text.splitlines()
    assert len(lines) == count(data) and max(map(len, lines)) > 80
    locs = re.findall(r"\((vllm/[\w/.]+\.py):(\d+)\)$", text, re.M)
    assert len(locs) > 10
    for path, line in locs:
        assert int(line) <= len((tree / path).read_text(encoding="utf-8").splitlines()), path
