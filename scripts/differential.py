#!/usr/bin/env python3
"""Differential validation: eagle3-lint's static verdict against vLLM's own ``supports_eagle3(cls)``.

    python scripts/differential.py 0.16.0                 # real release: build/reuse the oracle venv, compare
    python scripts/differential.py 0.16.0 --patched-tree /tmp/patched   # a tree that `check --fix --apply` patched
    python scripts/differential.py 0.16.0 --oracle-json tests/differential/oracle/vllm-0.16.0.json  # no venv

The oracle venv comes from scripts/oracle/build_venv.py (a CPU venv from the committed lock file);
the runtime verdicts from scripts/oracle/runtime_verdicts.py run inside it. With --patched-tree the
oracle puts the patched pure-Python ``vllm/`` first on its path, and the tool analyses the same
folder. Prints agree/total over the importable architectures, the count that did not import, and
every disagreement with the tool's evidence chain beside the runtime MRO. Exit 1 on any
disagreement, 2 when the oracle cannot run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from eagle3_lint import releases  # noqa: E402
from eagle3_lint.analysis import Options, build  # noqa: E402
from eagle3_lint.engines import dir_source  # noqa: E402


class OracleError(Exception):
    pass


# Bases vLLM adds at class-creation time: ``@support_torch_compile`` (vllm/compilation/decorators.py)
# appends a torch.compile wrapper to ``cls.__bases__``. They carry no contract member; the tool
# does not model decorator side effects, so the MRO comparison leaves them out (by name prefix).
RUNTIME_INJECTED_BASES = (
    "vllm.compilation.wrapper.TorchCompileWrapper",
    "vllm.compilation.wrapper.TorchCompileWithNoGuardsWrapper",
)


def _norm(qualified: str) -> str:
    return qualified.replace(".<locals>", "")


def mro_mismatch(ctx: Any, arch: str, runtime_mro: list[str]) -> str | None:
    """Compare the in-tree part of the tool's MRO with the runtime MRO; None when they agree."""
    from eagle3_lint.graph import ClassKey

    key = ctx.keys.get(arch)
    if key is None:
        return "the tool could not resolve the class"
    ours = [_norm(f"{e.module}.{e.qualname}") for e in ctx.graph.mro(key).entries if isinstance(e, ClassKey)]
    rt = [_norm(m) for m in runtime_mro if m.startswith("vllm.") and not m.startswith(RUNTIME_INJECTED_BASES)]
    if ours == rt:
        return None
    ours_short = " -> ".join(x.rsplit(".", 1)[-1] for x in ours)
    rt_short = " -> ".join(x.rsplit(".", 1)[-1] for x in rt)
    return f"tool MRO {ours_short} != runtime {rt_short}"


@dataclass
class Comparison:
    version: str
    registered: int
    importable: int
    agree: int
    not_importable: dict[str, str]
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    mro_mismatches: dict[str, str] = field(default_factory=dict)
    tool_only: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.disagreements and not self.mro_mismatches and self.importable > 0


