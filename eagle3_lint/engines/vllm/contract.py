"""The ``SupportsEagle3`` contract of the tree being checked, read from its ``interfaces.py``.

Nothing here is version-keyed: the members, which have real default bodies, whether the check is
a structural ``isinstance`` over a ``@runtime_checkable`` Protocol or a flag lookup, and the mixin
the default bodies need are all read from the source. Releases without the Protocol (before
0.10.1) get an implicit contract: the methods their runner calls on the model.
"""

from __future__ import annotations

import ast

from eagle3_lint.contract import CheckKind, Contract, ContractMember
from eagle3_lint.facts import decode_source, dotted
from eagle3_lint.source import SourceTree

PROTOCOL_NAME = "SupportsEagle3"
CHECK_FUNCTION = "supports_eagle3"
INTERFACES_MODULE = "vllm.model_executor.models.interfaces"


def _stub(body: list[ast.stmt]) -> bool:
    for st in body:
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
            continue
        if isinstance(st, ast.Pass):
            continue
        if isinstance(st, ast.Raise) and "NotImplementedError" in ast.dump(st):
            continue
        return False
    return True


def _protocol_members(cls: ast.ClassDef, proto_name: str) -> list[ContractMember]:
    out: list[ContractMember] = []
    for st in cls.body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if st.name.startswith("__") and st.name.endswith("__"):
                continue
            params = tuple(a.arg for a in st.args.args)
            out.append(ContractMember(st.name, "method", proto_name, not _stub(st.body), params, st.lineno))
        elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
            ann = ast.dump(st.annotation)
            is_marker = (
                "ClassVar" in ann and "Literal" in ann and isinstance(st.value, ast.Constant) and st.value.value is True
            )
            out.append(ContractMember(st.target.id, "marker" if is_marker else "attribute", proto_name,
                                      st.value is not None, (), st.lineno))
        elif isinstance(st, ast.Assign):
            for t in st.targets:
                if isinstance(t, ast.Name) and not t.id.startswith("_"):
                    out.append(ContractMember(t.id, "attribute", proto_name, True, (), st.lineno))
    return out


