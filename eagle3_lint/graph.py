"""The class graph: names resolved across modules, C3 MROs, and wrapper-to-inner delegation edges.

Modules are loaded lazily from the facts store, so a check touches the registry's classes and
what they reach, not the whole tree. Rules ask named questions (``mro``, ``member_origin``,
``delegations``, ``layer_owner``) and never see a parser node.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from eagle3_lint.facts import (
    ELSE,
    EXCEPT,
    IF,
    MAIN,
    TRY,
    TYPE_CHECKING,
    Binding,
    ClassFacts,
    Member,
    Method,
    ModuleFacts,
    branch_platforms,
)
from eagle3_lint.queries import Queries

# Which of several conditional bindings of one name the runtime picks: an unconditional binding or
# the branch the platform model decides is taken (facts.platform_test), else the final ``else`` of an
# if/elif dispatch, else the ``try`` side of an optional import.
_BRANCH_PREFERENCE = {MAIN: 0, ELSE: 1, TRY: 2, IF: 3, TYPE_CHECKING: 4, EXCEPT: 5}
_TAKEN, _SKIPPED = 0, 6  # a platform branch on the platform asked for, or on others


def branch_rank(branch: str, platform: str) -> int:
    """How much the runtime prefers a binding made under ``branch`` on ``platform`` (lower first)."""
    runs_on = branch_platforms(branch)
    if runs_on is not None:
        return _TAKEN if platform in runs_on else _SKIPPED
    return _BRANCH_PREFERENCE.get(branch, 9)
_MAX_DEPTH = 40
# Real vLLM class hierarchies are under 15 levels deep; this bounds recursion on generated ones.
_MAX_MRO_DEPTH = 60

BUILTIN_NAMES = frozenset({"object", "Exception", "dict", "list", "tuple", "int", "str", "type", "ValueError"})


@dataclass(frozen=True, order=True)
class ClassKey:
    """A class in the tree; ``binds`` substitutes a factory parameter (``cls``) with a class."""

    module: str
    qualname: str
    binds: tuple[tuple[str, ClassKey], ...] = ()

    def __str__(self) -> str:
        s = f"{self.module}.{self.qualname}"
        if self.binds:
            s += "[" + ", ".join(f"{p}={k.name}" for p, k in self.binds) + "]"
        return s

    @property
    def name(self) -> str:
        return (
            self.qualname.rsplit(".", 1)[-1]
            if not self.binds
            else f"{self.qualname.rsplit('.', 1)[-1]}({self.binds[0][1].name})"
        )


@dataclass(frozen=True)
class Resolved:
    """What a name stands for."""

    kind: str  # class | external | module | function | unresolved | dynamic
    key: ClassKey | None = None
    name: str = ""  # external dotted name, module name, function "module:name", or the reason
    note: str = ""


class DelegationHow(str, Enum):
    """How a wrapper holds its inner model."""

    INIT_ASSIGN = "init-assign"  # self.x = Cls(...) in __init__
    REGISTERED_MODEL = "registered-model"  # self.x = <engine's registered-model helper>(...)
    GETATTR = "__getattr__"  # attribute lookups forward to self.x


@dataclass(frozen=True)
class Delegation:
    attr: str  # the attribute on the wrapper: "language_model", "model"
    how: DelegationHow
    target: ClassKey | None
    detail: str
    path: str
    line: int
    # A registered-model helper's candidates: the architectures it names, or that the target config's sub-config
    # names; the registry builds one of them (semantic.broken_on_path follows those whose module does not load).
    archs: tuple[str, ...] = ()


@dataclass
class MroResult:
    entries: list[ClassKey | Resolved]  # in-tree classes, or external/unresolved bases
    error: str | None = None


@dataclass
class ClassGraph:
    loader: Callable[[str], ModuleFacts | None]
    registered: Callable[[str], ClassKey | None] = lambda _arch: None
    # A registered-model helper called with ``hf_config=config.text_config`` builds whatever the checkpoint's
    # sub-config names: (class, hf_config expression) -> those architectures, from --target-config.
    checkpoint_archs: Callable[[ClassKey, str], tuple[str, ...]] = lambda _key, _expr: ()
    # The engine's top-level package: a missing module under it is unresolved (not in this tree), not external.
    package: str = ""
    # The engine's functions that build an inner model from the registry by architecture (engine.Engine).
    registered_model_helpers: tuple[str, ...] = ()
    # The analysis' memo (queries.py): MROs and delegations are kept between runs with the files they read.
    queries: Queries = field(default_factory=Queries)
    # The platform (--platform) a platform dispatch in the tree is resolved for (facts.PLATFORMS).
    platform: str = "cuda"
    _resolving: set[tuple[str, str]] = field(default_factory=set)
    _mro_depth: int = 0

    # -- facts -----------------------------------------------------------------------------------
    def module(self, name: str) -> ModuleFacts | None:
        return self.loader(name)

    def class_facts(self, key: ClassKey) -> ClassFacts | None:
        mf = self.loader(key.module)
        if mf is None:
            return None
        return mf.classes.get(key.qualname)

    def def_of(self, key: ClassKey, name: str, after: ClassKey | None = None) -> tuple[ClassKey, Member] | None:
        """The member ``name`` resolves to for an instance of ``key`` (after class ``after`` in the MRO:
        ``super()``) with the class that holds it, when it is a ``def``; None when the name is unbound there or the
        first binding of it in the MRO is not a ``def``. Annotations alone bind nothing."""
        entries = [e for e in self.mro(key).entries if isinstance(e, ClassKey)]
        if after is not None:
            entries = entries[entries.index(after) + 1:] if after in entries else []
        for e in entries:
            cf = self.class_facts(e)
            m = cf.members.get(name) if cf is not None else None
            if m is None or m.kind == "annotation":
                continue
            return (e, m) if m.kind == "def" else None
        return None

    def path_of(self, key: ClassKey) -> str:
        mf = self.loader(key.module)
        return mf.path if mf else key.module.replace(".", "/") + ".py"

    # -- name resolution ---------------------------------------------------------------------------
    def _pick(self, bindings: list[Binding]) -> Binding:
        return min(enumerate(bindings), key=lambda ib: (branch_rank(ib[1].branch, self.platform), -ib[0]))[1]

    def resolve_name(self, module: str, name: str, depth: int = 0,
                     binds: tuple[tuple[str, ClassKey], ...] = ()) -> Resolved:
        for p, k in binds:
            if p == name:
                return Resolved("class", k)
        mf = self.loader(module)
        if mf is None:
            return Resolved("unresolved", name=f"module {module} not found")
        if depth > _MAX_DEPTH or (module, name) in self._resolving:
            return Resolved("unresolved", name=f"circular or too deep import of {name} in {module}")
        self._resolving.add((module, name))
        try:
            bl = mf.bindings.get(name)
            if bl:
                return self._from_binding(mf, name, self._pick(bl), depth, binds)
            for star in mf.star_imports:
                smf = self.loader(star)
                if smf is not None and (name in smf.bindings or smf.star_imports):
                    r = self.resolve_name(star, name, depth + 1)
                    if r.kind != "unresolved":
                        return r
                elif smf is None and not self._in_package(star):
                    return Resolved("external", name=f"{star}.{name}", note="via star import")
            if name in BUILTIN_NAMES:
                return Resolved("external", name=f"builtins.{name}")
            # ``import a.b`` binds ``a``; a submodule of this package is reachable as an attribute.
            if mf.is_package and self.loader(f"{module}.{name}") is not None:
                return Resolved("module", name=f"{module}.{name}")
            return Resolved("unresolved", name=f"name {name!r} is not bound in {module}")
        finally:
            self._resolving.discard((module, name))

    def _from_binding(self, mf: ModuleFacts, name: str, b: Binding, depth: int,
                      binds: tuple[tuple[str, ClassKey], ...]) -> Resolved:
        if b.kind == "class":
            return Resolved("class", ClassKey(mf.module, b.target))
        if b.kind == "function":
            return Resolved("function", name=f"{mf.module}:{b.target}")
        if b.kind == "import":
            if b.attr is None:
                if self.loader(b.target) is not None:
                    return Resolved("module", name=b.target)
                return self._missing_or_external(b.target)
            if self.loader(b.target) is not None:
                r = self.resolve_name(b.target, b.attr, depth + 1)
                if r.kind == "unresolved" and self.loader(f"{b.target}.{b.attr}") is not None:
                    return Resolved("module", name=f"{b.target}.{b.attr}")
                return r
            if self.loader(f"{b.target}.{b.attr}") is not None:
                return Resolved("module", name=f"{b.target}.{b.attr}")
            return self._missing_or_external(f"{b.target}.{b.attr}")
        if b.kind == "alias":
            return self.resolve_dotted(mf.module, b.target, depth + 1, binds)
        if b.kind == "call":
            fn = self.resolve_dotted(mf.module, b.target, depth + 1, binds) if b.target else Resolved("unresolved")
            if fn.kind == "function" and b.args:
                arg = (
                    self.resolve_dotted(mf.module, b.args[0], depth + 1, binds) if b.args[0] else Resolved("unresolved")
                )
                prod = self.factory_product(fn.name, arg)
                if prod is not None:
                    return prod
            return Resolved("dynamic", name=f"{b.target}(...)", note="value made by a call the tool cannot follow")
        return Resolved("dynamic", name=name, note="bound to an expression the tool cannot follow")

    def _in_package(self, dotted_name: str) -> bool:
        return bool(self.package) and dotted_name.split(".")[0] == self.package

    def _missing_or_external(self, dotted_name: str) -> Resolved:
        if self._in_package(dotted_name):
            return Resolved("unresolved", name=f"{dotted_name} is not in this tree")
        return Resolved("external", name=dotted_name)

    def resolve_dotted(self, module: str, dotted_name: str, depth: int = 0,
                       binds: tuple[tuple[str, ClassKey], ...] = ()) -> Resolved:
        parts = dotted_name.split(".")
        return self._descend(self.resolve_name(module, parts[0], depth, binds), parts[1:], dotted_name, depth)

    def _descend(self, cur: Resolved, parts: list[str], dotted_name: str, depth: int) -> Resolved:
        """``cur.<parts>``: attributes of a module, an external name or a class, as ``resolve_dotted`` reads them."""
        for part in parts:
            if cur.kind == "module":
                sub = f"{cur.name}.{part}"
                r = self.resolve_name(cur.name, part, depth + 1)
                if r.kind == "unresolved" and self.loader(sub) is not None:
                    r = Resolved("module", name=sub)
                cur = r
            elif cur.kind == "external":
                cur = Resolved("external", name=f"{cur.name}.{part}")
            elif cur.kind == "class" and cur.key is not None:
                inner = ClassKey(cur.key.module, f"{cur.key.qualname}.{part}")
                if self.class_facts(inner) is not None:
                    cur = Resolved("class", inner)
                else:
                    return Resolved("dynamic", name=dotted_name, note="attribute of a class")
            else:
                return cur
        return cur

    def factory_product(self, fn_ref: str, arg: Resolved) -> Resolved | None:
        """A class made by a function such as ``as_seq_cls_model(cls)``: its nested class, with ``cls`` bound."""
        mod, _, fname = fn_ref.partition(":")
        mf = self.loader(mod)
        if mf is None or arg.kind != "class" or arg.key is None:
            return None
        ff = mf.functions.get(fname)
        if ff is None or not ff.params:
            return None
        param = ff.params[0]
        for ret in ff.returns:
            qn = f"{fname}.<locals>.{ret}"
            if qn in ff.nested_classes:
                return Resolved("class", ClassKey(mod, qn, ((param, arg.key),)))
        if param in ff.returns:
            return arg
        return None

    # -- bases and MRO -------------------------------------------------------------------------
    def _local(self, key: ClassKey, cf: ClassFacts, dotted_name: str) -> Resolved | None:
        """A name bound inside the factory function that defines this class (``ModelForPooling = f(cls)``)."""
        if cf.nested_in is None:
            return None
        mf = self.loader(key.module)
        ff = mf.functions.get(cf.nested_in) if mf else None
        head = dotted_name.split(".")[0]
        if ff is None or head not in ff.local_bindings or any(p == head for p, _k in key.binds):
            return None
        b = ff.local_bindings[head]
        if mf is None or "." in dotted_name:
            return None
        return self._from_binding(mf, head, b, 1, key.binds)

    def bases(self, key: ClassKey) -> list[Resolved]:
        cf = self.class_facts(key)
        if cf is None:
            return []
        out: list[Resolved] = []
        for b in cf.bases:
            local = self._local(key, cf, b.dotted) if b.dotted else None
            if local is not None:
                out.append(local)
            elif b.kind in ("name", "subscript") and b.dotted:
                out.append(self.resolve_dotted(key.module, b.dotted, binds=key.binds))
            elif b.kind == "call" and b.dotted:
                fn = self.resolve_dotted(key.module, b.dotted, binds=key.binds)
                prod = None
                if fn.kind == "function" and b.args and b.args[0]:
                    prod = self.factory_product(fn.name, self.resolve_dotted(key.module, b.args[0], binds=key.binds))
                out.append(prod or Resolved("dynamic", name=b.text, note="base made by a call the tool cannot follow"))
            else:
                out.append(Resolved("dynamic", name=b.text, note="base expression the tool cannot follow"))
        return out

    def mro(self, key: ClassKey) -> MroResult:
        hit = self.queries.hit(("mro", key))  # the common case, asked tens of thousands of times
        if hit is not None:
            return hit
        if self._mro_depth >= _MAX_MRO_DEPTH and not self.queries.has(("mro", key)):
            # A generated 5,000-class chain would otherwise hit RecursionError (and C3 is cubic on it).
            # Not cached: the same class reached from a shallower start gets its real MRO.
            return MroResult([key, Resolved("unresolved", name=f"bases of {key.qualname}",
                                            note=f"inheritance deeper than {_MAX_MRO_DEPTH} levels")],
                             error=f"inheritance deeper than {_MAX_MRO_DEPTH} levels; the tool stops there")
        self._mro_depth += 1
        try:
            # A class reached again while its own MRO is being worked out is circular inheritance.
            return self.queries.get(("mro", key), lambda: self._c3(key), persist=True,
                                    cycle=MroResult([key], error="circular inheritance"))
        finally:
            self._mro_depth -= 1

    def _c3(self, key: ClassKey) -> MroResult:
        seqs: list[list[ClassKey | Resolved]] = []
        direct: list[ClassKey | Resolved] = []
        error: str | None = None
        for b in self.bases(key):
            if b.kind == "class" and b.key is not None:
                if b.key == key:
                    error = "class inherits from itself"
                    continue
                sub = self.mro(b.key)
                if sub.error and not error:
                    error = sub.error
                seqs.append(list(sub.entries))
                direct.append(b.key)
            else:
                seqs.append([b])
                direct.append(b)
        seqs.append(list(direct))
        out: list[ClassKey | Resolved] = [key]
        seqs = [s for s in seqs if s]
        while seqs:
            for s in seqs:
                head = s[0]
                if not any(head in t[1:] for t in seqs):
                    break
            else:
                # No consistent order; Python would raise TypeError at class creation.
                error = error or "inconsistent MRO (no C3 linearization)"
                for s in seqs:
                    for e in s:
                        if e not in out:
                            out.append(e)
                break
            out.append(head)
            seqs = [[e for e in s if e != head] for s in seqs]
            seqs = [s for s in seqs if s]
        return MroResult(out, error)

    def member_origin(self, key: ClassKey, name: str, *, attribute_only: bool = True) -> tuple[ClassKey, Member] | None:
        """The first class in the MRO that defines ``name`` (an annotation alone defines no attribute)."""
        # Not kept between runs: cheap to recompute, and asked for thousands of times per check.
        return self.queries.get(("member", key, name, attribute_only),
                                lambda: self._member_origin(key, name, attribute_only))

    def _member_origin(self, key: ClassKey, name: str, attribute_only: bool) -> tuple[ClassKey, Member] | None:
        for e in self.mro(key).entries:
            if isinstance(e, ClassKey):
                cf = self.class_facts(e)
                if cf is None:
                    continue
                m = cf.members.get(name)
                if m is not None and (not attribute_only or m.kind != "annotation"):
                    return e, m
        return None

    def in_mro(self, key: ClassKey, target: ClassKey) -> bool:
        return target in self.mro(key).entries

    def external_bases(self, key: ClassKey) -> list[Resolved]:
        return [e for e in self.mro(key).entries if isinstance(e, Resolved)]

    def method(self, key: ClassKey, name: str) -> tuple[ClassKey, object] | None:
        """The ``Method`` detail of the first class in the MRO that defines ``name``."""
        for e in self.mro(key).entries:
            if isinstance(e, ClassKey):
                cf = self.class_facts(e)
                if cf is not None and name in cf.members:
                    md = cf.methods.get(name)
                    return (e, md) if md is not None else None
        return None

    # -- delegation ---------------------------------------------------------------------------
    def delegations(self, key: ClassKey) -> list[Delegation]:
        """Wrapper-to-inner edges: attributes that hold another model, from ``__init__``, ``get_language_model``
        and ``__getattr__``."""
        return self._delegations_and_lm(key)[0]

    def _delegations_and_lm(self, key: ClassKey) -> tuple[list[Delegation], frozenset[str]]:
        """The delegations and the attributes ``get_language_model`` returns, found in one walk of the MRO."""
        return self.queries.get(("delegations", key), lambda: self._delegations(key), persist=True)

    def _delegations(self, key: ClassKey) -> tuple[list[Delegation], frozenset[str]]:
        out: list[Delegation] = []
        seen: set[str] = set()
        lm_attrs: set[str] = set()
        for e in self.mro(key).entries:
            if not isinstance(e, ClassKey):
                continue
            cf = self.class_facts(e)
            if cf is None:
                continue
            path = self.path_of(e)
            glm = cf.methods.get("get_language_model")
            if glm is not None:
                for _kind, text, _line in glm.returns:
                    if text.startswith("self.") and text.count(".") == 1:
                        lm_attrs.add(text[5:])
            ga = cf.methods.get("__getattr__")
            if ga is not None:
                for f, args, line in ga.calls:
                    if f == "getattr" and args and args[0].startswith("self.") and args[0].count(".") == 1:
                        attr = args[0][5:]
                        if attr not in seen:
                            out.append(
                                Delegation(
                                    attr, DelegationHow.GETATTR, None, "attribute lookups forward here", path, line
                                )
                            )
            init = cf.methods.get("__init__")
            if init is None:
                continue
            mine: set[str] = set()  # attributes this class's __init__ assigns a model to
            for sa in init.self_assigns:
                attr = sa.target[5:] if sa.target.startswith("self.") else ""
                if not attr or "." in attr or (attr in seen and attr not in mine):
                    continue
                d = self._delegation_from_assign(e, attr, sa, path, key)
                if d is None:
                    continue
                if attr in mine:
                    # Assigned again in the same ``__init__`` (under branches the checkpoint config picks:
                    # ``self.model = DeepseekV3ForCausalLM(...)`` / ``DeepseekForCausalLM(...)``): the
                    # attribute may hold any of them; the first stays first.
                    if d.target is not None and all(o.target != d.target for o in out if o.attr == attr):
                        out.append(d)
                    continue
                seen.add(attr)
                mine.add(attr)
                out.append(d)
        # Attach targets to __getattr__ edges and mark the get_language_model attribute.
        by_attr: dict[str, Delegation] = {}
        for d in out:
            if d.target is not None:
                by_attr.setdefault(d.attr, d)
        result: list[Delegation] = []
        for d in out:
            if d.how is DelegationHow.GETATTR and d.attr in by_attr:
                t = by_attr[d.attr]
                d = Delegation(d.attr, DelegationHow.GETATTR, t.target, d.detail, d.path, d.line)
            result.append(d)
        return result, frozenset(lm_attrs)

    def language_model_attrs(self, key: ClassKey) -> frozenset[str]:
        return self._delegations_and_lm(key)[1]

    def _delegation_from_assign(self, owner: ClassKey, attr: str, sa: object, path: str,
                                top: ClassKey | None = None) -> Delegation | None:
        from eagle3_lint.facts import SelfAssign

        assert isinstance(sa, SelfAssign)
        if sa.value_kind != "call" or not sa.func:
            return None
        if sa.func.startswith("self.") and sa.func.count(".") == 1:
            # ``self.model = self.model_cls(...)`` with ``model_cls = DeepseekV2Model`` on the class.
            hit = self.member_origin(owner, sa.func[5:])
            fn = Resolved("dynamic", name=sa.func)
            if hit is not None and hit[1].alias:
                fn = self.resolve_dotted(hit[0].module, hit[1].alias, binds=hit[0].binds)
            elif hit is not None and hit[1].kind == "def":
                # ``self.model = self._init_model(...)`` whose body returns ``LlamaModel(...)``.
                cf = self.class_facts(hit[0])
                md = cf.methods.get(sa.func[5:]) if cf else None
                for kind, text, _line in (md.returns if md else ()):
                    head = text.split("(", 1)[0].strip()
                    if kind == "call" and head:
                        r = self.resolve_dotted(hit[0].module, head, binds=hit[0].binds)
                        if r.kind == "class":
                            fn = r
                            break
        else:
            fn = self._resolve_in_init(owner, sa.func)
            if fn.kind != "class" and "." not in sa.func:
                held = self._parameter_default(owner, top or owner, sa.func)
                if held is not None:
                    key, holder, expr = held
                    return Delegation(attr, DelegationHow.INIT_ASSIGN, key,
                                      f"self.{attr} = {sa.func}(...) with {sa.func}={expr} (default in {holder.name})",
                                      path, sa.line)
        cls_arg = sa.kwargs.get("model_class")
        if fn.kind != "class" and cls_arg:
            # ``initialize_model(vllm_config=..., model_class=Llama4ForCausalLM)``: the class is the argument.
            r = self.resolve_dotted(owner.module, cls_arg, binds=owner.binds)
            if r.kind == "class" and r.key is not None:
                return Delegation(
                    attr,
                    DelegationHow.INIT_ASSIGN,
                    r.key,
                    f"self.{attr} = {sa.func}(model_class={cls_arg})",
                    path,
                    sa.line,
                )
        if fn.kind == "class" and fn.key is not None:
            return Delegation(attr, DelegationHow.INIT_ASSIGN, fn.key, f"self.{attr} = {sa.func}(...)", path, sa.line)
        helper = next((h for h in self.registered_model_helpers if sa.func.endswith(h) or (
            fn.kind == "function" and fn.name.endswith(f":{h}"))), None)
        if helper is not None:
            archs = sa.kwargs.get("architectures", "")
            names = [a.strip().strip("'\"") for a in archs.strip("[]()").split(",") if a.strip()]
            hf = sa.kwargs.get("hf_config", "")
            candidates = tuple(names) or (self.checkpoint_archs(top or owner, hf) if hf else ())
            for arch in names:
                k = self.registered(arch)
                if k is not None:
                    return Delegation(
                        attr,
                        DelegationHow.REGISTERED_MODEL,
                        k,
                        f"self.{attr} = {helper}(architectures=[{arch!r}])",
                        path,
                        sa.line,
                        candidates,
                    )
            for arch in (candidates if hf and not names else ()):
                k = self.registered(arch)
                if k is not None:
                    return Delegation(attr, DelegationHow.REGISTERED_MODEL, k,
                                      f"self.{attr} = {helper}(hf_config={hf}): {arch} "
                                      "from the target config", path, sa.line, candidates)
            return Delegation(
                attr,
                DelegationHow.REGISTERED_MODEL,
                None,
                f"self.{attr} = {helper}(...): architecture chosen by the checkpoint config",
                path,
                sa.line,
                candidates,
            )
        return None

    def _resolve_in_init(self, owner: ClassKey, dotted_name: str) -> Resolved:
        """``dotted_name`` as ``owner.__init__`` sees it: a name the body imports itself (``from ..llama4 import
        Llama4ForCausalLM`` inside ``__init__``) is local to the whole function and wins over the module's."""
        cf = self.class_facts(owner)
        init = cf.methods.get("__init__") if cf is not None else None
        head, *rest = dotted_name.split(".")
        local = next((b for name, b in init.local_imports if name == head), None) if init is not None else None
        mf = self.loader(owner.module) if local is not None else None
        if local is None or mf is None:
            return self.resolve_dotted(owner.module, dotted_name, binds=owner.binds)
        return self._descend(self._from_binding(mf, head, local, 1, owner.binds), rest, dotted_name, 1)

    def _parameter_default(self, owner: ClassKey, top: ClassKey, param: str) -> tuple[ClassKey, ClassKey, str] | None:
        """The class an ``__init__`` parameter of ``owner`` holds by default (``self.model = param(...)``): the
        default of the most derived ``__init__`` in ``top``'s MRO that declares one, since subclasses pass theirs
        up through ``super().__init__(..., param)``. (class, the class whose default it is, the default as written)."""
        cf = self.class_facts(owner)
        init = cf.methods.get("__init__") if cf else None
        if init is None or param not in init.params:
            return None
        for holder in self.mro(top).entries:
            if not isinstance(holder, ClassKey):
                continue
            hcf = self.class_facts(holder)
            hinit = hcf.methods.get("__init__") if hcf else None
            expr = dict(hinit.defaults).get(param) if hinit else None
            if expr is None:
                continue
            r = self.resolve_dotted(holder.module, expr, binds=holder.binds)
            return (r.key, holder, expr) if r.kind == "class" and r.key is not None else None
        return None

    # -- where the decoder layers live ----------------------------------------------------------
    def assigns_attr(self, key: ClassKey, attr: str) -> tuple[ClassKey, int] | None:
        """Where ``self.<attr>`` is assigned for an instance of ``key``: (the class whose code holds the
        line, the line). In the first ``__init__`` of the MRO that assigns it, itself or in a method it
        calls as ``self.m(...)`` (MiniCPM's ``_init_layers``), looked up from ``key`` as Python
        dispatches it, two calls deep at most."""
        for e in self.mro(key).entries:
            if isinstance(e, ClassKey):
                cf = self.class_facts(e)
                init = cf.methods.get("__init__") if cf else None
                if init is not None:
                    hit = self._assign_line(key, e, init, f"self.{attr}", 2, {"__init__"})
                    if hit is not None:
                        return hit
        return None

    def _assign_line(self, key: ClassKey, cls: ClassKey, md: Method, target: str, depth: int,
                     seen: set[str]) -> tuple[ClassKey, int] | None:
        for sa in md.self_assigns:
            if sa.target == target:
                return cls, sa.line
        if depth == 0:
            return None
        for func, _args, _line in md.calls:
            name = func[5:] if func.startswith("self.") else ""
            if not name or "." in name or name in seen:
                continue
            seen.add(name)
            hit = self.method(key, name)
            if hit is not None and isinstance(hit[1], Method):
                found = self._assign_line(key, hit[0], hit[1], target, depth - 1, seen)
                if found is not None:
                    return found
        return None
