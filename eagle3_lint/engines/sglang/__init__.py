"""SGLang as an EAGLE-3 target engine: release fetching and the contract derived from the tree.

Everything SGLang-specific (``sglang/srt/...`` paths, ``EntryClass``, ``set_eagle3_layers_to_capture``)
is named here and nowhere else; the class graph and the per-file facts it uses are the core's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from eagle3_lint.contract import ContractMember
from eagle3_lint.engine import Capability, CollectionIdiom, Derived, Engine, ErrorRecord, safely
from eagle3_lint.engine_hooks import ModelHooks

if TYPE_CHECKING:
    import os

    from eagle3_lint.drafter import DraftAnalysis
    from eagle3_lint.model import Finding
    from eagle3_lint.runner import RunnerKind
    from eagle3_lint.serving import ServingVerdict
    from eagle3_lint.source import SourceTree
    from eagle3_lint.stages import Model
    from eagle3_lint.store import FactStore

PACKAGE = "sglang"


class SglangEngine(Engine, ModelHooks):
    name = "sglang"
    display = "SGLang"
    order = 1
    spec_methods = ("EAGLE3", "DFLASH", "DSPARK")  # methods.CHECKED: each one's gates read by methods.py
    package = PACKAGE
    model_dirs = ("sglang/srt/models/",)
    registry_module = "sglang.srt.models.registry"
    check_words = "that release's own check (`set_eagle3_layers_to_capture` on the class, through its MRO)"
    pp_partition_env = "SGLANG_PP_LAYER_PARTITION"  # pp.PARTITION_ENV
    # Registry, the MRO check and delegation are the core's and agree with SGLang itself; so does collection
    # (``layers_to_capture`` lists and per-layer ``_is_layer_to_capture`` flags, below): EGL003-EGL005 run.
    # Drafter ids (the runner's eagle_config read, the setter's +1 and its heuristics, the decoder's collection,
    # PP) are read by drafter.py and pp.py. SGLang has no fallback getter (the setter picks the default ids,
    # engines/sglang/setter.py), no Protocol default bodies and no mixin (AUX_PLUMBING), and no config-time
    # model_type gate (CONFIG_GATES), so the rules on those do not run (docs/sglang-check.md).
    capabilities: frozenset[Capability] = frozenset({Capability.DRAFTER_IDS, Capability.AUX_COLLECTION})
    collection = CollectionIdiom(
        list_attrs=("layers_to_capture",),
        layer_flags=("_is_layer_to_capture",),
        capture_flag="capture_aux_hidden_states",
        # As LlamaForCausalLM.set_eagle3_layers_to_capture writes it (sglang/srt/models/llama.py:891 in 0.5.19):
        # the default layers, else the drafter's ids + 1 (SGLang captures the state entering a layer).
        setter_body=(
            "if {param} is None:",
            "    num_layers = len({path}.layers)",
            "    {path}.{list} = [2, num_layers // 2, num_layers - 3]",
            "else:",
            "    # we plus 1 here because in sglang, for the ith layer, it takes the output",
            "    # of the (i-1)th layer as aux hidden state",
            "    {path}.{list} = [val + 1 for val in {param}]",
            "self.{flag} = True",
        ),
        # As set_dflash_layers_to_capture writes it where the runner always passes ids (0.5.23 llama.py:952-953).
        setter_body_given=(
            "# we plus 1 here because in sglang, for the ith layer, it takes the output",
            "# of the (i-1)th layer as aux hidden state",
            "{path}.{list} = [val + 1 for val in {param}]",
            "self.{flag} = True",
        ),
    )

    def tree_root(self, path: Path) -> Path | None:
        """A folder holding ``sglang/srt/`` (site-packages, unpacked wheel), ``sglang/`` itself, or a checkout."""
        if (path / PACKAGE / "srt").is_dir():
            return path
        if path.name == PACKAGE and (path / "srt").is_dir():
            return path.parent
        if (path / "python" / PACKAGE / "srt").is_dir():  # a git checkout keeps the package under python/
            return path / "python"
        return None

    def fetch_release(self, version: str, cache_dir: str | os.PathLike[str] | None,
                      progress: Callable[[str], None] | None = None) -> Path:
        from eagle3_lint.engines.sglang import fetch

        return fetch.fetch_release(version, cache_dir, progress)

    def version(self, source: SourceTree) -> str:
        return source.package_version(PACKAGE, ("version.py", "_version.py"))

    def derive(self, source: SourceTree, store: FactStore, preload: Callable[[], None]) -> Derived:
        from eagle3_lint.contract import CheckKind, Contract
        from eagle3_lint.engines.sglang import registry as registry_mod
        from eagle3_lint.engines.sglang import runner as runner_mod
        from eagle3_lint.engines.sglang.runner_files import input_files
        from eagle3_lint.graph import ClassGraph
        from eagle3_lint.registry import Registry
        from eagle3_lint.runner import RunnerPath

        # The runner path reads every non-model file (~4,400 in 0.5.23, about 0.6 s): cached under their hashes,
        # and on a cold run read in a second process while this one parses the model files, as for vLLM.
        runner_job = store.memo_in_background("sglang-runner", (), input_files(source), runner_mod.derive)
        preload()  # every derivation below reads model files (EntryClass) or is cheap
        errors: list[ErrorRecord] = []
        # The registry is read before the analysis' own graph exists (that one resolves registered names
        # through it): a plain graph over the same facts is enough to follow EntryClass elements.
        graph = ClassGraph(loader=store.load, package=PACKAGE)
        registry: Registry = safely(
            errors, "registry", lambda: registry_mod.derive(source, graph, store.load_path, store.recorder),
            lambda: Registry(False, registry_mod.REGISTRY_PATH, {}, (registry_mod.ENTRY,),
                             registry_mod.MODELS_PACKAGE, "internal error while reading it"))
        runner: RunnerPath = safely(errors, "runner", runner_job,
                                    lambda: RunnerPath(notes=("internal error while reading the runner",)))
        site = runner.primary
        # SGLang has no interface class: the runner calls the method on the top-level model, so having it
        # (through the MRO) is the whole check.
        contract = Contract(
            found=False, check=CheckKind.DUCK, path=site.path if site else "", line=site.line if site else 0,
            members=(ContractMember(runner_mod.SETTER, "method", "", False),), setter=runner_mod.SETTER,
            notes=(f"no EAGLE-3 interface class: the runner calls {runner_mod.SETTER}() on the top-level model, "
                   "so the method being present through the MRO is the check",))
        return Derived(registry, contract, runner, tuple(errors))

    def for_method(self, source: SourceTree, store: FactStore, derived: Derived, method: str) -> Derived:
        """For DFLASH and DSPARK, the setters the runner calls for the method (``methods.method_interface``): the
        contract is having one of them, the runner sites are those calls, with the runner's own refusal."""
        import dataclasses

        from eagle3_lint.contract import CheckKind, Contract
        from eagle3_lint.engines.sglang import methods
        from eagle3_lint.engines.sglang.runner_files import input_files
        from eagle3_lint.runner import RunnerSite, SetterIds

        if method == methods.EAGLE3:
            return derived
        mi = store.memo("sglang-method-interface", (method,), input_files(source),
                        lambda tree: methods.method_interface(tree, method))
        if not mi.accepted:
            return derived  # the runner asks nothing the tool can read for it: EAGLE-3's, as before
        first = mi.calls[0].where
        ref = mi.refusal
        names = " or ".join(f"{n}()" for n in mi.accepted)
        contract = Contract(
            found=False, check=CheckKind.DUCK, path=first.path, line=first.line,
            members=tuple(ContractMember(n, "method", "", False) for n in mi.accepted), setter=mi.preferred,
            one_of=len(mi.accepted) > 1, method=method, ids_always_given=mi.ids_given is not None,
            notes=(f"no {method} interface class: for {method} the runner calls {names} on the top-level model "
                   f"({first.path}:{first.line}), so " + ("one of them" if len(mi.accepted) > 1 else "the method")
                   + " being present through the MRO is the check",
                   *([f"the runner always hands it a list of layer ids, never None ({mi.ids_given.path}:"
                      f"{mi.ids_given.line}: {mi.ids_given.text})"] if mi.ids_given is not None else [])))
        sites = tuple(RunnerSite(c.where.path, c.where.line, c.function, c.receiver or "model",
                                 error=ref.text if ref is not None else "", error_line=ref.line if ref else 0,
                                 setter=c.setter, setter_line=c.where.line, checked=False, negated=ref is not None,
                                 setter_ids=SetterIds.DRAFTER) for c in mi.calls)
        runner = dataclasses.replace(derived.runner, sites=sites)
        return Derived(derived.registry, contract, runner, derived.errors)

    def pp_refused(self, sm: Model) -> str | None:
        from eagle3_lint.engines.sglang import pp

        r = pp.refusal(sm)
        return None if r is None else f"{r.path}:{r.line} refuses EAGLE-3 with pipeline parallelism at launch " \
                                      f"({r.text})"

    def method_spelling(self, source: SourceTree, method: str) -> str:
        from eagle3_lint.engines.sglang import methods

        return methods.spelling(source, method)

    def method_refusal(self, source: SourceTree, method: str) -> str | None:
        from eagle3_lint.engines.sglang import methods

        return methods.refusal_of_method(source, method, self.display, self.version(source))

    def draft_analysis(self, sm: Model, arch: str | None = None,
                       kind: RunnerKind | None = None) -> DraftAnalysis | None:
        from eagle3_lint.engines.sglang import drafter

        if _other_method(sm) is not None:
            # Not EAGLE-3's ids (eagle_config's, through EAGLE-3's setter): under DFLASH or DSPARK the serving chain
            # reads the method's own, and its failing id steps are EGL007's findings (method_chain.analysis).
            from eagle3_lint.engines.sglang import method_chain

            return method_chain.analysis(sm, arch)
        sd = drafter.analyze(sm, arch)
        return sd.da if sd is not None else None

    def serving_verdict(self, sm: Model, arch: str, kind: RunnerKind | None = None) -> ServingVerdict | None:
        method = _other_method(sm)
        if method is not None:
            from eagle3_lint.engines.sglang import method_chain

            return method_chain.verdict(sm, arch, method)
        from eagle3_lint.engines.sglang import serving

        return serving.verdict(sm, arch)

    def with_next_step(self, sm: Model, sv: ServingVerdict, findings: Sequence[Finding]) -> ServingVerdict:
        if _other_method(sm) is not None:
            from eagle3_lint.engines.sglang import method_chain

            return method_chain.with_next_step(sm, sv, findings)
        from eagle3_lint.engines.sglang import serving

        return serving.with_next_step(sm, sv, findings)


def _other_method(sm: Model) -> str | None:
    """The method asked for when it is not EAGLE-3 (DFLASH, DSPARK): its chain and ids are ``method_chain``'s."""
    method = sm.options.method or "EAGLE3"
    return None if method == "EAGLE3" else method


ENGINE = SglangEngine()
