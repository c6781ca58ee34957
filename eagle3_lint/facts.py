"""One cheap ``ast`` pass per file: the classes, bases, bindings and method shapes that matter.

Facts depend only on a file's bytes (and this module's version), so they are cached by content
hash. They are plain dataclasses of strings and ints: no parser node survives this module.
Method bodies are summarised in detail only where a rule can use it (``__init__``, ``forward``,
``get_language_model``, ``__getattr__`` and anything about aux/eagle hidden states); every other
method is a name, a span and a "stub body" bit. That keeps the pass close to ``ast.parse`` alone.
"""

from __future__ import annotations

import ast
import codecs
import dataclasses
import pickle
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

from eagle3_lint import FACTS_VERSION as FACTS_VERSION  # the facts format; bump it there
from eagle3_lint._compat import TRY_NODES

# Branch tags for bindings made under control flow; resolution prefers the runtime default.
MAIN, ELSE, TRY, IF, TYPE_CHECKING, EXCEPT = "", "else", "try", "if", "type-checking", "except"
# A branch of a platform dispatch that the static platform model decides: ``platform:cuda,cpu`` runs on those
# platforms only (platform_branch; ``platform:`` on none).
PLATFORM_PREFIX = "platform:"


# The platforms a dispatch is evaluated for (``--platform``). ``unspecified`` is vLLM's fallback when no accelerator
# is detected (the runtime oracle's regular wheel on a CPU machine): every ``is_<x>()`` is False there.
PLATFORMS = ("cuda", "rocm", "cpu", "xpu", "unspecified")
# ``current_platform.device_type`` per platform (ROCm reports "cuda", as torch does).
_DEVICE_TYPE = {"cuda": "cuda", "rocm": "cuda", "cpu": "cpu", "xpu": "xpu", "unspecified": ""}
# ``is_cuda_alike()`` is true on CUDA and ROCm.
_ALIKE = {"cuda_alike": ("cuda", "rocm")}


def platform_test(node: ast.AST, platform: str) -> bool | None:
    """Evaluate a dispatch condition on ``platform`` (one of ``PLATFORMS``), or None when it is not one.

    ``current_platform.is_<x>()`` is true on platform x (``is_cuda_alike()`` on CUDA and ROCm), ``device_type``
    is the platform's, and ``TYPE_CHECKING`` is False at runtime: so ``if TYPE_CHECKING or not
    current_platform.is_rocm():`` takes its body everywhere but on ROCm.
    """
    if isinstance(node, ast.Name) and node.id == "TYPE_CHECKING" or \
            isinstance(node, ast.Attribute) and node.attr == "TYPE_CHECKING":
        return False
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr.startswith("is_") \
            and dotted(node.func.value).endswith("current_platform") and not node.args:
        return platform_is(platform, node.func.attr[len("is_"):])
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)) \
            and dotted(node.left).endswith("current_platform.device_type") \
            and isinstance(node.comparators[0], ast.Constant):
        return (_DEVICE_TYPE[platform] == node.comparators[0].value) != isinstance(node.ops[0], ast.NotEq)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        v = platform_test(node.operand, platform)
        return None if v is None else not v
    if isinstance(node, ast.BoolOp):
        vals = [platform_test(v, platform) for v in node.values]
        if isinstance(node.op, ast.Or):
            if any(v is True for v in vals):
                return True
            return False if all(v is False for v in vals) else None
        if any(v is False for v in vals):
            return False
        return True if all(v is True for v in vals) else None
    return None


def platform_is(platform: str, name: str) -> bool:
    """``current_platform.is_<name>()`` on ``platform``."""
    return platform in _ALIKE.get(name, (name,))


def platform_branch(platforms: Iterable[str]) -> str:
    """The branch tag of a block that runs on exactly these platforms."""
    return PLATFORM_PREFIX + ",".join(p for p in PLATFORMS if p in set(platforms))


def branch_platforms(branch: str) -> frozenset[str] | None:
    """The platforms a block tagged ``branch`` runs on, or None when no platform dispatch decides it."""
    if not branch.startswith(PLATFORM_PREFIX):
        return None
    rest = branch[len(PLATFORM_PREFIX):]
    return frozenset(rest.split(",")) if rest else frozenset()


@dataclass
class Binding:
    """How a module-level (or class-level) name gets its value."""

    kind: str  # import | class | function | alias | call | other | star
    target: str  # import: absolute module; class/function: qualname; alias/call: dotted expression
    attr: str | None = None  # for ``from module import attr``
    args: tuple[str, ...] = ()  # call: dotted names of positional arguments
    line: int = 0
    branch: str = MAIN


@dataclass
class BaseRef:
    kind: str  # name | call | subscript | other
    dotted: str  # the name, the subscripted value, or the called function
    args: tuple[str, ...]
    text: str
    line: int
    col: int
    end_line: int
    end_col: int


@dataclass
class Member:
    name: str
    kind: str  # def | assign | annassign | annotation | class
    line: int
    end_line: int
    stub: bool = False
    value: str | None = None  # repr of a literal constant value, if simple
    alias: str | None = None  # dotted name assigned (``model_cls = DeepseekV2Model``)
    # A def's first line, its first decorator's (0: ``line``): with ``end_line`` the span the semantic model
    # parses alone when it reads the method's body (semantic.read_function), instead of the whole module.
    first_line: int = 0
    # A ``def``'s first and last statement and its header, for fixes of any method (fixgen: a setter or getter of
    # whatever name the engine calls, copied or extended).
    body_line: int = 0
    last: Stmt | None = None
    header: Header | None = None


@dataclass
class SelfAssign:
    target: str  # dotted, rooted at self: "self.model.aux_hidden_state_layers"
    value_kind: str  # call | name | attr | const | other
    func: str  # call: dotted function; name/attr: dotted expression
    args: tuple[str, ...]
    kwargs: dict[str, str]
    line: int


class UseKind(str, Enum):
    IN = "in"  # idx in self.X
    CALL = "call"  # f(..., idx [+ k], ...)


class Slicing(str, Enum):
    """How a loop's iterable slices the layer list (``NONE`` is falsy: not a slice)."""

    NONE = ""
    ISLICE = "islice"
    SUBSCRIPT = "subscript"


@dataclass
class Use:
    """Where a loop index (or any name) meets aux-layer plumbing."""

    kind: UseKind
    target: str  # the attribute compared with, or the function called
    offset: int  # k in idx + k
    line: int
    # Only for ``Loop.rebased``: the span of `` - <start>`` (line, col, end_line, end_col, columns in
    # characters) whose deletion leaves ``idx [+ k]`` (``idx - self.start_layer + 1``); all zero when the
    # source cannot be cut that simply (parentheses or a comment in the way).
    cut: tuple[int, int, int, int] = (0, 0, 0, 0)
    text: str = ""  # the rebased expression as written (``idx + 1 - self.start_layer``), for messages


class LoopForm(str, Enum):
    """How a ``for`` statement walks a sequence (of decoder layers, where ``Loop.over_layers`` says so)."""

    ENUMERATE = "enumerate"  # for i, layer in enumerate(seq[, start]), or islice(enumerate(seq), a, b)
    RANGE = "range"  # for i in range(a, b): layer = seq[i]
    PLAIN = "plain"  # for layer in seq


class IndexBase(str, Enum):
    """What a loop's index counts."""

    ABSOLUTE = "absolute"  # the layer's position in the whole list (``start=``, ``range``, an unsliced list)
    RELATIVE = "relative"  # the position inside a slice that starts elsewhere (``enumerate(islice(l, s, e))``)
    NONE = "none"  # a plain loop has no index


class SiteKind(str, Enum):
    """What a ``Site`` of a loop over the layers is."""

    MEMBER = "member"  # ``idx [+ k] in <container>`` in the body
    CALL = "call"  # ``f(..., idx [+ k], ...)`` in the body (a collector such as ``_maybe_add_hidden_state``)
    ATTR = "attr"  # an attribute named in the body (``layer._is_layer_to_capture``, ``getattr(layer, "<name>")``)
    KWARG = "kwarg"  # a keyword argument of the layer call (a per-layer flag handed to the layer)
    PRE = "pre"  # before the loop, in a top-level statement: a call with the first layer's index (start or 0)
    POST = "post"  # after the loop: ``<expr> in <container>`` with no loop index (the last layer's output)


@dataclass(frozen=True)
class Site:
    """One place where a loop over the layers (or the code around it) meets layer ids or per-layer flags."""

    kind: SiteKind
    target: str  # MEMBER/POST: the container as ``ast.unparse`` writes it; CALL/PRE: the callee, dotted;
    #              ATTR/KWARG: the name
    name: str  # MEMBER/POST: the container, dotted ("" when it is not a name chain)
    offset: int  # k in ``idx + k`` (MEMBER, CALL)
    line: int
    before: bool  # in the body before the layer call (an earlier line, or inside the call's own arguments)
    # MEMBER at or before the layer call: the line of an ``a + b`` in its statement whose operand is still
    # ``None`` when the loop starts (``hidden_states + residual`` before layer 0 raises TypeError); else 0.
    none_line: int = 0


@dataclass(frozen=True)
class _Shape:
    """The shape of one ``for`` statement, while the facts pass holds its node (no node leaves this module)."""

    form: LoopForm
    index: str | None  # the index variable (None for a plain loop)
    layer: str | None  # the layer variable (None where the target does not name one)
    iterable: ast.expr | None  # enumerate's first argument or the plain loop's iterable, as written
    # The same with a local slice resolved (``layers = self.layers[s:e]``); for a range loop, ``seq`` of ``seq[i]``.
    seq: ast.expr | None
    start: ast.expr | None  # enumerate's ``start`` (second argument or keyword)
    sliced: Slicing  # ``seq`` is an islice or a subscript slice with a start
    lower: ast.expr | None  # that slice's start expression (islice with three arguments or more; ``seq[lo:hi]``)
    any_slice: bool  # ``seq`` is a slice of any kind (``islice(seq, stop)``, ``seq[:n]`` too)
    # The layers walked, as written: the slice's bounds, ``islice(enumerate(seq), a, b)``'s, or ``range(a, b)``'s.
    bounds: tuple[ast.expr | None, ast.expr | None] = (None, None)


def _slicing(seq: ast.expr | None) -> tuple[Slicing, ast.expr | None, bool]:
    if isinstance(seq, ast.Call) and dotted(seq.func) in ("islice", "itertools.islice") and len(seq.args) >= 2:
        return Slicing.ISLICE, (seq.args[1] if len(seq.args) >= 3 else None), True
    if isinstance(seq, ast.Subscript) and isinstance(seq.slice, ast.Slice):
        if seq.slice.lower is not None:
            return Slicing.SUBSCRIPT, seq.slice.lower, True
        return Slicing.NONE, None, True
    return Slicing.NONE, None, False