def derive(source: SourceTree, runner_calls: tuple[str, ...] = ()) -> Contract:
    """Read the contract; ``runner_calls`` are model methods the runner calls, used when there is no Protocol."""
    rel = source.module_path(INTERFACES_MODULE)
    tree: ast.Module | None = None
    if rel is not None:
        try:
            tree = ast.parse(decode_source(source.read_bytes(rel)), filename=rel)
        except (OSError, SyntaxError, UnicodeError, ValueError, RecursionError):
            tree = None
    if tree is None or rel is None:  # no path, no tree
        return _duck(runner_calls, rel or "", "interfaces.py is missing or unreadable")
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == CHECK_FUNCTION]
    proto = classes.get(PROTOCOL_NAME)
    if proto is None:
        return _duck(runner_calls, rel, f"{PROTOCOL_NAME} is not defined in {rel}")

    decos = [dotted(d) for d in proto.decorator_list]
    runtime_checkable = any(d.endswith("runtime_checkable") for d in decos)

    # Members: the Protocol's own, then those of Protocol bases (SupportsEagleBase), depth first.
    members: list[ContractMember] = []
    bases: list[str] = []
    seen: set[str] = set()

    def collect(c: ast.ClassDef) -> None:
        if c.name in seen:
            return
        seen.add(c.name)
        for m in _protocol_members(c, c.name):
            if all(x.name != m.name for x in members):
                members.append(m)
        for b in c.bases:
            bn = dotted(b.value if isinstance(b, ast.Subscript) else b)
            if bn in classes:
                if c is proto:
                    bases.append(bn)
                collect(classes[bn])
            elif c is proto:
                bases.append(bn)

    collect(proto)

    check = CheckKind.UNKNOWN
    check_line = 0
    check_text = ""
    # The last definition wins over @overload stubs.
    impl = funcs[-1] if funcs else None
    if impl is not None:
        check_line = impl.lineno
        for n in ast.walk(impl):
            if isinstance(n, ast.Call) and dotted(n.func) == "isinstance" and len(n.args) == 2 \
                    and dotted(n.args[1]) == PROTOCOL_NAME:
                check = CheckKind.STRUCTURAL if runtime_checkable else CheckKind.UNKNOWN
                check_text = f"isinstance(model, {PROTOCOL_NAME})"
                break
            if isinstance(n, ast.Call) and dotted(n.func) == "getattr" and len(n.args) >= 2 \
                    and isinstance(n.args[1], ast.Constant):
                check = CheckKind.FLAG
                check_text = f"getattr(model, {n.args[1].value!r}, False)"
                break

    marker = next((m.name for m in members if m.kind == "marker" and m.protocol == PROTOCOL_NAME), None)
    own_methods = [m for m in members if m.kind == "method" and m.protocol == PROTOCOL_NAME]
    setter = next((m.name for m in own_methods if len(m.params) >= 2), None)
    getter = next((m.name for m in own_methods if len(m.params) == 1), None)

    # The default bodies name the holder mixin (isinstance(holder, Mixin)) and the attributes
    # they unwrap (get_language_model / language_model / model): read both from the bodies.
    mixin = None
    unwrap: list[str] = []
    for st in proto.body:
        if not isinstance(st, ast.FunctionDef) or _stub(st.body):
            continue
        for n in ast.walk(st):
            if isinstance(n, ast.Call) and dotted(n.func) == "isinstance" and len(n.args) == 2:
                cand = dotted(n.args[1])
                if cand in classes and cand != PROTOCOL_NAME:
                    mixin = cand
            if isinstance(n, ast.Call) and dotted(n.func) in ("hasattr", "getattr") and len(n.args) >= 2 \
                    and isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str) \
                    and n.args[1].value not in unwrap and n.args[1].value != "layers":
                unwrap.append(n.args[1].value)
    mixin_line = 0
    mixin_setter = mixin_collector = pp_flag = None
    if mixin is not None:
        mc = classes[mixin]
        mixin_line = mc.lineno
        for st in mc.body:
            if isinstance(st, ast.FunctionDef):
                params = [a.arg for a in st.args.args]
                if setter and st.name.endswith(setter) and st.name != setter:
                    mixin_setter = st.name
                if "maybe_add" in st.name or (len(params) >= 4 and "hidden" in st.name):
                    mixin_collector = st.name
            elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and "over_pp" in st.target.id:
                pp_flag = st.target.id
    return Contract(
        protocol=PROTOCOL_NAME, module=INTERFACES_MODULE, check_function=CHECK_FUNCTION,
        found=True, check=check, path=rel, line=proto.lineno, runtime_checkable=runtime_checkable,
        check_line=check_line, check_text=check_text, bases=tuple(bases), members=tuple(members),
        signatures=tuple((st.name, f"({ast.unparse(st.args)})"
                          + (f" -> {ast.unparse(st.returns)}" if st.returns is not None else ""))
                         for st in proto.body if isinstance(st, ast.FunctionDef)),
        marker=marker, setter=setter, default_getter=getter, mixin=mixin, mixin_line=mixin_line,
        mixin_setter=mixin_setter, mixin_collector=mixin_collector, unwrap_attrs=tuple(unwrap), pp_flag=pp_flag,
    )


def _duck(runner_calls: tuple[str, ...], path: str, why: str) -> Contract:
    members = tuple(ContractMember(n, "method", "(runner)", False) for n in runner_calls)
    setter = next((n for n in runner_calls if n.startswith("set")), None)
    getter = next((n for n in runner_calls if not n.startswith("set")), None)
    return Contract(
        protocol=PROTOCOL_NAME, module=INTERFACES_MODULE, check_function=CHECK_FUNCTION,
        found=False, check=CheckKind.DUCK if runner_calls else CheckKind.UNKNOWN, path=path, members=members,
        setter=setter, default_getter=getter,
        notes=(f"{why}; the runner calls the model's methods directly, so having them is the contract",),
    )
