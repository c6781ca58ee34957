"""Fix text for the interface-side rules: imports, bases, methods and aux-state collection loops.

Everything follows the contract of the tree being fixed (its ``Flavor``): the method names the
runner of that version calls, the signatures its Protocol declares, stub-era explicit bodies
(``self.model.aux_hidden_state_layers = layers``) where the Protocol's bodies are stubs, and the
mixin idiom (``EagleModelMixin`` + ``self._maybe_add_hidden_state(...)``) where the contract has
real default bodies that need a mixin holder.

Edits are pure insertions wherever possible (a base appended after the last base, a name put at its
sorted place in an existing import, a method appended at the end of the class), so fixes from several
rules for the same class merge instead of conflicting: identical insertions at one place are merged by
``fixes.apply_edits``. Where the file's formatter would re-wrap a line the edit would overflow (ruff at
88 columns, yapf at 80 in vLLM before 0.11.1), the wrap is written as ruff or yapf would write it, by
separator replacements every fix shares. Text the tree already has an idiom for is written in that
idiom: the empty aux-layer attribute as its decoders start it (``init_idiom``), setters as its own.
Every builder returns ``[]`` when there is nothing to do, which is what makes a second ``--fix`` empty.
Generated loops always index layers absolutely (``enumerate(..., start=<slice start>)``), never
slice-relatively.

The file text is read through ``sm.read_text``; every position and node shape comes from the facts pass
(``facts.py``: the classes' first statements and bases, the methods' headers and last statements, the layer loops'
bodies, the module-level imports) or, for the engine's own files, from what the engine derived (the Protocol's
signatures, the config gates' lists): nothing here parses, imports or executes the tree.
"""

from __future__ import annotations

import re
import sys
import textwrap
from dataclasses import dataclass
from functools import cached_property
from itertools import pairwise
from typing import TYPE_CHECKING

from eagle3_lint.facts import FIX_INDEX_NAMES, IndexBase, LoopForm
from eagle3_lint.graph import ClassKey
from eagle3_lint.model import Edit
from eagle3_lint.queries import query

if TYPE_CHECKING:
    from eagle3_lint.facts import BaseRef, ClassFacts, Header, ImportStmt, Loop, ModuleFacts
    from eagle3_lint.runner import Gate, GateEdit
    from eagle3_lint.stages import Model

# A position as the facts record it: (line, column in characters).
Pos = tuple[int, int]

# The default layer choice of every stub-era in-tree override and of the 0.18+ default body:
# early, middle and late layers.
DEFAULT_LAYERS_EXPR = "(2, num_layers // 2, num_layers - 3)"
# Signatures used when the tree has no Protocol to copy them from (before 0.10.1).
_FALLBACK_SIGNATURES = {"setter": "self, layers: tuple[int, ...]", "setter_ret": "None",
                        "getter": "self", "getter_ret": "tuple[int, ...]"}
AUX_LIST = "aux_hidden_states"
# vLLM formats with ruff at 88 columns; generated lines that would be longer are wrapped the way
# the formatter would (or, for imports, given a line of their own) so a patch reads like upstream's.
LINE_LIMIT = 88
# Before ruff, vLLM formatted with yapf at 80 columns, aligning continuation lines with the parenthesis.
YAPF_LINE_LIMIT = 80
# A line that opens a parenthesis, goes on after it and breaks after a comma: yapf's hanging indent, which
# black and ruff never leave (vLLM 0.11.0's qwen2_vl.py has 52 such lines, 0.16.0's none).
_HANGING = re.compile(r"^[^#\n]*\(\w[^()#\n]*,$", re.M)


@dataclass(frozen=True)
class Flavor:
    """The analysed version's contract, as far as fix text is concerned."""

    protocol: str | None  # None: no Protocol (duck-typed runner), so no base to add
    module: str  # where the Protocol and the mixin live
    setter: str | None
    getter: str | None  # the name the runner falls back to
    defaults: bool  # the Protocol's methods have real bodies
    mixin: str | None
    mixin_setter: str | None
    collector: str | None
    mixin_attr: str | None  # the attribute the mixin's collector compares with


def flavor(sm: Model) -> Flavor:
    return sm.memo.get("fixgen-flavor", lambda: _flavor(sm))


def _flavor(sm: Model) -> Flavor:
    from eagle3_lint import semantic as sem

    c = sm.contract
    getters = sem.getter_names(sm)
    mixin_attr = None
    mk = sem.mixin_key(sm)
    if mk is not None and c.mixin_collector:
        hit = sm.graph.method(mk, c.mixin_collector)
        if hit is not None:
            for _left, container, _line in hit[1].memberships:  # type: ignore[attr-defined]  # md: a MethodDef
                if container.startswith("self."):
                    mixin_attr = container[5:]
    return Flavor(
        protocol=c.protocol if c.found else None, module=c.module, setter=sem.setter_name(sm),
        getter=getters[0] if getters else None, defaults=c.methods_have_defaults,
        mixin=c.mixin, mixin_setter=c.mixin_setter, collector=c.mixin_collector, mixin_attr=mixin_attr,
    )


# -- file text ------------------------------------------------------------------------------------
class Text:
    """One file's text; the positions handed in (from the facts) and out are in characters."""

    def __init__(self, rel: str, text: str) -> None:
        self.rel = rel
        self.text = text
        self.lines = text.splitlines()

    @cached_property
    def hanging(self) -> bool:
        """Formatted by yapf (vLLM before 0.11.1): continuation lines align with the opening parenthesis
        (``from .utils import (AutoWeightsLoader,``)."""
        return len(_HANGING.findall(self.text, 0, 200_000)) >= 2

    @property
    def limit(self) -> int:
        return YAPF_LINE_LIMIT if self.hanging else LINE_LIMIT

    def line(self, n: int) -> str:
        return self.lines[n - 1] if 0 < n <= len(self.lines) else ""

    def seg(self, l0: int, c0: int, l1: int, c1: int) -> str:
        """The text from (l0, c0) to (l1, c1)."""
        if l0 == l1:
            return self.line(l0)[c0:c1]
        return "\n".join([self.line(l0)[c0:], *self.lines[l0:l1 - 1], self.line(l1)[:c1]])

    def indent(self, line: int) -> str:
        raw = self.line(line)
        return raw[: len(raw) - len(raw.lstrip())]

    def eol(self, line: int) -> tuple[int, int]:
        return line, len(self.line(line))