def _slice_bounds(seq: ast.expr | None) -> tuple[ast.expr | None, ast.expr | None]:
    if isinstance(seq, ast.Call) and dotted(seq.func) in ("islice", "itertools.islice") and len(seq.args) >= 2:
        return (seq.args[1], seq.args[2]) if len(seq.args) >= 3 else (None, seq.args[1])
    if isinstance(seq, ast.Subscript) and isinstance(seq.slice, ast.Slice):
        return seq.slice.lower, seq.slice.upper
    return None, None


def _enumerate_shape(call: ast.Call, tgt: ast.expr, local_slices: Mapping[str, ast.expr] | None,
                     bounds: tuple[ast.expr | None, ast.expr | None] | None = None) -> _Shape | None:
    if not (isinstance(tgt, ast.Tuple) and tgt.elts and isinstance(tgt.elts[0], ast.Name)):
        return None
    layer = tgt.elts[1].id if len(tgt.elts) == 2 and isinstance(tgt.elts[1], ast.Name) else None
    iterable = call.args[0]
    seq = local_slices.get(iterable.id, iterable) if isinstance(iterable, ast.Name) and local_slices else iterable
    start = call.args[1] if len(call.args) >= 2 else None
    for kw in call.keywords:
        if kw.arg == "start":
            start = kw.value
    sliced, lower, any_slice = _slicing(seq)
    return _Shape(LoopForm.ENUMERATE, tgt.elts[0].id, layer, iterable, seq, start, sliced, lower, any_slice,
                  bounds if bounds is not None else _slice_bounds(seq))


def _shape(node: ast.For, local_slices: Mapping[str, ast.expr] | None = None) -> _Shape | None:
    """The shape of ``node`` when it is an enumerate, range-and-index or plain loop; None otherwise."""
    it, tgt = node.iter, node.target
    if isinstance(it, ast.Call) and dotted(it.func) == "enumerate" and it.args:
        return _enumerate_shape(it, tgt, local_slices)
    if isinstance(it, ast.Call) and dotted(it.func) in ("islice", "itertools.islice") and len(it.args) >= 2 \
            and isinstance(inner := it.args[0], ast.Call) and dotted(inner.func) == "enumerate" and inner.args:
        # ``islice(enumerate(self.layers), self.start_layer, self.end_layer)`` (vLLM's Qwen3LLMModel): the index
        # counts over the whole list, the slice only picks which layers run.
        return _enumerate_shape(inner, tgt, local_slices, _slice_bounds(it))
    if not isinstance(tgt, ast.Name):
        return None
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
        # ``layer = seq[i]`` in the body (or in a ``with`` block of it: SGLang's DeepSeek-V2 wraps each layer in
        # ``with ctx:``): the first that indexes a layer list, else the first at all.
        body = [s for st in node.body for s in (st.body if isinstance(st, (ast.With, ast.AsyncWith)) else [st])]
        picks = [(st.targets[0].id, st.value.value) for st in body
                 if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
                 and isinstance(st.value, ast.Subscript) and isinstance(st.value.slice, ast.Name)
                 and st.value.slice.id == tgt.id]
        pick = next((p for p in picks if "layers" in ast.unparse(p[1])), picks[0] if picks else None)
        bounds = (it.args[0], it.args[1]) if len(it.args) >= 2 else (None, it.args[0]) if it.args else (None, None)
        seq = pick[1] if pick else None
        if seq is None:
            # No local for the layer: ``self.layers[i](..., capture_output=aux.capture if i in
            # self.layers_to_capture else None)`` (SGLang 0.5.23's LlamaModel, llama.py:486-494).
            seq = next((c.func.value for st in body for c in _walk(st) if isinstance(c, ast.Call)
                        and isinstance(c.func, ast.Subscript) and isinstance(c.func.slice, ast.Name)
                        and c.func.slice.id == tgt.id), None)
        return _Shape(LoopForm.RANGE, tgt.id, pick[0] if pick else None, None, seq,
                      None, Slicing.NONE, None, False, bounds)
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "enumerate":
        return None  # ``for pair in enumerate(...)``: neither an index nor a layer
    sliced, lower, any_slice = _slicing(it)
    return _Shape(LoopForm.PLAIN, None, tgt.id, it, it, None, sliced, lower, any_slice, _slice_bounds(it))


@dataclass
class Loop:
    """One ``for`` statement of a method, read once for everything that asks about loops: the enumerate loops
    (any sequence, EGL005's slice-relative index), and every loop over the decoder layers (``over_layers``) with
    its index form and bounds and where it meets layer ids, which the semantic model reads for the capture
    points, the collection a fix adds and what EGL004 and the serving chain conclude."""

    line: int
    col: int
    end_line: int
    end_col: int
    index_var: str  # "" for a plain loop
    sliced: Slicing
    iter_text: str
    start_text: str | None  # the enumerate(start=...) expression, if any
    uses: tuple[Use, ...] = ()
    # Statements in the body that rebind the index (``idx = idx + self.start_layer``): the index
    # is then no longer the bare enumerate counter, so slice-relative reasoning does not apply.
    rebinds: tuple[str, ...] = ()
    # Uses of ``idx - <slice start> [+/- k]`` (or ``idx +/- k - <slice start>``), where <slice start>
    # is the islice start / subscript lower bound of the iterable (a range loop's first argument): the index
    # rebased onto the slice (onto the rank's first layer). Kept apart from ``uses`` so that a ``Use`` there
    # keeps meaning ``idx + offset``.
    rebased: tuple[Use, ...] = ()
    # The slice's start as written (None: not a slice, or it starts at 0), and the index's own start normalised
    # by ``ast.unparse`` (``start_text``; for a range loop, ``range``'s first argument when it is not a literal),
    # so rules compare the two without parsing.
    slice_lower: str | None = None
    start_norm: str | None = None
    form: LoopForm = LoopForm.ENUMERATE
    layer_var: str | None = None  # the variable holding the layer (``layer`` of ``for i, layer in ...``)
    # The loop walks the layer list (its sequence names ``layers``: ``self.layers``, a local slice of it).
    over_layers: bool = False
    base: IndexBase = IndexBase.NONE
    lower: str | None = None  # the first layer walked, as written (``self.start_layer``), None: from 0
    upper: str | None = None  # the end of the layers walked, as written, None: to the end
    # Where the body meets layer ids or flags, in source order (``over_layers`` loops only), and the line of the
    # layer call (0: none found). Sites before that call read the state entering the layer.
    sites: tuple[Site, ...] = ()
    layer_line: int = 0
    any_slice: bool = False  # the sequence is a slice of any kind (``islice(seq, stop)``, ``seq[:n]`` too)
    # The enumerate's sequence (or the plain loop's iterable) as written, and the end of it (line, column): where
    # a fix inserts ``, start=...``; for a plain loop, the span of ``<target> in <iterable>`` a fix rewrites.
    seq_text: str = ""
    seq_end: tuple[int, int] = (0, 0)
    target_start: tuple[int, int] = (0, 0)
    # Where the collection fix (fixgen.collection) writes, read here so that nothing after the facts parses:
    # the line of the body's first statement; of the method's top-level statement holding the loop; of the body's
    # second statement when the first rebinds the index onto ``lower`` (``idx = idx + self.start_layer``, 0 when it
    # does not); the (hidden, residual) names the layer call threads (None: no layer call found); and the calls
    # that may already collect, in ``ast.walk`` order: (method, first argument's name, an ``aux...append``).
    body_line: int = 0
    top_line: int = 0
    rebase_next: int = 0
    layer_io: tuple[str, str | None] | None = None
    collect_calls: tuple[tuple[str, str, bool], ...] = ()


class Stmt(NamedTuple):
    """One statement's kind and span, where a fix puts text next to it (fixgen). A ``NamedTuple``, as ``Header``
    and ``ImportStmt`` are: one of each per ``def`` or import pickles at a third of a dataclass's size."""

    kind: str  # doc | expr | pass | def (a def or class) | return | return-tuple | return-bare | raise | other
    line: int
    end_line: int
    first_line: int  # its first decorator's line, else ``line``
    value: tuple[int, int, int, int] = (0, 0, 0, 0)  # a return's value: (line, col, end line, end col), characters


class Header(NamedTuple):
    """A method with plain positional parameters, as a fix copies it: ``(<params as written>)``, the return
    annotation as written, the names its annotations and defaults use, and the attribute it hands its arguments
    to when that is all it does (``self.<attr>.<same name>(<params>)``, maybe behind ``hasattr``)."""

    params: str
    returns: str | None
    names: tuple[str, ...]
    delegates_to: str | None = None
    params_names: tuple[str, ...] = ()  # the parameters after ``self``


# Kinds of ``Body.events``: an attribute store through the first parameter, an attribute store on a layer (of
# ``<x>.layers[i]`` or a loop variable over ``<x>.layers``), ``setattr`` on such a layer with a constant name, a call
# of a method on the first parameter (or an attribute path from it), and a ``super().<name>(...)`` call.
STORE, LAYER_STORE, LAYER_SETATTR, SELF_CALL, SUPER_CALL = "store", "layer-store", "layer-setattr", "call", "super"


class Body(NamedTuple):
    """What the semantic model's collection walks read of one ``def`` in a class body (any method, not only those
    ``Method`` details): the list writes and per-layer flag sets of a setter and the methods it calls
    (``semantic.collection_effect``), the flags and lists a forward reads (``_read_mechanisms``), the shape of a
    sibling setter (``flag_feeder``, ``sibling_setter``) and whether a setter sorts its ids (``_setter_sorts``).
    Names are kept as written, not filtered by any engine's idiom: the semantic model matches them. A
    ``NamedTuple``, one per ``def``, kept in the lazy ``ModuleFacts.bodies``."""

    line: int
    self_name: str  # the first positional parameter (``args.args``), "self" when there is none
    nargs: int  # positional parameters (``args.args``), the first included
    ndefaults: int  # positional defaults
    empty: bool  # only docstrings/constants and ``pass``: a stub for the collection walks
    # In ``ast.walk`` order: (kind, attribute or method name, receiver as dotted text, line); the receiver of a
    # layer store or setattr is the object whose ``.layers`` it indexes (``self.model`` for
    # ``self.model.layers[i].flag = True``).
    events: tuple[tuple[str, str, str, int], ...] = ()
    loaded: tuple[str, ...] = ()  # attribute names loaded, and constant names ``getattr``/``hasattr`` ask for
    in_self: tuple[str, ...] = ()  # ``self.<attr>`` an index is tested against (``i in self.layers_to_capture``)
    adds_one: bool = False  # some ``<name> + 1``
    param_used: bool = False  # the second positional parameter is named in the body
    sorts: bool = False  # some ``sorted(...)`` call
    direct: bool = True  # in the class body itself, not under a class-level ``if``
    is_async: bool = False


