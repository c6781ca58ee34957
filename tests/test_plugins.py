"""``--plugin``: out-of-tree model packages analyzed against the vLLM tree, never imported.

Two sample plugins live in ``sample_trees/_plugins/``: ``eagle3-demo-plugin`` (pyproject entry point,
src layout, both ``register_model`` forms, a good model and a wrapper gap) and
``legacy-setup-plugin`` (``setup.py`` entry point, flat layout, a helper that registers, and a
replacement of a built-in architecture). Findings on plugin files must equal their ``# expect:``
markers, reported as ``<plugin>/REL`` paths.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from eagle3_lint import plugins
from eagle3_lint.analysis import Context, Options, analyze
from eagle3_lint.source import DirSource
from tests.conftest import SAMPLES

DEMO = SAMPLES / "_plugins" / "eagle3-demo-plugin"
LEGACY = SAMPLES / "_plugins" / "legacy-setup-plugin"
BASE = SAMPLES / "_bases" / "v016_draft"
MARKER = re.compile(r"#\s*expect:\s*(EGL\d{3}(?:\s*,\s*EGL\d{3})*)")


def _markers(root: Path, prefix: str) -> set[tuple[str, int, str]]:
    out = set()
    for f in sorted(root.rglob("*.py")):
        for i, line in enumerate(f.read_text().splitlines(), 1):
            m = MARKER.search(line)
            if m:
                for rule in re.split(r"\s*,\s*", m.group(1)):
                    out.add((f"{prefix}/{f.relative_to(root).as_posix()}", i, rule))
    return out


def _check(base: Path, specs: list[str], archs: tuple[str, ...] = ()) -> Context:
    src = plugins.overlay(DirSource(base), specs)
    ctx = analyze(src, Options(targets=archs))
    assert not ctx.errors, [e.message + e.traceback for e in ctx.errors]
    return ctx


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "eagle3_lint", *args], capture_output=True, text=True, cwd=cwd, env=e)


def test_demo_plugin_verdicts_registrations_and_markers() -> None:
    ctx = _check(BASE, [str(DEMO)])
    p = ctx.source.plugins[0]  # type: ignore[attr-defined]
    assert p.name == "eagle3-demo-plugin" and p.prefix == "<plugin>"
    assert [(e.name, e.value, e.source) for e in p.entry_points] == [
        ("register_demo_models", "eagle3_demo_plugin:register", "pyproject.toml")]
    regs = {r.arch: (r.module, r.class_name, r.form) for r in p.registrations}
    assert regs == {"DemoForCausalLM": ("eagle3_demo_plugin.good", "DemoForCausalLM", "string"),
                    "DemoVLForConditionalGeneration": ("eagle3_demo_plugin.bad", "DemoVLForConditionalGeneration", "class")}
    assert ctx.verdicts["DemoForCausalLM"].status.value == "supported"
    v = ctx.verdicts["DemoVLForConditionalGeneration"]
    assert v.status.value == "wrapper-gap" and v.location is not None
    assert v.location.path == "<plugin>/src/eagle3_demo_plugin/bad.py"
    # The registry step of the evidence points at the plugin's register call, not at registry.py.
    reg = next(s for s in v.evidence if s.kind == "registry")
    assert reg.location is not None and reg.location.path == "<plugin>/src/eagle3_demo_plugin/__init__.py"
    got = {(f.location.path, f.location.line, f.rule) for f in ctx.findings if plugins.is_plugin_display_path(f.location.path)}
    assert got == _markers(DEMO, "<plugin>")


def test_legacy_setup_py_plugin_replaces_a_builtin_architecture() -> None:
    ctx = _check(BASE, [str(LEGACY)])
    p = ctx.source.plugins[0]  # type: ignore[attr-defined]
    assert [(e.value, e.source) for e in p.entry_points] == [("legacy_toy.plugin:register_all", "setup.py")]
    # register_all() -> _register(ModelRegistry) -> register_model(ARCH, "...") with ARCH a module constant.
    assert [(r.arch, r.module, r.class_name) for r in p.registrations] == [
        ("ToyForCausalLM", "legacy_toy.model", "PatchedToyForCausalLM")]
    v = ctx.verdicts["ToyForCausalLM"]
    assert v.class_name == "PatchedToyForCausalLM" and v.status.value == "partial" and v.supports_eagle3 is False
    got = {(f.location.path, f.location.line, f.rule) for f in ctx.findings}
    assert got == _markers(LEGACY, "<plugin>")


def test_two_plugins_get_distinct_prefixes() -> None:
    ctx = _check(BASE, [str(LEGACY), str(DEMO)])
    prefixes = [p.prefix for p in ctx.source.plugins]  # type: ignore[attr-defined]
    assert prefixes == ["<plugin:legacy-setup-plugin>", "<plugin:eagle3-demo-plugin>"]
    got = {(f.location.path, f.location.line, f.rule) for f in ctx.findings}
    assert got == _markers(LEGACY, prefixes[0]) | _markers(DEMO, prefixes[1])


def test_fix_diff_applies_in_the_plugin_root_with_p2(tmp_path: Path) -> None:
    plug = tmp_path / "plug"
    shutil.copytree(DEMO, plug)
    p = _cli("check", str(BASE), "--plugin", str(plug), "--arch", "DemoVLForConditionalGeneration", "--no-cache",
             "--fix", "--unsafe-fixes", cwd=tmp_path)
    assert p.returncode == 1 and p.stdout.startswith("--- a/<plugin>/src/eagle3_demo_plugin/bad.py"), p.stderr
    subprocess.run(["git", "init", "-q"], cwd=plug, check=True)
    subprocess.run(["git", "apply", "-p2", "-"], cwd=plug, input=p.stdout, text=True, check=True)
    ctx = _check(BASE, [str(plug)], ("DemoVLForConditionalGeneration",))
    assert ctx.verdicts["DemoVLForConditionalGeneration"].status.value == "supported"
    assert not [f for f in ctx.findings if f.rule in ("EGL001", "EGL002")]
    # --apply never writes into a plugin (the diff is for its own root).
    q = _cli("check", str(BASE), "--plugin", str(plug), "--fix", "--apply", "--no-cache", cwd=tmp_path)
    assert q.returncode == 2 and "git apply -p2" in q.stderr


def _fake_install(site: Path, editable: bool) -> None:
    """What pip leaves in site-packages for the demo plugin (dist-info files; package or direct_url)."""
    dist = site / "eagle3_demo_plugin-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: eagle3-demo-plugin\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text("[vllm.general_plugins]\nregister_demo_models = eagle3_demo_plugin:register\n")
    record = ["eagle3_demo_plugin-0.1.0.dist-info/METADATA,,", "eagle3_demo_plugin-0.1.0.dist-info/RECORD,,"]
    if editable:
        (dist / "direct_url.json").write_text(json.dumps({"url": DEMO.resolve().as_uri(), "dir_info": {"editable": True}}))
        (site / "__editable__.eagle3_demo_plugin-0.1.0.pth").write_text(str(DEMO / "src") + "\n")
    else:
        shutil.copytree(DEMO / "src" / "eagle3_demo_plugin", site / "eagle3_demo_plugin")
        record += [f"eagle3_demo_plugin/{f.name},," for f in (site / "eagle3_demo_plugin").glob("*.py")]
    (dist / "RECORD").write_text("\n".join(record) + "\n")


@pytest.mark.parametrize("editable", [False, True], ids=["wheel-install", "editable"])
def test_installed_distribution_is_found_without_importing_it(tmp_path: Path, editable: bool) -> None:
    site = tmp_path / "site"
    _fake_install(site, editable)
    trip = tmp_path / "imported.txt"
    p = _cli("check", str(BASE), "--plugin", "eagle3-demo-plugin", "--no-cache", "--format", "json", cwd=tmp_path,
             env={"PYTHONPATH": str(site), "EAGLE3_DEMO_PLUGIN_TRIPWIRE": str(trip)})
    assert not trip.exists(), "the plugin package was imported"
    assert p.returncode == 0, p.stderr  # EGL002 is a warning when not targeted
    rep: dict[str, Any] = json.loads(p.stdout)
    (pl,) = rep["plugins"]
    assert pl["kind"] == "distribution" and pl["name"] == "eagle3-demo-plugin"
    assert pl["entry_points"] == [{"name": "register_demo_models", "value": "eagle3_demo_plugin:register",
                                   "source": "entry_points.txt"}]
    status = {a["name"]: a["status"] for a in rep["architectures"]}
    assert status["DemoForCausalLM"] == "supported" and status["DemoVLForConditionalGeneration"] == "wrapper-gap"
    rel = "src/eagle3_demo_plugin/bad.py" if editable else "eagle3_demo_plugin/bad.py"
    assert {(f["rule"], f["path"]) for f in rep["findings"]} == {("EGL002", f"<plugin>/{rel}")}


def test_unknown_plugin_is_a_usage_error(tmp_path: Path) -> None:
    p = _cli("check", str(BASE), "--plugin", "no-such-plugin-dist-xyz", "--no-cache", cwd=tmp_path)
    assert p.returncode == 2 and "no such folder, and no installed distribution" in p.stderr
    assert "Traceback" not in p.stderr


def test_package_without_entry_point_is_scanned(tmp_path: Path) -> None:
    plug = tmp_path / "bare"
    shutil.copytree(DEMO / "src", plug)  # no pyproject: the register calls are found by a scan
    ctx = _check(BASE, [str(plug)])
    p = ctx.source.plugins[0]  # type: ignore[attr-defined]
    assert not p.entry_points and any("no vllm.general_plugins entry point" in n for n in p.notes)
    assert {r.arch for r in p.registrations} == {"DemoForCausalLM", "DemoVLForConditionalGeneration"}
    assert ctx.verdicts["DemoVLForConditionalGeneration"].status.value == "wrapper-gap"


@pytest.mark.real
@pytest.mark.parametrize("version", ["0.16.0", "0.33.0"])
def test_real_release_with_the_demo_plugin(real_trees: Any, version: str) -> None:
    ctx = _check(real_trees.get(version), [str(DEMO)], ("DemoVLForConditionalGeneration",))
    assert ctx.verdicts["DemoForCausalLM"].status.value == "supported"
    assert ctx.verdicts["DemoVLForConditionalGeneration"].status.value == "wrapper-gap"
    assert any(f.rule == "EGL002" and f.location.path == "<plugin>/src/eagle3_demo_plugin/bad.py" for f in ctx.findings)
    # The built-in registry is still there, untouched by the overlay.
    assert ctx.verdicts["LlamaForCausalLM"].status.value == "supported"