def text_of(sm: Model, rel: str) -> Text | None:
    """The file's text (read once per analysis)."""
    cache: dict[str, Text | None] = sm.memo.get("fixgen-texts", dict)
    sm.queries.note(rel)  # read once per analysis: whoever asks now read that file too
    if rel not in cache:
        try:
            cache[rel] = Text(rel, sm.read_text(rel))
        except (OSError, UnicodeError, LookupError, SyntaxError):
            cache[rel] = None
    return cache[rel]


def code_len(line: str) -> int:
    """Length of a line without its trailing comment (quotes are tracked, escapes are not needed here)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return len(line[:i].rstrip())
    return len(line.rstrip())


def insert(path: str, pos: tuple[int, int], text: str) -> Edit:
    return Edit(path, pos[0], pos[1], pos[0], pos[1], text)


def _class_ctx(sm: Model, key: ClassKey) -> tuple[str, Text, ClassFacts] | None:
    """The class's file, text and facts."""
    cf = sm.graph.class_facts(key)
    if cf is None or cf.first is None:
        return None
    rel = sm.graph.path_of(key)
    t = text_of(sm, rel)
    if t is None:
        return None
    return rel, t, cf


# -- imports --------------------------------------------------------------------------------------
def import_name(sm: Model, rel: str, module: str, name: str) -> list[Edit]:
    """Make ``name`` (from ``module``) bound at module level in ``rel``: extend an existing import, else add one."""
    return import_names(sm, rel, module, (name,))


def import_names(sm: Model, rel: str, module: str, names: tuple[str, ...]) -> list[Edit]:
    """Make ``names`` (from ``module``) bound at module level in ``rel``, as isort/ruff would write it.

    Each name joins an existing ``from <module> import`` at its sorted place (one edit per name, so two
    fixes adding the same name merge, and adding different names to one statement both apply); a one-line
    import that would overflow becomes the parenthesised one-name-per-line form ruff gives it. Without an
    import from the module, one new statement goes into its import section (standard library, or the
    file's relative imports of sibling modules), at its sorted place."""
    mf = sm.store.load_path(rel)
    if mf is None or mf.error:
        return []
    missing = [n for n in dict.fromkeys(names)
               if not any(b.branch in ("", "try", "else") for b in mf.bindings.get(n, []))]
    if not missing:
        return []
    t = text_of(sm, rel)
    if t is None:
        return []
    for st in mf.imports:
        if st.is_from and not any(a[0] == "*" for a in st.names) and st.target == module:
            return [e for n in missing for e in _extend_import(t, rel, st, n)]
    return _new_import(t, rel, mf, module, missing)


def _natural(s: str) -> list[str | int]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", s)]


def member_key(name: str) -> tuple[int, list[str | int], list[str | int]]:
    """The order isort and ruff give the names of one ``from`` import (order-by-type, case-insensitive,
    natural): CONSTANTS, then Classes, then everything else."""
    kind = 0 if len(name) > 1 and name.isupper() else 1 if name[:1].isupper() else 2
    return kind, _natural(name.lower()), _natural(name)


def _start(a: tuple[str, str, int, int, int, int]) -> Pos:
    return a[2], a[3]


def _end(a: tuple[str, str, int, int, int, int]) -> Pos:
    return a[4], a[5]


def _extend_import(t: Text, rel: str, st: ImportStmt, name: str) -> list[Edit]:
    """``name`` added to the import ``st``: at its sorted place when the names are sorted (else last)."""
    names = st.names
    keys = [member_key(a[0]) for a in names]
    k = len(names)
    if keys == sorted(keys):
        k = next((i for i, key in enumerate(keys) if key > member_key(name)), len(names))
    first, last = names[0], names[-1]
    ln0, ln1 = st.line, st.end_line
    if ln0 == ln1:
        end = _end(last)
        if code_len(t.line(ln0)) + len(name) + 2 <= t.limit:
            if k < len(names):
                return [insert(rel, _start(names[k]), f"{name}, ")]
            return [insert(rel, end, f", {name}")]
        if t.line(ln0)[end[1]:].strip():
            # ``import (a, b)`` or a trailing comment: a line of its own rather than a guessed layout.
            spec = "." * st.level + (st.module or "")
            return [insert(rel, t.eol(ln0), f"\nfrom {spec} import {name}")]
        if t.hanging:
            # yapf's form: parenthesised, the names filling each line and continuing under the first one. One
            # replacement of the names, so a second name for this import in the same run is a counted conflict.
            col = _start(first)[1] + 1
            return [Edit(rel, *_start(first), *end, "(" + _reflow(t, names, k, name, col) + ")")]
        # Too long for one line: the parenthesised form, one name per line, as ruff formats it. Pure insertions
        # and separator replacements that every fix adding a name here shares, so several names merge.
        ind = t.indent(ln0) + "    "
        edits = [insert(rel, _start(first), f"(\n{ind}")]
        edits += [Edit(rel, *_end(a), *_start(b), f",\n{ind}") for a, b in pairwise(names)]
        if k < len(names):
            edits.append(insert(rel, _start(names[k]), f"{name},\n{ind}"))
        else:
            edits.append(insert(rel, end, f",\n{ind}{name}"))
        edits.append(Edit(rel, ln0, len(t.line(ln0)), ln0 + 1, 0, f",\n{t.indent(ln0)})\n"))
        return edits
    one_per_line = all(t.line(a[2]).strip().rstrip(",") == (a[1] or a[0]) for a in names) \
        and len({a[2] for a in names}) == len(names) and first[2] > ln0
    if one_per_line:
        if k < len(names):
            return [insert(rel, (names[k][2], 0), f"{t.indent(names[k][2])}{name},\n")]
        end = _end(last)
        after = t.line(end[0])[end[1]:]
        if after.lstrip().startswith(","):
            return [insert(rel, (end[0], end[1] + after.index(",") + 1), f"\n{t.indent(end[0])}{name},")]
        return [insert(rel, end, f",\n{t.indent(end[0])}{name}")]
    # Several names a line (the hanging indent of yapf-era releases): in place if the line still fits, else
    # the names filled again from the first one (one replacement), or appended when the file's order is its own.
    if k < len(names) and code_len(t.line(names[k][2])) + len(name) + 2 <= t.limit:
        return [insert(rel, _start(names[k]), f"{name}, ")]
    if k < len(names) and t.hanging and first[2] == ln0 and t.line(ln0)[_start(first)[1] - 1:].startswith("("):
        return [Edit(rel, *_start(first), *_end(last), _reflow(t, names, k, name, _start(first)[1]))]
    end = _end(last)
    if code_len(t.line(end[0])) + len(name) + 2 <= t.limit:
        return [insert(rel, end, f", {name}")]
    cont = t.indent(end[0]) if last[2] > ln0 else " " * _start(first)[1]
    return [insert(rel, end, f",\n{cont}{name}")]