@dataclass
class Method:
    name: str
    line: int
    col: int
    end_line: int
    body_line: int
    params: tuple[str, ...]
    stub: bool
    self_assigns: tuple[SelfAssign, ...] = ()
    reads: tuple[str, ...] = ()
    calls: tuple[tuple[str, tuple[str, ...], int], ...] = ()
    memberships: tuple[tuple[str, str, int], ...] = ()  # (left name, dotted container, line)
    loops: tuple[Loop, ...] = ()
    returns: tuple[tuple[str, str, int], ...] = ()  # (kind, text, line)
    # Parameters whose default is a dotted name (``language_model_cls=Qwen3MoeLLMModel``): a wrapper that
    # builds ``self.model = language_model_cls(...)`` holds that class unless a subclass passes another.
    defaults: tuple[tuple[str, str], ...] = ()
    # Where there is a loop over the layers: the sequence of every ``for`` and comprehension, dotted, with its
    # line (a forward that iterates the configured ids emits the states in their order).
    iterates: tuple[tuple[str, int], ...] = ()
    # Names the body binds by an import of its own (``from sglang.srt.models.llama4 import Llama4ForCausalLM``
    # inside ``__init__``, SGLang 0.5.23 mllama4.py:494): ``self.language_model = Llama4ForCausalLM(...)`` holds
    # that class, though the module never binds the name.
    local_imports: tuple[tuple[str, Binding], ...] = ()
    # In a ``forward``: ``self``-rooted attributes handed to a call as a keyword argument, (callee, keyword, the
    # attribute dotted, line): ``general_mm_embed_routine(..., language_model=self.language_model)`` runs that
    # inner model (positional ones are in ``calls``).
    handoffs: tuple[tuple[str, str, str, int], ...] = ()
    # What fixes need (fixgen; the statements and header of any ``def`` are on its ``Member``): whether the ``def``
    # sits in the class body itself (not under a class-level ``if``); calls of the method's own name in its body
    # (receiver as written, end line and column of ``<receiver>.<name>``); the span of ``__init__``'s first
    # top-level statement that stores ``self.layers``; and which of ``FIX_NAMES`` a forward uses.
    direct: bool = True
    own_calls: tuple[tuple[str, int, int], ...] = ()
    layers_stmt: tuple[int, int] = (0, 0)
    taken: tuple[str, ...] = ()


@dataclass
class ClassFacts:
    name: str
    qualname: str
    line: int
    col: int
    end_line: int
    body_line: int
    bases: tuple[BaseRef, ...]
    keywords: dict[str, str]
    members: dict[str, Member]
    methods: dict[str, Method]
    branch: str = MAIN
    nested_in: str | None = None  # the enclosing function for classes made by factories
    first: Stmt | None = None  # the body's first statement and how many there are (where fixes insert)
    body_len: int = 0


@dataclass
class FunctionFacts:
    name: str
    line: int
    params: tuple[str, ...]
    returns: tuple[str, ...]  # dotted names returned
    nested_classes: tuple[str, ...]  # qualnames of classes defined inside
    local_bindings: dict[str, Binding] = field(default_factory=dict)  # ``Base = factory(cls)`` inside the body


@dataclass
class DictFacts:
    name: str
    line: int
    entries: tuple[tuple[str, str, str, int], ...]  # (key, module, class, line)
    merges: tuple[str, ...]  # names spread with **


class ImportStmt(NamedTuple):
    """A module-level ``import`` or ``from ... import``; a ``from``'s names with their text and spans
    (line, col, end line, end col, in characters)."""

    line: int
    end_line: int
    level: int
    module: str | None  # a ``from``'s module as written; an ``import``'s first name
    is_from: bool
    # (name, text, line, col, end line, end col); text is "" where it is the name (most are: it halves the size)
    names: tuple[tuple[str, str, int, int, int, int], ...] = ()
    target: str = ""  # a ``from``'s module made absolute, as its bindings record it


@dataclass
class ModuleFacts:
    path: str
    module: str
    is_package: bool
    error: str | None = None
    error_line: int = 0
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    classes: dict[str, ClassFacts] = field(default_factory=dict)
    functions: dict[str, FunctionFacts] = field(default_factory=dict)
    dicts: dict[str, DictFacts] = field(default_factory=dict)
    star_imports: tuple[str, ...] = ()
    first_import_line: int = 0  # where a new import can go
    last_import_line: int = 0
    # The module-level import statements, and the end line of the module docstring (0: none): where an import
    # fix goes (fixgen).
    # (A lazy field, LAZY_FIELDS: its default comes from a factory, so the class has no attribute of that name.)
    imports: tuple[ImportStmt, ...] = field(default_factory=tuple)
    doc_end: int = 0
    # A bug of ours, not of the file: the analysis reports it as an internal error (exit 2), not EGL000.
    internal_error: str | None = None
    # The file's bytes contain SUPPRESSION_MARKER: it may hold ``# eagle3-lint: ignore`` comments. suppress.py
    # reads only such files again (True when unknown), so a re-check does not re-read every model file.
    mentions_marker: bool = True
    # Per class (qualname), per ``def`` name in its body (the last one, as ``members`` keeps it): its ``Body``. A
    # lazy field: only an engine with a collection idiom (SGLang) reads it.
    bodies: dict[str, dict[str, Body]] = field(default_factory=dict)


# Fields a check reads for fewer of the modules it loads (vLLM 0.33.0: ``functions`` of 4 of 978 files,
# ``dicts`` of 1, ``bindings`` of 599) than ``classes`` (957), and that are about 40% of the cost of
# unpickling a module's facts. The facts cache (store.py) pickles each apart, and ``LazyModuleFacts``
# unpickles one when it is first read.
LAZY_FIELDS = ("bindings", "functions", "dicts", "imports", "bodies")
_FIELDS = frozenset(f.name for f in dataclasses.fields(ModuleFacts))


class LazyModuleFacts(ModuleFacts):
    """``ModuleFacts`` from the facts cache whose ``LAZY_FIELDS`` stay pickled until first read.

    Every read sees exactly the facts that were stored: such a field is absent from the instance,
    and ``__getattr__`` (Python calls it only when normal lookup fails, and these fields have no
    class-level default) unpickles it and keeps it. Pickled or copied, the object is the plain
    ``ModuleFacts`` it stands for, every field loaded."""

    def __getattr__(self, name: str) -> Any:
        pending = self.__dict__.get("_pending")
        if not pending or name not in pending:
            raise AttributeError(name)
        value = pickle.loads(pending.pop(name))
        self.__dict__[name] = value
        return value

    def __reduce__(self) -> tuple[Any, ...]:
        return _plain_facts, ({f: getattr(self, f) for f in _FIELDS},)


def _plain_facts(state: dict[str, Any]) -> ModuleFacts:
    return ModuleFacts(**state)


def facts_blob(mf: ModuleFacts) -> bytes:
    """``mf`` as the facts cache stores it: the eager fields, and each non-empty lazy field pickled apart."""
    state = {f: getattr(mf, f) for f in _FIELDS}
    pending = {f: pickle.dumps(state.pop(f), protocol=pickle.HIGHEST_PROTOCOL) for f in LAZY_FIELDS if state[f]}
    return pickle.dumps((state, pending), protocol=pickle.HIGHEST_PROTOCOL)


def facts_from_blob(blob: bytes) -> LazyModuleFacts:
    """The facts ``facts_blob`` stored; ValueError if the blob is not such a thing (the cache then rebuilds)."""
    state, pending = pickle.loads(blob)
    if (not isinstance(state, dict) or not isinstance(pending, dict) or state.keys() & pending.keys()
            or state.keys() | pending.keys() != _FIELDS or not set(pending) <= set(LAZY_FIELDS)
            or not all(isinstance(b, bytes) for b in pending.values())):
        raise ValueError("not a facts blob")
    mf = LazyModuleFacts.__new__(LazyModuleFacts)
    mf.__dict__.update(state)
    if pending:
        mf.__dict__["_pending"] = pending
    return mf


SUPPRESSION_MARKER = b"eagle3-lint"  # every suppression comment contains it (suppress.py)


def decode_source(data: bytes) -> str:
    """Decode like the interpreter would: BOM, PEP 263 cookie, else UTF-8; raises UnicodeError."""
    if data.startswith(codecs.BOM_UTF8):
        return data[3:].decode("utf-8")
    head = data[:256]
    if b"coding" in head:
        import io
        import tokenize

        enc, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(enc)
    return data.decode("utf-8")


def dotted(node: ast.AST | None) -> str:
    """``a.b.c`` for a Name/Attribute chain, else an empty string."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Call) and parts:
        inner = dotted(node.func)
        if inner:
            parts.append(inner + "()")
            return ".".join(reversed(parts))
    return ""


# Fields that never hold a node any caller of ``_walk`` looks for: expression contexts and operators
# (leaf nodes, so leaving them out keeps the order of every other node) and plain identifiers/flags.
_LEAF_FIELDS = frozenset({"ctx", "op", "ops", "id", "attr", "arg", "name", "module", "level", "kind",
                          "type_comment", "conversion", "is_async", "simple"})
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {ast.Constant: ()}


def _child_fields(cls: type) -> tuple[str, ...]:
    # ignore below: cls is an ast node class (type has no _fields in the stubs)
    f = _CHILD_FIELDS[cls] = tuple(n for n in cls._fields if n not in _LEAF_FIELDS)  # type: ignore[attr-defined]
    return f


# The node kinds a ``def``'s records are made of (``_walk_kinds``): each kind's nodes in ``_walk`` order. Calls and
# assignments share one list, imports one, loops and comprehensions one, where a record interleaves them.
ATTR, NAME, CALL_ASSIGN, IMPORT, COMPARE, BINOP, LOOP, RETURN, ARG = range(9)
_KIND_OF: dict[type, int] = {
    ast.Attribute: ATTR, ast.Name: NAME, ast.Call: CALL_ASSIGN, ast.Assign: CALL_ASSIGN, ast.AnnAssign: CALL_ASSIGN,
    ast.Import: IMPORT, ast.ImportFrom: IMPORT, ast.Compare: COMPARE, ast.BinOp: BINOP, ast.For: LOOP,
    ast.comprehension: LOOP, ast.Return: RETURN, ast.arg: ARG,
}
Kinds = list[list[Any]]  # indexed by the kinds above


def _walk_kinds(node: ast.AST) -> tuple[list[ast.AST], Kinds]:
    """Every node under ``node`` (``_walk``), and its nodes of each kind that ``_body`` and ``_Extractor._method``
    read, in the same order.

    The two records of a ``def`` read a few node classes of every ``def`` of every class; sorting them out in the
    walk, which visits each node anyway, spares each record a pass over all of them testing classes."""
    todo: list[ast.AST] = [node]
    kinds: Kinds = [[] for _ in range(9)]
    i = 0
    AST = ast.AST
    fields = _CHILD_FIELDS
    kind_of = _KIND_OF
    append = todo.append
    while i < len(todo):
        n = todo[i]
        i += 1
        cls = n.__class__
        k = kind_of.get(cls)
        if k is not None:
            kinds[k].append(n)
        names = fields.get(cls)
        if names is None:
            names = _child_fields(cls)
        for name in names:
            v = getattr(n, name, None)
            if v.__class__ is list:
                for x in v:
                    if isinstance(x, AST):
                        append(x)
            elif isinstance(v, AST):
                append(v)
    return todo, kinds


def _walk(node: ast.AST) -> list[ast.AST]:
    """``list(ast.walk(node))`` in the same breadth-first order, without expression contexts and operators
    (``Load``, ``Add``, ``Eq``...: leaves no caller looks for). About three times as fast (no generators,
    no per-node scan of identifier fields). One walk with ``_walk_kinds``, whose sorting of the nodes costs the
    engines' few walks of their own files little."""
    return _walk_kinds(node)[0]


