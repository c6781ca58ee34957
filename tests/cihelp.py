"""Helpers for the CI-surface tests (issue 5): run the real CLI, build sample trees, load schemas."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import REPO, SAMPLES, materialize

# The OASIS SARIF 2.1.0 schema, vendored unchanged so a bare clone validates SARIF without anything beside it
# (origin, hash and licence in tests/data/SARIF-SCHEMA-NOTICE.md).
SARIF_SCHEMA_PATH = REPO / "tests" / "data" / "sarif-schema-2.1.0.json"
SARIF_SCHEMA_SHA256 = "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e"


def cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
        stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m eagle3_lint ARGS`` in a clean environment: no inherited CI flag unless given."""
    e = {k: v for k, v in os.environ.items() if k != "CI"}
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "eagle3_lint", *args], cwd=cwd, env=e, input=stdin,
                          capture_output=True, text=True, timeout=600)


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
    from eagle3_lint.outcome import finalize
    from eagle3_lint.source import DirSource

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
    ctx = analyze(DirSource(root), opts)
    return ctx, finalize(ctx, settings or Settings())
