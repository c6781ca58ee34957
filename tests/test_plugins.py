"""``--plugin``: out-of-tree model packages analyzed against the vLLM tree, never imported.

Sample plugins live in ``sample_trees/_plugins/``: ``eagle3-demo-plugin`` (pyproject entry point,
src layout, both ``register_model`` forms, a good model and a wrapper gap), ``legacy-setup-plugin``
(``setup.py`` entry point, flat layout, a helper that registers, and a replacement of a built-in
architecture), and one per registration shape real plugins use: ``helper-chain-plugin`` (helpers in
other modules, followed transitively through a call cycle), ``table-loop-plugin`` (loops over
module-level tuples/lists/dicts, ``setup.cfg`` entry point), ``guarded-plugin`` (platform, version,
env-var, optional-import guards), ``override-plugin`` (re-registers built-ins, the EAGLE-3 drafter
among them) and ``unresolved-plugin`` (registrations only known at runtime, and a helper file that
does not parse). Findings on plugin files must equal their ``# expect:`` markers, reported as
``<plugin>/REL`` paths. The ``real`` test reads vllm-ascend 0.11.0 from PyPI.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from eagle3_lint import releases
from eagle3_lint.analysis import Analysis, Options, analyze
from eagle3_lint.engines import dir_source
from eagle3_lint.engines.vllm import plugins
from tests.cihelp import run_cli, validate_report
from tests.conftest import SAMPLES, real_cache_dir

DEMO = SAMPLES / "_plugins" / "eagle3-demo-plugin"
LEGACY = SAMPLES / "_plugins" / "legacy-setup-plugin"
HELPERS = SAMPLES / "_plugins" / "helper-chain-plugin"
TABLES = SAMPLES / "_plugins" / "table-loop-plugin"
GUARDED = SAMPLES / "_plugins" / "guarded-plugin"
OVERRIDE = SAMPLES / "_plugins" / "override-plugin"
UNRESOLVED = SAMPLES / "_plugins" / "unresolved-plugin"
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


def _check(base: Path, specs: list[str], archs: tuple[str, ...] = ()) -> Analysis:
    src = plugins.overlay(dir_source(base), specs)
    ctx = analyze(src, Options(targets=archs))
    assert not ctx.errors, [e.message + e.traceback for e in ctx.errors]
    return ctx


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None, process: bool = False
         ) -> subprocess.CompletedProcess[str]:
    """The CLI in this process, or with ``process`` in ``python -m eagle3_lint`` (tests/cihelp.py)."""
    e = dict(os.environ)
    e.update(env or {})
    return run_cli(args, cwd=cwd, env=e, process=process)


def test_demo_plugin_verdicts_registrations_and_markers() -> None:
    ctx = _check(BASE, [str(DEMO)])
    p = ctx.source.plugins[0]  # type: ignore[attr-defined]
    assert p.name == "eagle3-demo-plugin" and p.prefix == "<plugin>"
    assert [(e.name, e.value, e.source) for e in p.entry_points] == [
        ("register_demo_models", "eagle3_demo_plugin:register", "pyproject.toml")]
    regs = {r.arch: (r.module, r.class_name, r.form) for r in p.registrations}
    assert regs == {
        "DemoForCausalLM": ("eagle3_demo_plugin.good", "DemoForCausalLM", "string"),
        "DemoVLForConditionalGeneration": ("eagle3_demo_plugin.bad", "DemoVLForConditionalGeneration", "class"),
    }
    assert ctx.verdicts["DemoForCausalLM"].status.value == "supported"
    v = ctx.verdicts["DemoVLForConditionalGeneration"]
    assert v.status.value == "wrapper-gap" and v.location is not None
    assert v.location.path == "<plugin>/src/eagle3_demo_plugin/bad.py"
    # The registry step of the evidence points at the plugin's register call, not at registry.py.
    reg = next(s for s in v.evidence if s.kind == "registry")
    assert reg.location is not None and reg.location.path == "<plugin>/src/eagle3_demo_plugin/__init__.py"
    got = {(f.location.path, f.location.line, f.rule)
           for f in ctx.findings if plugins.is_plugin_display_path(f.location.path)}
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
    (dist / "entry_points.txt").write_text(
        "[vllm.general_plugins]\nregister_demo_models = eagle3_demo_plugin:register\n")
    record = ["eagle3_demo_plugin-0.1.0.dist-info/METADATA,,", "eagle3_demo_plugin-0.1.0.dist-info/RECORD,,"]
    if editable:
        direct_url = {"url": DEMO.resolve().as_uri(), "dir_info": {"editable": True}}
        (dist / "direct_url.json").write_text(json.dumps(direct_url))
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
    # A real interpreter: the distribution is found on the sys.path that PYTHONPATH gives it at start-up.
    p = _cli("check", str(BASE), "--plugin", "eagle3-demo-plugin", "--no-cache",
             "--output-format", "json", cwd=tmp_path,
             env={"PYTHONPATH": str(site), "EAGLE3_DEMO_PLUGIN_TRIPWIRE": str(trip)}, process=True)
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


# -- registration shapes of real plugins ------------------------------------------------------------
def _regs(ctx: Analysis, i: int = 0) -> dict[str, tuple[str, str, str, str, int, bool]]:
    p = ctx.source.plugins[i]  # type: ignore[attr-defined]
    return {r.arch: (r.module, r.class_name, r.form.value, r.path, r.line, r.conditional) for r in p.registrations}


def _registry_step(ctx: Analysis, arch: str) -> str:
    return next(s.text for s in ctx.verdicts[arch].evidence if s.kind == "registry")


def test_helpers_in_other_modules_are_followed_through_a_cycle() -> None:
    ctx = _check(BASE, [str(HELPERS)])
    p = ctx.source.plugins[0]  # type: ignore[attr-defined]
    text, vision = "<plugin>/src/helper_chain/text.py", "<plugin>/src/helper_chain/vision.py"
    # __init__.register_model -> models.register_model (same name, imported inside the function)
    # -> text.register_text(ModelRegistry) -> text._one(registry, arch, path): the literals come from
    # the caller's arguments; vision.register_vision can call models.register_model back (a cycle).
    assert _regs(ctx) == {
        "HelperForCausalLM": ("helper_chain.text", "HelperForCausalLM", "string", text, 15, False),
        "HelperMoeForCausalLM": ("helper_chain.text", "HelperMoeForCausalLM", "string", text, 15, False),
        "HelperVLForConditionalGeneration": ("helper_chain.vision", "HelperVLForConditionalGeneration", "class",
                                             vision, 24, False),
    }
    moe = next(r for r in p.registrations if r.arch == "HelperMoeForCausalLM")
    assert moe.via == ("helper_chain.register_model (entry point helper_chain)",
                       "helper_chain.models.register_model (<plugin>/src/helper_chain/__init__.py:8)",
                       "helper_chain.text.register_text (<plugin>/src/helper_chain/models/__init__.py:10)",
                       "helper_chain.text._one (<plugin>/src/helper_chain/text.py:20)")
    assert not p.unresolved and not [n for n in p.notes if "deeper" in n or "not resolved" in n]
    # _never_called() registers HelperUnusedForCausalLM, but nothing reachable from the entry point calls
    # it: not counted, but named.
    assert "HelperUnusedForCausalLM" not in ctx.verdicts
    assert p.unreached == [("<plugin>/src/helper_chain/__init__.py", 15)]
    assert "<plugin>/src/helper_chain/__init__.py:15: register_model call not reached from any " \
           "vllm.general_plugins entry point: not counted" in p.notes
    assert ctx.verdicts["HelperForCausalLM"].status.value == "supported"
    assert ctx.verdicts["HelperVLForConditionalGeneration"].status.value == "wrapper-gap"
    got = {(f.location.path, f.location.line, f.rule) for f in ctx.findings}
    assert got == _markers(HELPERS, "<plugin>")


def test_loops_over_module_level_tables() -> None:
    ctx = _check(BASE, [str(TABLES)])
    p = ctx.source.plugins[0]  # type: ignore[attr-defined]
    assert [(e.value, e.source) for e in p.entry_points] == [("table_loop:register", "setup.cfg")]
    init = "<plugin>/table_loop/__init__.py"
    assert _regs(ctx) == {
        # for arch, path in TEXT_MODELS + [...] (tables.py: an f-string and a "+" in the paths)
        "TableForCausalLM": ("table_loop.text", "TableForCausalLM", "string", init, 16, False),
        "TableMoeForCausalLM": ("table_loop.text", "TableMoeForCausalLM", "string", init, 16, False),
        "TableAliasForCausalLM": ("table_loop.text", "TableForCausalLM", "string", init, 16, False),
        # for arch, path in VL_MODELS.items()
        "TableVLForConditionalGeneration": ("table_loop.vl", "TableVLForConditionalGeneration", "string", init, 18,
                                            False),
        # for arch, (module, cls) in DRAFTERS.items(), DRAFTERS filled by a subscript assignment
        "TableEagle3ForCausalLM": ("table_loop.text", "TableEagle3ForCausalLM", "string", init, 20, False),
        # register_model(*entry) over tuples holding a class object
        "TableClassForCausalLM": ("table_loop.text", "TableForCausalLM", "class", init, 22, False),
        # a list comprehension
        "TableLateForCausalLM": ("table_loop.text", "TableMoeForCausalLM", "string", init, 23, False),
        # for arch in GENERATED: register_model(arch, GENERATED[arch]), GENERATED filled by a module-level loop
        "TableSmallForCausalLM": ("table_loop.text", "TableForCausalLM", "string", init, 25, False),
        "TableLargeForCausalLM": ("table_loop.text", "TableForCausalLM", "string", init, 25, False),
    }
    assert not p.unresolved
    status = {a: ctx.verdicts[a].status.value for a in _regs(ctx)}
    assert status == {"TableForCausalLM": "supported", "TableMoeForCausalLM": "supported",
                      "TableAliasForCausalLM": "supported", "TableVLForConditionalGeneration": "wrapper-gap",
                      "TableEagle3ForCausalLM": "unsupported", "TableClassForCausalLM": "supported",
                      "TableLateForCausalLM": "supported", "TableSmallForCausalLM": "supported",
                      "TableLargeForCausalLM": "supported"}
    got = {(f.location.path, f.location.line, f.rule) for f in ctx.findings}
    assert got == _markers(TABLES, "<plugin>")


def test_guarded_registrations_are_found_and_marked_conditional() -> None:
    ctx = _check(BASE, [str(GUARDED)])
    p = ctx.source.plugins[0]  # type: ignore[attr-defined]
    f = "<plugin>/guarded_models/plugin.py"
    guards = {(r.arch, r.class_name): [(g.kind.value, g.text, g.path, g.line) for g in r.guards]
              for r in p.registrations}
    assert guards == {
        ("GuardedForCausalLM", "GuardedForCausalLM"): [],
        ("GuardedCudaForCausalLM", "GuardedCudaForCausalLM"): [("if", "if current_platform.is_cuda()", f, 23)],
        ("GuardedRocmForCausalLM", "GuardedRocmForCausalLM"): [
            ("else", "else of if current_platform.is_cuda()", f, 23), ("if", "if current_platform.is_rocm()", f, 25)],
        ("GuardedVersionedForCausalLM", "GuardedNewForCausalLM"): [("if", "if vllm.__version__ >= '0.15'", f, 27)],
        ("GuardedVersionedForCausalLM", "GuardedOldForCausalLM"): [
            ("else", "else of if vllm.__version__ >= '0.15'", f, 27)],
        ("GuardedFlashForCausalLM", "GuardedFlashForCausalLM"): [("try", "try (except ImportError)", f, 31)],
        ("GuardedSuppressedForCausalLM", "GuardedForCausalLM"): [
            ("suppress", "with contextlib.suppress(ImportError)", f, 37)],
        # _register_extra() returns early unless GUARDED_EXTRA=1
        ("GuardedExtraForCausalLM", "GuardedExtraForCausalLM"): [
            ("early-exit", "unless if os.environ.get('GUARDED_EXTRA') != '1' returns", f, 14)],
        # current_platform.is_tpu() and ModelRegistry.register_model(...)
        ("GuardedTpuForCausalLM", "GuardedTpuForCausalLM"): [("if", "and: after current_platform.is_tpu()", f, 42)],
    }
    assert [r.line for r in p.registrations] == [22, 24, 26, 28, 30, 34, 40, 16, 42]
    # Two classes for one architecture (if/else on the version): both listed, the last one judged, a note says so.
    assert ctx.verdicts["GuardedVersionedForCausalLM"].class_name == "GuardedOldForCausalLM"
    assert any(n.startswith("GuardedVersionedForCausalLM is registered to 2 classes") for n in p.notes)
    assert _registry_step(ctx, "GuardedCudaForCausalLM") == (
        "GuardedCudaForCausalLM -> guarded_models.models.GuardedCudaForCausalLM (registered by plugin "
        f"guarded-plugin; conditional: if current_platform.is_cuda() ({f}:23))")
    assert _registry_step(ctx, "GuardedForCausalLM") == (
        "GuardedForCausalLM -> guarded_models.models.GuardedForCausalLM (registered by plugin guarded-plugin)")
    assert all(v.status.value == "supported" for a, v in ctx.verdicts.items() if a.startswith("Guarded"))
    assert not [x for x in ctx.findings if plugins.is_plugin_display_path(x.location.path)]


def test_reregistered_builtins_including_the_drafter_override_them() -> None:
    ctx = _check(BASE, [str(OVERRIDE)])
    p = ctx.source.plugins[0]  # type: ignore[attr-defined]
    init = "<plugin>/override_models/__init__.py"
    assert _regs(ctx) == {
        "ToyForCausalLM": ("override_models.toy", "FastToyForCausalLM", "string", init, 10, False),
        "Eagle3LlamaForCausalLM": ("override_models.drafter", "PatchedEagle3LlamaForCausalLM", "class", init, 12,
                                   False),
        "LlamaForCausalLMEagle3": ("override_models.drafter", "PatchedEagle3LlamaForCausalLM", "class", init, 12,
                                   False),
        "OverrideNewForCausalLM": ("override_models.toy", "FastToyForCausalLM", "string", init, 13, False),
    }
    assert p.overrides == {
        "ToyForCausalLM": "built-in vllm.model_executor.models.toy.ToyForCausalLM",
        "Eagle3LlamaForCausalLM": "built-in vllm.model_executor.models.llama_eagle3.Eagle3LlamaForCausalLM",
        "LlamaForCausalLMEagle3": "built-in vllm.model_executor.models.llama_eagle3.Eagle3LlamaForCausalLM",
    }
    # As at runtime, the plugin's class is the one judged: the replacement lost SupportsEagle3.
    v = ctx.verdicts["ToyForCausalLM"]
    assert v.class_name == "FastToyForCausalLM" and v.status.value == "partial"
    assert ctx.verdicts["Eagle3LlamaForCausalLM"].class_name == "PatchedEagle3LlamaForCausalLM"
    assert _registry_step(ctx, "Eagle3LlamaForCausalLM").endswith(
        "(registered by plugin override-plugin; overrides built-in "
        "vllm.model_executor.models.llama_eagle3.Eagle3LlamaForCausalLM)")
    got = {(f.location.path, f.location.line, f.rule) for f in ctx.findings}
    assert got == _markers(OVERRIDE, "<plugin>")
    # A second plugin replacing the first one's architecture says whose it replaces.
    ctx2 = _check(BASE, [str(LEGACY), str(OVERRIDE)])
    first, second = ctx2.source.plugins  # type: ignore[attr-defined]
    assert first.overrides == {"ToyForCausalLM": "built-in vllm.model_executor.models.toy.ToyForCausalLM"}
    assert second.overrides["ToyForCausalLM"] == "plugin legacy-setup-plugin's legacy_toy.model.PatchedToyForCausalLM"
    assert ctx2.verdicts["ToyForCausalLM"].class_name == "FastToyForCausalLM"


def test_unresolved_registrations_are_reported_with_file_and_line() -> None:
    ctx = _check(BASE, [str(UNRESOLVED)])
    p = ctx.source.plugins[0]  # type: ignore[attr-defined]
    init = "<plugin>/unresolved_models/__init__.py"
    assert _regs(ctx) == {
        "NamedPathForCausalLM": ("unresolved_models.models", "ResolvedForCausalLM", "string", init, 28, False),
        "ResolvedForCausalLM": ("unresolved_models.models", "ResolvedForCausalLM", "string", init, 31, False),
    }
    assert [(u.path, u.line, u.reason.split(": ", 1)[1].split(" (")[0]) for u in p.unresolved] == [
        (init, 23, "an architecture name computed at runtime"),  # for arch in _archs_from_file()
        (init, 25, "an architecture name computed at runtime"),  # name = os.environ.get(...)
        (init, 27, "a path built at runtime"),  # package + ".models:..."
        (init, 29, "a class object the tool cannot follow"),  # _make_class()
        (init, 30, "not a 'module:Class' path"),
    ]
    for u in p.unresolved:
        assert any(n.startswith(f"{u.path}:{u.line}: not resolved: ") for n in p.notes)
    # broken.py does not parse: a note, an EGL000 finding, and the rest is still analysed.
    assert "<plugin>/unresolved_models/broken.py cannot be parsed: registrations in it are not read" in p.notes
    got = {(f.location.path, f.location.line, f.rule) for f in ctx.findings}
    assert got == _markers(UNRESOLVED, "<plugin>") == {("<plugin>/unresolved_models/broken.py", 6, "EGL000")}
    assert ctx.verdicts["ResolvedForCausalLM"].status.value == "supported"


def test_json_and_text_show_conditional_overrides_and_unresolved(tmp_path: Path) -> None:
    p = _cli("check", str(BASE), "--plugin", str(GUARDED), "--plugin", str(UNRESOLVED), "--plugin", str(OVERRIDE),
             "--no-cache", "--output-format", "json", cwd=tmp_path)
    assert p.returncode == 1, p.stderr  # EGL000 is an error
    rep: dict[str, Any] = json.loads(p.stdout)
    validate_report(rep)  # the new fields are in the shipped schema
    guarded, unresolved, override = rep["plugins"]
    cuda = next(r for r in guarded["registrations"] if r["architecture"] == "GuardedCudaForCausalLM")
    assert cuda["conditional"] is True and cuda["overrides"] is None
    assert cuda["conditions"] == [{"kind": "if", "text": "if current_platform.is_cuda()",
                                   "path": "<plugin:guarded-plugin>/guarded_models/plugin.py", "line": 23}]
    drafter = next(r for r in override["registrations"] if r["architecture"] == "Eagle3LlamaForCausalLM")
    assert drafter["conditional"] is False and drafter["form"] == "class"
    assert drafter["overrides"] == "built-in vllm.model_executor.models.llama_eagle3.Eagle3LlamaForCausalLM"
    init = "<plugin:unresolved-plugin>/unresolved_models/__init__.py"
    assert [(u["path"], u["line"]) for u in unresolved["unresolved"]] == [(init, n) for n in (23, 25, 27, 29, 30)]
    assert f"{init}:29: not resolved: register_model('FactoryForCausalLM', _make_class()): a class object the tool " \
           "cannot follow (the result of _make_class())" in unresolved["notes"]
    t = _cli("check", str(BASE), "--plugin", str(GUARDED), "--plugin", str(OVERRIDE), "--no-cache", cwd=tmp_path,
             env={"COLUMNS": "250"})
    assert "conditional: if current_platform.is_cuda()" in t.stdout
    # Of the two classes registered for GuardedVersionedForCausalLM, the earlier row is not the one judged.
    rows = {ln.split("│")[2].strip(): ln.split("│")[4].strip() for ln in t.stdout.splitlines()
            if ln.startswith("│") and "GuardedVersionedForCausalLM" in ln and "guarded_models.models:" in ln}
    assert rows == {"guarded_models.models:GuardedNewForCausalLM": "replaced",
                    "guarded_models.models:GuardedOldForCausalLM": "supported"}
    assert "overrides built-in vllm.model_executor.models.llama_eagle3.Eagle3LlamaForCausalLM" in t.stdout


def test_call_depth_is_bounded_and_recursion_is_safe(tmp_path: Path) -> None:
    plug = tmp_path / "deep"
    (plug / "deep_pkg").mkdir(parents=True)
    (plug / "setup.cfg").write_text("[options.entry_points]\nvllm.general_plugins =\n    deep = deep_pkg:f0\n")
    chain = "".join(f"def f{i}():\n    ModelRegistry.register_model('Deep{i}ForCausalLM', 'deep_pkg:M')\n"
                    f"    f{i + 1}()\n    f0()\n\n" for i in range(12))
    (plug / "deep_pkg" / "__init__.py").write_text(f"from vllm import ModelRegistry\n\n{chain}def f12():\n    pass\n")
    ctx = _check(BASE, [str(plug)])
    p = ctx.source.plugins[0]  # type: ignore[attr-defined]
    # The entry function is depth 0; helpers are followed 8 calls deep, each recursion into f0 is cut.
    assert [r.arch for r in p.registrations] == [f"Deep{i}ForCausalLM" for i in range(9)]
    assert [n for n in p.notes if "deeper than" in n] == [
        "<plugin>/deep_pkg/__init__.py:45: f9() is deeper than 8 calls from the entry point: not followed"]


# -- a real plugin from PyPI ----------------------------------------------------------------------
def _real_plugin(dist: str, version: str, platform: str, python: str) -> Path:
    """The unpacked wheel (only .py files and dist-info) of ``dist==version``, fetched once into the user cache."""
    dest = real_cache_dir() / "plugins" / f"{dist}-{version}"
    if (dest / releases.COMPLETE_MARKER).is_file():
        return dest
    if os.environ.get("EAGLE3_LINT_OFFLINE"):
        pytest.skip(f"{dist}=={version} not cached and EAGLE3_LINT_OFFLINE is set")
    dest.parent.mkdir(parents=True, exist_ok=True)
    # As releases.fetch_release does: one fetch at a time (xdist workers share the cache), the tree renamed in whole.
    with releases.cache_lock(dest, f"{dist}=={version}"):
        if (dest / releases.COMPLETE_MARKER).is_file():
            return dest
        with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".dl-") as td:
            # --only-binary: pip never runs the plugin's build backend; --platform: the Ascend wheel is not for
            # this host.
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                            "--disable-pip-version-check", "--platform", platform, "--python-version", python,
                            f"{dist}=={version}", "-d", td], check=True, capture_output=True, timeout=1800)
            (wheel,) = Path(td).glob("*.whl")
            staging = Path(td) / "tree"
            releases._extract_py(wheel, staging)
            (staging / releases.COMPLETE_MARKER).write_text(version)
            releases.publish(staging, dest, Path(td))
    return dest


@pytest.mark.real
def test_real_plugin_vllm_ascend_0_11_0_registers_through_a_helper(real_trees: Any, tmp_path: Path) -> None:
    """vllm-ascend 0.11.0 (PyPI wheel) against vLLM 0.11.0, the release it was built for.

    Its entry point ``ascend_enhanced_model = vllm_ascend:register_model`` (dist-info
    entry_points.txt) names vllm_ascend/__init__.py:25, which does ``from .models import
    register_model; register_model()`` (lines 27-28); the register calls are in
    vllm_ascend/models/__init__.py:6-48, two of them under ``if envs_ascend.USE_OPTIMIZED_MODEL:``
    (line 21) and one in its ``else:`` (line 30).
    """
    real_trees.get("0.11.0")
    plug = _real_plugin("vllm-ascend", "0.11.0", "manylinux_2_24_x86_64", "3.11")
    p = _cli("check", "vllm==0.11.0", "--cache-dir", str(real_cache_dir()), "--plugin", str(plug),
             "--output-format", "json",
             cwd=tmp_path)
    assert p.returncode in (0, 1), p.stderr
    rep: dict[str, Any] = json.loads(p.stdout)
    (pl,) = rep["plugins"]
    assert pl["name"] == "vllm-ascend" and "ascend_enhanced_model" in [e["name"] for e in pl["entry_points"]]
    m = "<plugin>/vllm_ascend/models/__init__.py"
    got = [(r["architecture"], f"{r['module']}:{r['class']}", r["path"], r["line"], r["conditional"], r["overrides"])
           for r in pl["registrations"]]
    b = "built-in vllm.model_executor.models."
    # Read from vllm_ascend/models/__init__.py of the wheel (line of each register_model call's first
    # argument); "overrides" from vLLM 0.11.0's registry.py (lines 73, 85, 266-272; PanguProMoE is not there).
    assert got == [
        ("Qwen2VLForConditionalGeneration", "vllm_ascend.models.qwen2_vl:AscendQwen2VLForConditionalGeneration",
         m, 7, False, b + "qwen2_vl.Qwen2VLForConditionalGeneration"),  # models/__init__.py:7-9
        ("Qwen3VLMoeForConditionalGeneration",
         "vllm_ascend.models.qwen2_5_vl_without_padding:AscendQwen3VLMoeForConditionalGeneration",
         m, 11, False, b + "qwen3_vl_moe.Qwen3VLMoeForConditionalGeneration"),  # :11-14
        ("Qwen3VLForConditionalGeneration",
         "vllm_ascend.models.qwen2_5_vl_without_padding:AscendQwen3VLForConditionalGeneration",
         m, 16, False, b + "qwen3_vl.Qwen3VLForConditionalGeneration"),  # :16-19
        ("Qwen2_5_VLForConditionalGeneration", "vllm_ascend.models.qwen2_5_vl:AscendQwen2_5_VLForConditionalGeneration",
         m, 22, True, b + "qwen2_5_vl.Qwen2_5_VLForConditionalGeneration"),  # :21-25, if USE_OPTIMIZED_MODEL
        ("Qwen2_5OmniModel",
         "vllm_ascend.models.qwen2_5_omni_thinker:AscendQwen2_5OmniThinkerForConditionalGeneration",
         m, 26, True, b + "qwen2_5_omni_thinker.Qwen2_5OmniThinkerForConditionalGeneration"),  # :26-29, same if
        ("Qwen2_5_VLForConditionalGeneration",
         "vllm_ascend.models.qwen2_5_vl_without_padding:AscendQwen2_5_VLForConditionalGeneration_Without_Padding",
         m, 31, True, b + "qwen2_5_vl.Qwen2_5_VLForConditionalGeneration"),  # :30-34, its else
        ("DeepseekV32ForCausalLM", "vllm_ascend.models.deepseek_v3_2:CustomDeepseekV3ForCausalLM",
         m, 36, False, b + "deepseek_v2.DeepseekV3ForCausalLM"),  # :36-38
        ("PanguProMoEForCausalLM", "vllm_ascend.torchair.models.torchair_pangu_moe:PanguProMoEForCausalLM",
         m, 42, False, None),  # :42-45 ("There is no PanguProMoEForCausalLM in vLLM", line 40)
        ("Qwen3NextForCausalLM", "vllm_ascend.models.qwen3_next:CustomQwen3NextForCausalLM",
         m, 46, False, b + "qwen3_next.Qwen3NextForCausalLM"),  # :46-48
    ]
    cond = {(r["line"], tuple((c["kind"], c["text"], c["line"]) for c in r["conditions"])) for r in pl["registrations"]
            if r["conditional"]}
    assert cond == {(22, (("if", "if envs_ascend.USE_OPTIMIZED_MODEL", 21),)),
                    (26, (("if", "if envs_ascend.USE_OPTIMIZED_MODEL", 21),)),
                    (31, (("else", "else of if envs_ascend.USE_OPTIMIZED_MODEL", 21),))}
    assert all(r["via"][:2] == ["vllm_ascend.register_model (entry point ascend_enhanced_model)",
                                "vllm_ascend.models.register_model (<plugin>/vllm_ascend/__init__.py:28)"]
               for r in pl["registrations"])
    assert pl["unresolved"] == []
    # vllm_ascend/torchair/utils.py:157 register_torchair_model() registers 7 more (calls at lines 160, 165,
    # 170, 175, 180, 184, 188), but only the torchair model runner's __init__ calls it
    # (torchair_model_runner.py:61), not an entry point: named, not counted.
    assert pl["unreached"] == [{"path": "<plugin>/vllm_ascend/torchair/utils.py", "line": n}
                               for n in (160, 165, 170, 175, 180, 184, 188)]
    # The verdicts judge the plugin's classes (the last registration of an architecture), found in the plugin.
    archs = {a["name"]: a for a in rep["architectures"]}
    last = {arch: cls for arch, cls, *_ in got}
    assert {a: f"{archs[a]['module']}:{archs[a]['class']}" for a in last} == last
    assert all(archs[a]["path"].startswith("<plugin>/vllm_ascend/") for a in last)
    reg = next(e["text"] for e in archs["Qwen2_5_VLForConditionalGeneration"]["evidence"] if e["kind"] == "registry")
    assert reg.endswith(f"(registered by plugin vllm-ascend; conditional: else of if envs_ascend.USE_OPTIMIZED_MODEL "
                        f"({m}:21); overrides built-in "
                        "vllm.model_executor.models.qwen2_5_vl.Qwen2_5_VLForConditionalGeneration)")


def test_overriding_drafter_is_the_one_whose_fc_is_checked(tmp_path: Path) -> None:
    """The override plugin's drafter takes 4 hidden states; vLLM 0.16's takes 3. With a drafter config
    listing four aux ids, the built-in drafter is an EGL007 error, the plugin's is not: its class is
    the one vLLM builds."""
    configs = SAMPLES / "draft-layer-ids-invalid" / "count_mismatch_v016" / "configs"
    args = ("check", str(BASE), "--target-config", str(configs / "target.json"), "--draft-config",
            str(configs / "draft.json"), "--no-cache", "--output-format", "json")
    alone = json.loads(_cli(*args, cwd=tmp_path).stdout)
    assert alone["draft"]["fc"]["input_size"] == 12288 and [f["rule"] for f in alone["findings"]] == ["EGL007"]
    p = _cli(*args, "--plugin", str(OVERRIDE), cwd=tmp_path)
    rep: dict[str, Any] = json.loads(p.stdout)
    assert rep["draft"]["fc"] == {"input_size": 16384, "drafter": "LlamaForCausalLMEagle3",
                                  "where": {"path": "<plugin>/override_models/drafter.py", "line": 14,
                                            "what": "config.hidden_size * 4"}, "note": None}
    assert "EGL007" not in [f["rule"] for f in rep["findings"]]