def _reflow(t: Text, names: tuple[tuple[str, str, int, int, int, int], ...], k: int, name: str, col: int) -> str:
    """The names of an import with ``name`` at index ``k``, filling lines of ``t.limit`` columns from column ``col``
    on, continuation lines under the first name (yapf's and isort's hanging grid), from the first name on."""
    ordered = [a[1] or a[0] for a in names]
    ordered.insert(k, name)
    rows = [" " * col + ordered[0]]
    for item in ordered[1:]:
        if len(rows[-1]) + len(item) + 3 > t.limit:  # ", " before it, and "," or ")" after
            rows[-1] += ","
            rows.append(" " * col + item)
        else:
            rows[-1] += ", " + item
    return "\n".join(rows)[col:]


def _module_key(level: int, module: str) -> tuple[int, list[str | int]]:
    return -level, _natural(module.lower())


def _new_import(t: Text, rel: str, mf: ModuleFacts, module: str, names: list[str]) -> list[Edit]:
    """One new ``from <module> import <names>`` statement in its section, at its sorted place."""
    spec, level = module, 0
    package = mf.module if mf.is_package else mf.module.rpartition(".")[0]
    top = mf.imports
    stdlib = module.split(".")[0] in sys.stdlib_module_names
    if not stdlib and package and module.startswith(package + ".") \
            and any(st.is_from and st.level == 1 for st in top):
        # The file imports its siblings relatively (``from .utils import ...``): so does the fix.
        spec, level = "." + module[len(package) + 1:], 1
    text = f"from {spec} import {', '.join(sorted(names, key=member_key))}"

    def same_section(st: ImportStmt) -> bool:
        if st.is_from and st.level:
            return level > 0
        top_name = (st.module or "").split(".")[0]
        if top_name == "__future__" or level:
            return False
        return (top_name in sys.stdlib_module_names) == stdlib and (stdlib or top_name == module.split(".")[0])

    section = [st for st in top if same_section(st)]
    froms = [st for st in section if st.is_from]
    me = _module_key(level, module)
    after = next((st for st in froms if _module_key(st.level, st.module or "") > me), None)
    if after is not None:
        # Above the first ``from`` import that sorts after it (its comments stay with it).
        return [insert(rel, (after.line, 0), f"{t.indent(after.line)}{text}\n")]
    if section:
        st = froms[-1] if froms else section[-1]
        return [insert(rel, t.eol(st.end_line), f"\n{text}")]
    if stdlib:
        # No standard-library import yet: a section of its own above the others (after ``__future__``).
        first = next((st for st in top if not (st.is_from and st.module == "__future__")), None)
        if first is not None:
            return [insert(rel, (first.line, 0), f"{text}\n\n")]
    if mf.last_import_line:
        return [insert(rel, t.eol(mf.last_import_line), f"\n{text}")]
    if mf.doc_end:
        return [insert(rel, t.eol(mf.doc_end), f"\n\n{text}")]
    return [insert(rel, (1, 0), f"{text}\n")]


def bound_name(sm: Model, rel: str, module: str, name: str) -> str:
    """The name under which ``module.name`` is (or will be) reachable in ``rel``."""
    mf = sm.store.load_path(rel)
    if mf is not None:
        for local, bl in mf.bindings.items():
            for b in bl:
                if b.kind == "import" and b.target == module and b.attr == name and b.branch in ("", "try", "else"):
                    return local
    return name


# -- bases ------------------------------------------------------------------------------------------
def add_base(sm: Model, key: ClassKey, module: str, name: str) -> list[Edit]:
    """Append ``name`` (imported from ``module``) to the bases of ``key``, with its import; [] if inherited already."""
    target = ClassKey(module, name)
    if sm.graph.in_mro(key, target):
        return []
    cc = _class_ctx(sm, key)
    if cc is None:
        return []
    rel, t, cf = cc
    local = bound_name(sm, rel, module, name)
    edits = import_name(sm, rel, module, name) if local == name else []
    if cf.bases:
        edits += _append_base(rel, t, cf, local)
    else:
        # ``class X:`` or ``class X():``: put the base in the parentheses.
        ln = cf.line
        raw = t.line(ln)
        i = raw.find(cf.name, raw.find("class")) + len(cf.name)
        rest = raw[i:]
        if rest.lstrip().startswith("()"):
            j = i + rest.index("(") + 1
            edits.append(insert(rel, (ln, j), local))
        elif rest.lstrip().startswith(":"):
            edits.append(insert(rel, (ln, i), f"({local})"))
        else:
            return []
    return edits


