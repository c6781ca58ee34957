"""The runner's aux-layer path and the config-time gates, read from the tree being checked.

Runner: every call of the contract's check function (``supports_eagle3(...)``) outside the model
files, with the object it interrogates, the error it raises, the config-path function and key,
and the model methods called afterwards (the fallback getter and the setter). Releases with no
check function still call the model's methods directly; those calls are the path then.

Gates: ``if`` statements that refuse EAGLE-3 by the target's HF ``model_type`` before any weight
loads (``SpeculativeConfig`` from 0.9 to about 0.20). Recognised by shape, not by variable name.

Rank guard (``rank_guard``): the runner class that builds the EAGLE proposer only under a test of
``is_last_rank``, and the first read of that attribute that start-up (``initialize_kv_cache``, which
every worker calls) reaches with no such test around it.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable

from eagle3_lint.facts import _walk, decode_source, dotted
from eagle3_lint.runner import Gate, GateEdit, RankGuard, RunnerKind, RunnerPath, RunnerSite, SetterIds
from eagle3_lint.source import SourceTree

_MODEL_DIRS = ("vllm/model_executor/models/", "vllm/models/")
_RUNNER_MARKERS = (b"supports_eagle3(", b"aux_hidden_state_layers(", b"eagle_aux_hidden_state_layer_ids")
_GATE_MARKERS = (b"eagle3", b"model_type")


# V2 lives in its own package beside V1's module (0.20 on); a site elsewhere belongs to V1.
_V2_DIR = "vllm/v1/worker/gpu/"


def runner_of(path: str) -> RunnerKind:
    return RunnerKind.V2 if path.startswith(_V2_DIR) else RunnerKind.V1



def input_files(source: SourceTree) -> list[str]:
    """Every file the runner path and the gates may be read from (the key of their cache)."""
    return [rel for rel in source.py_files() if not rel.startswith(_MODEL_DIRS) and "/tests/" not in rel]


def _is_runner_candidate(data: bytes) -> bool:
    return any(m in data for m in _RUNNER_MARKERS)


def _is_gate_candidate(data: bytes) -> bool:
    return all(m in data for m in _GATE_MARKERS) and b"raise" in data


def _candidates(source: SourceTree) -> tuple[list[tuple[str, bytes]], list[tuple[str, bytes]]]:
    """(runner candidates, gate candidates): each input file is read once, only matches are kept."""
    runner: list[tuple[str, bytes]] = []
    gates: list[tuple[str, bytes]] = []
    for rel in input_files(source):
        try:
            data = source.read_bytes(rel)
        except OSError:
            continue
        if _is_runner_candidate(data):
            runner.append((rel, data))
        if _is_gate_candidate(data):
            gates.append((rel, data))
    return runner, gates


def _parse(rel: str, data: bytes) -> ast.Module | None:
    try:
        return ast.parse(decode_source(data), filename=rel)
    except (SyntaxError, UnicodeError, ValueError, RecursionError):
        return None


def _functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in _walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _message(node: ast.AST) -> str:
    """The literal parts of an exception message (f-string holes become ``{...}``)."""
    parts: list[str] = []
    for n in _walk(node):
        if isinstance(n, ast.JoinedStr):
            for v in n.values:
                parts.append(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{...}")
            return "".join(parts)
    for n in _walk(node):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            parts.append(n.value)
    return "".join(parts)


def _raise_in(stmts: list[ast.stmt]) -> tuple[str, int]:
    for st in stmts:
        for n in _walk(st):
            if isinstance(n, ast.Raise) and n.exc is not None:
                exc = n.exc
                name = dotted(exc.func) if isinstance(exc, ast.Call) else dotted(exc)
                return f"{name}({_message(exc)!r})", n.lineno
    return "", 0


def derive(source: SourceTree, check_function: str, member_names: tuple[str, ...],
           pp_flag: str | None) -> RunnerPath:
    """Read the runner path; ``member_names`` are the contract's methods (may be empty)."""
    sites: list[RunnerSite] = []
    config_fns: dict[str, tuple[str, int]] = {}
    cfg_key: tuple[str, str, int] | None = None
    pp: tuple[str, str, int] | None = None
    relay: tuple[str, str, int] | None = None
    called: dict[tuple[str, int], set[str]] = {}
    runner_files, gate_files = _candidates(source)
    # gpu_model_runner.py and the speculative config are candidates of both: parse them once.
    gate_rels = {rel for rel, _ in gate_files}
    parsed: dict[str, ast.Module | None] = {}
    for rel, data in runner_files:
        tree = _parse(rel, data)
        if rel in gate_rels:
            parsed[rel] = tree
        if tree is None:
            continue
        for fn in _functions(tree):
            site = _site(rel, fn, check_function, member_names)
            if site is not None:
                # vLLM's runners hand the setter the ids they read (the drafter config's, else the model default).
                site = dataclasses.replace(site, kind=runner_of(rel),
                                           setter_ids=SetterIds.DRAFTER if site.setter else None)
                sites.append(site)
                called[(rel, site.line)] = {
                    dotted(n.func).rsplit(".", 1)[-1] for n in _walk(fn) if isinstance(n, ast.Call)
                }
            if relay is None and any(isinstance(n, ast.Assign) and any(
                    isinstance(t, ast.Attribute) and t.attr == "make_empty_intermediate_tensors"
                    and not dotted(t.value).startswith("self") for t in n.targets) for n in _walk(fn)):
                relay = (fn.name, rel, fn.lineno)
            for n in _walk(fn):
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("eagle_aux") \
                        and n.value.endswith("layer_ids") and cfg_key is None:
                    cfg_key = (n.value, rel, n.lineno)
                    config_fns[fn.name] = (rel, fn.lineno)
                if pp_flag and isinstance(n, ast.Constant) and n.value == pp_flag and pp is None:
                    pp = (fn.name, rel, fn.lineno)
    gates, gate_edits = _gates(gate_files, parsed)
    guard = None
    for rel, data in runner_files:
        if any(st.path == rel and st.kind is RunnerKind.V1 for st in sites):
            tree = _parse(rel, data)
            guard = rank_guard(rel, tree) if tree is not None else None
            if guard is not None:
                break
    if relay is not None:
        sites = [dataclasses.replace(st, reserves_relay=relay[0] in called.get((st.path, st.line), set()))
                 for st in sites]
    notes: list[str] = []
    if not sites:
        notes.append("no runner call site found: the tree never asks the model for aux hidden states")
    return RunnerPath(
        sites=tuple(sorted(sites, key=lambda s: (not s.path.endswith("gpu_model_runner.py"), s.path, s.line))),
        config_key=cfg_key[0] if cfg_key else None,
        config_key_path=cfg_key[1] if cfg_key else "",
        pp_verifier=pp[0] if pp else None, pp_verifier_path=pp[1] if pp else "", pp_verifier_line=pp[2] if pp else 0,
        pp_flag=pp_flag if pp else None,
        relay_setup=relay[0] if relay else None, relay_setup_path=relay[1] if relay else "",
        relay_setup_line=relay[2] if relay else 0,
        gates=tuple(gates), gate_edits=tuple(gate_edits), notes=tuple(notes), rank_guard=guard,
    )


