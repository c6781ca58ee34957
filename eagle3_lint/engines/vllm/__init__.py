"""vLLM as an EAGLE-3 target engine: every vLLM-specific module name, path and convention.

``ENGINE`` is what the core sees (``engine.Engine``). The modules beside this one read vLLM's tree:
the registry dicts (``registry.py``), the ``SupportsEagle3`` contract (``contract.py``), the runner
call sites and config-time gates (``runner.py``), which runner a plain set-up uses
(``runnerchoice.py``), the pipeline-parallel layer split (``pp.py``), the HF config classes
(``hfconfig.py``) and out-of-tree model plugins (``plugins.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle3_lint.engine import Capability, Derived, Engine, ErrorRecord, safely
from eagle3_lint.engine_hooks import ModelHooks

if TYPE_CHECKING:
    import os

    from eagle3_lint.contract import Contract
    from eagle3_lint.drafter import DraftAnalysis
    from eagle3_lint.model import Finding
    from eagle3_lint.registry import Registry
    from eagle3_lint.runner import Gate, RunnerKind, RunnerPath
    from eagle3_lint.serving import ServingVerdict
    from eagle3_lint.source import SourceTree
    from eagle3_lint.stages import Model
    from eagle3_lint.store import FactStore

PACKAGE = "vllm"
# Plugin files (``--plugin``, plugins.py) are model files too, under their ``<plugin>/`` display prefix.
MODEL_DIRS = ("vllm/model_executor/models/", "vllm/models/", "<plugin")


class VllmEngine(Engine, ModelHooks):
    name = "vllm"
    display = "vLLM"
    order = 0  # the default engine: the first the tool was built for
    spec_methods = ("eagle3", "dflash", "extract_hidden_states", "eagle")  # engines/vllm/methods.py
    package = PACKAGE
    model_dirs = MODEL_DIRS
    registry_module = "vllm.model_executor.models.registry"
    # ``self.language_model = init_vllm_registered_model(vllm_config, hf_config=..., architectures=[...])``
    registered_model_helpers = ("init_vllm_registered_model",)
    pp_protocol = "SupportsPP"  # what the registry's is_pp_supported_model asks before allowing PP
    runner_switch = "VLLM_USE_V2_MODEL_RUNNER=0"  # runnerchoice.ENV_VAR, off
    pp_partition_env = "VLLM_PP_LAYER_PARTITION"  # pp.PARTITION_ENV
    check_words = "that release's own `supports_eagle3()`"
    gate_note = ("Releases up to about 0.20 also refuse EAGLE-3 at config time unless the target's HF `model_type` is "
                 "on an allow-list (the gate column); the registry does not know model types, so a `supported` class "
                 "can still be refused there: check one model with `eagle3-lint check --target-config`.")
    report_version_field = "vllm_version"
    capabilities = frozenset(Capability)  # every rule was built on vLLM

    def tree_root(self, path: Path) -> Path | None:
        if (path / PACKAGE / "model_executor").is_dir() or (path / PACKAGE / "__init__.py").is_file():
            return path
        if path.name == PACKAGE and ((path / "model_executor").is_dir() or (path / "__init__.py").is_file()):
            return path.parent
        return None

    def fetch_release(self, version: str, cache_dir: str | os.PathLike[str] | None,
                      progress: Callable[[str], None] | None = None) -> Path:
        from eagle3_lint import releases

        return releases.fetch_release(version, cache_dir, progress, package=PACKAGE)

    def derive(self, source: SourceTree, store: FactStore, preload: Callable[[], None]) -> Derived:
        from eagle3_lint.contract import CheckKind, Contract
        from eagle3_lint.engines.vllm import contract as contract_mod
        from eagle3_lint.engines.vllm import registry as registry_mod
        from eagle3_lint.engines.vllm import runner as runner_mod
        from eagle3_lint.registry import Registry
        from eagle3_lint.runner import RunnerPath

        def no_contract() -> Contract:
            return Contract(found=False, check=CheckKind.UNKNOWN, path=iface[0] if iface else "",
                            notes=("internal error while reading the contract",))

        contract_errors: list[ErrorRecord] = []  # reported after the registry's, as they always were
        # Whole-tree derivations are cached under the content hashes of the files they read (store.memo).
        # The contract (one small file) comes first, so that a cold run can read the runner path (2,000+
        # files, ~0.3 s) in a second process while this one parses the model files.
        iface = [p for p in (source.module_path(contract_mod.INTERFACES_MODULE),) if p]
        contract: Contract = safely(
            contract_errors, "contract", lambda: store.memo("contract", (), iface, contract_mod.derive), no_contract)
        rargs = (contract.check_function, contract.required if contract.found else (), contract.pp_flag)
        runner_job = store.memo_in_background("runner", rargs, runner_mod.input_files(source),
                                              lambda src: runner_mod.derive(src, *rargs))
        preload()
        errors: list[ErrorRecord] = []
        reg_mf = store.load(registry_mod.REGISTRY_MODULE)
        try:
            reg_text = source.read_bytes(reg_mf.path).decode("utf-8", "replace") if reg_mf else ""
        except OSError:
            reg_text = ""
        registry: Registry = safely(
            errors, "registry", lambda: registry_mod.derive(reg_mf, reg_text),
            lambda: Registry(False, reg_mf.path if reg_mf else "", {}, (), registry_mod.DEFAULT_PREFIX,
                             "internal error while reading it"))
        extend = getattr(source, "extend_registry", None)  # --plugin: the plugins' register_model calls
        if extend is not None:
            registry = extend(registry)
        errors.extend(contract_errors)
        runner: RunnerPath = safely(errors, "runner", runner_job,
                                    lambda: RunnerPath(notes=("internal error while reading the runner",)))
        if not contract.found:
            calls = runner.model_calls
            contract = safely(
                errors, "contract", lambda: store.memo("contract-duck", (calls,), iface,
                                               lambda src: contract_mod.derive(src, calls)), no_contract)
        return Derived(registry, contract, runner, tuple(errors))

    def for_method(self, source: SourceTree, store: FactStore, derived: Derived, method: str) -> Derived:
        """Under a method whose runners ask the top-level model nothing (``methods.nothing_asked``: EAGLE-1's
        ``eagle``), a contract of ``CheckKind.NONE``: every class passes, and the rules about the interface and the
        aux-state path have nothing to judge. ``derived``'s contract for the methods that ride ``SupportsEagle3``,
        with the method named (``Contract.method``)."""
        import dataclasses

        from eagle3_lint.contract import CheckKind
        from eagle3_lint.engines.treereader import TreeReader
        from eagle3_lint.engines.vllm import methods
        from eagle3_lint.engines.vllm import runner as runner_mod

        sites = derived.runner.sites
        if method == methods.DEFAULT or not sites:
            return derived
        why = store.memo("vllm-nothing-asked", (method, sites), runner_mod.input_files(source),
                         lambda tree: methods.nothing_asked(TreeReader(tree), sites, method))
        if why is None:
            # SupportsEagle3 is this method's check too: the same contract, named by the method in titles.
            return dataclasses.replace(derived, contract=dataclasses.replace(derived.contract, method=method))
        contract = dataclasses.replace(derived.contract, check=CheckKind.NONE, method=method,
                                       notes=(why, *derived.contract.notes))
        return Derived(derived.registry, contract, derived.runner, derived.errors)

    def with_plugins(self, source: SourceTree, specs: list[str]) -> SourceTree:
        from eagle3_lint.engines.vllm import plugins

        return plugins.overlay(source, specs)

    def unnamed_sub_config(self, source: SourceTree, sub: dict[str, Any]) -> tuple[str, ...]:
        # VllmConfig.with_hf_config names it after Transformers' causal-LM table, in the trees that do so
        from eagle3_lint.engines.vllm import hfconfig

        mt = sub.get("model_type")
        if not isinstance(mt, str) or hfconfig.causal_lm_fallback(source) is None:
            return ()
        name = hfconfig.causal_lm_names().get(mt)
        return (name,) if name else ()

    def config_refusal(self, sm: Model, arch: str) -> tuple[Gate, str] | None:
        from eagle3_lint.engines.vllm import gates

        return gates.config_refusal(sm, arch)

    def target_model_type(self, sm: Model, config_attr: str) -> Any:
        from eagle3_lint.engines.vllm import gates

        return gates.target_model_type(sm, config_attr)

    def pp_refused(self, sm: Model) -> str | None:
        from eagle3_lint.engines.vllm import gates

        return gates.eagle3_pp_refused(sm)

    def draft_analysis(self, sm: Model, arch: str | None = None,
                       kind: RunnerKind | None = None) -> DraftAnalysis | None:
        from eagle3_lint.engines.vllm import drafter

        if arch is None and kind is None:
            return sm.memo.get("draft-analysis", lambda: drafter.analyze(sm))
        return drafter.analyze(sm, arch, kind)

    def serving_verdict(self, sm: Model, arch: str, kind: RunnerKind | None = None) -> ServingVerdict | None:
        from eagle3_lint.engines.vllm import serving

        return serving.verdict(sm, arch, kind)

    def with_next_step(self, sm: Model, sv: ServingVerdict, findings: Sequence[Finding]) -> ServingVerdict:
        from eagle3_lint.engines.vllm import serving

        return serving.with_next_step(sm, sv, findings)


ENGINE = VllmEngine()