def _bstart(b: BaseRef) -> Pos:
    return b.line, b.col


def _bend(b: BaseRef) -> Pos:
    return b.end_line, b.end_col


def _append_base(rel: str, t: Text, cf: ClassFacts, local: str) -> list[Edit]:
    """``local`` after the last base, laid out as the file's formatter would: on the line if it fits, else
    the bases on their own line under ``class X(`` and ``):`` below (ruff), one a line with a trailing comma
    when they do not fit on one, or under the first base (yapf). Insertions at the last base's end and
    replacements of separators and of the closing parenthesis, so two bases added to one class both apply."""
    bases = cf.bases
    last = bases[-1]
    end = _bend(last)
    after = t.line(end[0])[end[1]:]
    ind = t.indent(cf.line)
    if after.lstrip().startswith(","):
        # One base a line, trailing comma: a line of its own.
        comma = end[1] + after.index(",") + 1
        return [insert(rel, (end[0], comma), f"\n{t.indent(end[0])}{local},")]
    if code_len(t.line(end[0])) + len(local) + 2 <= t.limit:
        return [insert(rel, end, f", {local}")]
    close = _next_char(t, end)  # the ``)`` after the last base
    if cf.keywords or close is None or t.line(close[0])[close[1]] != ")" or t.hanging:
        cont = t.indent(end[0]) if end[0] > cf.line else " " * (_bstart(bases[0])[1])
        return [insert(rel, end, f",\n{cont}{local}")]
    first = _bstart(bases[0])
    own_line = bases[0].line > cf.line  # ``class X(\n    a, b\n):`` already
    unit = t.indent(bases[0].line) if own_line else ind + "    "
    row = ", ".join([*(b.text for b in bases), local])
    if all(b.line == bases[0].line for b in bases) and len(unit + row) <= t.limit:
        if own_line:
            return [insert(rel, end, f", {local}")]
        return [insert(rel, first, f"\n{unit}"), insert(rel, end, f", {local}"),
                Edit(rel, *close, close[0], close[1] + 1, f"\n{ind})")]
    # One base a line, with the trailing comma that keeps ruff from joining them again.
    edits = [] if own_line else [insert(rel, first, f"\n{unit}")]
    edits += [Edit(rel, *_bend(a), *_bstart(b), f",\n{unit}") for a, b in pairwise(bases)]
    edits.append(insert(rel, end, f",\n{unit}{local}"))
    if own_line:
        edits.append(Edit(rel, *end, *close, ",\n" + t.indent(close[0])) if close[0] > end[0] else
                     Edit(rel, *close, close[0], close[1] + 1, f",\n{ind})"))
    else:
        edits.append(Edit(rel, *close, close[0], close[1] + 1, f",\n{ind})"))
    return edits


def _next_char(t: Text, pos: tuple[int, int]) -> tuple[int, int] | None:
    """Where the first non-blank character at or after ``pos`` is (None past the end or at a comment)."""
    ln, col = pos
    while ln <= len(t.lines):
        rest = t.line(ln)[col:]
        if rest.strip():
            at = (ln, col + len(rest) - len(rest.lstrip()))
            return None if t.line(ln)[at[1]] == "#" else at
        ln, col = ln + 1, 0
    return None


# -- methods ----------------------------------------------------------------------------------------
def signature(sm: Model, name: str, role: str) -> str:
    """``def name(<params>) -> <ret>:`` copied from the tree's Protocol, else the stub-era shape."""
    c = sm.contract
    if c.found and c.path:
        # The engine read the Protocol's signatures while deriving the contract (engines/<engine>/contract.py).
        sig = next((sig for n, sig in c.signatures if n == name), None)
        if sig is not None:
            return f"def {name}{sig}:"
    params = _FALLBACK_SIGNATURES[role]
    ret = _FALLBACK_SIGNATURES[role + "_ret"]
    return f"def {name}({params}) -> {ret}:"


def setter_param(sm: Model) -> str:
    m = sm.contract.member(sm.contract.setter or "")
    if m is not None and len(m.params) >= 2:
        return m.params[1]
    return "layers"


def add_method(sm: Model, key: ClassKey, header: str, body: list[str]) -> list[Edit]:
    """Append one method at the end of the class body (one edit per method, so identical ones merge)."""
    cc = _class_ctx(sm, key)
    if cc is None:
        return []
    rel, t, cf = cc
    first = cf.first
    assert first is not None  # _class_ctx: a class with facts has a body
    ind = t.indent(first.line) if first.kind not in ("doc", "expr") or first.line != cf.line else "    "
    unit = ind[len(t.indent(cf.line)):] or "    "
    end = cf.end_line
    lines = [f"{ind}{header}"] + [f"{ind}{unit}{b}" if b else "" for b in body]
    if cf.body_len == 1 and first.kind == "pass" and cf.line < first.line < len(t.lines) \
            and t.line(first.line).strip() == "pass" and not t.line(first.line + 1).strip():
        # ``class X(Base):\n    pass`` gets a body: the methods take the placeholder's place, each followed by a
        # blank line, and the placeholder goes with the blank line after it (the same deletion for every method).
        return [insert(rel, (first.line, 0), "\n".join(lines) + "\n\n"),
                Edit(rel, first.line, 0, first.line + 2, 0, "")]
    return [insert(rel, t.eol(end), "\n\n" + "\n".join(lines))]


def path_expr(path: tuple[str, ...]) -> str:
    return ".".join(("self", *path))


