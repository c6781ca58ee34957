"""ToyServe as an eagle3-lint engine: a plugin outside eagle3-lint, registered by its entry point alone.

ToyServe (``tree/toyserve/``) is made up, and laid out unlike vLLM and SGLang:

- its model files are ``toyserve/zoo/*.py``;
- its registry is a list of ``(architecture, module, class)`` tuples, ``CATALOG`` in ``toyserve/catalog.py``;
- its runner (``toyserve/worker.py``) asks ``hasattr(model, "tap_layers")`` and raises ``RuntimeError`` when the
  model lacks it, then calls ``model.tap_layers(ids)``;
- its decoders collect the states entering the layers listed in ``self.taps`` (id k: the state entering layer k),
  and the top-level ``forward`` unpacks ``(hidden, taps)`` when ``self.emit_taps`` is set.

The registry and the runner are non-model files, read here with ``ast`` (never imported); the model files are the
core's facts, judged by the core's class graph with the contract and collection idiom below.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from eagle3_lint.contract import CheckKind, Contract, ContractMember
from eagle3_lint.engine import Capability, CollectionIdiom, Derived, Engine, ErrorRecord, safely
from eagle3_lint.engine_hooks import ModelHooks
from eagle3_lint.errors import TargetError
from eagle3_lint.registry import Entry, Registry
from eagle3_lint.runner import MODEL_CLASS, RunnerPath, RunnerSite, SetterIds

if TYPE_CHECKING:
    from collections.abc import Sequence

    from eagle3_lint.model import Finding
    from eagle3_lint.runner import RunnerKind
    from eagle3_lint.serving import ServingVerdict
    from eagle3_lint.source import SourceTree
    from eagle3_lint.stages import Model
    from eagle3_lint.store import FactStore

PACKAGE = "toyserve"
CATALOG_PATH = "toyserve/catalog.py"
WORKER_PATH = "toyserve/worker.py"
MODELS = "toyserve.zoo"
SETTER = "tap_layers"
IDS_KEY = "tap_ids"
# Where unpacked ToyServe releases live (``<folder>/toyserve-X.Y.Z/``): ToyServe is not on PyPI, so ``toy-serve==X``
# is looked up there instead of fetched.
RELEASES_ENV = "TOYSERVE_RELEASES"


class ToyServeEngine(Engine, ModelHooks):
    name = "toyserve"
    display = "ToyServe"
    package = PACKAGE
    dists = ("toy-serve",)
    model_dirs = ("toyserve/zoo/",)
    registry_module = "toyserve.catalog"
    capabilities = frozenset({Capability.AUX_COLLECTION})
    collection = CollectionIdiom(
        list_attrs=("taps",), layer_flags=(), capture_flag="emit_taps",
        # As ToyLMForCausalLM.tap_layers writes it (tree/toyserve/zoo/toy_lm.py).
        setter_body=(
            "if {param} is None:",
            "    n = len({path}.layers)",
            "    {param} = [2, n // 2, n - 3]",
            "{path}.{list} = list({param})",
            "self.{flag} = True",
        ),
    )

    def tree_root(self, path: Path) -> Path | None:
        if (path / CATALOG_PATH).is_file():
            return path
        if path.name == PACKAGE and (path / "catalog.py").is_file():
            return path.parent
        return None

    def version(self, source: SourceTree) -> str:
        return source.package_version(PACKAGE, ("__init__.py",))

    def fetch_release(self, version: str, cache_dir: str | os.PathLike[str] | None,
                      progress: Callable[[str], None] | None = None) -> Path:
        folder = os.environ.get(RELEASES_ENV)
        root = Path(folder) / f"{PACKAGE}-{version}" if folder else None
        if root is None or not (root / CATALOG_PATH).is_file():
            raise TargetError(f"cannot fetch toy-serve=={version}: ToyServe is not published; put the unpacked "
                              f"release under ${RELEASES_ENV}/{PACKAGE}-{version}/")
        return root

    def derive(self, source: SourceTree, store: FactStore, preload: Callable[[], None]) -> Derived:
        preload()
        errors: list[ErrorRecord] = []
        registry = safely(errors, "registry", lambda: _registry(source),
                          lambda: Registry(False, CATALOG_PATH, {}, ("CATALOG",), MODELS, "internal error"))
        runner = safely(errors, "runner", lambda: _runner(source),
                        lambda: RunnerPath(notes=("internal error while reading the runner",)))
        site = runner.primary
        contract = Contract(
            found=False, check=CheckKind.DUCK, path=site.path if site else "", line=site.line if site else 0,
            members=(ContractMember(SETTER, "method", "", False),), setter=SETTER,
            notes=(f"no interface class: the worker asks hasattr(model, {SETTER!r}) and calls it",))
        return Derived(registry, contract, runner, tuple(errors))

    def serving_verdict(self, sm: Model, arch: str, kind: RunnerKind | None = None) -> ServingVerdict | None:
        from eagle3_lint_toyengine import serving

        return serving.verdict(sm, arch)

    def with_next_step(self, sm: Model, sv: ServingVerdict, findings: Sequence[Finding]) -> ServingVerdict:
        from eagle3_lint_toyengine import serving

        return serving.with_next_step(sm, sv, findings)


def _parse(source: SourceTree, rel: str) -> ast.Module | None:
    if not source.exists(rel):
        return None
    try:
        return ast.parse(source.read_bytes(rel), rel)
    except (OSError, SyntaxError, ValueError):
        return None


def _registry(source: SourceTree) -> Registry:
    """``CATALOG = [(architecture, module, class), ...]``: string literals only, as ToyServe's loader reads them."""
    tree = _parse(source, CATALOG_PATH)
    if tree is None:
        return Registry(False, CATALOG_PATH, {}, ("CATALOG",), MODELS, "catalog.py missing or unreadable")
    entries: dict[str, Entry] = {}
    for st in tree.body:
        if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "CATALOG" for t in st.targets) \
                and isinstance(st.value, (ast.List, ast.Tuple)):
            for el in st.value.elts:
                if isinstance(el, ast.Tuple) and len(el.elts) == 3 and all(
                        isinstance(x, ast.Constant) and isinstance(x.value, str) for x in el.elts):
                    arch, module, cls = (x.value for x in el.elts)  # type: ignore[attr-defined]
                    entries.setdefault(arch, Entry(arch, f"{MODELS}.{module}", cls, "CATALOG", el.lineno))
    return Registry(bool(entries), CATALOG_PATH, entries, ("CATALOG",), MODELS,
                    "" if entries else "no CATALOG entries")