# The start-up method every worker calls on its runner, on every pipeline rank (the V1 worker's
# ``initialize_from_config``, on CPU and CUDA alike), from which an unguarded read is followed.
RANK_ENTRY = "initialize_kv_cache"
# A proposer class EAGLE-3 is served with: the attribute assigned it is the runner's drafter.
_PROPOSER = "EagleProposer"
_MAX_DEPTH = 5


def rank_guard(rel: str, tree: ast.Module) -> RankGuard | None:
    """The runner class in ``rel`` whose ``__init__`` assigns its EAGLE proposer only under an ``is_last_rank``
    test, with the first read of that attribute ``RANK_ENTRY`` reaches unguarded under EAGLE (see RankGuard);
    None when no class does both."""
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        methods = {f.name: f for f in cls.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
        init, entry = methods.get("__init__"), methods.get(RANK_ENTRY)
        if init is None or entry is None:
            continue
        built = _guarded_proposer(init)
        if built is None:
            continue
        attr, test = built
        read = _first_read(entry, attr, methods, (entry.name,))
        if read is None:
            continue
        calls, line, if_node = read
        return RankGuard(path=rel, attr=attr, guard_line=test.lineno, guard=ast.unparse(test.test),
                         entry=RANK_ENTRY, calls=calls, read_line=line,
                         read_test_line=if_node.lineno if if_node else 0,
                         read_test=ast.unparse(if_node.test) if if_node else "")
    return None


def _self_attr(node: ast.AST) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
        and node.value.id == "self" else None


def _guarded_proposer(init: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ast.If] | None:
    """(attribute, the ``if`` testing ``is_last_rank`` around it) for ``self.<attr> = ...EagleProposer(...)`` in
    ``init``, when every assignment of that attribute in ``init`` sits under such an ``if``."""
    found: list[tuple[str, ast.If | None]] = []

    def visit(stmts: list[ast.stmt], rank_if: ast.If | None) -> None:
        for st in stmts:
            if isinstance(st, ast.If):
                is_rank = any(isinstance(n, ast.Attribute) and n.attr == "is_last_rank" for n in _walk(st.test))
                inner = rank_if or (st if is_rank else None)
                visit(st.body, inner)
                visit(st.orelse, rank_if)  # the else of a rank test runs on the other ranks
                continue
            if isinstance(st, ast.Assign) or (isinstance(st, ast.AnnAssign) and st.value is not None):
                # a bare annotation (0.32.0 :591, ``self.drafter: (...)``) creates no attribute
                targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                for t in targets:
                    name = _self_attr(t)
                    if name is not None:
                        found.append((name, rank_if))
            for block in _blocks(st):
                visit(block, rank_if)

    visit(init.body, None)
    proposer = {name for name, _ in found}
    for st in _walk(init):
        if isinstance(st, ast.Assign) and isinstance(st.value, ast.Call) \
                and dotted(st.value.func).rsplit(".", 1)[-1] == _PROPOSER:
            for t in st.targets:
                name = _self_attr(t)
                if name in proposer:
                    ifs = [r for n, r in found if n == name]
                    if ifs and all(r is not None for r in ifs):
                        rank = ifs[0]
                        assert rank is not None  # all() above
                        return name, rank
    return None


def _blocks(st: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists nested in a compound statement other than ``if`` (loops, ``with``, ``try``)."""
    out = [getattr(st, name) for name in ("body", "orelse", "finalbody") if isinstance(getattr(st, name, None), list)]
    out.extend(h.body for h in getattr(st, "handlers", []) or [])
    return [b for b in out if b and isinstance(b[0], ast.stmt)]


def _true_under_eagle(test: ast.expr) -> bool:
    """The test is true whenever EAGLE-3 is configured, on any rank: ``...speculative_config`` itself, a
    ``...use_eagle()`` call, and ``and``/``or`` of such terms (anything else: not known, so not followed)."""
    if isinstance(test, ast.Attribute) and test.attr == "speculative_config":
        return True
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr == "use_eagle" \
            and not test.args:
        return True
    if isinstance(test, ast.BoolOp):
        parts = [_true_under_eagle(v) for v in test.values]
        return all(parts) if isinstance(test.op, ast.And) else any(parts)
    return False


def _first_read(fn: ast.FunctionDef | ast.AsyncFunctionDef, attr: str,
                methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef], calls: tuple[str, ...]
                ) -> tuple[tuple[str, ...], int, ast.If | None] | None:
    """The first ``self.<attr>`` read that running ``fn`` reaches, in statement order, following calls of the
    class's own methods: only into ``if`` bodies whose test is true under EAGLE (``_true_under_eagle``) and
    ``with``/``try`` bodies (loops may run zero times; other tests are not known). Returns (the methods from
    the entry, the read's line, the ``if`` it sits in)."""

    def visit(stmts: list[ast.stmt], where: ast.If | None
              ) -> tuple[tuple[str, ...], int, ast.If | None] | None:
        for st in stmts:
            if isinstance(st, ast.If):
                if _true_under_eagle(st.test):
                    hit = visit(st.body, st)
                    if hit is not None:
                        return hit
                continue
            if isinstance(st, (ast.With, ast.AsyncWith, ast.Try)):
                hit = visit(st.body, where)
                if hit is not None:
                    return hit
                continue
            if isinstance(st, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef, ast.AsyncFunctionDef,
                               ast.ClassDef)):
                continue
            for n in _walk(st):
                if _self_attr(n) == attr and isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load):
                    return calls, n.lineno, where
            for n in _walk(st):
                if isinstance(n, ast.Call):
                    name = _self_attr(n.func)
                    callee = methods.get(name or "")
                    if callee is not None and name not in calls and len(calls) < _MAX_DEPTH:
                        hit = _first_read(callee, attr, methods, (*calls, callee.name))
                        if hit is not None:
                            return hit
        return None

    return visit(fn.body, None)


def _site(rel: str, fn: ast.FunctionDef | ast.AsyncFunctionDef, check_function: str,
          member_names: tuple[str, ...]) -> RunnerSite | None:
    check: tuple[str, int] | None = None
    err, err_line = "", 0
    negated = False
    for n in _walk(fn):
        if isinstance(n, ast.If):
            t = n.test
            negated = isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not)
            if negated:
                t = t.operand  # type: ignore[attr-defined]  # negated: t is a UnaryOp
            if isinstance(t, ast.Call) and dotted(t.func).endswith(check_function) and t.args:
                check = (ast.unparse(t.args[0]), n.lineno)
                err, err_line = _raise_in(n.body)
                break
    fallback = setter = cfg = None
    fb_line = st_line = cfg_line = 0
    receiver = ""
    for n in _walk(fn):
        if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)):
            if isinstance(n, ast.Call) and "from_config" in dotted(n.func) and "aux" in dotted(n.func):
                cfg, cfg_line = dotted(n.func).rsplit(".", 1)[-1], n.lineno
            continue
        name = n.func.attr
        if "from_config" in name and "aux" in name:
            cfg, cfg_line = name, n.lineno
            continue
        is_member = name in member_names or (not member_names and "aux_hidden_state" in name)
        if not is_member:
            continue
        if n.args:
            if setter is None or n.lineno < st_line:
                setter, st_line = name, n.lineno
                receiver = ast.unparse(n.func.value)
        elif fallback is None or n.lineno < fb_line:
            fallback, fb_line = name, n.lineno
    if check is None and setter is None:
        return None
    if check is None and fallback is None:
        return None
    return RunnerSite(
        path=rel, line=check[1] if check else st_line, function=fn.name,
        interrogated=check[0] if check else receiver, error=err, error_line=err_line,
        config_function=cfg, config_line=cfg_line, fallback=fallback, fallback_line=fb_line,
        setter=setter, setter_line=st_line, checked=check is not None, negated=negated,
    )


