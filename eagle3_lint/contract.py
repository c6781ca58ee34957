"""The engine's EAGLE-3 contract: what the runner requires of the top-level model class, as data.

Each engine derives it from the tree (``engines/<engine>/contract.py``): the members and whether they
have default bodies, how the runner decides (a structural ``isinstance``, a flag, or calling the
methods), the mixin default bodies need. Rules, verdicts and fixes read only this data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from eagle3_lint.model import Location


@dataclass(frozen=True)
class ContractMember:
    name: str
    kind: str  # method | marker | attribute
    protocol: str  # the Protocol class that declares it
    has_default: bool  # a method with a real body, or an attribute with a value
    params: tuple[str, ...] = ()
    line: int = 0


class CheckKind(str, Enum):
    """How the tree's ``supports_eagle3`` decides (the values are the report's ``contract.check``)."""

    STRUCTURAL = "structural"  # isinstance(model, SupportsEagle3) on a runtime-checkable Protocol
    FLAG = "flag"  # getattr(model, "supports_eagle3", False)
    DUCK = "duck"  # no Protocol: the runner calls the methods
    # Under the method checked (``--method``), the runner asks the top-level model nothing: no check, no setter, no
    # aux states (vLLM's EAGLE-1 ``eagle``); the first note says why, with where the tree decides it.
    NONE = "none"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Contract:
    found: bool
    check: CheckKind
    protocol: str = ""
    module: str = ""
    path: str = ""
    line: int = 0
    runtime_checkable: bool = False
    check_function: str = ""
    check_line: int = 0
    check_text: str = ""
    bases: tuple[str, ...] = ()
    members: tuple[ContractMember, ...] = ()
    # The Protocol's own (non-async) methods as ``(name, "(<parameters>) -> <return>")``, ``ast.unparse``'s text:
    # what a fix copies (fixgen.signature), so that nothing after the engine's derivation parses interfaces.py.
    signatures: tuple[tuple[str, str], ...] = ()
    marker: str | None = None
    setter: str | None = None
    default_getter: str | None = None
    mixin: str | None = None
    mixin_line: int = 0
    mixin_setter: str | None = None
    mixin_collector: str | None = None
    unwrap_attrs: tuple[str, ...] = ()
    pp_flag: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    # DUCK: the runner calls whichever member the class has, so one present passes (SGLang's DSPARK runner calls
    # set_dspark_layers_to_capture, else set_dflash_layers_to_capture); False: every member is required.
    one_of: bool = False
    # The speculative method whose runner this contract is (``--method``), "" for the engine's EAGLE-3 one: what
    # titles name the check by when its full name is too long (``short_check``).
    method: str = ""
    # The runner hands the setter a list of ids whatever the drafter config (SGLang's DFLASH and DSPARK, read from
    # the tree by ``engines/sglang/methods.ids_given``): a setter a fix writes has no ``None`` -> default branch.
    ids_always_given: bool = False

    def member(self, name: str) -> ContractMember | None:
        for m in self.members:
            if m.name == name:
                return m
        return None

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.members)

    @property
    def methods_have_defaults(self) -> bool:
        return any(m.kind == "method" and m.has_default for m in self.members)

    def check_of(self, subject: str) -> str:
        """The engine's check applied to ``subject``, as messages write it: the check function when the tree has
        one, else what calling the members amounts to (``hasattr(subject, 'set_eagle3_layers_to_capture')``)."""
        if self.check_function:
            return f"{self.check_function}({subject})"
        join = " or " if self.one_of else " and "
        return join.join(f"hasattr({subject}, {m!r})" for m in self.required) or f"the EAGLE-3 check of {subject}"

    @property
    def check_name(self) -> str:
        """The check, named in messages: ``supports_eagle3()``, or the runner's call of the methods it amounts to."""
        if self.check_function:
            return f"{self.check_function}()"
        join = " or " if self.one_of else ", "
        return f"the runner's {join.join(f'{m}()' for m in self.required)} check" if self.required else \
            "the engine's EAGLE-3 check"

    @property
    def label(self) -> str:
        """The method, as titles name it: ``DFLASH``, else ``EAGLE-3``."""
        return self.method or "EAGLE-3"

    @property
    def short_check(self) -> str:
        """The check in a few words, for a title that ``check_name`` makes too long: ``the DSPARK check``."""
        return f"the {self.label} check"

    def location(self) -> Location | None:
        return Location(self.path, self.line) if self.path else None