def _rooted_at(node: ast.Attribute, name: str) -> bool:
    """The ``a.b().c`` chain of ``node`` starts at the name ``name``: else ``dotted(node)`` cannot start
    with ``name + "."`` (it is empty, or starts with another identifier), and need not be built."""
    v = node.value
    while True:
        c = v.__class__
        if c is ast.Attribute:
            v = v.value  # type: ignore[attr-defined]  # exact class test above: v is an Attribute
        elif c is ast.Call:
            v = v.func  # type: ignore[attr-defined]  # exact class test above: v is a Call
        else:
            return c is ast.Name and v.id == name  # type: ignore[attr-defined]  # c is ast.Name: v is a Name


def _is_stub_body(body: list[ast.stmt]) -> bool:
    for st in body:
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
            continue  # docstring or ``...``
        if isinstance(st, ast.Pass):
            continue
        if isinstance(st, ast.Raise):
            exc = st.exc
            if isinstance(exc, ast.Call):
                exc = exc.func
            if dotted(exc) == "NotImplementedError":
                continue
        return False
    return True


def _is_docstring(st: ast.stmt) -> bool:
    return isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str)


# The names a collection fix may introduce in a forward (fixgen): the index variable it picks (the first free one)
# and the list it collects into.
FIX_INDEX_NAMES = ("idx", "layer_idx", "layer_index", "i_layer")
FIX_NAMES = frozenset({*FIX_INDEX_NAMES, "aux_hidden_states"})


def _layers_stmt(fn: ast.FunctionDef | ast.AsyncFunctionDef, nodes: list[ast.AST]) -> tuple[int, int]:
    """The span of the first top-level statement of ``fn`` that stores ``self.layers`` ((0, 0): none).

    ``nodes``: ``_walk(fn)``, which the method pass has already made (a second ``ast.walk`` of every ``__init__``
    was a fifth of the extraction of SGLang 0.5.23). The first statement holding a store is the one holding the
    first store in source order: the body's statements are disjoint and in that order."""
    first: tuple[int, int] | None = None
    for n in nodes:
        if n.__class__ is ast.Attribute and n.attr == "layers" and n.ctx.__class__ is ast.Store \
                and n.value.__class__ is ast.Name and n.value.id == "self":
            at = (n.lineno, n.col_offset)
            if first is None or at < first:
                first = at
    if first is not None:
        for st in fn.body:
            if (st.lineno, st.col_offset) <= first <= (st.end_lineno or st.lineno, st.end_col_offset or 0):
                return st.lineno, st.end_lineno or st.lineno
    return 0, 0


def _delegation(fn: ast.FunctionDef) -> str | None:
    """The attribute method ``fn`` hands its arguments to when that is all it does (``self.<attr>.<fn>(<params>)``,
    maybe behind ``if hasattr(self.<attr>, "<fn>"):``), else None."""
    name = fn.name
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) == 1 and isinstance(body[0], ast.If) and not body[0].orelse and len(body[0].body) == 1:
        test = body[0].test
        if not (isinstance(test, ast.Call) and dotted(test.func) == "hasattr" and len(test.args) == 2
                and isinstance(test.args[1], ast.Constant) and test.args[1].value == name):
            return None
        guarded = dotted(test.args[0])
        body = body[0].body
    else:
        guarded = None
    if len(body) != 1 or not isinstance(body[0], ast.Expr) or not isinstance(body[0].value, ast.Call):
        return None
    call = body[0].value
    recv = dotted(call.func)
    params = [a.arg for a in fn.args.args[1:]]
    if not recv.startswith("self.") or recv.count(".") != 2 or not recv.endswith(f".{name}"):
        return None
    if [dotted(a) for a in call.args] != params[: len(call.args)] or call.keywords:
        return None
    attr = recv.split(".")[1]
    return attr if guarded in (None, f"self.{attr}") else None


def _after_rebase(loop: ast.For, idx: str, lower: str) -> int:
    """The line of the statement after the first of ``loop``'s body when that one is ``idx = idx + <lower>`` (or
    ``+=``), else 0: an index rebound some other way is not one a fix can place a test on."""
    st = loop.body[0]
    if len(loop.body) < 2:
        return 0
    if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name) \
            and st.targets[0].id == idx and isinstance(st.value, ast.BinOp) and isinstance(st.value.op, ast.Add):
        terms = {ast.unparse(st.value.left), ast.unparse(st.value.right)}
    elif isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name) and st.target.id == idx \
            and isinstance(st.op, ast.Add):
        terms = {idx, ast.unparse(st.value)}
    else:
        return 0
    try:
        start = ast.unparse(ast.parse(lower.strip(), mode="eval").body)
    except (SyntaxError, ValueError, RecursionError):
        return 0
    return loop.body[1].lineno if terms == {idx, start} else 0


def _collect_calls(loop: ast.For) -> tuple[tuple[str, str, bool], ...]:
    """Calls in ``loop`` that may collect states, in ``ast.walk`` order up to the first ``aux...append(...)``:
    (method, first argument's name, whether it is that append)."""
    out: list[tuple[str, str, bool]] = []
    for n in ast.walk(loop):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            if n.func.attr == "append" and isinstance(n.func.value, ast.Name) and "aux" in n.func.value.id:
                out.append(("append", n.func.value.id, True))
                break
            if n.args and isinstance(n.args[0], ast.Name):
                out.append((n.func.attr, n.args[0].id, False))
    return tuple(out)


def _is_interesting(name: str) -> bool:
    if name in ("__init__", "forward", "get_language_model", "__getattr__"):
        return True
    low = name.lower()
    # ``_init_model`` builders tell which class ``self.model`` holds.
    return "aux" in low or "eagle" in low or "hidden_state" in low or "init" in low


def _const_repr(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, str, float, type(None))):
        return repr(node.value)
    return None