def setter_direct(fl: Flavor, path: tuple[str, ...], param: str, attr: str = "aux_hidden_state_layers",
                  via_mixin: bool = False) -> list[str]:
    if via_mixin and fl.mixin_setter:
        return [f"{path_expr(path)}.{fl.mixin_setter}({param})"]
    return [f"{path_expr(path)}.{attr} = {param}"]


def getter_direct(path: tuple[str, ...]) -> list[str]:
    return [f"num_layers = len({path_expr(path)}.layers)", f"return {DEFAULT_LAYERS_EXPR}"]


def setter_delegate(attr: str, setter: str, param: str) -> list[str]:
    return [f"self.{attr}.{setter}({param})"]


def getter_delegate(attr: str, getter: str) -> list[str]:
    return [f"return self.{attr}.{getter}()"]


def add_setter(sm: Model, key: ClassKey, body: list[str]) -> list[Edit]:
    fl = flavor(sm)
    if fl.setter is None:
        return []
    return add_method(sm, key, signature(sm, fl.setter, "setter"), body)


def add_getter(sm: Model, key: ClassKey, body: list[str]) -> list[Edit]:
    fl = flavor(sm)
    if fl.getter is None:
        return []
    return add_method(sm, key, signature(sm, fl.getter, "getter"), body)


def add_protocol(sm: Model, key: ClassKey) -> list[Edit]:
    fl = flavor(sm)
    if fl.protocol is None:
        return []
    return add_base(sm, key, fl.module, fl.protocol)


def add_mixin(sm: Model, key: ClassKey) -> list[Edit]:
    fl = flavor(sm)
    if fl.mixin is None:
        return []
    return add_base(sm, key, fl.module, fl.mixin)


def rename_method(sm: Model, key: ClassKey, old: str, new: str, calls: tuple[str, ...] = ()) -> list[Edit]:
    """Rename ``def old`` in ``key`` to ``new``; also ``.old(`` calls in its body on the receivers in ``calls``."""
    cc = _class_ctx(sm, key)
    if cc is None:
        return []
    rel, t, cf = cc
    fn = cf.methods.get(old)
    if fn is None or not fn.direct:  # a ``def`` of the class body itself, never one under a class-level ``if``
        return []
    raw = t.line(fn.line)
    i = raw.find(f"def {old}")
    if i < 0:
        return []
    edits = [Edit(rel, fn.line, i + 4, fn.line, i + 4 + len(old), new)]
    for recv, ln, c in fn.own_calls:
        if recv in calls:
            edits.append(Edit(rel, ln, c - len(old), ln, c, new))
    return edits


# -- aux-state collection in forward ----------------------------------------------------------------
@dataclass(frozen=True)
class _Loop:
    idx: str  # the absolute layer index variable (existing or new)
    header: tuple[tuple[int, int], tuple[int, int], str] | None  # replace span -> text, to make the index absolute
    hidden: str
    residual: str | None
    first: int = 0  # the line of the statement the collection goes before (0: the body's first)


def _analyse_loop(t: Text, taken: tuple[str, ...], lp: Loop) -> _Loop | None:
    """The index and state variables of loop ``lp`` (chosen by the semantic model, its shape read by the facts
    pass) in a forward that uses the names ``taken``, and the header edit that gives a plain or slice-relative loop
    an absolute index."""
    idx_name = next(n for n in FIX_INDEX_NAMES if n not in taken)
    header = None
    first = 0
    if lp.form is LoopForm.PLAIN:
        if not (lp.any_slice or lp.seq_text.endswith(".layers")):
            return None
        layer_var = lp.layer_var
        start = lp.lower
        new_iter = f"enumerate({lp.seq_text}" + (f", start={start})" if start else ")")
        text = f"{idx_name}, {layer_var} in {new_iter}"
        ind = t.indent(lp.line)
        if "\n" not in lp.seq_text and len(f"{ind}for {text}:") > LINE_LIMIT:
            # Wrapped the way ruff would: one argument per line with a trailing comma.
            args = [lp.seq_text] + ([f"start={start}"] if start else [])
            text = f"{idx_name}, {layer_var} in enumerate(\n" + "".join(f"{ind}    {a},\n" for a in args) + f"{ind})"
        header = (lp.target_start, lp.seq_end, text)
        idx = idx_name
    elif lp.form is LoopForm.RANGE and lp.index_var:
        idx = lp.index_var  # ``for i in range(start, end): layer = self.layers[i]``: already absolute
    elif lp.form is LoopForm.ENUMERATE and lp.index_var and lp.layer_var is not None:
        idx = lp.index_var
        if lp.base is IndexBase.RELATIVE and lp.lower and lp.rebinds:
            # The body makes the index absolute itself (``layer_idx = layer_idx + self.start_layer``, vLLM 0.11.0
            # qwen3_vl.py:1031): collect after that statement. A ``start=`` as well would offset it twice.
            first = lp.rebase_next
            if not first:
                return None
        elif lp.base is IndexBase.RELATIVE and lp.lower:
            # Slice-relative index: make it absolute while we are here.
            header = (lp.seq_end, lp.seq_end, start_kwarg(t, lp.seq_end, lp.lower))
    else:
        return None
    if lp.layer_io is None:
        return None
    hidden, residual = lp.layer_io
    return _Loop(idx, header, hidden, residual, first)


def _existing_aux_list(lp: Loop, collector: str | None) -> str | None:
    for attr, name, aux_append in lp.collect_calls:
        if aux_append or (collector and attr == collector):
            return name
    return None


