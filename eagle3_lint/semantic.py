"""The semantic model: every fact about how a class serves EAGLE-3, computed in one place.

Trace, rules, the drafter check, the serving verdict and fix generation all ask this module, never
the facts or the source directly, which object owns the decoder layers and through which
attributes (``owner``), which classes' ``forward`` run for a top-level class (``reached``), what the
setter the runner calls writes and on which object (``setter_effect``), whether the fallback getter
returns something (``getter_state``), how the owner's ``forward`` collects (``forward_of`` for the
attributes it reads and what it returns, ``capture`` for the capture points per loop, the index
form and the pipeline relay). Depth limits live here (``MAX_HOPS``). Every answer can be "unknown";
callers report only on answers the tree makes certain.

The contract's default bodies (0.18-style trees) are simulated from their facts: they unwrap
``get_language_model()`` / ``language_model``, then ``.model`` (or the object itself where the
body reads ``getattr(parent, "model", parent)``), assert the holder is the mixin, and call the
mixin's setter.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from eagle3_lint import engine_hooks
from eagle3_lint.checkpoint import text_config
from eagle3_lint.engine import Mechanism
from eagle3_lint.facts import (
    ELSE,
    LAYER_SETATTR,
    LAYER_STORE,
    MAIN,
    STORE,
    SUPER_CALL,
    TRY,
    Body,
    ClassFacts,
    IndexBase,
    Loop,
    LoopForm,
    Method,
    Site,
    SiteKind,
    Use,
    UseKind,
    branch_platforms,
)
from eagle3_lint.graph import ClassKey, Delegation, DelegationHow
from eagle3_lint.lazyimport import lazy
from eagle3_lint.model import Finding, Location, Status
from eagle3_lint.modeldata import Broken, Capture, Where
from eagle3_lint.queries import query
from eagle3_lint.source_ast import read_module

if TYPE_CHECKING:
    from eagle3_lint import minieval as me
    from eagle3_lint.engine import CollectionIdiom
    from eagle3_lint.stages import Model
else:
    me = lazy("eagle3_lint.minieval")  # imported on first use (lazyimport.py)

T = TypeVar("T")

# How far a delegation chain is followed, wrapper -> language model -> decoder -> layer stack. Real
# trees need three hops; every walk of this module (and so every caller) stops at the same depth.
MAX_HOPS = 5
# Registry categories whose models never run speculative decoding as a target: drafters (the
# EAGLE heads themselves, MTP modules) and pooling models (embedding, scoring, classification).
# These are the registry's own dict names, read from the tree; a class that says
# ``is_pooling_model = True`` is a pooling model whatever dict lists it.
DRAFTER_DICT_WORDS = ("SPECULATIVE",)
_POOLING_DICT_WORDS = (
    "EMBEDDING",
    "CROSS_ENCODER",
    "CLASSIFICATION",
    "REWARD",
    "LATE_INTERACTION",
    "POOLING",
    "SCORING",
)


# -- classes by member -----------------------------------------------------------------------------
@query
def classes_defining(sm: Model, name: str) -> list[tuple[str, ClassKey]]:
    """The model files' module-level classes that define a method ``name`` themselves, with their file, in path and
    class order. One answer per file, joined: after an edit only the edited file is read again, and a fix that copies
    one of them is kept when the list comes out the same (queries.py, early cutoff)."""
    return [hit for rel in sm.model_files() for hit in _file_classes_defining(sm, rel, name)]


@query
def _file_classes_defining(sm: Model, rel: str, name: str) -> list[tuple[str, ClassKey]]:
    mf = sm.store.load_path(rel)
    if mf is None or mf.error:
        return []
    out = []
    for qn, c in mf.classes.items():
        if c.nested_in is None:
            key = ClassKey(mf.module, qn)
            cf = sm.graph.class_facts(key)
            m = cf.members.get(name) if cf is not None else None
            if m is not None and m.kind == "def":
                out.append((rel, key))
    return out


# -- scope ------------------------------------------------------------------------------------
def in_scope(sm: Model, arch: str) -> bool:
    """An architecture the runner may interrogate as an EAGLE-3 *target* (or one the user targets)."""
    return sm.queries.get(("in-scope", arch), lambda: _in_scope(sm, arch), persist=True)


def _in_scope(sm: Model, arch: str) -> bool:
    if sm.is_targeted(arch):
        return True
    entry = sm.registry.entries.get(arch)
    key = sm.keys.get(arch)
    if entry is None or key is None:
        return False
    d = entry.source_dict.upper()
    if any(w in d for w in DRAFTER_DICT_WORDS) or any(w in d for w in _POOLING_DICT_WORDS):
        return False
    hit = sm.graph.member_origin(key, "is_pooling_model")
    return not (hit is not None and hit[1].value == "True")


def scoped_archs(sm: Model) -> Iterator[tuple[str, ClassKey]]:
    # Every rule asks; the answer depends only on the finished context, so it is worked out once.
    cached = sm.memo.get("scoped-archs", lambda: [
        (arch, key) for arch in sorted(sm.keys)
        if (key := sm.keys[arch]) is not None and arch in sm.verdicts and in_scope(sm, arch)])
    return iter(cached)


def definers(sm: Model, name: str) -> list[str]:
    """Modules of the tree that define ``name`` as a module-level class or function (not a re-export)."""
    out: list[str] = []
    needle = name.encode()
    for rel in sm.source.py_files():
        try:
            if needle not in sm.source.read_bytes(rel):
                continue  # a cheap byte test spares parsing the whole tree
        except OSError:
            continue
        mf = sm.store.load_path(rel)
        if mf is None or mf.error:
            continue
        bl = mf.bindings.get(name)
        if bl and any(b.kind in ("class", "function") and b.branch == "" for b in bl):
            out.append(mf.module)
    return out


def unreachable(sm: Model, arch: str, past_interface: bool = True) -> str | None:
    """Why the engine never gets this far with ``arch`` under EAGLE-3 (so a defect there cannot bite yet), or None:
    the config-time gate refuses it, or (for a step after the runner's interface check, ``past_interface``)
    the class fails that check first."""
    refused = engine_hooks.config_refusal(sm, arch)
    if refused is not None:
        g, mt = refused
        return f"this {sm.engine.display} refuses EAGLE-3 for model_type {mt!r} at config time ({g.path}:{g.line})"
    st = status(sm, arch)
    if past_interface and st in (Status.PARTIAL, Status.WRAPPER_GAP, Status.UNSUPPORTED):
        return f"{arch} fails the runner's {sm.contract.check_function or 'interface'} check first"
    return None


def status(sm: Model, arch: str) -> Status | None:
    v = sm.verdicts.get(arch)
    return v.status if v is not None else None


# -- names of the analysed version ------------------------------------------------------------
def setter_name(sm: Model) -> str | None:
    return sm.contract.setter or (sm.runner.setter_names[0] if sm.runner.setter_names else None)


def setter_for(sm: Model, inner: ClassKey) -> str | None:
    """The setter a class delegating to ``inner`` hands the ids on through: where any one of the contract's setters
    will do (``Contract.one_of``: SGLang's DSPARK runner takes set_dspark_layers_to_capture, else
    set_dflash_layers_to_capture), the first ``inner`` has, so the delegation reaches a method; else the contract's."""
    if sm.contract.one_of:
        hit = next((n for n in sm.contract.required if sm.graph.member_origin(inner, n) is not None), None)
        if hit is not None:
            return hit
    return setter_name(sm)


def getter_names(sm: Model) -> tuple[str, ...]:
    """The fallback getter(s) the runner of this tree calls; the contract's getter if none is read."""
    if sm.runner.fallback_names:
        return sm.runner.fallback_names
    return (sm.contract.default_getter,) if sm.contract.default_getter else ()


def looks_like_getter(name: str) -> bool:
    """The shape of an aux-layer getter in any vLLM version (``get_eagle3[_default]_aux_hidden_state_layers``)."""
    return name.startswith("get_") and name.endswith("aux_hidden_state_layers")


def protocol_key(sm: Model) -> ClassKey | None:
    return sm.judge.protocol_key() if sm.contract.found else None


def mixin_key(sm: Model) -> ClassKey | None:
    c = sm.contract
    return ClassKey(c.module, c.mixin) if c.mixin else None


def is_interface_class(sm: Model, key: ClassKey) -> bool:
    """A class of the interfaces module (the Protocol, its bases, the mixin): never the place to fix."""
    return key.module == sm.contract.module


def holder_falls_back(sm: Model) -> bool:
    """Whether the default setter body reads ``getattr(parent, "model", parent)`` (else it needs ``.model``)."""
    pk = protocol_key(sm)
    cf = sm.graph.class_facts(pk) if pk else None
    md = cf.methods.get(sm.contract.setter or "") if cf else None
    if md is None:
        return False
    for f, args, _line in md.calls:
        if f == "getattr" and len(args) == 3 and args[0] == args[2] and args[1].strip("'\"") == "model":
            return True
    return False


# -- delegation and layer ownership -----------------------------------------------------------
@dataclass(frozen=True)
class Hop:
    attr: str
    key: ClassKey


@dataclass(frozen=True)
class Owner:
    """The object that owns ``self.layers``, reached from a top-level class through ``hops``."""

    key: ClassKey
    hops: tuple[Hop, ...]
    line: int  # where ``self.layers`` is assigned ...
    where: ClassKey  # ... in the code of this class (a base's ``__init__``, or an init helper's class)

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(h.attr for h in self.hops)

    def location(self, sm: Model) -> Location:
        return Location(sm.graph.path_of(self.where), self.line)


def delegations(sm: Model, key: ClassKey) -> list[Delegation]:
    """``graph.delegations`` (kept with the analysis' queries)."""
    return sm.graph.delegations(key)


def delegate(sm: Model, key: ClassKey, attr: str) -> ClassKey | None:
    for d in delegations(sm, key):
        if d.attr == attr and d.target is not None:
            return d.target
    return None


def has_unresolved_delegation(sm: Model, key: ClassKey, attr: str) -> bool:
    return any(d.attr == attr and d.target is None for d in delegations(sm, key))


def handed_off(sm: Model, key: ClassKey) -> dict[str, tuple[str, str, int]]:
    """Attributes ``key``'s ``forward`` hands to a call by keyword, attr -> (callee, keyword, line):
    ``general_mm_embed_routine(..., language_model=self.llm)`` (SGLang 0.5.23 nvila.py:130-136) runs ``self.llm``
    inside the helper, as a direct ``self.llm(...)`` would."""
    hit = sm.graph.method(key, "forward")
    md = hit[1] if hit is not None else None
    if not isinstance(md, Method):
        return {}
    out: dict[str, tuple[str, str, int]] = {}
    for callee, kw, value, line in md.handoffs:
        attr = value[5:] if value.startswith("self.") else ""
        if attr and "." not in attr:
            out.setdefault(attr, (callee, kw, line))
    return out


def _handed_model(sm: Model, key: ClassKey, d: Delegation) -> bool:
    """``key``'s forward hands ``d``'s inner model to a helper, and it is a model (it owns decoder layers, or passes
    the check): not an ``lm_head=self.proj_out`` handed to the logits processor."""
    return d.target is not None and d.attr in handed_off(sm, key) and (
        sm.judge.check_class(d.target).supports is True or owner(sm, d.target, seen=frozenset({key})) is not None)


def runs(sm: Model, key: ClassKey, attr: str) -> tuple[str, ClassKey, int] | None:
    """How ``key``'s ``forward`` runs the inner module ``self.<attr>``, as (what it does, the class whose forward
    it is, line): it calls it, or hands it to a helper by keyword; None when it does neither (or has no forward)."""
    hit = sm.graph.method(key, "forward")
    if hit is None or not isinstance(hit[1], Method):
        return None
    fowner, md = hit[0], hit[1]
    call = next((line for f, _args, line in md.calls if f == f"self.{attr}"), None)
    if call is not None:
        return f"{fowner.name}.forward calls self.{attr}(...)", fowner, call
    ho = handed_off(sm, key).get(attr)
    if ho is not None:
        callee, kw, line = ho
        return f"{fowner.name}.forward hands self.{attr} to {callee}({kw}=...), which runs it", fowner, line
    return None


def lm_attr(sm: Model, key: ClassKey) -> str | None:
    """The attribute ``get_language_model()`` returns, if the tree says."""
    for a in sorted(sm.graph.language_model_attrs(key)):
        return a
    hit = sm.graph.member_origin(key, "get_language_model")
    if hit is not None and is_interface_class(sm, hit[0]):
        # The interface's default returns the module built under ``_mark_language_model``:
        # the ``language_model`` attribute by convention, else the one registered sub-model.
        if any(d.attr == "language_model" for d in delegations(sm, key)):
            return "language_model"
        regs = [d.attr for d in delegations(sm, key) if d.how is DelegationHow.REGISTERED_MODEL]
        if len(regs) == 1:
            return regs[0]
    return None


def assigns_layers(sm: Model, key: ClassKey) -> tuple[ClassKey, int] | None:
    """Where some method of the MRO (``__init__`` or an init helper) assigns ``self.layers``: (class, line)."""
    hit = sm.graph.assigns_attr(key, "layers")
    if hit is not None:
        return hit
    for e in sm.graph.mro(key).entries:
        if not isinstance(e, ClassKey) or is_interface_class(sm, e):
            continue
        cf = sm.graph.class_facts(e)
        if cf is None:
            continue
        for md in cf.methods.values():
            if "init" not in md.name:
                continue
            for sa in md.self_assigns:
                if sa.target == "self.layers":
                    return e, sa.line
    return None


def owner(
    sm: Model, key: ClassKey, hops: tuple[Hop, ...] = (), seen: frozenset[ClassKey] = frozenset()
) -> Owner | None:
    """The class reachable through model delegations that owns ``self.layers`` (language model first, then
    ``.model``; an inner model the forward hands to a helper, ``handed_off``, counts as one)."""
    if key in seen or len(hops) > MAX_HOPS:
        return None
    hit = assigns_layers(sm, key)
    if hit is not None:
        # ``self.layers = Plamo3Decoder(...)``: a module that holds the real layer list.
        inner = delegate(sm, key, "layers")
        if inner is not None and inner not in seen and inner != key:
            deeper = owner(sm, inner, (*hops, Hop("layers", inner)), seen | {key})
            if deeper is not None:
                return deeper
        return Owner(key, hops, hit[1], hit[0])
    lm = sm.graph.language_model_attrs(key) | ({lm_attr(sm, key)} - {None})
    dels = [d for d in delegations(sm, key) if d.target is not None]
    dels.sort(key=lambda d: (d.attr not in lm and d.attr != "language_model", d.attr != "model", d.attr))
    for d in dels:
        if (
            d.attr not in lm
            and d.attr not in ("language_model", "model")
            and d.how is not DelegationHow.REGISTERED_MODEL
            and d.attr not in handed_off(sm, key)
        ):
            continue
        assert d.target is not None
        found = owner(sm, d.target, (*hops, Hop(d.attr, d.target)), seen | {key})
        if found is not None:
            return found
    return None


# Attributes through which a top-level object's forward runs an inner module's forward: the language
# model, its decoder, and a decoder-stack module held as ``self.layers`` (plamo3's ``Plamo3Decoder``).
_FORWARD_HOPS = ("model", "language_model", "layers", "decoder")


def reached(sm: Model, key: ClassKey) -> tuple[ClassKey, ...]:
    """The class and the inner models whose ``forward`` runs when it runs (``self.model``, ``self.language_model``,
    ..., and a model the forward hands to a helper: ``handed_off``)."""

    def walk(k: ClassKey, hops: int, seen: frozenset[ClassKey]) -> Iterator[ClassKey]:
        if k in seen or hops > MAX_HOPS:
            return
        yield k
        lm = sm.graph.language_model_attrs(k)
        for d in delegations(sm, k):
            if d.target is not None and (
                d.attr in lm or d.attr in _FORWARD_HOPS or d.how is DelegationHow.REGISTERED_MODEL
                or _handed_model(sm, k, d)
            ):
                yield from walk(d.target, hops + 1, seen | {k})

    return sm.graph.queries.get(("reached", key), lambda: tuple(dict.fromkeys(walk(key, 0, frozenset()))),
                                 persist=True)


# Import statements that run when a module is imported: the module body, a ``try`` body and its ``else``. Not
# ``if TYPE_CHECKING`` (never at run time), nor ``except`` or ``if`` arms (they run on a condition the tree alone
# does not settle, and a broken file behind one must not block every target).
_IMPORT_RUNS = (MAIN, TRY, ELSE)


def reached_classes(sm: Model, arch: str) -> set[ClassKey]:
    """The target's class, every class of its MRO, and the inner models it delegates to (and theirs)."""
    return sm.memo.get(f"headline-reached:{arch}", lambda: _reached(sm, arch))


def _reached(sm: Model, arch: str) -> set[ClassKey]:
    out: set[ClassKey] = set()
    start = sm.keys.get(arch)
    todo: list[tuple[ClassKey, int]] = [(start, 0)] if start is not None else []
    while todo:
        key, hops = todo.pop()
        if key in out or hops > MAX_HOPS:
            continue
        out.add(key)
        out.update(e for e in sm.graph.mro(key).entries if isinstance(e, ClassKey))
        for d in sm.graph.delegations(key):
            if d.target is not None:
                todo.append((d.target, hops + 1))
    return out


def _on_path(sm: Model, arch: str) -> tuple[set[str], set[tuple[str, str]]]:
    """Files the target's classes live in (and the unparsable files on its import path: EGL000), and (file, class
    name) of those classes."""
    def compute() -> tuple[set[str], set[tuple[str, str]]]:
        pairs = {(sm.graph.path_of(k), k.name) for k in reached_classes(sm, arch)}
        return {p for p, _ in pairs} | {b.path for b in broken_on_path(sm, arch)}, pairs
    return sm.memo.get(f"on-path:{arch}", compute)


def concerns(sm: Model, f: Finding, arch: str) -> bool:
    """Whether ``arch``'s serving path runs through finding ``f``: it names the architecture; or it names none and
    sits outside the model files (the registry, the interfaces, the runner, a config: every target runs through
    them), or on a class the target reaches, or in a file on its import path that cannot be parsed (EGL000). The
    verdict line (report.headline) and EGL012 (serving_steps.unreported_blockers) count a finding the same way."""
    if f.architecture is not None or f.architectures:
        return arch in (f.architectures or (f.architecture,))
    path = f.location.path
    if not sm.engine.is_model_file(path):
        return True
    files, pairs = _on_path(sm, arch)
    if path not in files:
        return False
    return not f.symbol or (path, f.symbol.split(".")[0]) in pairs


def broken_on_path(sm: Model, arch: str) -> tuple[Broken, ...]:
    """Model files that importing ``arch``'s module (the registry entry's, its packages' ``__init__``, and every
    model module they import at load time, transitively) or a class it reaches runs into, and that cannot be read
    or parsed: the engine's import of the model fails there, so the architecture cannot load at all."""
    return sm.queries.get(("broken-on-path", arch), lambda: _broken_on_path(sm, arch), persist=True)


def _broken_on_path(sm: Model, arch: str) -> tuple[Broken, ...]:
    entry = sm.registry.entries.get(arch)
    if entry is None:
        # Not registered: where the registry is read from the model files themselves (SGLang's EntryClass), a
        # broken file that names the architecture is where its entry would have come from.
        return tuple(b for rel in sm.model_files() if (b := _broken(sm, rel)) is not None and _names(sm, rel, arch))
    todo = [entry.module]
    key = sm.keys.get(arch)
    if key is not None:
        for k in reached(sm, key):
            todo.append(k.module)
            todo += [e.module for e in sm.graph.mro(k).entries if isinstance(e, ClassKey)]
            # An inner model the registry builds but cannot resolve (its module does not parse): its module still.
            todo += [sm.registry.entries[a].module for d in delegations(sm, k) if d.target is None
                     for a in d.archs if a in sm.registry.entries]
    seen: set[str] = set()
    out: list[Broken] = []
    while todo:
        module = todo.pop(0)
        if module in seen:
            continue
        seen.add(module)
        # Importing a.b.c runs a/__init__.py and a/b/__init__.py first.
        parts = module.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        rel = sm.source.module_path(module)
        if rel is None or not sm.engine.is_model_file(rel):
            continue  # outside the tree, or engine code every target imports (not a model file)
        broken = _broken(sm, rel)
        if broken is not None:
            out.append(broken)
            continue
        mf = sm.store.load_path(rel)
        assert mf is not None
        for bindings in mf.bindings.values():
            for imp in bindings:
                runs = branch_platforms(imp.branch)
                if imp.kind != "import" or not (imp.branch in _IMPORT_RUNS if runs is None
                                                else sm.graph.platform in runs):
                    continue
                todo.append(imp.target)
                if imp.attr:
                    todo.append(f"{imp.target}.{imp.attr}")  # ``from . import llama``: a submodule, if it is one
    return tuple(sorted(set(out), key=lambda b: (b.path, b.line)))


def _broken(sm: Model, rel: str) -> Broken | None:
    mf = sm.store.load_path(rel)
    if mf is None:
        return Broken(rel, 1, "cannot be read: " + sm.store.read_errors.get(rel, "not readable"))
    if mf.error:
        return Broken(rel, max(1, mf.error_line), mf.error)
    return None


def _names(sm: Model, rel: str, name: str) -> bool:
    try:
        return name.encode() in sm.source.read_bytes(rel)
    except OSError:
        return True  # unreadable: it may name it, and nothing else can be said


def resolve_self_path(sm: Model, key: ClassKey, expr: str) -> tuple[tuple[Hop, ...], tuple[str, ...]] | None:
    """``self.language_model.model`` -> hops through known delegations, and the parts left over."""
    parts = expr.split(".")
    if not parts or parts[0] != "self":
        return None
    cur = key
    hops: list[Hop] = []
    rest = parts[1:]
    while rest:
        part = rest[0]
        attr = lm_attr(sm, cur) if part == "get_language_model()" else part
        if attr is None:
            break
        tgt = delegate(sm, cur, attr)
        if tgt is None:
            break
        hops.append(Hop(attr, tgt))
        cur = tgt
        rest = rest[1:]
    return tuple(hops), tuple(rest)


def model_delegations(sm: Model, key: ClassKey) -> list[Delegation]:
    """The judge's notion of delegation to another model (registered, language model, ``model``), and an inner model
    the forward hands to a helper (``handed_off``)."""
    lm = sm.graph.language_model_attrs(key)
    return [
        d
        for d in delegations(sm, key)
        if d.how in (DelegationHow.REGISTERED_MODEL, DelegationHow.GETATTR)
        or d.attr in lm
        or d.attr in ("language_model", "model")
        or _handed_model(sm, key, d)
    ]


def builder_of(sm: Model, key: ClassKey, attr: str) -> ClassKey:
    """The class whose ``__init__`` builds ``key``'s ``self.<attr>``: a subclass that only inherits the wrapper
    (Tarsier2 from Qwen2-VL) is the same gap, reported and fixed once, on that class; ``key`` itself when no class of
    the tree but the interfaces' does."""
    hit = sm.graph.assigns_attr(key, attr)
    if hit is not None and not is_interface_class(sm, hit[0]):
        return hit[0]
    return key


@query
def held_models(sm: Model, arch: str) -> tuple[tuple[str, ClassKey, ClassKey], ...]:
    """For a scoped architecture whose class fails the check and has no setter, each of its model delegations
    (``model_delegations``) to a class: (attribute, inner class, ``builder_of`` the attribute); () for any other.
    One answer per architecture: a fix that asks it of every architecture (EGL003's exposed wrappers) rests on these
    answers, so an edit of a model file recomputes only the architectures reading it, and keeps the fix when they come
    out equal (queries.py, early cutoff)."""
    key = sm.keys.get(arch)
    if key is None or status(sm, arch) is not Status.UNSUPPORTED or setter_effect(sm, key).kind != "missing":
        return ()
    return tuple((d.attr, d.target, builder_of(sm, key, d.attr)) for d in model_delegations(sm, key)
                 if d.target is not None)


def supporting_inner(sm: Model, key: ClassKey) -> list[tuple[Hop, ...]]:
    """Paths of model delegations to the nearest inner classes that pass the check (language model first)."""
    out: list[tuple[Hop, ...]] = []
    frontier: list[tuple[Hop, ...]] = [()]
    seen = {key}
    for _depth in range(3):
        nxt: list[tuple[Hop, ...]] = []
        for path in frontier:
            cur = path[-1].key if path else key
            lm = lm_attr(sm, cur)
            # The first hop is a model delegation (what the runner's object wraps); below it any
            # sub-module may be the decoder (``self.model.decoder = Qwen2ForCausalLM(...)``).
            dels = sorted(model_delegations(sm, cur) if not path else delegations(sm, cur),
                          key=lambda d: (d.attr != lm and d.attr != "language_model", d.attr != "model", d.attr))
            for d in dels:
                if d.target is None or d.target in seen:
                    continue
                seen.add(d.target)
                p = (*path, Hop(d.attr, d.target))
                if sm.judge.check_class(d.target).supports:
                    out.append(p)
                else:
                    nxt.append(p)
        if out:
            return out
        frontier = nxt
    return out


# -- what the setter reaches ----------------------------------------------------------------------
@dataclass(frozen=True)
class Effect:
    """What calling the setter on an instance of the top-level class does.

    kind: ``writes`` (attribute ``attr`` on the object at ``hops``), ``stub`` (a body that does
    nothing), ``missing``, ``not-mixin`` / ``no-holder`` (the contract's default body would fail
    its assertion), or ``unknown``.
    """

    kind: str
    hops: tuple[Hop, ...] = ()
    attr: str | None = None
    method_owner: ClassKey | None = None  # the class whose method the runner calls
    line: int = 0
    detail: str = ""
    from_protocol: bool = False
    # Engines with a ``CollectionIdiom``: every collection mechanism the call feeds, with the attribute path
    # of the object fed (``(LIST, ("model",))``: ``self.model.layers_to_capture``; ``(FLAG, ("model",))``: a flag
    # on the layers of ``self.model``), through every method it calls.
    feeds: tuple[tuple[Mechanism, tuple[str, ...]], ...] = ()
    sets_capture_flag: bool = False  # it sets the top-level capture flag (``self.<capture_flag> = True``)

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(h.attr for h in self.hops)

    def fed(self, path: tuple[str, ...]) -> frozenset[Mechanism]:
        """The mechanisms fed on the object at ``path``."""
        return frozenset(m for m, p in self.feeds if p == path)


def method_of(sm: Model, key: ClassKey, name: str) -> tuple[ClassKey, Method] | None:
    hit = sm.graph.method(key, name)
    if hit is None:
        return None
    mowner, md = hit
    assert isinstance(md, Method)
    return mowner, md


def is_protocol_method(sm: Model, mowner: ClassKey) -> bool:
    pk = protocol_key(sm)
    return mowner == pk or (sm.judge.is_protocol_class(mowner))


def setter_effect(sm: Model, key: ClassKey) -> Effect:
    name = setter_name(sm)
    if name is None:
        return Effect("unknown", detail="the contract names no setter")
    idiom = sm.engine.collection
    if idiom is not None:
        return sm.graph.queries.get(("collection-effect", key, name), lambda: collection_effect(sm, key, name),
                                     persist=True)
    return _method_effect(sm, key, name, 0)


def _method_effect(sm: Model, key: ClassKey, name: str, depth: int) -> Effect:
    if depth > MAX_HOPS:
        return Effect("unknown", detail="delegation too deep")
    hit = method_of(sm, key, name)
    if hit is None:
        if sm.graph.member_origin(key, name) is None:
            return Effect("missing", detail=f"{key.name} has no {name}")
        return Effect("unknown", detail=f"{name} of {key.name} is not a plain method")
    mowner, md = hit
    proto = is_protocol_method(sm, mowner)
    if md.stub:
        return Effect("stub", method_owner=mowner, line=md.line, from_protocol=proto,
                      detail=f"{mowner.name}.{name} has a stub body")
    if proto:
        eff = default_setter_effect(sm, key, depth)
        return Effect(eff.kind, eff.hops, eff.attr, mowner, md.line, eff.detail, True)
    return _body_effect(sm, key, mowner, md, depth)


def _body_effect(sm: Model, key: ClassKey, mowner: ClassKey, md: Method, depth: int) -> Effect:
    sname = setter_name(sm)
    for sa in md.self_assigns:
        if "." not in sa.target:
            continue
        prefix, attr = sa.target.rsplit(".", 1)
        if "aux" not in attr:
            continue
        res = resolve_self_path(sm, key, prefix)
        if res is None or res[1]:
            return Effect(
                "unknown",
                method_owner=mowner,
                line=md.line,
                detail=f"{mowner.name}.{md.name} writes {sa.target}, through an object the tool cannot follow",
            )
        return Effect("writes", res[0], attr, mowner, md.line, f"{mowner.name}.{md.name} writes {sa.target}")
    for f, _args, _line in md.calls:
        if not f.startswith("self.") or "." not in f:
            continue
        prefix, meth = f.rsplit(".", 1)
        if not (meth == sname or meth == sm.contract.mixin_setter or ("aux" in meth and "set" in meth)):
            continue
        res = resolve_self_path(sm, key, prefix)
        if res is None or res[1]:
            return Effect("unknown", method_owner=mowner, line=md.line,
                          detail=f"{mowner.name}.{md.name} calls {f}(), on an object the tool cannot follow")
        hops = res[0]
        target = hops[-1].key if hops else key
        if not hops and meth == md.name:
            continue  # super-style recursion into itself; not a delegation
        sub = _method_effect(sm, target, meth, depth + 1)
        return Effect(sub.kind, hops + sub.hops, sub.attr, mowner, md.line,
                      f"{mowner.name}.{md.name} calls {f}(); " + sub.detail, False)
    return Effect("unknown", method_owner=mowner, line=md.line,
                  detail=f"{mowner.name}.{md.name} writes no aux-layer attribute the tool recognises")


def default_parent(sm: Model, key: ClassKey) -> tuple[tuple[Hop, ...], str] | None:
    """The object the contract's default bodies unwrap to before ``.model`` (None: cannot tell)."""
    unwrap = sm.contract.unwrap_attrs
    if "get_language_model" in unwrap and sm.graph.member_origin(key, "get_language_model") is not None:
        attr = lm_attr(sm, key)
        tgt = delegate(sm, key, attr) if attr else None
        if tgt is None:
            return None
        return (Hop(attr, tgt),), f"get_language_model() -> self.{attr}"  # type: ignore[arg-type]  # attr set if tgt
    if "language_model" in unwrap and any(d.attr == "language_model" for d in delegations(sm, key)):
        tgt = delegate(sm, key, "language_model")
        if tgt is None:
            return None
        return (Hop("language_model", tgt),), "self.language_model"
    if "language_model" in unwrap and sm.graph.assigns_attr(key, "language_model") is not None:
        return None
    return (), "self"


def default_holder(sm: Model, key: ClassKey) -> tuple[str, tuple[Hop, ...], str]:
    """(kind, hops, detail): where the default bodies look for the layers: ``ok``, ``no-holder`` or ``unknown``."""
    par = default_parent(sm, key)
    if par is None:
        return "unknown", (), "get_language_model() returns an object the tool cannot follow"
    hops, how = par
    parent = hops[-1].key if hops else key
    m = delegate(sm, parent, "model")
    if m is not None:
        return "ok", (*hops, Hop("model", m)), f"{how}.model"
    if has_unresolved_delegation(sm, parent, "model") or sm.graph.assigns_attr(parent, "model") is not None:
        return "unknown", hops, f"{how}.model is an object the tool cannot follow"
    if holder_falls_back(sm):
        return "ok", hops, how
    return "no-holder", hops, f"{how} has no .model, which the default body asserts"


def default_setter_effect(sm: Model, key: ClassKey, depth: int = 0) -> Effect:
    kind, hops, how = default_holder(sm, key)
    if kind != "ok":
        return Effect(kind, hops, detail=f"the contract's default setter unwraps {how}")
    holder = hops[-1].key if hops else key
    mk = mixin_key(sm)
    if mk is not None and not sm.graph.in_mro(holder, mk):
        return Effect("not-mixin", hops, detail=f"the contract's default setter unwraps {how} = {holder.name}, "
                                                f"which is not an {mk.name}: its assertion fails at runtime")
    ms = sm.contract.mixin_setter
    if ms is None:
        return Effect("unknown", hops, detail="the default setter calls a method the tool cannot read")
    sub = _method_effect(sm, holder, ms, depth + 1)
    return Effect(sub.kind, hops + sub.hops, sub.attr, None, 0, f"the contract's default setter calls {how}.{ms}()")


# -- collection through engine-named lists and per-layer flags (``Engine.collection``) -------------------------
def body_of(sm: Model, key: ClassKey, name: str, after: ClassKey | None = None) -> tuple[ClassKey, Body] | None:
    """The facts' ``Body`` of the ``def`` of ``name`` for an instance of ``key`` (after class ``after`` in the MRO:
    ``super()``), with the class that defines it."""
    found = sm.graph.def_of(key, name, after)
    if found is None:
        return None
    e, m = found
    mf = sm.graph.module(e.module)
    b = mf.bodies.get(e.qualname, {}).get(name) if mf is not None else None
    return (e, b) if b is not None and b.line == m.line else None


def _feed_text(idiom: CollectionIdiom, m: Mechanism, path: tuple[str, ...], attr: str | None = None) -> str:
    obj = ".".join(("self", *path))
    return f"{obj}.{attr or idiom.list_attrs[0]}" if m is Mechanism.LIST else f"{obj}.layers[i].{idiom.layer_flags[0]}"


def collection_effect(sm: Model, key: ClassKey, name: str, depth: int = 0,
                      after: ClassKey | None = None) -> Effect:
    """What ``key``'s ``name`` feeds on an engine that collects through lists or per-layer flags: every list
    write and flag set in its body and in the methods it calls on ``self`` and its sub-models (both arms of
    an ``if hasattr(...)``: a fallback branch feeds what it writes). Read from the facts' ``Body`` of each."""
    idiom = sm.engine.collection
    assert idiom is not None
    if depth > MAX_HOPS:
        return Effect("unknown", detail="delegation too deep")
    hit = body_of(sm, key, name, after)
    if hit is None:
        if sm.graph.member_origin(key, name) is None:
            return Effect("missing", detail=f"{key.name} has no {name}")
        return Effect("unknown", detail=f"{name} of {key.name} is not a method the tool can read")
    mowner, b = hit
    where = f"{mowner.name}.{name}"
    if b.empty:
        return Effect("stub", method_owner=mowner, line=b.line, detail=f"{where} has a stub body")
    me_ = b.self_name
    feeds: list[tuple[Mechanism, tuple[str, ...]]] = []
    first: tuple[tuple[Hop, ...], str, int] | None = None
    unknown = ""
    capture_flag = False

    def at(prefix: str) -> tuple[Hop, ...] | None:
        nonlocal unknown
        res = resolve_self_path(sm, key, (prefix.replace(me_, "self", 1)))
        if res is None or res[1]:
            unknown = unknown or f"{where} writes through {prefix}, an object the tool cannot follow"
            return None
        return res[0]

    lists, flags = idiom.list_attrs, idiom.layer_flags
    for kind, attr, recv, line in b.events:
        if kind == STORE:
            if attr in lists:
                hops = at(recv)
                if hops is not None:
                    feeds.append((Mechanism.LIST, tuple(h.attr for h in hops)))
                    first = first or (hops, attr, line)
            elif attr not in flags and attr == idiom.capture_flag and recv == me_:
                capture_flag = True
            continue
        if kind in (LAYER_STORE, LAYER_SETATTR):
            if attr in flags and (kind == LAYER_SETATTR or attr not in lists):
                hops = at(recv)
                if hops is not None:
                    feeds.append((Mechanism.FLAG, tuple(h.attr for h in hops)))
            continue
        if kind == SUPER_CALL:
            sub = collection_effect(sm, key, attr, depth + 1, after=mowner)
            hops = ()
        else:
            if recv == me_ and attr == name:
                continue
            res = resolve_self_path(sm, key, recv.replace(me_, "self", 1))
            if res is None or res[1]:
                continue  # a call on an object the tool cannot follow feeds nothing it can see
            hops = res[0]
            target = hops[-1].key if hops else key
            if sm.graph.member_origin(target, attr) is None:
                continue
            sub = collection_effect(sm, target, attr, depth + 1)
        pre = tuple(h.attr for h in hops)
        feeds.extend((m, pre + p) for m, p in sub.feeds)
        capture_flag = capture_flag or (sub.sets_capture_flag and not hops)
        if sub.kind == "writes" and first is None and sub.attr is not None:
            first = (hops + sub.hops, sub.attr, line)
    feeds = list(dict.fromkeys(feeds))
    if not feeds:
        detail = unknown or f"{where} writes no {' or '.join(idiom.list_attrs + idiom.layer_flags)}"
        return Effect("unknown", method_owner=mowner, line=b.line, detail=detail,
                      sets_capture_flag=capture_flag)
    hops, wattr = (first[0], first[1]) if first is not None else ((), None)
    wrote = ", ".join(_feed_text(idiom, m, p, wattr) for m, p in feeds)
    return Effect("writes", hops, wattr, mowner, b.line, f"{where} writes {wrote}",
                  feeds=tuple(feeds), sets_capture_flag=capture_flag)


def flag_feeder(sm: Model, key: ClassKey) -> str | None:
    """A method of ``key`` that takes a list of layer ids and sets the per-layer flags of its own layers (SGLang's
    ``set_dflash_layers_to_capture`` on a flag-reading decoder): what a setter feeding the flags can call."""
    idiom = sm.engine.collection
    if idiom is None:
        return None
    for e in sm.graph.mro(key).entries:
        cf = sm.graph.class_facts(e) if isinstance(e, ClassKey) else None
        for m in (cf.members.values() if cf is not None else ()):
            if m.kind != "def" or not any(a in m.name for a in idiom.list_attrs):
                continue
            hit = body_of(sm, key, m.name)
            if hit is None or hit[1].nargs != 2 or hit[1].ndefaults:
                continue
            if Mechanism.FLAG in collection_effect(sm, key, m.name).fed(()):
                return m.name
    return None


def sibling_setter(sm: Model, key: ClassKey, own: Owner, reads: frozenset[Mechanism]) -> str | None:
    """Another speculative algorithm's setter of ``key`` (SGLang's ``set_dflash_layers_to_capture``): one ids
    parameter, it sets the top-level capture flag and feeds, on the layer owner, a mechanism its forward reads,
    adding 1 to each id as the engine's setters do. An EAGLE-3 setter can hand it the ids."""
    idiom = sm.engine.collection
    name = setter_name(sm)
    if idiom is None:
        return None
    for e in sm.graph.mro(key).entries:
        cf = sm.graph.class_facts(e) if isinstance(e, ClassKey) else None
        for m in (cf.members.values() if cf is not None else ()):
            if m.kind != "def" or m.name == name or not any(a in m.name for a in idiom.list_attrs):
                continue
            hit = body_of(sm, key, m.name)
            if hit is None or hit[1].nargs != 2:
                continue
            eff = collection_effect(sm, key, m.name)
            plus_one = hit[1].adds_one and hit[1].param_used
            if eff.sets_capture_flag and eff.fed(own.path) & reads and plus_one:
                return m.name
    return None


# -- the fallback getter ------------------------------------------------------------------------
@dataclass(frozen=True)
class GetterState:
    kind: str  # ok | missing | stub | broken-default | broken-delegate | unknown
    origin: ClassKey | None = None
    line: int = 0
    detail: str = ""
    from_protocol: bool = False


def getter_state(sm: Model, key: ClassKey, name: str, depth: int = 0) -> GetterState:
    if depth > MAX_HOPS:
        return GetterState("unknown")
    if sm.graph.member_origin(key, name) is None:
        return GetterState("missing", detail=f"{key.name} has no {name}")
    hit = method_of(sm, key, name)
    if hit is None:
        return GetterState("unknown", detail=f"{name} is not a plain method")
    mowner, md = hit
    proto = is_protocol_method(sm, mowner)
    if md.stub:
        return GetterState("stub", mowner, md.line, f"{mowner.name}.{name} has a stub body that returns None", proto)
    if proto:
        return default_getter_state(sm, key, mowner, md.line)
    for kind_, text, _line in md.returns:
        head = text.split("(", 1)[0].strip()
        if kind_ == "call" and head.startswith("self.") and head.count(".") >= 2:
            prefix, meth = head.rsplit(".", 1)
            res = resolve_self_path(sm, key, prefix)
            if res is None or res[1] or not res[0]:
                continue
            target = res[0][-1].key
            sub = getter_state(sm, target, meth, depth + 1)
            if sub.kind in ("missing", "stub", "broken-default", "broken-delegate"):
                return GetterState("broken-delegate", mowner, md.line,
                                   f"{mowner.name}.{name} returns {head}(), and {sub.detail}")
    return GetterState("ok", mowner, md.line, f"{mowner.name}.{name} returns a value")


def default_getter_state(sm: Model, key: ClassKey, mowner: ClassKey | None = None, line: int = 0) -> GetterState:
    """What the contract's default getter body would return for ``key`` (whether or not it inherits it yet)."""
    kind, hops, how = default_holder(sm, key)
    if kind == "unknown":
        return GetterState("unknown", mowner, line, how, True)
    holder = hops[-1].key if hops else key
    if kind == "no-holder":
        return GetterState("broken-default", mowner, line, f"the contract's default getter {how}", True)
    if assigns_layers(sm, holder) is None:
        if sm.graph.member_origin(holder, "layers") is not None or _opaque(sm, holder):
            return GetterState("unknown", mowner, line, f"{how}.layers may come from a base the tool cannot read", True)
        return GetterState("broken-default", mowner, line,
                           f"the contract's default getter reads {how}.layers, which {holder.name} never sets", True)
    return GetterState("ok", mowner, line, f"the contract's default body reads {how}.layers", True)


def _opaque(sm: Model, key: ClassKey) -> bool:
    """A base outside the tree other than torch's ``nn.Module`` could define anything."""
    for r in sm.graph.external_bases(key):
        if r.kind != "external" or not (
            r.name.startswith("torch.") or r.name.startswith("builtins.") or r.name.startswith("typing.")
        ):
            return True
    return False


def stale_getters(sm: Model, key: ClassKey) -> list[tuple[ClassKey, str, int]]:
    """Getter-shaped methods in the MRO that the runner of this tree never calls."""
    live = set(getter_names(sm)) | set(sm.contract.required)
    out: list[tuple[ClassKey, str, int]] = []
    shadowed: set[str] = set()
    for e in sm.graph.mro(key).entries:
        if not isinstance(e, ClassKey) or is_interface_class(sm, e):
            continue
        cf = sm.graph.class_facts(e)
        if cf is None:
            continue
        for name, m in cf.members.items():
            if m.kind == "def" and looks_like_getter(name) and name not in live and name not in shadowed:
                shadowed.add(name)
                out.append((e, name, m.line))
    return out


# -- the layer owner's forward ------------------------------------------------------------------------
@dataclass(frozen=True)
class Forward:
    owner: ClassKey  # the class that defines the forward in effect
    method: Method
    attrs_read: frozenset[str]  # attributes compared with a layer index
    collects: bool
    returns_aux: bool
    line: int
    # Engines with a ``CollectionIdiom``: the mechanisms the loop reads (a list attribute, a per-layer flag).
    mechanisms: frozenset[Mechanism] = frozenset()


def forward_of(sm: Model, key: ClassKey) -> Forward | None:
    hit = method_of(sm, key, "forward")
    if hit is None:
        return None
    fowner, md = hit
    if md.stub:
        return None
    attrs: set[str] = set()
    collects = False
    methods: list[Method] = [md]
    # One level of helpers the forward calls on ``self`` (``self._forward_layers(...)``).
    for f, _args, _line in md.calls:
        if f.startswith("self.") and f.count(".") == 1 and f[5:] != "forward":
            h = method_of(sm, key, f[5:])
            if h is not None and not is_interface_class(sm, h[0]):
                methods.append(h[1])
    collector = sm.contract.mixin_collector
    for m in methods:
        for r in m.reads:
            # The forward uses the configured layers some way the tool does not model (a
            # comprehension, a keyword argument to the layer): it collects, as far as we can tell.
            if r.startswith("self.") and r.count(".") == 1 and "aux" in r and "layer" in r:
                attrs.add(r[5:])
                collects = True
        for left, container, _line in m.memberships:
            if (
                container.startswith("self.")
                and container.count(".") == 1
                and ("aux" in container or "layer" in container)
                and not left.startswith(("'", '"'))
            ):
                attrs.add(container[5:])
                collects = True
        for lp in m.loops:
            for u in lp.uses:
                if u.kind is UseKind.IN and u.target.startswith("self."):
                    attrs.add(u.target[5:])
                    collects = True
        for f, _args, _line in m.calls:
            last = f.rsplit(".", 1)[-1]
            if f.startswith("self.") and (last == collector or (collector is None and "maybe_add" in last)):
                collects = True
                h = method_of(sm, key, last)
                if h is not None:
                    for _l, container, _ln in h[1].memberships:
                        if container.startswith("self."):
                            attrs.add(container[5:])
    # A tuple return that names a list the forward appends to hands back what it collected, whatever the list is
    # called (ToyServe's ``return h, taps``, tests/test_toy_engine.py); otherwise the engines' own "aux" names.
    appended = {f[: -len(".append")] for f, _a, _l in md.calls if f.endswith(".append") and f.count(".") == 1}
    returns_aux = any(_hands_back_aux(text) or kind == "tuple" and bool(appended & {p.strip() for p in text.split(",")})
                      for kind, text, _l in md.returns)
    if not returns_aux:
        for m in methods[1:]:
            if any(_hands_back_aux(text) for _k, text, _l in m.returns) and any(
                text.startswith(f"self.{m.name}(") for _k, text, _l in md.returns
            ):
                returns_aux = True
    mechanisms: frozenset[Mechanism] = frozenset()
    idiom = sm.engine.collection
    if idiom is not None:
        mechanisms = _read_mechanisms(sm, key, [m.name for m in methods], attrs, idiom)
        collects = bool(mechanisms)
    return Forward(fowner, md, frozenset(attrs), collects, returns_aux, md.line, mechanisms)


def _hands_back_aux(text: str) -> bool:
    """A ``return`` that hands aux states to the runner. A non-last rank's ``return IntermediateTensors({...,
    **self.pack_local_aux_hidden_states(aux)})`` relays them to the next rank (vLLM 0.33.0 qwen2.py:436-443): the
    runner on the last rank gets them only from a return of their own (qwen2.py:447-449)."""
    return "aux" in text and not text.lstrip().startswith("IntermediateTensors(")


def _read_mechanisms(sm: Model, key: ClassKey, names: list[str], attrs: set[str],
                     idiom: CollectionIdiom) -> frozenset[Mechanism]:
    """The mechanisms a forward (and the helpers it calls) reads: a list attribute it compares the index with,
    or a per-layer flag (``getattr(layer, "<flag>", False)``, ``layer.<flag>``), from the facts' ``Body`` of each."""
    out: set[Mechanism] = set()
    attrs = set(attrs)
    flags = set(idiom.layer_flags)
    todo = [body_of(sm, key, name) for name in names]
    seen = 0
    while todo and seen <= MAX_HOPS + len(names):
        hit = todo.pop(0)
        seen += 1
        if hit is None:
            continue
        if flags.intersection(hit[1].loaded):
            out.add(Mechanism.FLAG)
        for kind, meth, _recv, _line in hit[1].events:
            if kind == SUPER_CALL:
                # ``super().forward(...)``: the base's loop runs too (Qwen4ExpVLModel over Qwen4ExpModel).
                base = body_of(sm, key, meth, after=hit[0])
                if base is not None:
                    todo.append(base)
                    attrs |= set(base[1].in_self)
    if attrs & set(idiom.list_attrs):
        out.add(Mechanism.LIST)
    return frozenset(out)


def attr_initialised(sm: Model, key: ClassKey, attr: str) -> bool:
    """``attr`` is assigned in some init of the MRO or has a class-level value (the mixin's default)."""
    for e in sm.graph.mro(key).entries:
        if not isinstance(e, ClassKey):
            continue
        cf = sm.graph.class_facts(e)
        if cf is None:
            continue
        m = cf.members.get(attr)
        if m is not None and m.kind in ("assign", "annassign"):
            return True
        for md in cf.methods.values():
            if "init" in md.name and any(sa.target == f"self.{attr}" for sa in md.self_assigns):
                return True
    return False


# -- the class that declares (part of) the contract ----------------------------------------------------
def direct_protocol_base(sm: Model, key: ClassKey) -> bool:
    pk = protocol_key(sm)
    if pk is None:
        return False
    return any(r.kind == "class" and r.key == pk for r in sm.graph.bases(key))


def claimer(sm: Model, key: ClassKey) -> ClassKey:
    """The most derived class of the MRO that inherits the Protocol directly or sets the marker by hand."""
    marker = sm.contract.marker
    for e in sm.graph.mro(key).entries:
        if not isinstance(e, ClassKey) or is_interface_class(sm, e):
            continue
        if direct_protocol_base(sm, e):
            return e
        cf = sm.graph.class_facts(e)
        if marker and cf is not None and marker in cf.members and cf.members[marker].kind != "annotation":
            return e
    return key


def class_location(sm: Model, key: ClassKey) -> Location | None:
    cf = sm.graph.class_facts(key)
    if cf is None:
        return None
    return Location(sm.graph.path_of(key), cf.line, cf.col)


def method_location(sm: Model, key: ClassKey, line: int) -> Location:
    return Location(sm.graph.path_of(key), line, 0)


def facts(sm: Model, key: ClassKey) -> ClassFacts | None:
    return sm.graph.class_facts(key)



# -- the model default aux ids ----------------------------------------------------------------------------
def same_default(sm: Model, key: ClassKey, a: str, b: str) -> bool | None:
    """Whether methods ``a`` and ``b`` of ``key`` return the same default aux ids (evaluated for 32 and 61 layers):
    None when either cannot be evaluated from the tree (it delegates to an inner model the checkpoint chooses).

    Cached in the facts store under the hashes of every file the evaluation can read (the MROs of the class
    and of the models it reaches), because each evaluation parses whole model files.
    """
    files = sorted({sm.graph.path_of(e) for k in reached(sm, key)
                    for e in sm.graph.mro(k).entries if isinstance(e, ClassKey)})

    def compute(_src: Any) -> bool | None:
        for n in (32, 61):
            x, y = default_ids(sm, key, n, None, name=a)[0], default_ids(sm, key, n, None, name=b)[0]
            if x is None or y is None:
                return None
            if tuple(x) != tuple(y):
                return False
        return True

    return sm.memo.get(f"same-default:{key}:{a}:{b}",
                        lambda: sm.store.memo(f"same-default-3:{key}:{a}:{b}", (), files, compute))


def default_ids(sm: Model, key: ClassKey, n: int, tcfg: dict[str, Any] | None, depth: int = 0,
                name: str | None = None) -> tuple[tuple[Any, ...] | None, Where | None, str]:
    site = sm.runner.primary
    fallback = name or (site.fallback if site else None) or sm.contract.default_getter
    if not fallback:
        return None, None, "the runner calls no default method"
    if depth > MAX_HOPS:
        return None, None, "delegation too deep"
    hit = sm.graph.method(key, fallback)
    if hit is None:
        origin = sm.graph.member_origin(key, fallback)
        if origin is None:
            return None, None, f"{key.name} has no {fallback}()"
        path = sm.graph.path_of(origin[0])
        return None, Where(path, origin[1].line), f"{origin[0].name}.{fallback} is not a method the tool can read"
    mowner, md = hit
    path = sm.graph.path_of(mowner)
    where = Where(path, md.line, f"{mowner.name}.{fallback}")  # type: ignore[attr-defined]  # md: a MethodDef
    if getattr(md, "stub", False):
        return None, where, f"{mowner.name}.{fallback}() has a stub body: it returns None, so there is no default"
    tree = read_module(sm, path)
    fnode = me.function_at(tree, md.line) if tree is not None else None  # type: ignore[attr-defined]  # md: a MethodDef
    if fnode is None:
        return None, where, "cannot read the method body"
    full = me.ConfigView(tcfg or {}, "target_config")
    text = me.ConfigView(text_config(tcfg) or {}, "target_text_config")
    dels = {d.attr: d for d in delegations(sm, key) if d.target is not None}
    nested: list[str] = []

    def attr(p: tuple[str, ...]) -> Any:
        last = p[-1]
        if last in ("text_config", "hf_text_config"):
            return text
        if last in ("config", "hf_config") and len(p) == 2:
            return full if tcfg and text.data is not full.data and "num_hidden_layers" not in full.data else text
        if last == "num_hidden_layers":
            return n
        return me.NOTHING

    def length(p: tuple[str, ...]) -> Any:
        return n if p[-1] == "layers" else me.NOTHING

    def call(p: tuple[str, ...], _a: list[Any], _k: dict[str, Any]) -> Any:
        # ``self.language_model.get_eagle3_..._layers()``: the inner model's own default.
        if len(p) == 3 and p[0] == fnode.args.args[0].arg and p[1] in dels and "layers" in p[2]:
            inner = dels[p[1]].target
            assert inner is not None
            ids, w, why = default_ids(sm, inner, n, tcfg, depth + 1, p[2])
            nested.append(f"delegates to {inner.name}.{p[2]}()" + (f" at {w.path}:{w.line}" if w else ""))
            if ids is None:
                raise me.Unsupported(f"inner default unknown: {why}")
            return ids
        return me.NOTHING

    interp = me.Interpreter(me.World(attr=attr, length=length, call=call), strict=True)
    env = me.ModuleEnv.of(tree, path) if tree is not None else None
    assert env is not None
    try:
        res = interp.call(me.FuncValue(fnode, env), [me.Opaque((fnode.args.args[0].arg,))])
    except me.EvalRaise as exc:
        return None, where, f"{where.text}() raises: {exc.kind}: {exc.message}"
    except me.Unsupported as exc:
        return None, where, f"{where.text}() could not be evaluated ({exc})"
    if isinstance(res, (list, tuple)) and all(isinstance(x, int) for x in res):
        return tuple(res), where, "; ".join(nested)
    return None, where, f"{where.text}() returned {res!r}"



# -- loops over the layers (the facts' ``Loop`` records: read here and nowhere else) ----------------------------
def layer_loops(md: Method) -> list[Loop]:
    """``md``'s loops over the decoder layers that name an index and a layer: ``for i, layer in
    enumerate(<layers>[, start=...])`` (either order with ``islice``, a slice bound to a local first), and
    ``for i in range(a, b): layer = self.layers[i]`` (or ``self.layers[i](...)`` called in place)."""
    return [lp for lp in md.loops if lp.over_layers and lp.index_var and (
        lp.form is LoopForm.ENUMERATE and lp.layer_var or lp.form is LoopForm.RANGE)]


def slice_relative_loops(md: Method) -> list[Loop]:
    """``md``'s loops whose index the body does not rebind and that walk layers from a start other than 0:
    enumerate loops over a slice with a start (any sequence), whose index is slice-relative or absolute by
    ``start=``, and ``range(<start>, ...)`` loops over the layers, whose index is absolute (EGL005 asks about all:
    a relative index, or an absolute one rebased by ``- <start>``, where it meets the aux ids)."""
    return [lp for lp in md.loops if not lp.rebinds and (
        lp.form is LoopForm.ENUMERATE and lp.sliced and lp.slice_lower is not None
        or lp.form is LoopForm.RANGE and lp.over_layers and lp.start_norm is not None)]


def rebased_start(lp: Loop) -> str | None:
    """The start a loop's index already counts from, where subtracting it again (``Loop.rebased``) rebases an
    absolute layer id: enumerate's ``start=`` when it is the slice's own start, ``range``'s first argument; None
    when the index is slice-relative (or counts from anything else)."""
    if lp.form is LoopForm.RANGE:
        return lp.start_norm
    return lp.slice_lower if lp.start_text is not None and lp.start_norm == lp.slice_lower else None


def index_walk(lp: Loop) -> str:
    """How ``lp`` walks the layers and numbers them, for a message: ``enumerates X without start=``, ``enumerates X
    with start=S``, ``loops i over range(S, E) into X``."""
    if lp.form is LoopForm.RANGE:
        return f"loops {lp.index_var} over range({lp.lower}{', ' + lp.upper if lp.upper else ''}) into {lp.iter_text}"
    start = rebased_start(lp)
    return f"enumerates {lp.iter_text} " + (f"with start={start}" if start is not None else "without start=")


def enumerate_headers(md: Method) -> list[tuple[str, bool, int]]:
    """``md``'s enumerate loops over the layers as a trace shows them: (header, index is slice-relative, line)."""
    out: list[tuple[str, bool, int]] = []
    for lp in md.loops:
        if lp.form is not LoopForm.ENUMERATE or "layers" not in lp.iter_text:
            continue
        head = f"enumerate({lp.iter_text}" + (f", start={lp.start_text})" if lp.start_text else ")")
        if not lp.sliced and lp.lower is not None:  # islice(enumerate(self.layers), start, end)
            head = f"islice({head}, {lp.lower}" + (f", {lp.upper})" if lp.upper else ")")
        out.append((f"for {lp.index_var}, ... in {head}", bool(lp.sliced) and not lp.start_text, lp.line))
    return out


def _meets_aux(sm: Model, membership: bool, target: str) -> bool:
    """A loop index tested for membership in ``target`` (``membership``), or handed to a call of ``target``, meets
    aux-layer ids: an aux or hidden-state attribute or collector, the engine's own list of layers to capture
    (SGLang's ``layers_to_capture``), or the contract's collector (``_maybe_add_hidden_state``). The one answer for
    a loop's ``Use`` (EGL005) and its ``Site`` (which loop captures)."""
    low = target.lower()
    if not target:
        return False
    if "aux" in low or "hidden_state" in low:
        return True
    tail = target.rsplit(".", 1)[-1]
    if membership:
        idiom = sm.engine.collection
        return idiom is not None and tail in idiom.list_attrs
    return tail == sm.contract.mixin_collector


def aux_uses(sm: Model, loop: Loop, uses: tuple[Use, ...]) -> list[tuple[Use, str]]:
    """The uses among ``uses`` (``loop.uses`` or ``loop.rebased``) that meet aux-layer ids, each with a short text
    (EGL005's slice-relative index)."""
    out: list[tuple[Use, str]] = []
    for u in uses:
        if u.kind not in (UseKind.IN, UseKind.CALL) or not _meets_aux(sm, u.kind is UseKind.IN, u.target):
            continue
        arg = u.text or loop.index_var + (
            f" + {u.offset}" if u.offset > 0 else f" - {-u.offset}" if u.offset < 0 else ""
        )
        out.append((u, f"{arg} in {u.target} (line {u.line})" if u.kind is UseKind.IN
                    else f"{u.target}(..., {arg}, ...) (line {u.line})"))
    return out


def loop_at(md: Method, line: int) -> Loop | None:
    return next((lp for lp in md.loops if lp.line == line), None)


def _is_ids(site: Site, lists: tuple[str, ...]) -> bool:
    """The container of ``site`` holds aux-layer ids: an aux attribute, or the engine's list of layers to capture."""
    return "aux" in site.target or (bool(lists) and site.name.rsplit(".", 1)[-1] in lists)


def _is_collector(name: str, collectors: tuple[str, ...]) -> bool:
    last = name.rsplit(".", 1)[-1]
    return last in collectors or "hidden_state" in last


def _lists(sm: Model) -> tuple[str, ...]:
    idiom = sm.engine.collection
    return idiom.list_attrs if idiom is not None else ()


def capture_loop(sm: Model, md: Method) -> Loop | None:
    """The loop over the layers that collects: every loop counts (a prefill and a decode branch each have one),
    the first that meets the aux ids, else the first."""
    loops = layer_loops(md)
    return next((lp for lp in loops if any(st.kind in (SiteKind.MEMBER, SiteKind.CALL) and _meets_aux(
        sm, st.kind is SiteKind.MEMBER, st.name or st.target) for st in lp.sites)), loops[0] if loops else None)


def rewrite_loop(sm: Model, key: ClassKey) -> Loop | None:
    """The loop a fix rewrites into a collecting one in ``key``'s own ``forward`` (the one ``capture`` reads, or a
    plain ``for layer in <layers>``), or None when that forward has none."""
    cf = sm.graph.class_facts(key)
    md = cf.methods.get("forward") if cf is not None else None
    if md is None:
        return None
    lp = capture_loop(sm, md)
    if lp is not None:
        return lp
    return next((lp for lp in md.loops if lp.over_layers and lp.layer_var and lp.form is LoopForm.PLAIN), None)


def capture(sm: Model, key: ClassKey) -> Capture | None:
    """How the decoder that owns ``key``'s layers collects (``owner``), or None when no class owns them."""
    lo = owner(sm, key)
    return None if lo is None else capture_in(sm, key, lo.key)


def capture_in(sm: Model, key: ClassKey, decoder: ClassKey) -> Capture:
    """How ``decoder``'s forward collects for the top-level class ``key`` (whose setter may sort the ids): the one
    reading of capture points, for the layer owner (``capture``) and for the object an engine's setter feeds."""
    hit = method_of(sm, decoder, "forward")
    if hit is None:
        return Capture(decoder, sm.graph.path_of(decoder), 0, note=f"{decoder.name} has no forward the tool can read")
    mowner, md = hit
    loop = capture_loop(sm, md)
    for _ in range(MAX_HOPS):
        # ``return super().forward(...)`` (SGLang 0.5.23's Qwen4ExpVLModel over Qwen4ExpModel): the base's loop runs.
        base = _base_method(sm, decoder, "forward", mowner) if loop is None and any(
            f == "super().forward" for f, _a, _l in md.calls) else None
        if base is None:
            break
        mowner, md = base
        loop = capture_loop(sm, md)
    path = sm.graph.path_of(mowner)
    cap = Capture(decoder, path, md.line)
    collectors = tuple(x for x in (sm.contract.mixin_collector,) if x)
    if loop is None:
        plain = any(lp.over_layers and lp.form is LoopForm.PLAIN for lp in md.loops)
        cap.note = "the loop over the layers has no index" if plain else "no loop over the layers in forward"
        _unread(sm, cap, decoder)
        return cap
    idiom = sm.engine.collection
    lists = _lists(sm)
    cap.absolute = loop.base is IndexBase.ABSOLUTE
    cap.loop_line = loop.line
    sites: list[tuple[str, int, int]] = []
    flag_sites: list[tuple[str, int, int]] = []
    flags = idiom.layer_flags if idiom is not None else ()
    aux_attr = None
    pre: list[tuple[str, int, int]] = []
    post: list[tuple[str, int, int]] = []
    for st in loop.sites:
        pos = "before" if st.before else "after"
        if st.kind is SiteKind.ATTR and st.target in flags:
            flag_sites.append((pos, 0, st.line))
        elif st.kind is SiteKind.MEMBER and _is_ids(st, lists):
            sites.append((pos, st.offset, st.line))
            cap.idiom = "explicit"
            aux_attr = st.name
            # ``h + residual`` while ``residual = None`` before the first layer: id 0 raises TypeError.
            if st.none_line:
                cap.residual_none_at_start = True
                cap.residual_line = st.none_line
        elif st.kind is SiteKind.CALL and _is_collector(st.target, collectors):
            sites.append((pos, st.offset, st.line))
            cap.idiom = "mixin"
        elif st.kind is SiteKind.PRE and _is_collector(st.target, collectors):
            # Collector calls before the loop with the first index: the state entering layer start (= 0 on rank 0).
            pre.append(("pre-loop", 0, st.line))
        elif st.kind is SiteKind.POST and _is_ids(st, lists):
            post.append(("post-loop", 0, st.line))
    sites += pre + post
    cap.sites = tuple(sites)
    cap.flag_sites = tuple(flag_sites)
    shifts = {off if pos == "before" else off - 1 for pos, off, _ in sites if pos in ("before", "after")}
    # shift s: id k captures the state entering layer k - s ... normalise to "k -> k + shift".
    norm = {-s for s in shifts}
    cap.shift = norm.pop() if len(norm) == 1 else None
    if not sites:
        cap.note = "the layer loop compares no index with aux ids"
        fw = forward_of(sm, decoder) if idiom is not None else None
        if fw is not None and Mechanism.FLAG in fw.mechanisms:
            cap.note = "the layer loop collects through per-layer flags set by the setter, not by comparing its index"
        _unread(sm, cap, decoder)
    # Does anything depend on the order of the configured ids?
    if aux_attr:
        for name, line in md.iterates:
            if name == aux_attr:
                cap.order_dependent = True
                cap.order_why = f"forward iterates {aux_attr} (line {line}): states come out in the ids' order"
    if cap.order_dependent:
        sorts = _setter_sorts(sm, key, decoder)
        if sorts is not None:
            cap.order_dependent = False
            cap.order_why = f"{cap.order_why}, but {sorts} stores them sorted, so their configured order is irrelevant"
    if cap.idiom == "mixin" or (aux_attr is None and sites):
        cap.order_why = cap.order_why or "collection tests membership layer by layer: states come out in layer order"
    elif aux_attr and not cap.order_why:
        cap.order_why = f"collection tests {aux_attr} membership layer by layer: states come out in layer order"
    # Pipeline relay of states captured on earlier ranks.
    flag = sm.contract.pp_flag
    if flag:
        m = sm.graph.member_origin(decoder, flag)
        cap.relays_pp = bool(m and m[1].value == "True")
        cap.relay_why = (f"{decoder.name}.{flag} = True" if cap.relays_pp else
                         f"{decoder.name} does not set {flag} = True")
    else:
        returns = [text for kind, text, _l in md.returns if "IntermediateTensors" in text]
        if returns:
            cap.relays_pp = any("aux" in t for t in returns)
            cap.relay_why = ("forward passes aux states to the next rank in IntermediateTensors" if cap.relays_pp else
                             "forward returns IntermediateTensors without the aux states on non-last ranks")
    return cap


def _unread(sm: Model, cap: Capture, decoder: ClassKey) -> None:
    """No capture point in the layer loop, yet the forward reads the configured layers (as EGL004 reads it,
    ``forward_of``): it collects some way the tool does not follow (DeepseekV4Model in vLLM 0.33.0 fills a dict per
    layer in a helper, then picks ``aux_hidden_by_layer[i] for i in self.aux_hidden_state_layers``)."""
    if sm.engine.collection is not None:
        return  # an engine with a collection idiom: its mechanisms are the sites (flags, lists)
    fw = forward_of(sm, decoder)
    if fw is not None and fw.collects:
        cap.unread = True
        read = ", ".join(f"self.{a}" for a in sorted(fw.attrs_read)) or "the aux layers"
        cap.note = f"{cap.note}, but it reads {read}: it collects in a way the tool does not follow"


def _base_method(sm: Model, key: ClassKey, name: str, after: ClassKey) -> tuple[ClassKey, Method] | None:
    """The method ``name`` that ``super()`` reaches from class ``after`` for an instance of ``key``."""
    entries = [e for e in sm.graph.mro(key).entries if isinstance(e, ClassKey)]
    for e in entries[entries.index(after) + 1:] if after in entries else []:
        cf = sm.graph.class_facts(e)
        m = cf.members.get(name) if cf is not None else None
        if m is None or m.kind == "annotation":
            continue
        md = cf.methods.get(name) if cf is not None and m.kind == "def" else None
        return (e, md) if md is not None else None
    return None


def _setter_sorts(sm: Model, key: ClassKey, owner: ClassKey) -> str | None:
    """The setter that stores the ids, if it sorts them (``tuple(sorted(set(layers)))``), as ``Class.method``."""
    c = sm.contract
    cands: list[tuple[ClassKey, str]] = []
    if c.mixin and c.mixin_setter:
        mixin_key = ClassKey(c.module, c.mixin)
        if sm.graph.in_mro(owner, mixin_key):
            cands.append((mixin_key, c.mixin_setter))
    if c.setter:
        hit = sm.graph.method(key, c.setter)
        if hit is not None:
            cands.append((hit[0], c.setter))
    for cls, name in cands:
        # A method in the class body of a module-level class, the last ``def`` of that name (as at runtime).
        cf = sm.graph.class_facts(cls)
        hit = body_of(sm, cls, name) if cf is not None and cf.nested_in is None and "." not in cls.qualname else None
        if hit is not None and hit[0] == cls and hit[1].direct and not hit[1].is_async and hit[1].sorts:
            return f"{cls.name}.{name}()"
    return None