class _Extractor:
    def __init__(self, path: str, module: str, is_package: bool, text: str) -> None:
        self.path = path
        self.module = module
        self.is_package = is_package
        self.lines = text.splitlines()
        self.mf = ModuleFacts(path=path, module=module, is_package=is_package)
        self._stars: list[str] = []

    # -- text helpers -------------------------------------------------------------------------
    def seg(self, node: ast.AST) -> str:
        """Source text of a node; byte offsets converted per line, only for short spans."""
        try:
            l0, l1 = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined]  # stmt/expr nodes
            c0, c1 = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]  # stmt/expr nodes
        except AttributeError:
            return ""
        if l1 - l0 > 20 or l0 < 0 or l1 >= len(self.lines):
            return ""
        if l0 == l1:
            b = self.lines[l0].encode("utf-8")
            return b[c0:c1].decode("utf-8", "replace")
        first = self.lines[l0].encode("utf-8")[c0:].decode("utf-8", "replace")
        last = self.lines[l1].encode("utf-8")[:c1].decode("utf-8", "replace")
        return "\n".join([first, *self.lines[l0 + 1 : l1], last])

    def char_col(self, line: int, byte_col: int) -> int:
        if 0 < line <= len(self.lines):
            raw = self.lines[line - 1]
            if raw.isascii():
                return byte_col
            return len(raw.encode("utf-8")[:byte_col].decode("utf-8", "replace"))
        return byte_col

    def abs_module(self, level: int, module: str | None) -> str:
        if level == 0:
            return module or ""
        parts = self.module.split(".")
        if not self.is_package:
            parts = parts[:-1]
        if level > 1:
            parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
        base = ".".join(parts)
        if module:
            return f"{base}.{module}" if base else module
        return base

    # -- module level ---------------------------------------------------------------------------
    def run(self, tree: ast.Module) -> ModuleFacts:
        self._block(tree.body, MAIN, scope="")
        self.mf.star_imports = tuple(self._stars)
        self.mf.imports = tuple(self._import_stmt(st) for st in tree.body
                                if isinstance(st, (ast.Import, ast.ImportFrom)))
        if tree.body and _is_docstring(tree.body[0]):
            self.mf.doc_end = tree.body[0].end_lineno or tree.body[0].lineno
        return self.mf

    def _import_stmt(self, st: ast.Import | ast.ImportFrom) -> ImportStmt:
        end = st.end_lineno or st.lineno
        if isinstance(st, ast.Import):
            return ImportStmt(st.lineno, end, 0, st.names[0].name, False)
        names = tuple((a.name, "" if (t := self.seg(a)) == a.name else t, a.lineno,
                       self.char_col(a.lineno, a.col_offset), a.end_lineno or a.lineno,
                       self.char_col(a.end_lineno or a.lineno, a.end_col_offset or 0)) for a in st.names)
        return ImportStmt(st.lineno, end, st.level, st.module, True, names, self.abs_module(st.level, st.module))

    def stmt(self, st: ast.stmt) -> Stmt:
        kind = "other"
        value = (0, 0, 0, 0)
        if _is_docstring(st):
            kind = "doc"
        elif isinstance(st, ast.Expr):
            kind = "expr"
        elif isinstance(st, ast.Pass):
            kind = "pass"
        elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            kind = "def"
        elif isinstance(st, ast.Raise):
            kind = "raise"
        elif isinstance(st, ast.Return):
            v = st.value
            kind = "return-bare" if v is None else "return-tuple" if isinstance(v, ast.Tuple) else "return"
            if v is not None:
                el = v.end_lineno or v.lineno
                value = (v.lineno, self.char_col(v.lineno, v.col_offset), el, self.char_col(el, v.end_col_offset or 0))
        first = min([st.lineno, *(d.lineno for d in getattr(st, "decorator_list", []))])
        return Stmt(kind, st.lineno, st.end_lineno or st.lineno, first, value)

    def _bind(self, name: str, b: Binding) -> None:
        self.mf.bindings.setdefault(name, []).append(b)

    def _block(self, body: list[ast.stmt], branch: str, scope: str) -> None:
        for st in body:
            self._stmt(st, branch, scope)

    def _stmt(self, st: ast.stmt, branch: str, scope: str) -> None:
        if isinstance(st, ast.ClassDef):
            self._class(st, branch, nested_in=None)
            self._bind(st.name, Binding("class", st.name, line=st.lineno, branch=branch))
        elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._function(st)
            self._bind(st.name, Binding("function", st.name, line=st.lineno, branch=branch))
        elif isinstance(st, ast.Import):
            self._note_import_line(st)
            for a in st.names:
                if a.asname:
                    self._bind(a.asname, Binding("import", a.name, line=st.lineno, branch=branch))
                else:
                    top = a.name.split(".")[0]
                    self._bind(top, Binding("import", top, line=st.lineno, branch=branch))
        elif isinstance(st, ast.ImportFrom):
            self._note_import_line(st)
            mod = self.abs_module(st.level, st.module)
            for a in st.names:
                if a.name == "*":
                    self._stars.append(mod)
                    continue
                self._bind(a.asname or a.name, Binding("import", mod, attr=a.name, line=st.lineno, branch=branch))
        elif isinstance(st, (ast.Assign, ast.AnnAssign)):
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            value = st.value
            for t in targets:
                if isinstance(t, ast.Name):
                    self._bind(t.id, self._value_binding(value, st.lineno, branch))
                    if isinstance(value, ast.Dict) and branch == MAIN:
                        self._dict(t.id, value, st.lineno)
        elif isinstance(st, ast.If):
            test = dotted(st.test)
            # Within a platform branch, only its platforms reach this test.
            reach = branch_platforms(branch)
            within = [p for p in PLATFORMS if reach is None or p in reach]
            decided = {} if test.endswith("TYPE_CHECKING") else {p: platform_test(st.test, p) for p in within}
            if reach is not None and not within:
                self._block(st.body, branch, scope)  # a branch no platform takes: nothing under it runs either
                self._block(st.orelse, branch, scope)
            elif decided and any(v is not None for v in decided.values()):
                # A platform the condition leaves undecided (``is_rocm() and envs.X`` on ROCm) does not take it.
                taken = [p for p, v in decided.items() if v]
                self._block(st.body, platform_branch(taken), scope)
                rest = [p for p in within if p not in taken]
                if st.orelse:
                    if len(st.orelse) == 1 and isinstance(st.orelse[0], ast.If):
                        self._stmt(st.orelse[0], platform_branch(rest), scope)
                    else:
                        self._block(st.orelse, platform_branch(rest), scope)
            else:
                self._block(st.body, TYPE_CHECKING if test.endswith("TYPE_CHECKING") else IF, scope)
                if st.orelse:
                    # ``elif`` chains nest; only a final plain ``else`` is the runtime default.
                    if len(st.orelse) == 1 and isinstance(st.orelse[0], ast.If):
                        self._stmt(st.orelse[0], branch or IF, scope)
                    else:
                        self._block(st.orelse, ELSE if branch in (MAIN, IF, TYPE_CHECKING) else branch, scope)
        elif isinstance(st, TRY_NODES):
            self._block(st.body, TRY if branch == MAIN else branch, scope)
            for h in st.handlers:
                self._block(h.body, EXCEPT, scope)
            self._block(st.orelse, TRY if branch == MAIN else branch, scope)
            self._block(st.finalbody, branch, scope)
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            self._block(st.body, branch, scope)

    def _note_import_line(self, st: ast.stmt) -> None:
        if st.col_offset != 0:
            return
        if not self.mf.first_import_line:
            self.mf.first_import_line = st.lineno
        self.mf.last_import_line = max(self.mf.last_import_line, st.end_lineno or st.lineno)

    def _value_binding(self, value: ast.AST | None, line: int, branch: str) -> Binding:
        d = dotted(value)
        if d:
            return Binding("alias", d, line=line, branch=branch)
        if isinstance(value, ast.Call):
            f = dotted(value.func)
            args = tuple(dotted(a) for a in value.args)
            return Binding("call", f, args=args, line=line, branch=branch)
        return Binding("other", "", line=line, branch=branch)

    def _dict(self, name: str, node: ast.Dict, line: int) -> None:
        entries: list[tuple[str, str, str, int]] = []
        merges: list[str] = []
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:
                d = dotted(v)
                if d:
                    merges.append(d)
                continue
            if (
                isinstance(k, ast.Constant) and isinstance(k.value, str)
                and isinstance(v, ast.Tuple) and len(v.elts) == 2
                and isinstance(first := v.elts[0], ast.Constant) and isinstance(first.value, str)
                and isinstance(second := v.elts[1], ast.Constant) and isinstance(second.value, str)
            ):
                entries.append((k.value, first.value, second.value, k.lineno))
        if entries or merges:
            self.mf.dicts[name] = DictFacts(name, line, tuple(entries), tuple(merges))

    # -- functions (factories) ----------------------------------------------------------------
    def _function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        nested: list[str] = []
        returns: list[str] = []
        local: dict[str, Binding] = {}
        stack: list[ast.stmt] = list(fn.body)
        while stack:
            st = stack.pop()
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                local[st.targets[0].id] = self._value_binding(st.value, st.lineno, MAIN)
            elif isinstance(st, ast.Assign) and len(st.targets) == 1 \
                    and isinstance(st.targets[0], (ast.Tuple, ast.List)):
                # ``base_cls, kwargs = {...}[style]``: bound here, to values the tool does not follow.
                for el in st.targets[0].elts:
                    if isinstance(el, ast.Name):
                        local[el.id] = Binding("other", "", line=st.lineno)
            elif isinstance(st, ast.ImportFrom):
                # Lazy imports inside factories bind the bases of the classes they make.
                mod = self.abs_module(st.level, st.module)
                for a in st.names:
                    if a.name != "*":
                        local[a.asname or a.name] = Binding("import", mod, attr=a.name, line=st.lineno)
            elif isinstance(st, ast.ClassDef):
                qn = f"{fn.name}.<locals>.{st.name}"
                self._class(st, MAIN, nested_in=fn.name, qualname=qn)
                nested.append(qn)
            elif isinstance(st, ast.Return) and st.value is not None:
                d = dotted(st.value)
                if d:
                    returns.append(d)
            elif isinstance(st, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
                for fld in ("body", "orelse", "finalbody"):
                    stack.extend(getattr(st, fld, []) or [])
                for h in getattr(st, "handlers", []) or []:
                    stack.extend(h.body)
        params = tuple(a.arg for a in (*fn.args.posonlyargs, *fn.args.args))
        self.mf.functions[fn.name] = FunctionFacts(fn.name, fn.lineno, params, tuple(returns), tuple(nested), local)

    # -- classes ------------------------------------------------------------------------------
    def _class(self, node: ast.ClassDef, branch: str, nested_in: str | None, qualname: str | None = None) -> None:
        bases: list[BaseRef] = []
        args: tuple[str, ...]
        for b in node.bases:
            kind, d, args = "other", dotted(b), ()
            if d:
                kind = "name"
            elif isinstance(b, ast.Call):
                kind, d = "call", dotted(b.func)
                args = tuple(dotted(a) for a in b.args)
            elif isinstance(b, ast.Subscript):
                kind, d = "subscript", dotted(b.value)
            bases.append(BaseRef(
                kind, d, args, self.seg(b), b.lineno, self.char_col(b.lineno, b.col_offset),
                b.end_lineno or b.lineno, self.char_col(b.end_lineno or b.lineno, b.end_col_offset or 0),
            ))
        members: dict[str, Member] = {}
        methods: dict[str, Method] = {}
        bodies: dict[str, Body] = {}
        for st in node.body:
            self._class_member(st, members, methods, bodies)
        first = node.body[0]
        body_line = first.lineno
        # Decorated first members start at their decorator; insertions go above it.
        if isinstance(first, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and first.decorator_list:
            body_line = first.decorator_list[0].lineno
        cf = ClassFacts(
            name=node.name,
            qualname=qualname or node.name,
            line=node.lineno,
            col=self.char_col(node.lineno, node.col_offset),
            end_line=node.end_lineno or node.lineno,
            body_line=body_line,
            bases=tuple(bases),
            keywords={k.arg or "**": self.seg(k.value) for k in node.keywords},
            members=members,
            methods=methods,
            branch=branch,
            nested_in=nested_in,
            first=self.stmt(first),
            body_len=len(node.body),
        )
        self.mf.classes[cf.qualname] = cf
        if bodies:
            self.mf.bodies[cf.qualname] = bodies

    def _class_member(self, st: ast.stmt, members: dict[str, Member], methods: dict[str, Method],
                      bodies: dict[str, Body], direct: bool = True) -> None:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stub = _is_stub_body(st.body)
            members[st.name] = Member(st.name, "def", st.lineno, st.end_lineno or st.lineno, stub, None,
                                      first_line=st.decorator_list[0].lineno if st.decorator_list else 0,
                                      body_line=st.body[0].lineno, last=self.stmt(st.body[-1]), header=self._header(st))
            nodes, kinds = _walk_kinds(st)
            bodies[st.name] = _body(st, kinds, direct)
            if _is_interesting(st.name):
                methods[st.name] = self._method(st, stub, direct, nodes, kinds)
        elif isinstance(st, ast.Assign):
            for t in st.targets:
                for n in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    if isinstance(n, ast.Name):
                        members[n.id] = Member(n.id, "assign", st.lineno, st.end_lineno or st.lineno, False,
                                               _const_repr(st.value), alias=dotted(st.value) or None)
        elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
            kind = "annassign" if st.value is not None else "annotation"
            members[st.target.id] = Member(st.target.id, kind, st.lineno, st.end_lineno or st.lineno, False,
                                           _const_repr(st.value), alias=dotted(st.value) or None)
        elif isinstance(st, ast.ClassDef):
            members[st.name] = Member(st.name, "class", st.lineno, st.end_lineno or st.lineno)
        elif isinstance(st, ast.If):
            # Members defined under a class-level ``if`` exist on one branch; count both.
            for sub in (*st.body, *st.orelse):
                self._class_member(sub, members, methods, bodies, direct=False)

    def _method(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, stub: bool, direct: bool,
                nodes: list[ast.AST], kinds: Kinds) -> Method:
        params = tuple(a.arg for a in (*fn.args.posonlyargs, *fn.args.args))
        self_name = params[0] if params else "self"
        assigns: list[SelfAssign] = []
        reads: set[str] = set()
        calls: list[tuple[str, tuple[str, ...], int]] = []
        members: list[tuple[str, str, int]] = []
        loops: list[Loop] = []
        returns: list[tuple[str, str, int]] = []
        loop_nodes: list[ast.For] = []
        local_imports: list[tuple[str, Binding]] = []
        handoffs: list[tuple[str, str, str, int]] = []
        forward = "forward" in fn.name
        Load, Call, prefix = ast.Load, ast.Call, self_name + "."
        for node in kinds[ATTR]:
            if node.ctx.__class__ is Load and _rooted_at(node, self_name):
                d = dotted(node)
                if d.startswith(prefix):
                    reads.add(d)
        assign_nodes: list[ast.Assign] = []
        for node in kinds[CALL_ASSIGN]:
            if node.__class__ is Call:
                f = dotted(node.func)
                if f:
                    calls.append((f, tuple(self._arg_text(a) for a in node.args), node.lineno))
                    if forward:
                        handoffs.extend((f, k.arg, d, node.lineno) for k in node.keywords
                                        if k.arg and (d := dotted(k.value)).startswith(prefix))
                continue
            if node.__class__ is ast.Assign:
                assign_nodes.append(node)
            targets = node.targets if node.__class__ is ast.Assign else [node.target]
            for t in targets:
                if isinstance(t, ast.Tuple) and node.value is not None:
                    # ``self.start_layer, self.end_layer, self.layers = make_layers(...)``
                    f = dotted(node.value.func) if isinstance(node.value, ast.Call) else ""
                    for el in t.elts:
                        de = dotted(el)
                        if de.startswith(prefix):
                            assigns.append(SelfAssign(de, "unpack", f, (), {}, node.lineno))
                    continue
                d = dotted(t)
                if d.startswith(prefix) and node.value is not None:
                    v = node.value
                    if isinstance(v, ast.Call):
                        assigns.append(SelfAssign(
                            d, "call", dotted(v.func), tuple(self._arg_text(a) for a in v.args),
                            {k.arg: self.seg(k.value)[:200] for k in v.keywords if k.arg}, node.lineno,
                        ))
                    else:
                        dv = dotted(v)
                        kind = (
                            "name"
                            if isinstance(v, ast.Name)
                            else "attr"
                            if dv
                            else "const"
                            if isinstance(v, ast.Constant)
                            else "other"
                        )
                        assigns.append(SelfAssign(d, kind, dv or self.seg(v)[:200], (), {}, node.lineno))
        for node in kinds[IMPORT]:
            if node.__class__ is ast.ImportFrom:
                mod = self.abs_module(node.level, node.module)
                local_imports.extend((a.asname or a.name, Binding("import", mod, attr=a.name, line=node.lineno))
                                     for a in node.names if a.name != "*")
            else:
                local_imports.extend((a.asname, Binding("import", a.name, line=node.lineno)) if a.asname else
                                     (a.name.split(".")[0], Binding("import", a.name.split(".")[0], line=node.lineno))
                                     for a in node.names)
        for node in kinds[COMPARE]:
            if len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
                left = dotted(node.left) or self.seg(node.left)[:80]
                members.append((left, dotted(node.comparators[0]), node.lineno))
        loop_nodes.extend(n for n in kinds[LOOP] if n.__class__ is ast.For)
        for node in kinds[RETURN]:
            if node.value is not None:
                v = node.value
                kind = (
                    "tuple"
                    if isinstance(v, ast.Tuple)
                    else "name"
                    if isinstance(v, ast.Name)
                    else "call"
                    if isinstance(v, ast.Call)
                    else "other"
                )
                returns.append((kind, self.seg(v)[:200], node.lineno))
        # ``layers = self.layers[self.start_layer : self.end_layer]`` then ``enumerate(layers)`` (minimax_m3's
        # decode branch): the loop enumerates that slice.
        local_slices = {t.id: st.value for st in assign_nodes if isinstance(st, ast.Assign) and len(st.targets) == 1
                        for t in st.targets if isinstance(t, ast.Name)
                        and isinstance(st.value, (ast.Subscript, ast.Call)) and "layers" in self.seg(st.value)}
        for ln in loop_nodes:
            lp = self._loop(ln, local_slices, fn, nodes)
            if lp is not None:
                loops.append(lp)
        # What a forward that iterates the configured ids walks (the capture's order), where it loops over layers.
        iterates = tuple((head_dotted(n.iter), n.iter.lineno) for n in kinds[LOOP]) \
            if "forward" in fn.name and any(lp.over_layers for lp in loops) else ()
        body0 = fn.body[0]
        pos = [*fn.args.posonlyargs, *fn.args.args]
        named = [*zip(pos[len(pos) - len(fn.args.defaults):], fn.args.defaults, strict=True),
                 *((a, d) for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True) if d is not None)]
        defaults = tuple((a.arg, dv) for a, d in named if (dv := dotted(d)))
        return Method(
            name=fn.name, line=fn.lineno, col=self.char_col(fn.lineno, fn.col_offset),
            end_line=fn.end_lineno or fn.lineno, body_line=body0.lineno,
            params=params, stub=stub, self_assigns=tuple(assigns), reads=tuple(sorted(reads)),
            calls=tuple(calls), memberships=tuple(members), loops=tuple(loops), returns=tuple(returns),
            defaults=defaults, iterates=iterates, local_imports=tuple(local_imports), handoffs=tuple(handoffs),
            direct=direct,
            own_calls=tuple((self.seg(n.func.value), *self._end(n.func)) for n in kinds[CALL_ASSIGN]
                            if n.__class__ is Call and isinstance(n.func, ast.Attribute) and n.func.attr == fn.name),
            layers_stmt=_layers_stmt(fn, nodes) if fn.name == "__init__" else (0, 0),
            taken=tuple(sorted(FIX_NAMES & ({n.id for n in kinds[NAME]} | {a.arg for a in kinds[ARG]})))
            if forward and loops
            else (),
        )

    def _end(self, node: ast.expr) -> tuple[int, int]:
        el = node.end_lineno or node.lineno
        return el, self.char_col(el, node.end_col_offset or 0)

    def _header(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Header | None:
        """``fn``'s parameters as written, when they are plain positional ones (what fixgen copies)."""
        a = fn.args
        # What fixes copy is a setter or getter: ``self`` and at most two more (a forward's header is never copied,
        # and recording every long one would grow the facts by a fifth).
        if not isinstance(fn, ast.FunctionDef) or a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or not a.args \
                or len(a.args) > 3:
            return None
        params = []
        defaults: list[ast.expr | None] = [None] * (len(a.args) - len(a.defaults))
        defaults += a.defaults
        names: set[str] = set()
        for p, d in zip(a.args, defaults, strict=True):
            ann = self._seg_any(p.annotation) if p.annotation else None
            dv = self._seg_any(d) if d is not None else None
            names |= {n.id for x in (p.annotation, d) if x is not None for n in ast.walk(x) if isinstance(n, ast.Name)}
            eq = " = " if ann else "="  # PEP 8: spaces around the default of an annotated parameter only
            params.append(p.arg + (f": {ann}" if ann else "") + (f"{eq}{dv}" if dv else ""))
        ret = self._seg_any(fn.returns) if fn.returns else None
        if fn.returns is not None:
            names |= {n.id for n in ast.walk(fn.returns) if isinstance(n, ast.Name)}
        return Header(", ".join(params), ret, tuple(sorted(names)), _delegation(fn), tuple(p.arg for p in a.args[1:]))

    def _seg_any(self, node: ast.AST) -> str | None:
        """Source text of a node of any length (``ast.get_source_segment``'s result; None without a position)."""
        try:
            l0, l1 = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined]  # stmt/expr nodes
            c0, c1 = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]  # stmt/expr nodes
        except AttributeError:
            return None
        if l1 is None or c1 is None or l0 < 0 or l1 >= len(self.lines):
            return None
        if l0 == l1:
            return self.lines[l0].encode("utf-8")[c0:c1].decode("utf-8", "replace")
        first = self.lines[l0].encode("utf-8")[c0:].decode("utf-8", "replace")
        last = self.lines[l1].encode("utf-8")[:c1].decode("utf-8", "replace")
        return "\n".join([first, *self.lines[l0 + 1 : l1], last])

    def _arg_text(self, a: ast.AST) -> str:
        d = dotted(a)
        if d:
            return d
        if isinstance(a, ast.BinOp) and isinstance(a.op, ast.Add):
            return self.seg(a)[:80]
        if isinstance(a, ast.Starred):
            return "*" + (dotted(a.value) or "?")
        return self.seg(a)[:80] if isinstance(a, (ast.Constant, ast.List, ast.Tuple)) else "?"

    def _loop(self, node: ast.For, local_slices: Mapping[str, ast.expr] | None,
              fn: ast.FunctionDef | ast.AsyncFunctionDef, nodes: list[ast.AST]) -> Loop | None:
        """The ``Loop`` of ``node``: every enumerate loop, and range-and-index or plain loops over the layers."""
        shape = _shape(node, local_slices)
        if shape is None:
            return None
        walked = shape.iterable if shape.form is not LoopForm.RANGE else shape.seq
        over = walked is not None and "layers" in ast.unparse(walked)
        if shape.form is not LoopForm.ENUMERATE and not over:
            return None
        if shape.form is LoopForm.ENUMERATE:
            lp = self._enumerate_loop(node, shape)
        else:
            lp = Loop(line=node.lineno, col=self.char_col(node.lineno, node.col_offset),
                      end_line=node.end_lineno or node.lineno, end_col=0, index_var=shape.index or "",
                      sliced=shape.sliced, iter_text=self.seg(walked)[:200] if walked is not None else "",
                      start_text=None)
        lower, upper = shape.bounds
        if shape.form is LoopForm.RANGE and shape.index is not None:
            # ``range(self.start_layer, self.end_layer)`` counts absolute layer ids from its first argument: an
            # ``i - self.start_layer`` where the index meets the ids rebases it onto the rank's first layer again.
            first = lower if lower is not None and not isinstance(lower, ast.Constant) else None
            lp.uses, lp.rebased, lp.rebinds = self._index_uses(node, shape.index, ast.unparse(first) if first else "")
            lp.start_norm = ast.unparse(first) if first is not None else None
        if shape.form is LoopForm.PLAIN:
            base = IndexBase.NONE
        elif shape.form is LoopForm.ENUMERATE and shape.start is None and shape.sliced and not (
                isinstance(shape.lower, ast.Constant) and shape.lower.value in (0, None)):
            base = IndexBase.RELATIVE
        else:
            base = IndexBase.ABSOLUTE
        lp.form, lp.layer_var, lp.over_layers, lp.base = shape.form, shape.layer, over, base
        lp.lower = self.seg(lower) or None if lower is not None else None
        lp.upper = self.seg(upper) or None if upper is not None else None
        lp.any_slice = shape.any_slice
        if shape.iterable is not None:
            lp.seq_text = self.seg(shape.iterable)
            end_l = shape.iterable.end_lineno or shape.iterable.lineno
            lp.seq_end = (end_l, self.char_col(end_l, shape.iterable.end_col_offset or 0))
        lp.target_start = (node.target.lineno, self.char_col(node.target.lineno, node.target.col_offset))
        if over and "forward" in fn.name:
            # Sites only where the capture is read (a forward); ``__init__``'s loops over the layers set them up.
            lp.sites, lp.layer_line = self._sites(node, fn, nodes, shape.index, shape.layer)
        if "forward" in fn.name:
            lp.body_line = node.body[0].lineno
            end = node.end_lineno or node.lineno
            lp.top_line = next((st.lineno for st in fn.body
                                if st.lineno <= node.lineno and (st.end_lineno or st.lineno) >= end), 0)
            if lp.index_var and lp.lower:
                lp.rebase_next = _after_rebase(node, lp.index_var, lp.lower)
            # The variable the collection's layer call is made with (a range loop's only where it walks ``.layers``).
            layer_var = lp.layer_var if lp.form is not LoopForm.RANGE or ".layers" in lp.iter_text else None
            lp.layer_io = self._layer_io(node, layer_var)
            lp.collect_calls = _collect_calls(node)
        return lp

    def _layer_io(self, loop: ast.For, layer_var: str | None) -> tuple[str, str | None] | None:
        """(hidden, residual) from ``hidden_states, residual = layer(..., hidden_states, residual, ...)``."""
        for st in ast.walk(loop):
            if not (isinstance(st, ast.Assign) and isinstance(st.value, ast.Call)):
                continue
            f = st.value.func
            callee = (
                f.id
                if isinstance(f, ast.Name)
                else (f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else None)
            )
            is_layer = (layer_var is not None and callee == layer_var) or "layers" in (self._seg_any(f) or "")
            if not is_layer:
                continue
            # In call order (positional, then keywords), never a set: the choice must not depend on the hash seed.
            args = list(dict.fromkeys([a.id for a in st.value.args if isinstance(a, ast.Name)]
                                      + [k.value.id for k in st.value.keywords if isinstance(k.value, ast.Name)]))
            tgt = st.targets[0]
            outs = [e.id for e in tgt.elts if isinstance(e, ast.Name)] if isinstance(tgt, ast.Tuple) else \
                   ([tgt.id] if isinstance(tgt, ast.Name) else [])
            flowing = [o for o in outs if o in args]
            if flowing:
                return flowing[0], (flowing[1] if len(flowing) > 1 else None)
            # ``out = layer(hidden_states, original_hidden_states=...)`` then ``hidden_states = out``: the layer's
            # state is the argument rebound from its output; a loop-invariant input (zamba2's
            # ``original_hidden_states``, the embeddings every layer gets) is not.
            rebound = [a for a in args if any(
                isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and n.value.id in outs
                and any(isinstance(t2, ast.Name) and t2.id == a for t2 in n.targets) for n in ast.walk(loop))]
            hidden = rebound or [a for a in args if "hidden" in a and not a.startswith("original")]
            if hidden:
                return hidden[0], ("residual" if "residual" in args else None)
        return None

    def _sites(self, loop: ast.For, fn: ast.FunctionDef | ast.AsyncFunctionDef, nodes: list[ast.AST],
               idx: str | None, elem: str | None) -> tuple[tuple[Site, ...], int]:
        """Where a loop over the layers meets layer ids or flags (``Site``), and the line of its layer call."""
        # The layer call: ``layer(...)`` or ``self.layers[i](...)``, in the first statement that makes one.
        layer_pos = next((i for i, st in enumerate(loop.body) if any(
            isinstance(c, ast.Call) and (isinstance(c.func, ast.Name) and c.func.id == elem
                                         or isinstance(c.func, ast.Subscript)) for c in _walk(st))), None)
        calls = [c for c in _walk(loop.body[layer_pos]) if isinstance(c, ast.Call) and (
            isinstance(c.func, ast.Name) and c.func.id == elem or isinstance(c.func, ast.Subscript))] \
            if layer_pos is not None else []
        layer_line = min((c.lineno for c in calls), default=loop.body[layer_pos].lineno) \
            if layer_pos is not None else 0
        # A test in the call's own arguments (SGLang 0.5.23's DeepSeek-V2 passes ``captured_last_layer_outputs=aux
        # if i in self.layers_to_capture else None``) reads the state entering the layer, as an earlier line does.
        # By line, not by statement: a ``with`` block can hold both the test and the call.
        in_args = {id(x) for c in calls for a in (*c.args, *(k.value for k in c.keywords)) for x in _walk(a)}
        out: list[Site] = []
        attrs: set[tuple[str, int, bool]] = set()
        me = fn.args.args[0].arg if fn.args.args else "self"
        for i, st in enumerate(loop.body):
            for n in _walk(st):
                line = getattr(n, "lineno", 0)
                before = not layer_line or id(n) in in_args or line < layer_line
                # Attributes of the layers or of what the body computes (``layer._is_layer_to_capture``), once per
                # line and side: the module's own (``self.norm``) are never per-layer flags.
                attr = n.attr if isinstance(n, ast.Attribute) and not (
                    isinstance(n.value, ast.Name) and n.value.id == me) else None
                if attr is None and isinstance(n, ast.Call) and head_dotted(n.func) == "getattr" \
                        and len(n.args) >= 2 and isinstance(n.args[1], ast.Constant) \
                        and isinstance(n.args[1].value, str):
                    attr = n.args[1].value
                if attr is not None and (attr, line, before) not in attrs:
                    attrs.add((attr, line, before))
                    out.append(Site(SiteKind.ATTR, attr, "", 0, line, before))
                if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], ast.In):
                    off = index_offset(n.left, idx) if idx else None
                    if off is not None:
                        none_line = _none_before(fn, nodes, loop, st) \
                            if i <= (layer_pos if layer_pos is not None else i) else 0
                        out.append(Site(SiteKind.MEMBER, ast.unparse(n.comparators[0]),
                                        head_dotted(n.comparators[0]), off, line, before, none_line))
                elif isinstance(n, ast.Call) and idx:
                    for a in n.args:
                        off = index_offset(a, idx)
                        if off is not None:
                            out.append(Site(SiteKind.CALL, head_dotted(n.func), "", off, line, before))
                            break
        out.extend(Site(SiteKind.KWARG, k.arg, "", 0, c.lineno, True) for c in calls for k in c.keywords if k.arg)
        # Calls before the loop with the first index (``start_layer`` or 0): the state entering the first layer.
        for st in fn.body:
            if st.lineno >= loop.lineno:
                break
            out.extend(Site(SiteKind.PRE, head_dotted(n.func), "", 0, n.lineno, True) for n in _walk(st)
                       if isinstance(n, ast.Call) and any(
                           "start_layer" in ast.unparse(a) or (isinstance(a, ast.Constant) and a.value == 0)
                           for a in n.args))
        # A membership test after the loop with no loop index in it: the last layer's output.
        end = loop.end_lineno or loop.lineno
        if idx:
            out.extend(Site(SiteKind.POST, ast.unparse(n.comparators[0]), head_dotted(n.comparators[0]), 0,
                            n.lineno, False) for n in nodes
                       if isinstance(n, ast.Compare) and n.lineno > end and len(n.ops) == 1
                       and isinstance(n.ops[0], ast.In) and index_offset(n.left, idx) is None)
        return tuple(out), layer_line

    def _enumerate_loop(self, node: ast.For, shape: _Shape) -> Loop:
        assert shape.index is not None and shape.seq is not None
        idx, inner, sliced, start_node = shape.index, shape.seq, shape.sliced, shape.start
        start = self.seg(start_node) if start_node is not None else None
        lower: ast.AST | None = shape.lower  # the slice's start expression, for ``idx - <start>`` uses
        lower_text = ast.unparse(lower) if lower is not None and not isinstance(lower, ast.Constant) else ""
        uses, rebased, rebinds = self._index_uses(node, idx, lower_text)
        return Loop(
            line=node.lineno, col=self.char_col(node.lineno, node.col_offset),
            end_line=node.end_lineno or node.lineno, end_col=0, index_var=idx, sliced=sliced,
            iter_text=self.seg(inner)[:200], start_text=start,
            uses=uses, rebinds=rebinds, rebased=rebased,
            slice_lower=None if lower is None or (isinstance(lower, ast.Constant) and lower.value in (0, None))
            else ast.unparse(lower),
            start_norm=ast.unparse(start_node) if start_node is not None else None,
        )

    def _index_uses(self, node: ast.For, idx: str, lower_text: str) -> tuple[tuple[Use, ...], tuple[Use, ...],
                                                                              tuple[str, ...]]:
        """Where the body of ``node`` meets its index ``idx``: ``Loop.uses``, ``Loop.rebased`` (against
        ``lower_text``, the first layer's index as written; "" for none) and ``Loop.rebinds``."""
        uses: list[Use] = []
        rebased: list[Use] = []
        rebinds: list[str] = []
        for sub in node.body:
            for n in _walk(sub):
                if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and any(
                        isinstance(t, ast.Name) and t.id == idx
                        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])):
                    rebinds.append(self.seg(n)[:120])
                if isinstance(n, ast.Compare) and isinstance(n.left, ast.Name) and n.left.id == idx \
                        and len(n.ops) == 1 and isinstance(n.ops[0], (ast.In, ast.NotIn)):
                    uses.append(Use(UseKind.IN, dotted(n.comparators[0]), 0, n.lineno))
                elif isinstance(n, ast.Compare) and lower_text and len(n.ops) == 1 \
                        and isinstance(n.ops[0], (ast.In, ast.NotIn)):
                    rb = self._rebased_use(UseKind.IN, dotted(n.comparators[0]), n.left, idx, lower_text)
                    if rb is not None:
                        rebased.append(rb)
                elif isinstance(n, ast.Call):
                    for a in n.args:
                        off = index_offset(a, idx)
                        if off is not None:
                            uses.append(Use(UseKind.CALL, dotted(n.func), off, n.lineno))
                        elif lower_text:
                            rb = self._rebased_use(UseKind.CALL, dotted(n.func), a, idx, lower_text)
                            if rb is not None:
                                rebased.append(rb)
        return tuple(uses), tuple(rebased), tuple(rebinds)

    def _rebased_use(self, kind: UseKind, target: str, a: ast.AST, idx: str, lower_text: str) -> Use | None:
        """A ``Use`` for ``a`` when it is the index minus the slice start (``lower_text``), else None."""
        rb = rebased_index(a, idx)
        if rb is None:
            return None
        off, kept, sub = rb
        if ast.unparse(sub) != lower_text:
            return None
        return Use(kind, target, off, getattr(a, "lineno", 0), cut=self._cut(kept, sub),
                   text=" ".join(self.seg(a).split())[:120])

    def _cut(self, kept: ast.AST, sub: ast.AST) -> tuple[int, int, int, int]:
        """The span from the end of ``kept`` to the end of ``sub`` when it reads exactly `` - <sub>``.

        Anything else in between (a closing parenthesis of ``(idx) - s``, the opening one of
        ``idx - (s)``, a comment) would make the deletion change more than the subtraction.
        """
        l0, c0 = kept.end_lineno, kept.end_col_offset  # type: ignore[attr-defined]  # expr nodes
        l1, c1 = sub.end_lineno, sub.end_col_offset  # type: ignore[attr-defined]  # expr nodes
        if l0 is None or c0 is None or l1 is None or c1 is None or not (0 < l0 <= l1 <= len(self.lines)):
            return (0, 0, 0, 0)
        raw = "\n".join(self.lines[l0 - 1: l1]).encode("utf-8")
        # Byte offsets: c0 on the first line, c1 on the last (the join adds one byte per newline).
        end = len("\n".join(self.lines[l0 - 1: l1 - 1]).encode("utf-8")) + (1 if l1 > l0 else 0) + c1
        gap = raw[c0:end].decode("utf-8", "replace")
        if "".join(gap.replace("\\\n", " ").split()) != "-" + "".join(self.seg(sub).split()):
            return (0, 0, 0, 0)
        return (l0, self.char_col(l0, c0), l1, self.char_col(l1, c1))