def collection(
    sm: Model, key: ClassKey, attr: str, *, collect: bool, ret: bool, mixin_idiom: bool
) -> list[Edit] | None:
    """Edits to ``key``'s own ``forward``: collect hidden states at absolute layer indices and/or return them.

    None when the forward's shape is not one the tool can rewrite safely (the finding stays, without a fix).
    """
    cc = _class_ctx(sm, key)
    if cc is None:
        return None
    rel, t, cf = cc
    fn = cf.methods.get("forward")
    fm = cf.members.get("forward")
    if fn is None or fm is None or fn.body_line == fn.line:
        return None
    from eagle3_lint import semantic as sem

    lp = sem.rewrite_loop(sm, key)
    if lp is None or not lp.body_line or lp.body_line == lp.line:
        return None
    info = _analyse_loop(t, fn.taken, lp)
    if info is None:
        return None
    fl = flavor(sm)
    edits: list[Edit] = []
    aux = AUX_LIST
    if collect:
        if aux in fn.taken:
            return None
        if not lp.top_line:
            return None
        edits.append(insert(rel, (lp.top_line, 0), f"{t.indent(lp.top_line)}{aux} = []\n"))
        if info.header is not None:
            (l0, c0), (l1, c1), text = info.header
            edits.append(Edit(rel, l0, c0, l1, c1, text))
        b0 = info.first or lp.body_line
        ind = t.indent(b0)
        h, r = info.hidden, info.residual
        if mixin_idiom and fl.collector:
            line = f"{ind}self.{fl.collector}({aux}, {info.idx}, {h}, {r or 'None'})\n"
            if len(line) - 1 > LINE_LIMIT:
                line = f"{ind}self.{fl.collector}(\n{ind}    {aux}, {info.idx}, {h}, {r or 'None'}\n{ind})\n"
        else:
            value = f"{h} + {r} if {r} is not None else {h}" if r else h
            append = f"{ind}    {aux}.append({value})"
            if r and t.hanging and len(append) > t.limit:
                # yapf's form of this expression, as vLLM 0.11.0 minicpm.py:430-432 writes it.
                append = f"{ind}    {aux}.append(\n{ind}        {h} +\n{ind}        {r} if {r} is not None else {h})"
            elif len(append) > LINE_LIMIT:
                append = f"{ind}    {aux}.append(\n{ind}        {value}\n{ind}    )"
            line = f"{ind}if {info.idx} in self.{attr}:\n{append}\n"
        edits.append(insert(rel, (b0, 0), line))
    else:
        found = _existing_aux_list(lp, fl.collector)
        if found is None:
            return None
        aux = found
    if ret:
        last = fm.last
        if last is None or last.kind != "return":
            return None
        ind = t.indent(last.line)
        edits.append(insert(rel, (last.line, 0),
                            f"{ind}if len({aux}) > 0:\n{ind}    return {t.seg(*last.value)}, {aux}\n"))
    return edits


# Empty initial values a decoder's ``__init__`` may give the aux-layer attribute, and the annotations that type
# them right (0.10's ``tuple[int]`` claims a 1-tuple, so its form is not copied).
_EMPTY_VALUES = frozenset({"()", "tuple()", "tuple[int, ...]()", "[]", "list()"})
_EMPTY_ANNOTATIONS = frozenset({"tuple[int, ...]", "Tuple[int, ...]", "list[int]", "List[int]"})


def init_idiom(sm: Model, attr: str) -> str | None:
    """How the tree's own decoders start ``self.<attr>`` empty in ``__init__``, as the text after ``self.<attr>``
    (`` = tuple[int, ...]()`` in vLLM 0.11-0.17's llama.py, ``: tuple[int, ...] = ()`` in 0.32's qwen3_5.py): the
    form most of them use. On a tie the form of the contract's own class-level default wins (``EagleModelMixin``'s
    ``aux_hidden_state_layers: tuple[int, ...] = ()``), then path order. None when no decoder does."""
    from eagle3_lint import semantic as sem

    def compute() -> str | None:
        pat = re.compile(rf"(?:self\.)?{re.escape(attr)}\s*(?::\s*(?P<ann>[^=]+?)\s*)?=\s*(?P<val>.+?)\s*(?:#.*)?")

        def form(line: str) -> str | None:
            m = pat.fullmatch(line.strip())
            if m is None or m["val"] not in _EMPTY_VALUES or (m["ann"] and m["ann"] not in _EMPTY_ANNOTATIONS):
                return None
            return f": {m['ann']} = {m['val']}" if m["ann"] else f" = {m['val']}"

        seen: dict[str, int] = {}
        mk = sem.mixin_key(sm)
        mcf = sm.graph.class_facts(mk) if mk is not None else None
        member = mcf.members.get(attr) if mcf is not None else None
        mt = text_of(sm, sm.graph.path_of(mk)) if mk is not None and member is not None else None
        own = form(mt.line(member.line)) if mt is not None and member is not None else None
        if own is not None:
            seen[own] = 0  # first among equals
        for key, rel in sm.model_classes():
            cf = sm.graph.class_facts(key)
            md = cf.methods.get("__init__") if cf is not None else None
            if md is None:
                continue
            for sa in md.self_assigns:
                if sa.target != f"self.{attr}" or sa.value_kind in ("name", "attr", "unpack"):
                    continue
                t = text_of(sm, rel)
                tail = form(t.line(sa.line)) if t is not None else None
                if tail is not None:
                    seen[tail] = seen.get(tail, 0) + 1
        if not any(seen.values()):
            return None
        most = max(seen.values())
        return next(tail for tail, n in seen.items() if n == most)
    return sm.memo.get(f"fixgen-init-idiom-{attr}", compute)