def _gates(files: list[tuple[str, bytes]], parsed: dict[str, ast.Module | None]) -> tuple[list[Gate], list[GateEdit]]:
    out: list[Gate] = []
    edits: list[GateEdit] = []
    for rel, data in files:
        tree = parsed[rel] if rel in parsed else _parse(rel, data)
        if tree is None:
            continue
        text_lines = data.decode("utf-8", "replace").splitlines()
        for fn in _functions(tree):
            lists: dict[str, tuple[tuple[str, ...], int, tuple[int, int, int, int]]] = {}
            for n in _walk(fn):
                if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                        and isinstance(n.value, (ast.List, ast.Tuple, ast.Set)) and n.value.elts \
                        and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in n.value.elts):
                    # The filter repeats the all() above, for the type checker.
                    words = tuple(e.value for e in n.value.elts
                                  if isinstance(e, ast.Constant) and isinstance(e.value, str))
                    last = n.value.elts[-1]
                    el = last.end_lineno or last.lineno
                    end = (last.lineno, el, _char_col(text_lines, el, last.end_col_offset or 0),
                           n.value.end_lineno or n.lineno)
                    lists[n.targets[0].id] = (words, n.lineno, end)
            for n in _walk(fn):
                if isinstance(n, ast.If):
                    g = _gate(rel, n, lists, text_lines)
                    if g is not None:
                        out.append(g[0])
                        edits.append(g[1])
    return out, edits