def _layers_of(node: ast.AST, loops: dict[str, str]) -> str | None:
    """``self.model`` for ``self.model.layers[i]`` (or a loop variable over ``self.model.layers``), else None."""
    if isinstance(node, ast.Subscript):
        node = node.value
    text = head_dotted(node)
    if isinstance(node, ast.Name) and node.id in loops:
        text = loops[node.id]
    return text[: -len(".layers")] if text.endswith(".layers") else None


def _body(fn: ast.FunctionDef | ast.AsyncFunctionDef, kinds: Kinds, direct: bool) -> Body:
    """``fn``'s ``Body`` from its nodes of each kind (``_walk_kinds``, in ``_walk`` order, which is ``ast.walk``'s)."""
    args = fn.args.args
    me = args[0].arg if args else "self"
    rooted = me + "."
    stmts = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    empty = not stmts or all(isinstance(s, ast.Pass) for s in stmts)
    For, Call, Load = ast.For, ast.Call, ast.Load
    loops = {n.target.id: head_dotted(n.iter) for n in kinds[LOOP]
             if n.__class__ is For and isinstance(n.target, ast.Name)}
    events: list[tuple[str, str, str, int]] = []
    loaded = {n.attr for n in kinds[ATTR] if n.ctx.__class__ is Load}
    names = {n.id for n in kinds[NAME]}
    in_self: list[str] = []
    sorts = False
    for n in kinds[CALL_ASSIGN]:
        if n.__class__ is Call:
            func = n.func
            f = head_dotted(func)
            cargs = n.args
            if f == "sorted":
                sorts = True
            elif f in ("getattr", "hasattr", "setattr") and len(cargs) >= 2 and isinstance(cargs[1], ast.Constant) \
                    and isinstance(cargs[1].value, str):
                if f == "setattr":
                    lp = _layers_of(cargs[0], loops)
                    if lp is not None:
                        events.append((LAYER_SETATTR, cargs[1].value, lp, n.lineno))
                else:
                    loaded.add(cargs[1].value)
            if isinstance(func, ast.Attribute):
                recv = func.value
                if isinstance(recv, ast.Call) and head_dotted(recv.func) == "super":
                    events.append((SUPER_CALL, func.attr, "", n.lineno))
                else:
                    prefix = head_dotted(recv)
                    if prefix == me or prefix.startswith(rooted):
                        events.append((SELF_CALL, func.attr, prefix, n.lineno))
        elif n.__class__ is ast.Assign:
            for t in n.targets:
                if isinstance(t, ast.Attribute):
                    prefix = head_dotted(t.value)
                    if prefix == me or prefix.startswith(rooted):
                        events.append((STORE, t.attr, prefix, n.lineno))
                    lp = _layers_of(t.value, loops)
                    if lp is not None:
                        events.append((LAYER_STORE, t.attr, lp, n.lineno))
    for n in kinds[COMPARE]:
        ops = n.ops
        if len(ops) == 1 and isinstance(ops[0], ast.In):
            c = head_dotted(n.comparators[0])
            if c.startswith("self."):
                in_self.append(c[5:])
    adds_one = any(isinstance(n.op, ast.Add) and isinstance(n.right, ast.Constant) and n.right.value == 1
                   and isinstance(n.left, ast.Name) for n in kinds[BINOP])
    return Body(fn.lineno, me, len(args), len(fn.args.defaults), empty, tuple(events), tuple(sorted(loaded)),
                tuple(dict.fromkeys(in_self)), adds_one, len(args) >= 2 and args[1].arg in names, sorts, direct,
                isinstance(fn, ast.AsyncFunctionDef))