def init_attr(sm: Model, key: ClassKey, attr: str, value: str | None = None) -> list[Edit]:
    """Give ``key`` an empty ``self.<attr>`` right after ``__init__`` builds ``self.layers`` (else a class
    attribute), written as the tree's decoders write it (``init_idiom``); failing that ``= <value>``, or
    ``: tuple[int, ...] = ()``."""
    from eagle3_lint import semantic as sem

    if sem.attr_initialised(sm, key, attr):
        return []
    cc = _class_ctx(sm, key)
    if cc is None:
        return []
    rel, t, cf = cc
    tail = init_idiom(sm, attr) or (f" = {value}" if value else ": tuple[int, ...] = ()")
    init = cf.methods.get("__init__")
    if init is not None and init.layers_stmt[0]:
        line0, line1 = init.layers_stmt  # the first top-level statement of __init__ that stores self.layers
        return [insert(rel, t.eol(line1), f"\n{t.indent(line0)}self.{attr}{tail}")]
    first = cf.first
    assert first is not None  # _class_ctx: a class with facts has a body
    ind = t.indent(first.line)
    decl = f"{attr}{tail}"
    if first.kind == "doc":
        return [insert(rel, t.eol(first.end_line), f"\n{ind}{decl}")]
    # Above the first statement, or above its decorators (between them and the ``def`` is a syntax
    # error); a blank line keeps a following ``def`` or ``class`` apart.
    gap = "\n" if first.kind == "def" else ""
    return [insert(rel, (first.first_line, 0), f"{ind}{decl}{gap}\n")]


def start_kwarg(t: Text, pos: tuple[int, int], start: str) -> str:
    """The text that gives ``enumerate`` its ``start=`` right after its first argument (ending at ``pos``): on the
    line if that still fits, else on a line of its own when the argument already has one (ruff's exploded call,
    trailing comma included). EGL005 and the collection fix both write it, so their identical insertions merge."""
    raw = t.line(pos[0])
    after = raw[pos[1]:]
    if code_len(raw) + len(start) + 8 <= t.limit or t.hanging:
        return f", start={start}"
    nxt = _next_char(t, (pos[0], pos[1] + len(after) - len(after.lstrip(" ,"))))
    if after.strip(" ,") or nxt is None or nxt[0] == pos[0] or t.line(nxt[0])[nxt[1]] != ")" \
            or not t.line(pos[0] - 1).rstrip().endswith("("):
        return f", start={start}"  # a one-line call: left as it was (one edit both fixes share)
    ind = t.indent(pos[0])
    return f",\n{ind}start={start}" if after.lstrip().startswith(",") else f",\n{ind}start={start},"


def enumerate_start_point(sm: Model, rel: str, lp: Loop) -> tuple[int, int] | None:
    """(line, col) right after ``enumerate``'s first argument in loop ``lp`` of ``rel`` (the facts recorded where
    it ends): where EGL005's ``, start=...`` goes."""
    t = text_of(sm, rel)
    if t is None or not (0 < lp.seq_end[0] <= len(t.lines)):
        return None
    return lp.seq_end

# -- the config-time model_type gate (EGL009) ----------------------------------------------------------------
def _fix_list(text: str, g: Gate, at: GateEdit, mt: str) -> Edit | None:
    """Append ``mt`` to the allow-list literal assigned at ``g.list_line``, keeping its layout (where its last element
    ends, as the engine read it: ``at.list_end``)."""
    last_line, end_line, end_col, list_end = at.list_end
    if not last_line:
        return None
    lines = text.splitlines()
    quote = lines[last_line - 1].lstrip()[:1] if lines[last_line - 1].lstrip()[:1] in "'\"" else '"'
    item = f"{quote}{mt}{quote}"
    if list_end > last_line and end_line != list_end:
        # One element per line: a new line with the last element's indentation.
        indent = lines[last_line - 1][: len(lines[last_line - 1]) - len(lines[last_line - 1].lstrip())]
        after = lines[end_line - 1][end_col:]
        if after.lstrip().startswith(","):
            return Edit(g.path, end_line, len(lines[end_line - 1]), end_line, len(lines[end_line - 1]),
                        f"\n{indent}{item},")
        return Edit(g.path, end_line, end_col, end_line, end_col, f",\n{indent}{item}")
    return Edit(g.path, end_line, end_col, end_line, end_col, f", {item}")


# The name upstream gave the list when it replaced the single literal (0.10.2).
_LIST_NAME = "eagle3_target_supported"


def _fix_literal(text: str, g: Gate, at: GateEdit, mt: str) -> tuple[Edit, ...]:
    """``"llama" not in X.model_type`` -> a list before the ``if`` and ``not any(m in X.model_type for m in list)``.

    The list form is what later releases use, so the patched tree still shows the gate with both types.
    """
    line, end_line, c0, c1 = at.literal_span
    lines = text.splitlines()
    if not line or line != end_line or not (0 < g.line <= len(lines)) or not g.allow_list:
        return ()
    if_row = lines[g.line - 1]
    indent = if_row[: len(if_row) - len(if_row.lstrip())]
    items = ", ".join(f'"{v}"' for v in (g.allow_list[0], mt))
    return (
        Edit(g.path, g.line, 0, g.line, 0, f"{indent}{_LIST_NAME} = [{items}]\n"),
        Edit(g.path, line, c0, line, c1, f"not any(m in {at.literal_attr} for m in {_LIST_NAME})"),
    )


def allow_list_edits(sm: Model, g: Gate, mt: str) -> tuple[Edit, ...]:
    """Edits that let model_type ``mt`` through gate ``g``: appended to its list, or the literal made a list."""
    at = sm.runner.gate_edit(g)
    if at is None:
        return ()
    try:
        text = sm.read_text(g.path)
        if g.list_name:
            one = _fix_list(text, g, at, mt)
            return (one,) if one is not None else ()
        return _fix_literal(text, g, at, mt)
    except (OSError, UnicodeError, ValueError, IndexError):  # IndexError: the file is not the one the engine read
        return ()