def _char_col(lines: list[str], line: int, byte_col: int) -> int:
    row = lines[line - 1] if 0 < line <= len(lines) else ""
    return len(row.encode("utf-8")[:byte_col].decode("utf-8", "replace"))


def _gate(rel: str, node: ast.If, lists: dict[str, tuple[tuple[str, ...], int, tuple[int, int, int, int]]],
          lines: list[str]) -> tuple[Gate, GateEdit] | None:
    test = node.test
    methods = tuple(
        sorted(
            {
                n.value
                for n in _walk(test)
                if isinstance(n, ast.Constant)
                and isinstance(n.value, str)
                and n.value in ("eagle3", "eagle", "extract_hidden_states", "dflash", "dspark")
            }
        )
    )
    if "eagle3" not in methods:
        return None
    if not any(isinstance(n, ast.Attribute) and n.attr == "model_type" for n in _walk(test)):
        return None
    err, _ = _raise_in(node.body)
    if not err:
        return None
    allow: tuple[str, ...] = ()
    list_name: str | None = None
    list_line = 0
    cfg_attr = ""
    list_end = literal_span = (0, 0, 0, 0)
    literal_attr = ""
    for n in _walk(test):
        if isinstance(n, ast.Attribute) and n.attr == "model_type" and isinstance(n.value, ast.Attribute):
            cfg_attr = n.value.attr
        # ``not any(x in <...>.model_type for x in LIST)``
        if isinstance(n, ast.comprehension) and isinstance(n.iter, ast.Name) and n.iter.id in lists:
            list_name = n.iter.id
            allow, list_line, list_end = lists[list_name]
        # ``"llama" not in <...>.model_type``
        if isinstance(n, ast.Compare) and isinstance(n.left, ast.Constant) and isinstance(n.left.value, str) \
                and len(n.ops) == 1 and isinstance(n.ops[0], ast.NotIn) \
                and isinstance(n.comparators[0], ast.Attribute) and n.comparators[0].attr == "model_type":
            allow = (n.left.value,)
            list_line = n.lineno
            el = n.end_lineno or n.lineno
            literal_span = (n.lineno, el, _char_col(lines, n.lineno, n.col_offset),
                            _char_col(lines, n.lineno, n.end_col_offset or 0))
            literal_attr = _segment(lines, n.comparators[0]) or ast.unparse(n.comparators[0])
    if not allow:
        return None
    return (Gate(rel, node.lineno, methods, allow, list_name, list_line, cfg_attr, "substring", err),
            GateEdit(rel, node.lineno, list_end, literal_span, literal_attr))