def head_dotted(node: ast.AST) -> str:
    """``a.b`` for a name chain; for a call, the callee's (``sorted(self.ids)`` -> ``sorted``); else ""."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    if isinstance(node, ast.Call):
        return head_dotted(node.func)
    return ""


def _none_before(fn: ast.FunctionDef | ast.AsyncFunctionDef, nodes: list[ast.AST], loop: ast.For,
                 st: ast.stmt) -> int:
    """Line of an ``a + b`` in ``st`` whose operand is ``None`` before the loop (rank 0, layer 0), else 0.
    ``nodes``: every node of ``fn`` (``_walk``)."""
    adds = [m for m in _walk(st) if isinstance(m, ast.BinOp) and isinstance(m.op, ast.Add)]
    if not adds:
        return 0
    none_at: dict[str, list[int]] = {}
    for a in nodes:
        if isinstance(a, ast.Assign) and a.lineno < loop.lineno and isinstance(a.value, ast.Constant) \
                and a.value.value is None:
            for t in a.targets:
                if isinstance(t, ast.Name):
                    none_at.setdefault(t.id, []).append(a.lineno)
    for m in adds:
        for operand in (m.left, m.right):
            if not isinstance(operand, ast.Name) or operand.id not in none_at:
                continue
            name, last = operand.id, max(none_at[operand.id])
            # An unconditional re-assignment between the ``None`` and the loop settles it.
            later = [a for a in fn.body if isinstance(a, ast.Assign) and last < a.lineno < loop.lineno
                     and any(isinstance(t, ast.Name) and t.id == name for t in a.targets)]
            if not later:
                return m.lineno
    return 0


def index_offset(a: ast.AST, idx: str) -> int | None:
    """k when ``a`` is ``idx``, ``idx + k`` or ``idx - k`` (a loop index passed to an aux helper), else None."""
    if isinstance(a, ast.Name) and a.id == idx:
        return 0
    if isinstance(a, ast.BinOp) and isinstance(a.left, ast.Name) and a.left.id == idx \
            and isinstance(a.right, ast.Constant) and isinstance(a.right.value, int):
        if isinstance(a.op, ast.Add):
            return a.right.value
        if isinstance(a.op, ast.Sub):
            return -a.right.value
    return None


def rebased_index(a: ast.AST, idx: str) -> tuple[int, ast.AST, ast.AST] | None:
    """``(k, kept, s)`` when ``a`` is ``idx - s``, ``idx - s + k``, ``idx - s - k`` or ``idx +/- k - s``
    (``s`` not an integer literal): ``kept`` is the operand before `` - s``, so deleting from its end
    to the end of ``s`` leaves ``idx [+/- k]``. None otherwise."""
    def sub_of(n: ast.AST) -> tuple[int, ast.AST, ast.AST] | None:
        if not (isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub)):
            return None
        if isinstance(n.right, ast.Constant) and isinstance(n.right.value, int):
            return None  # idx - 1: a plain offset, index_offset's business
        off = index_offset(n.left, idx)  # idx - s, or idx + k - s
        return (off, n.left, n.right) if off is not None else None

    hit = sub_of(a)
    if hit is not None:
        return hit
    if isinstance(a, ast.BinOp) and isinstance(a.op, (ast.Add, ast.Sub)) \
            and isinstance(a.right, ast.Constant) and isinstance(a.right.value, int) \
            and not isinstance(a.right.value, bool):
        inner = sub_of(a.left)  # (idx - s) + k
        if inner is not None and inner[0] == 0:
            k = a.right.value if isinstance(a.op, ast.Add) else -a.right.value
            return k, inner[1], inner[2]
    return None


def extract(path: str, module: str, is_package: bool, data: bytes) -> ModuleFacts:
    """Facts of one file; a file that cannot be decoded or parsed yields facts with ``error`` set."""
    mf = _extract(path, module, is_package, data)
    mf.mentions_marker = SUPPRESSION_MARKER in data
    return mf


def _extract(path: str, module: str, is_package: bool, data: bytes) -> ModuleFacts:
    try:
        text = decode_source(data)
    except (UnicodeError, LookupError, SyntaxError) as exc:
        # The line holding the first byte that does not decode, where an editor shows the damage.
        line = data[: exc.start].count(b"\n") + 1 if isinstance(exc, UnicodeDecodeError) else 1
        return ModuleFacts(path, module, is_package, error=f"cannot decode: {exc}", error_line=line)
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        return ModuleFacts(path, module, is_package, error=f"syntax error: {exc.msg}", error_line=exc.lineno or 1)
    except (ValueError, RecursionError, MemoryError) as exc:
        return ModuleFacts(path, module, is_package, error=f"cannot parse: {type(exc).__name__}: {exc}"[:200],
                           error_line=1)
    try:
        return _Extractor(path, module, is_package, text).run(tree)
    except RecursionError:
        return ModuleFacts(path, module, is_package, error="cannot analyze: nesting too deep", error_line=1)
    except Exception as exc:  # noqa: BLE001 - one file must not sink the run; the analysis reports it
        import traceback

        return ModuleFacts(path, module, is_package,
                           internal_error=f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