def oracle_python(version: str) -> Path:
    p = subprocess.run([sys.executable, str(REPO / "scripts/oracle/build_venv.py"), version],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise OracleError((p.stderr.strip().splitlines() or [f"build_venv exited {p.returncode}"])[-1])
    return Path(p.stdout.strip().splitlines()[-1])


def runtime_verdicts(version: str, patched: Path | None, archs: list[str]) -> dict[str, Any]:
    py = oracle_python(version)
    with tempfile.TemporaryDirectory() as td:
        out = Path(td) / "verdicts.json"
        cmd = [str(py), str(REPO / "scripts/oracle/runtime_verdicts.py"), "--output", str(out)]
        if patched is not None:
            cmd += ["--vllm-path", str(patched)]
        for a in archs:
            cmd += ["--arch", a]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        if p.returncode != 0 or not out.exists():
            raise OracleError((p.stderr.strip().splitlines() or [f"runtime_verdicts exited {p.returncode}"])[-1])
        return json.loads(out.read_text())


def serving_facts(version: str, checkpoints: Path | None = None) -> dict[str, Any]:
    """vLLM's own answers for the serving verdict (scripts/oracle/serving_facts.py run in the oracle venv)."""
    py = oracle_python(version)
    with tempfile.TemporaryDirectory() as td:
        out = Path(td) / "serving.json"
        cmd = [str(py), str(REPO / "scripts/oracle/serving_facts.py"), "--output", str(out)]
        if checkpoints is not None:
            cmd += ["--checkpoints", str(checkpoints)]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        if p.returncode != 0 or not out.exists():
            raise OracleError((p.stderr.strip().splitlines() or [f"serving_facts exited {p.returncode}"])[-1])
        return json.loads(out.read_text())


def json_diff(a: Any, b: Any, path: str = "") -> list[str]:
    """Paths where two JSON values differ (for readable snapshot mismatches)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}/{k}: only in {'second' if k not in a else 'first'}")
            else:
                out += json_diff(a[k], b[k], f"{path}/{k}")
        return out
    return [] if a == b else [f"{path}: {json.dumps(a)[:200]} != {json.dumps(b)[:200]}"]


def compare(version: str, tree: Path, oracle: dict[str, Any], archs: list[str]) -> Comparison:
    t0 = time.perf_counter()
    # The oracle imports vLLM's ordinary wheel on a machine without an accelerator: vLLM falls back to its
    # UnspecifiedPlatform there, so a platform dispatch in the tree is resolved for that platform.
    ctx = build(dir_source(tree), Options(platform="unspecified"))
    t1 = time.perf_counter()
    rv: dict[str, bool] = oracle["verdicts"]
    chosen = archs or sorted(rv)
    cmp = Comparison(version, oracle.get("registered", len(rv)), 0, 0, dict(oracle.get("not_importable", {})),
                     seconds={"tool": round(t1 - t0, 2)})
    for arch in chosen:
        if arch not in rv:
            continue
        cmp.importable += 1
        if arch in oracle.get("mro", {}):
            mm = mro_mismatch(ctx, arch, oracle["mro"][arch])
            if mm is not None:
                cmp.mro_mismatches[arch] = mm
        sv = ctx.verdicts.get(arch)
        if sv is not None and sv.supports_eagle3 is rv[arch]:
            cmp.agree += 1
            continue
        cmp.disagreements.append({
            "arch": arch,
            "runtime": rv[arch],
            "tool": None if sv is None else sv.supports_eagle3,
            "status": None if sv is None else sv.status.value,
            "reason": "not in the tool's registry" if sv is None else sv.reason,
            "evidence": [] if sv is None else [f"{s.kind}: {s.text}" + (f" ({s.location})" if s.location else "")
                                               for s in sv.evidence],
            "runtime_mro": oracle.get("mro", {}).get(arch, []),
        })
    if not archs:
        cmp.tool_only = sorted(set(ctx.verdicts) - set(rv) - set(cmp.not_importable))
    return cmp


def render(c: Comparison) -> str:
    lines = [f"vLLM {c.version}: agree {c.agree}/{c.importable} importable architectures "
             f"({c.registered} registered, {len(c.not_importable)} not importable, tool {c.seconds.get('tool')} s)"]
    for arch, why in sorted(c.not_importable.items()):
        lines.append(f"  not importable: {arch}: {why}")
    same_mro = c.importable - len(c.mro_mismatches)
    lines.append(f"  class and in-tree MRO identical to the runtime's for {same_mro}/{c.importable}")
    for arch, mm in sorted(c.mro_mismatches.items()):
        lines.append(f"  MRO MISMATCH {arch}: {mm}")
    for arch in c.tool_only:
        lines.append(f"  registered in the tool's reading only: {arch}")
    for d in c.disagreements:
        lines.append(f"  DISAGREE {d['arch']}: runtime={d['runtime']} tool={d['tool']} ({d['status']}): {d['reason']}")
        for e in d["evidence"]:
            lines.append(f"      tool: {e}")
        lines.append(f"      runtime MRO: {' -> '.join(m.rsplit('.', 1)[-1] for m in d['runtime_mro'])}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("version")
    ap.add_argument("--patched-tree", type=Path, help="root holding a patched vllm/ (e.g. after check --fix --apply)")
    ap.add_argument("--oracle-json", type=Path, help="use saved runtime verdicts instead of running the oracle")
    ap.add_argument("--arch", action="append", default=[], help="compare only these architectures")
    ap.add_argument("--json", type=Path, help="write the comparison as JSON")
    args = ap.parse_args(argv)
    try:
        oracle = json.loads(args.oracle_json.read_text()) if args.oracle_json else \
            runtime_verdicts(args.version, args.patched_tree, args.arch)
    except (OracleError, OSError, json.JSONDecodeError, subprocess.TimeoutExpired) as exc:
        print(f"differential: error: oracle for {args.version}: {exc}", file=sys.stderr)
        return 2
    tree = args.patched_tree or releases.fetch_release(args.version, package="vllm")
    c = compare(args.version, tree, oracle, args.arch)
    print(render(c))
    if args.json:
        args.json.write_text(json.dumps(c.__dict__, indent=2) + "\n")
    return 0 if c.ok else 1


if __name__ == "__main__":
    sys.exit(main())