def _segment(lines: list[str], node: ast.expr) -> str:
    """``node`` as written (one line; "" across lines, where ``ast.unparse`` stands in)."""
    if node.end_lineno != node.lineno or not 0 < node.lineno <= len(lines):
        return ""
    return lines[node.lineno - 1].encode("utf-8")[node.col_offset:node.end_col_offset].decode("utf-8", "replace")


def drafter_load_first(source: SourceTree, site: RunnerSite, platform: str,
                       parse: Callable[[str], ast.Module | None]) -> tuple[str, int] | None:
    """``(path, line)`` where the runner's ``load_model`` loads the drafter (``self.drafter.load_model(...)``, V2's
    ``self.speculator.load_model(...)``) before it calls ``site``'s function, or None: V1 0.32.0 loads it first
    (gpu_model_runner.py:5073, then ``_setup_eagle3_aux_hidden_state_outputs()`` at :5116), V2 0.33.0 checks first
    (``set_eagle3_aux_hidden_state_layers`` at gpu/model_runner.py:414, the speculator's load at :421). With
    ``--platform cpu`` the CPU runner's own ``load_model`` decides (0.32.0 cpu_model_runner.py:76, then :78)."""
    from eagle3_lint.engines.vllm.runnerchoice import CPU_RUNNER

    if not site.function:
        return None
    files = sorted(rel for rel in source.py_files()
                   if rel.startswith("vllm/v1/worker/") and runner_of(rel) is site.kind)
    # the site's own file first (GPU), or the CPU runner's on CPU; the CPU runner's is not the GPU's
    first = CPU_RUNNER if platform == "cpu" else site.path
    files = [rel for rel in files if rel == first] + [rel for rel in files if rel not in (first, CPU_RUNNER)]
    for rel in files:
        tree = parse(rel)
        for fn in _functions(tree) if tree is not None else ():
            if fn.name != "load_model":
                continue
            calls = [c for c in ast.walk(fn) if isinstance(c, ast.Call)]
            # the check inline in load_model (0.16.0 gpu_model_runner.py:4189) is the site's own line
            check = [site.line] if site.function == fn.name and rel == site.path else \
                [c.lineno for c in calls if dotted(c.func).rsplit(".", 1)[-1] == site.function]
            if not check:
                continue
            loads = [c.lineno for c in calls if isinstance(c.func, ast.Attribute) and c.func.attr == "load_model"
                     and _self_attr(c.func.value) in ("drafter", "speculator")]
            return (rel, min(loads)) if loads and min(loads) < min(check) else None
    return None
