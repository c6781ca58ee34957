"""The runtime-equivalent answer per architecture, with a status and an evidence chain.

``supports_eagle3`` follows the tree's own check: a structural ``isinstance`` over a
``@runtime_checkable`` Protocol needs every Protocol member to be an attribute of the class (an
annotation alone is not one), so methods without the class-level marker do not pass. A flag check
needs the marker to be truthy. With no Protocol (before 0.10.1), having the methods the runner
calls is what counts. Classes that cannot be resolved get ``None`` and a reason, never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

from eagle3_lint.contract import CheckKind, Contract
from eagle3_lint.graph import ClassGraph, ClassKey, Delegation, DelegationHow, Resolved
from eagle3_lint.model import Location, Status, Step, Verdict
from eagle3_lint.registry import Entry
from eagle3_lint.runner import RunnerPath


@dataclass(frozen=True)
class ClassCheck:
    supports: bool | None
    present: tuple[tuple[str, ClassKey, int], ...]  # member, origin, line
    missing: tuple[str, ...]
    reason: str
    own_present: tuple[str, ...]  # SupportsEagle3's own members present outside the Protocol itself


class Judge:
    def __init__(self, graph: ClassGraph, contract: Contract, runner: RunnerPath) -> None:
        self.graph = graph
        self.contract = contract
        self.runner = runner

    def protocol_key(self) -> ClassKey:
        return ClassKey(self.contract.module, self.contract.protocol)

    def is_protocol_class(self, key: ClassKey) -> bool:
        cf = self.graph.class_facts(key)
        return (
            key.module == self.contract.module
            and cf is not None
            and any(b.dotted.endswith("Protocol") for b in cf.bases)
        )

    def check_class(self, key: ClassKey) -> ClassCheck:
        return self.graph.queries.get(("check", key), lambda: self._check(key), persist=True)

    def _check(self, key: ClassKey) -> ClassCheck:
        c = self.contract
        if self.graph.class_facts(key) is None:
            return ClassCheck(None, (), (), f"class {key} not found in the tree", ())
        mro = self.graph.mro(key)
        present: list[tuple[str, ClassKey, int]] = []
        missing: list[str] = []
        own: list[str] = []
        for m in c.members:
            hit = self.graph.member_origin(key, m.name)
            if hit is None:
                missing.append(m.name)
            else:
                present.append((m.name, hit[0], hit[1].line))
                if m.protocol == c.protocol and not self.is_protocol_class(hit[0]):
                    own.append(m.name)
        unresolved = [e for e in mro.entries if isinstance(e, Resolved) and e.kind in ("unresolved", "dynamic")]
        if mro.error and "circular" in mro.error:
            return ClassCheck(
                None, tuple(present), tuple(missing), f"{mro.error}: Python cannot create this class", tuple(own)
            )
        if c.check is CheckKind.NONE:  # the method's runner asks nothing of the model (Engine.for_method)
            return ClassCheck(True, (), (), c.notes[0] if c.notes else "the runner asks the model nothing", ())
        if c.check in (CheckKind.STRUCTURAL, CheckKind.DUCK):
            if not c.members:
                return ClassCheck(None, (), (), "the contract has no members the tool could read", ())
            if not missing:
                return ClassCheck(True, tuple(present), (), "every contract member is present in the MRO", tuple(own))
            if c.one_of and present:  # the runner calls the one the class has
                return ClassCheck(True, tuple(present), (), f"{present[0][0]} is present in the MRO", tuple(own))
            if unresolved:
                names = ", ".join(e.name for e in unresolved[:3])
                return ClassCheck(
                    None,
                    tuple(present),
                    tuple(missing),
                    f"missing {', '.join(missing)} unless a base the tool cannot follow provides it ({names})",
                    tuple(own),
                )
            return ClassCheck(False, tuple(present), tuple(missing),
                              f"missing {(' or ' if c.one_of else ', ').join(missing)}", tuple(own))
        if c.check is CheckKind.FLAG:
            marker = c.marker or c.check_function
            hit = self.graph.member_origin(key, marker)
            if hit is not None and hit[1].value not in ("False", "None", "0"):
                return ClassCheck(True, tuple(present), tuple(missing), f"{marker} is set", tuple(own))
            return ClassCheck(False, tuple(present), tuple(missing), f"{marker} is not set", tuple(own))
        return ClassCheck(
            None,
            tuple(present),
            tuple(missing),
            "the tree's EAGLE-3 check has a shape the tool does not know",
            tuple(own),
        )

    # -- delegation -----------------------------------------------------------------------------
    def inner_supporting(
        self, key: ClassKey, depth: int = 0, seen: frozenset[ClassKey] = frozenset()
    ) -> list[tuple[Delegation, ClassKey]]:
        """Delegation targets (transitively) whose class passes the check."""
        if depth > 3 or key in seen:
            return []
        out: list[tuple[Delegation, ClassKey]] = []
        for d in self.graph.delegations(key):
            if d.target is None or d.target == key:
                continue
            if self.check_class(d.target).supports:
                out.append((d, d.target))
            else:
                out.extend(self.inner_supporting(d.target, depth + 1, seen | {key}))
        return out

    def model_delegations(self, key: ClassKey) -> list[Delegation]:
        """Delegations to other models: registered models, the language model, and classes named as such."""
        lm = self.graph.language_model_attrs(key)
        out = []
        for d in self.graph.delegations(key):
            if (
                d.how in (DelegationHow.REGISTERED_MODEL, DelegationHow.GETATTR)
                or d.attr in lm
                or d.attr in ("language_model", "model")
            ):
                out.append(d)
        return out

    # -- verdict --------------------------------------------------------------------------------
    def verdict(self, entry: Entry, key: ClassKey | None, resolve_note: str, registry_path: str) -> Verdict:
        ev: list[Step] = []
        site = self.runner.primary
        if self.contract.check is CheckKind.NONE:
            pass  # no call to name: the reason the check gives (the contract's first note) is the verdict's
        elif site is not None:
            call = (
                f"{self.contract.check_function}({site.interrogated})"
                if site.checked
                else f"{site.interrogated}.{site.setter}(...)"
            )
            ev.append(Step("runner", f"runner calls {call} in {site.function}()", Location(site.path, site.line)))
        ev.append(Step("registry", f"{entry.arch} -> {entry.module}.{entry.class_name}"
                       + (f" ({entry.note})" if entry.note else ""), Location(registry_path, entry.line)))
        if key is None:
            return Verdict(entry.arch, entry.module, entry.class_name, None, Status.UNKNOWN, resolve_note, tuple(ev))
        if key.module != entry.module or key.qualname != entry.class_name:
            ev.append(Step("resolve", f"{entry.module}.{entry.class_name} is {key}", self._loc(key)))
        chk = self.check_class(key)
        mro = self.graph.mro(key)
        names = [str(e) if isinstance(e, ClassKey) else f"<{e.kind}: {e.name}>" for e in mro.entries]
        ev.append(Step("class", f"class {key.name}", self._loc(key)))
        ev.append(Step("mro", " -> ".join(n.rsplit('.', 1)[-1] if not n.startswith('<') else n for n in names)
                       + (f" ({mro.error})" if mro.error else "")))
        for name, origin, line in chk.present:
            ev.append(Step("member", f"{name}: from {origin.name}", Location(self.graph.path_of(origin), line)))
        for name in chk.missing:
            ev.append(Step("member", f"{name}: missing from the MRO"))
        loc = self._loc(key)
        inner: list[str] = []
        if chk.supports:
            status = Status.SUPPORTED
        elif chk.supports is None:
            status = Status.UNKNOWN
        else:
            hits = self.inner_supporting(key)
            for d in self.model_delegations(key):
                ok = self.check_class(d.target).supports if d.target is not None else None
                tgt = d.target.name if d.target is not None else "?"
                ev.append(
                    Step(
                        "delegation",
                        f"{d.detail} -> {tgt}: "
                        + (
                            "supports the contract"
                            if ok
                            else "does not support the contract"
                            if ok is False
                            else "unknown"
                        ),
                        Location(d.path, d.line),
                    )
                )
            if hits:
                status = Status.WRAPPER_GAP
                inner = [str(t) for _d, t in hits]
            elif chk.own_present:
                status = Status.PARTIAL
            else:
                status = Status.UNSUPPORTED
        for d in self.model_delegations(key):
            if d.target is not None and str(d.target) not in inner:
                inner.append(str(d.target))
        reason = chk.reason
        if status is Status.WRAPPER_GAP:
            inner_names = ", ".join(i.rsplit(".", 1)[-1] for i in inner)
            reason = (f"{reason}; the inner model it delegates to ({inner_names}) supports the contract, but the "
                      "runner asks the wrapper")
        elif not chk.supports:
            # ``init_vllm_registered_model(hf_config=config.text_config)`` with no architectures: the inner model is
            # whatever the checkpoint's sub-config names (resolved from --target-config when given).
            open_inner = [
                d for d in self.model_delegations(key) if d.target is None and d.how is DelegationHow.REGISTERED_MODEL
            ]
            if open_inner:
                d = open_inner[0]
                reason = (f"{reason}; its inner model (self.{d.attr}, {d.path}:{d.line}) is the architecture the "
                          "checkpoint's text_config names: it depends on the checkpoint (pass --target-config), and "
                          "serving it with EAGLE-3 needs that architecture to support the contract and this wrapper "
                          "to delegate to it")
        asked = self.contract.check_of(key.name) if self.contract.check is not CheckKind.NONE else "nothing asked"
        ev.append(Step("verdict", f"{asked} -> {chk.supports}: {reason}"))
        return Verdict(
            entry.arch, entry.module, entry.class_name, chk.supports, status, reason, tuple(ev), loc, tuple(inner)
        )

    def _loc(self, key: ClassKey) -> Location | None:
        cf = self.graph.class_facts(key)
        if cf is None:
            return None
        return Location(self.graph.path_of(key), cf.line, cf.col)