def _runner(source: SourceTree) -> RunnerPath:
    """The worker's ``model.tap_layers(...)`` call, and the ``hasattr`` test that raises before it."""
    tree = _parse(source, WORKER_PATH)
    if tree is None:
        return RunnerPath(notes=(f"{WORKER_PATH} missing or unreadable",))
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == SETTER:
                receiver = ast.unparse(node.func.value)
                raised = next((r for r in ast.walk(fn) if isinstance(r, ast.Raise) and r.lineno < node.lineno), None)
                error = _message(raised.exc) if raised is not None and raised.exc is not None else ""
                return RunnerPath(sites=(RunnerSite(WORKER_PATH, node.lineno, fn.name, receiver, error=error,
                                                    error_line=raised.lineno if raised is not None else node.lineno,
                                                    setter=SETTER, setter_line=node.lineno, checked=False,
                                                    setter_ids=SetterIds.DRAFTER),),
                                  config_key=IDS_KEY, config_key_path=WORKER_PATH)
    return RunnerPath(notes=(f"no call of {SETTER}() in {WORKER_PATH}",))


def _message(exc: ast.expr) -> str:
    """``RuntimeError(f"{type(model).__name__} cannot ...")`` as the user reads it, the class name as MODEL_CLASS."""
    if not (isinstance(exc, ast.Call) and exc.args):
        return ast.unparse(exc)
    arg = exc.args[0]
    if isinstance(arg, ast.JoinedStr):
        text = "".join(str(v.value) if isinstance(v, ast.Constant) else MODEL_CLASS for v in arg.values)
    elif isinstance(arg, ast.Constant):
        text = str(arg.value)
    else:
        text = ast.unparse(arg)
    return f"{ast.unparse(exc.func)}: {text}"


ENGINE = ToyServeEngine()
