"""The non-model files SGLang's runner derivations read, each read once and parsed at most once.

The runner path (runner.py) looks for the setter's call sites and the drafter's id reads in every file outside
``sglang/srt/models`` (~4,400 in 0.5.23), and the start-up order of ``get_embed_and_head()`` (target_calls.py) walks
callers through the server's own files (``sglang/srt``). Each used to read and parse what it needed itself: every
non-model file was read two or three times and the files holding a call parsed up to three times, 1.5 s of CPU of a
cold check of 0.5.23 (more than parsing its 300 model files). ``RunnerFiles`` reads each file once, noting which of
the derivation's needles its bytes hold, keeps the server's files' bytes for the caller walk, and parses a file the
first time someone asks for its tree.

``hasattr_tests`` is the one reading of a ``hasattr(<receiver>, "<method>")`` test both use: the runner's guard on
the setter (raise, skip or ``AttributeError``), and the methods the EAGLE worker tries before ``get_embed_and_head``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from eagle3_lint.engines.sglang.registry import MODELS_DIR
from eagle3_lint.facts import decode_source, dotted
from eagle3_lint.source import SourceTree

SETTER = "set_eagle3_layers_to_capture"
IDS_KEY = "eagle_aux_hidden_state_layer_ids"
# The server's own code: what ``sglang.launch_server`` runs. Benchmarks and tests (``sglang/bench_*``,
# ``sglang/benchmark/``, ``sglang/test/``) drive the runner in orders of their own.
SERVER_DIR = MODELS_DIR.rsplit("/", 1)[0]  # sglang/srt


def input_files(source: SourceTree) -> list[str]:
    """Every file the runner path may be read from (all but the model files): the key of its cache
    (``FactStore.memo``)."""
    return [rel for rel in source.py_files() if not rel.startswith(MODELS_DIR + "/")]


def parse(source: SourceTree, rel: str, needle: bytes) -> ast.Module | None:
    """``rel`` parsed if its bytes hold ``needle`` (None if not, or if it cannot be read or parsed)."""
    try:
        data = source.read_bytes(rel)
    except OSError:
        return None
    return _parsed(rel, data) if needle in data else None


def _parsed(rel: str, data: bytes) -> ast.Module | None:
    try:
        return ast.parse(decode_source(data), filename=rel)
    except (UnicodeError, LookupError, SyntaxError, ValueError, RecursionError):
        return None


def parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    """Child -> parent for every node under ``tree``."""
    out: dict[ast.AST, ast.AST] = {}
    todo = [tree]
    for node in todo:  # grows while it is read: breadth first, as ast.walk
        for child in _children(node):
            out[child] = node
            todo.append(child)
    return out


def walk(node: ast.AST) -> list[ast.AST]:
    """``list(ast.walk(node))``, in the same order, without a generator per node: the caller walk of target_calls.py
    visits every node of the server files it parses (half of its time was ``ast.walk``'s generators)."""
    todo = [node]
    for n in todo:  # grows while it is read
        todo.extend(_children(n))
    return todo


def _children(node: ast.AST) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))``."""
    out: list[ast.AST] = []
    for name in node._fields:
        v = getattr(node, name, None)
        if isinstance(v, ast.AST):
            out.append(v)
        elif isinstance(v, list):
            out.extend(x for x in v if isinstance(x, ast.AST))
    return out


class RunnerFiles:
    """The non-model files of ``source`` (``input_files``), read once when first asked about.

    ``needles`` are what the derivation looks for in every file (the setter's name, the drafter config's key):
    ``holding`` lists the files whose bytes hold one. The bytes of the server's files (``SERVER_DIR``) are kept for
    searches of other names (``server_data``); a file's tree and parent map are made once (``tree``, ``parents``).
    A file that cannot be read reads as empty bytes, as both derivations always took it.
    """

    def __init__(self, source: SourceTree, needles: Iterable[bytes] = (SETTER.encode(), IDS_KEY.encode())) -> None:
        self.source = source
        self.files = input_files(source)
        self.server_files = [rel for rel in self.files if rel.startswith(SERVER_DIR + "/")]
        self._needles = tuple(needles)
        self._holding: dict[bytes, list[str]] | None = None
        self._server: dict[str, bytes] = {}
        self._trees: dict[str, ast.Module | None] = {}
        self._parents: dict[str, dict[ast.AST, ast.AST]] = {}
        self._unkept: dict[str, bytes] = {}  # bytes of files outside the server read for a tree, until parsed

    def _scan(self) -> dict[bytes, list[str]]:
        if self._holding is None:
            holding: dict[bytes, list[str]] = {n: [] for n in self._needles}
            server = SERVER_DIR + "/"
            for rel in self.files:
                data = self._read(rel)
                for n in self._needles:
                    if n in data:
                        holding[n].append(rel)
                        if not rel.startswith(server):
                            self._unkept[rel] = data
                if rel.startswith(server):
                    self._server[rel] = data
            self._holding = holding
        return self._holding

    def _read(self, rel: str) -> bytes:
        try:
            return self.source.read_bytes(rel)
        except OSError:
            return b""

    def holding(self, needle: bytes) -> list[str]:
        """The files whose bytes hold ``needle`` (one of ``needles``), in path order."""
        return self._scan()[needle]

    def server_data(self, rel: str) -> bytes:
        """The bytes of a server file (``server_files``)."""
        self._scan()
        data = self._server.get(rel)
        if data is None:
            data = self._server[rel] = self._read(rel)
        return data

    def tree(self, rel: str) -> ast.Module | None:
        """``rel`` parsed (None if it cannot be parsed), once."""
        if rel not in self._trees:
            self._scan()
            data = self._server.get(rel)
            if data is None:
                data = self._unkept.pop(rel, None)
            self._trees[rel] = _parsed(rel, self._read(rel) if data is None else data)
        return self._trees[rel]

    def parents(self, rel: str) -> dict[ast.AST, ast.AST]:
        """Child -> parent for every node of ``rel``'s tree (empty if it has none), once."""
        if rel not in self._parents:
            tree = self.tree(rel)
            self._parents[rel] = parents(tree) if tree is not None else {}
        return self._parents[rel]

    def parsed_holding(self, needle: bytes) -> Iterator[tuple[str, ast.Module]]:
        """The files holding ``needle`` that parse, with their trees."""
        for rel in self.holding(needle):
            tree = self.tree(rel)
            if tree is not None:
                yield rel, tree


def hasattr_tests(fn: ast.AST, receiver: str) -> Iterator[tuple[ast.If, str]]:
    """Each ``if`` in ``fn`` (in ``ast.walk`` order) whose test calls ``hasattr(<receiver>, "<method>")``, with the
    method, once per such call in the test (walk order)."""
    for node in ast.walk(fn):
        if not isinstance(node, ast.If):
            continue
        for t in ast.walk(node.test):
            if (isinstance(t, ast.Call) and dotted(t.func) == "hasattr" and len(t.args) == 2
                    and isinstance(t.args[1], ast.Constant) and isinstance(t.args[1].value, str)
                    and dotted(t.args[0]) == receiver):
                yield node, t.args[1].value