# -- a delegating setter in the tree's own idiom ---------------------------------------------------
@dataclass(frozen=True)
class SetterIdiom:
    """A setter in the tree that only hands the ids to an inner model (``self.<attr>.<setter>(<param>)``, maybe
    behind ``if hasattr(self.<attr>, "<setter>"):``): its header and body as written, to copy onto a wrapper."""

    key: ClassKey
    path: str
    line: int
    attr: str
    header: str  # ``def set_x(self, layer_ids: Optional[List[int]] = None):``, one line
    body: tuple[str, ...]  # dedented body lines, ``self.<attr>`` as in the original
    names: tuple[str, ...]  # names the header's annotations and defaults use (to import where missing)


@query
def setter_idioms(sm: Model, setter: str | None = None) -> list[SetterIdiom]:
    """Every purely delegating setter (``setter``, else ``contract.setter``) of the tree's model classes, in path
    order.

    One answer per file, joined: after an edit only the edited file's idioms are read again, and when they come out
    the same the fixes that copy one are kept (queries.py, early cutoff). Scanning every model file after any edit
    was most of SGLang 0.5.23's one-edit re-check (its EGL002/EGL003 fixes copy an idiom)."""
    setter = setter or sm.contract.setter
    return [i for rel in sm.model_files() for i in _file_setter_idioms(sm, rel, setter)]


@query
def _file_setter_idioms(sm: Model, rel: str, setter: str | None) -> list[SetterIdiom]:
    """The delegating ``setter`` methods of ``rel``'s module-level classes, in class order (``Model.model_classes``)."""
    out: list[SetterIdiom] = []
    mf = sm.store.load_path(rel) if setter else None
    if not setter or mf is None or mf.error:
        return out
    for qn in [qn for qn, c in mf.classes.items() if c.nested_in is None]:
        key = ClassKey(mf.module, qn)
        cf = sm.graph.class_facts(key)
        m = cf.members.get(setter) if cf else None
        if m is None or m.kind != "def" or m.end_line - m.line > 15:
            continue
        h = m.header
        if h is None or h.delegates_to is None:
            continue  # not a plain-parameter method that only hands its arguments on (facts.Header)
        t = text_of(sm, rel)
        if t is None:
            continue
        body = textwrap.dedent("\n".join(t.lines[m.body_line - 1: m.end_line])).splitlines()
        out.append(SetterIdiom(key, rel, m.line, h.delegates_to, _header_text(h, setter), tuple(body), h.names))
    return out


def add_delegating_setter(sm: Model, key: ClassKey, attr: str,
                          setter: str | None = None) -> tuple[list[Edit], SetterIdiom] | None:
    """The tree's own delegating setter (``setter``, else the contract's) copied onto ``key``, delegating to
    ``self.<attr>`` (an idiom that already delegates to that attribute first), with the names its header needs
    imported where ``key``'s module lacks them."""
    idioms = setter_idioms(sm, setter or sm.contract.setter)
    pick = next((i for i in idioms if i.attr == attr), None) or (idioms[0] if idioms else None)
    if pick is None:
        return None
    body = [re.sub(rf"\bself\.{re.escape(pick.attr)}\b", f"self.{attr}", b) for b in pick.body]
    edits = header_imports(sm, key, MethodHeader(pick.path, pick.header, (), pick.names))
    edits += add_method(sm, key, pick.header, body)
    return edits, pick


# -- a setter that feeds the collection mechanism the decoder reads (engines with a ``CollectionIdiom``) -----------
@dataclass(frozen=True)
class MethodHeader:
    """A method's ``def`` line as written (one line), its parameters and the names its annotations use."""

    path: str
    header: str
    params: tuple[str, ...]  # without ``self``
    names: tuple[str, ...]


def _header_text(h: Header, name: str) -> str:
    """``def name(<params as written>) -> <ret>:`` on one line."""
    return f"def {name}({h.params})" + (f" -> {h.returns}" if h.returns else "") + ":"


@query
def method_header(sm: Model, key: ClassKey, name: str) -> MethodHeader | None:
    """The header of ``key``'s own ``name`` (plain positional parameters only), to copy onto another class. A declared
    query: EGL003's fix picks one among every class defining the setter, and rests on these answers, not on all those
    files (an edit elsewhere in one of them recomputes its header, equal, and keeps the fix)."""
    cc = _class_ctx(sm, key)
    if cc is None:
        return None
    rel, _t, cf = cc
    m = cf.members.get(name)
    h = m.header if m is not None and m.kind == "def" else None
    if h is None:  # a non-async method with plain positional parameters only
        return None
    return MethodHeader(rel, _header_text(h, name), h.params_names, h.names)


def header_imports(sm: Model, key: ClassKey, mh: MethodHeader) -> list[Edit]:
    """Imports ``key``'s module needs for the names of a header copied from ``mh.path``."""
    rel = sm.graph.path_of(key)
    src_mf = sm.store.load_path(mh.path)
    wanted: dict[str, list[str]] = {}  # module -> names, so ``Optional`` and ``List`` share one new statement
    for name in mh.names:
        bl = src_mf.bindings.get(name) if src_mf is not None else None
        b = bl[0] if bl else None
        if b is not None and b.kind == "import" and b.attr is not None:
            wanted.setdefault(b.target, []).append(b.attr)
    return [e for module, names in wanted.items() for e in import_names(sm, rel, module, tuple(names))]


def append_to_method(sm: Model, key: ClassKey, name: str, lines: list[str]) -> list[Edit]:
    """``lines`` appended at the end of ``key``'s own ``name`` (its last statement must not be a ``return``)."""
    cc = _class_ctx(sm, key)
    if cc is None:
        return []
    rel, t, cf = cc
    fn = cf.members.get(name)
    if fn is None or fn.kind != "def" or fn.last is None \
            or fn.last.kind in ("return", "return-tuple", "return-bare", "raise") or fn.body_line == fn.line:
        return []
    ind = t.indent(fn.body_line)
    end = fn.last.end_line
    return [insert(rel, t.eol(end), "".join(f"\n{ind}{x}" if x else "\n" for x in lines))]
