"""``eagle3-lint layers``: which aux-layer ids to write into each engine's drafter config so that the drafter
receives the layers it was trained on.

Every answer is worked out in one numbering, the state *entering* layer L (vLLM's; the state leaving layer
L - 1), and turned into each engine's ids by that engine's own code:

- **vLLM, from the tree**: the runner's config function (``engines/vllm/drafter.runner_ids``) is evaluated on
  a drafter config holding the candidate ids, and the decoder's capture points (``semantic.capture``: id k is
  the state entering layer k + shift) say which states it collects; the model default is the runner's
  fallback method evaluated for the target's layer count.
- **SGLang, from the tree**: the runner's read of ``eagle_config.eagle_aux_hidden_state_layer_ids``
  (``engines/sglang/drafter.read_ids``), the setter chain's transform (``+1``, DeepSeek-V2's first-id test)
  and what the decoder's forward collects; ``drafter.ids_for`` finds the ids the setters turn into the layers.
- **TensorRT-LLM, from its public sources, not from a tree** (the tool reads no TensorRT-LLM tree): id k is the
  output of layer k (the state entering layer k + 1); the field is ``EagleDecodingConfig.eagle3_layers_to_capture``
  (a set, sorted before use); the default is ``(1, n // 2 - 1, n - 4)``. ``TRTLLM_SOURCES`` cites them.

The trained layers come from ``--trained-on ENGINE:IDS`` (ids as that engine reads them, turned into layers by
that engine's tree, or by TensorRT-LLM's stated convention), or from a drafter config whose numbering is known
(``engines/sglang/drafter.trained``: where the ids sit, and the training default they match; no ids: the
EAGLE-3 training default, the states entering ``(2, n // 2, n - 3)``).
"""

from __future__ import annotations

import dataclasses
import json
import textwrap
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from eagle3_lint.checkpoint import load_json_file, text_config
from eagle3_lint.drafter_fields import id_fields, trained
from eagle3_lint.errors import UsageError

if TYPE_CHECKING:
    from eagle3_lint.stages import Model

TRTLLM = "trtllm"
TRTLLM_FIELD = "EagleDecodingConfig.eagle3_layers_to_capture"
# NVIDIA/TensorRT-LLM, read at this commit (not fetched as a tree).
TRTLLM_COMMIT = "001e67005b4f64b69b0045456870be48ab7b2cf0"
TRTLLM_SOURCES = (
    "tensorrt_llm/_torch/speculative/eagle3.py: Eagle3SpecMetadata.__post_init__ and "
    "Eagle3OneModelSpecMetadata.__post_init__ set layers_to_capture = (1, num_layers // 2 - 1, num_layers - 4) "
    "when none is given (num_layers > 5) and sorted(layers_to_capture) otherwise; maybe_capture_hidden_states("
    "layer_id, hidden_states, residual) saves hidden_states + residual for a layer_id in layers_to_capture",
    "tensorrt_llm/_torch/models/modeling_llama.py: LlamaDecoderLayer.forward calls "
    "spec_metadata.maybe_capture_hidden_states(self.layer_idx, hidden_states, residual) after its MLP, so id k "
    "is the output of layer k",
    "tensorrt_llm/llmapi/llm_args.py: EagleDecodingConfig.eagle3_layers_to_capture: Optional[Set[int]], "
    "'Defaults to {1, num_layers//2-1, num_layers-4}'",
)
ENGINES = ("vllm", "sglang", TRTLLM)


@dataclass
class Row:
    engine: str
    version: str | None  # None: not from a tree
    derived_from_tree: bool
    field: str | None  # the key to set (None: this release reads none)
    where: str  # where that key lives
    read_at: str | None  # file:line of the tree's read
    ids: list[int] | None  # the ids to write (None: no ids make this release capture the trained layers)
    numbering: str
    captures: list[int] | None  # the states entering these layers, with ``ids`` written
    default_ids: list[int] | None  # what the engine uses when the drafter config names none
    default_layers: list[int] | None  # the states entering these layers
    default_is_trained: bool | None
    note: str = ""
    sources: list[str] = dataclasses.field(default_factory=list)  # where a convention not derived from a tree is stated


@dataclass
class Answer:
    architecture: str
    num_layers: int
    trained_layers: list[int]  # the states entering these layers (= the outputs of layer - 1)
    trained_from: str
    rows: list[Row] = dataclasses.field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps({"schema": "eagle3-lint-layers/1", **asdict(self)}, indent=2) + "\n"

    def to_text(self, width: int | None = None, height: int | None = None) -> str:
        """The answer first (each engine's setting), then how it was derived. ``width``: a terminal's, to wrap each
        line at word boundaries with its continuation indented under it; None (a pipe, a file): a line each.
        ``height``: the terminal's rows; where the text is taller, the answer comes again at its end, so that the
        screen the command leaves shows it (what scrolled off was the answer)."""
        # The answer: one line on a pipe (for grep), a line per engine on a terminal (for the eye).
        head = ["; ".join(_setting(r) for r in self.rows)] if not width else [_setting(r) for r in self.rows]
        outs = _ids(i - 1 for i in self.trained_layers)
        lines = [*head,
                 f"{self.architecture or 'the target'}, {self.num_layers} layers: trained on the states entering "
                 f"layers {_ids(self.trained_layers)} (the outputs of layers {outs}), from {self.trained_from}"]
        for r in self.rows:
            name = f"{r.engine} {r.version}" if r.derived_from_tree else f"{r.engine} (not derived from a tree)"
            lines.append(f"  {name}: {_setting(r, short=False)}")
            lines.append(f"      numbering: {r.numbering}" + (f"; read at {r.read_at}" if r.read_at else ""))
            if r.default_ids is not None:
                same = " (what it was trained on)" if r.default_is_trained else " (not what it was trained on)"
                lines.append(f"      without ids: the default {_ids(r.default_ids)}, the states entering "
                             f"{_ids(r.default_layers or [])}{same}")
            if r.note:
                lines.append(f"      note: {r.note}")
        if width:
            lines = [w for ln in lines for w in _wrap(ln, width)]
            if height and len(lines) >= height:  # the shell's prompt takes the last row
                lines += ["", "so set:", *(w for ln in head for w in _wrap("  " + ln, width))]
        return "\n".join(lines) + "\n"


def _wrap(line: str, width: int) -> list[str]:
    """``line`` in lines of at most ``width`` columns, broken at spaces only (never inside a name or a path), the
    continuation 4 columns deeper than the line's own indent."""
    indent = " " * (len(line) - len(line.lstrip(" ")))
    width = max(width, 40)
    out = textwrap.wrap(line, width=width, initial_indent="", subsequent_indent=indent + "    ",
                        break_long_words=False, break_on_hyphens=False) or [line]
    # A path too long for its indent (it is alone on its line, never split): moved left as far as it must go to fit,
    # where the terminal would otherwise cut it at the edge.
    return [w if len(w) <= width else " " * max(0, width - len(w.lstrip(" "))) + w.lstrip(" ") for w in out]


def _ids(ids: Any) -> str:
    return "[" + ", ".join(str(i) for i in ids) + "]"


def _setting(r: Row, short: bool = True) -> str:
    name = f"{r.engine} {r.version}" if r.version else r.engine
    lead = "" if not short else f"{name}: "
    if r.field is None or r.ids is None:
        return lead + ("no ids to set" + ("" if short else f" ({r.note})"))
    val = "{" + ", ".join(str(i) for i in r.ids) + "}" if r.engine == TRTLLM else _ids(r.ids)
    return lead + f"{r.field} = {val}" + ("" if short else f" ({r.where})")


# -- the trained layers ----------------------------------------------------------------------------------
def parse_trained_on(text: str) -> tuple[str, tuple[int, ...]]:
    eng, sep, rest = text.partition(":")
    eng = eng.strip().lower()
    if not sep or eng not in ENGINES:
        raise UsageError(f"--trained-on {text!r}: expected ENGINE:IDS with ENGINE one of {', '.join(ENGINES)} "
                         "(e.g. sglang:1,15,28)")
    try:
        ids = tuple(int(x) for x in rest.replace(" ", "").split(",") if x)
    except ValueError:
        raise UsageError(f"--trained-on {text!r}: the ids must be integers separated by commas") from None
    if not ids:
        raise UsageError(f"--trained-on {text!r}: no ids")
    return eng, ids


def from_drafter_config(cfg: dict[str, Any], path: str, n: int) -> tuple[tuple[int, ...], str]:
    """The trained layers a drafter config says, when its numbering is known (else a usage error naming why)."""
    tr = trained(id_fields(cfg, path), None, n)
    if tr.layers is None:
        raise UsageError(f"--draft-config {path}: {tr.why}; give --trained-on ENGINE:IDS instead")
    return tuple(tr.layers), f"the drafter config {path}: {tr.why}"


# -- per engine -------------------------------------------------------------------------------------------
class _Tree:
    """One engine's tree, as the answer needs it: ids -> layers, layers -> ids, the default."""

    engine: str
    version: str

    def layers_of(self, ids: tuple[int, ...]) -> tuple[tuple[int, ...] | None, str]:
        raise NotImplementedError

    def row(self, trained: tuple[int, ...]) -> Row:
        raise NotImplementedError


class _Vllm(_Tree):
    def __init__(self, sm: Model, arch: str, n: int) -> None:
        from eagle3_lint import semantic as sem
        from eagle3_lint.engines.vllm import drafter as vdr
        from eagle3_lint.engines.vllm import runnerchoice

        self.sm, self.arch, self.n, self.engine, self.version = sm, arch, n, "vllm", sm.version
        key = sm.keys.get(arch)
        if key is None:
            raise UsageError(f"{arch} does not resolve to a class in vLLM {sm.version}")
        self.site = vdr.runner_site(sm, runnerchoice.chosen(sm, arch).kind)
        self.cap = sem.capture(sm, key)
        self.default, self.default_where, self.default_note = sem.default_ids(
            sm, key, n, sm.options.target_config, name=self.site.fallback if self.site else None)
        self.key_name = sm.runner.config_key or "eagle_aux_hidden_state_layer_ids"

    def _read(self, ids: tuple[int, ...]) -> tuple[tuple[int, ...] | None, str | None, str]:
        """What the runner's config function returns for a drafter config holding ``ids`` (None: never read)."""
        from eagle3_lint.engines.vllm import drafter as vdr

        got, where, note, _reads = vdr.runner_ids(self.sm, {self.key_name: list(ids)}, self.site)
        at = f"{where.path}:{where.line}" if where is not None else None
        if got is None or not all(isinstance(i, int) for i in got):
            return None, at, note or "the runner's config function gives no ids for it"
        return tuple(got), at, ""

    def _shift(self) -> int | None:
        return self.cap.shift if self.cap is not None and self.cap.sites else None

    def layers_of(self, ids: tuple[int, ...]) -> tuple[tuple[int, ...] | None, str]:
        got, at, note = self._read(ids)
        shift = self._shift()
        if got is None:
            return None, f"vLLM {self.version} does not read the ids: {note}"
        if shift is None:
            return None, f"which states vLLM {self.version}'s decoder collects is not known"
        bad = [i for i in got if i not in self.cap.valid_ids(self.n)] if self.cap is not None else []
        if bad:
            return None, f"vLLM {self.version} never captures ids {_ids(bad)} of a {self.n}-layer {self.arch}"
        return tuple(i + shift for i in got), f"vLLM {self.version} reads them at {at}; id k = the state entering " \
            + (f"layer k + {shift}" if shift else "layer k")

    def row(self, trained: tuple[int, ...]) -> Row:
        shift = self._shift()
        numbering = ("id k = the state entering layer k" if shift == 0 else
                     f"id k = the state entering layer k + {shift}" if shift is not None else "not known")
        default = [int(i) for i in self.default] if self.default and all(isinstance(i, int)
                                                                          for i in self.default) else None
        dlayers = [i + shift for i in default] if default is not None and shift is not None else None
        row = Row("vllm", self.version, True, self.key_name, "the drafter's config.json, top level", None, None,
                  numbering, None, default, dlayers, dlayers == list(trained) if dlayers is not None else None)
        if shift is None:
            row.note = self.cap.note if self.cap is not None and self.cap.note else \
                f"no capture point of {self.arch}'s decoder could be read"
            return row
        want = tuple(i - shift for i in trained)
        got, at, note = self._read(want)
        row.read_at = at
        if got is None:
            row.field = None
            row.note = note + (" (the model default is used)" if default is not None else "")
            return row
        # A runner that transforms what it reads (DFlash's +1 in other fields) would give other ids back.
        off = {g - w for g, w in zip(got, want, strict=False)} if len(got) == len(want) else set()
        if len(off) == 1 and off != {0}:
            want = tuple(i - off.pop() for i in want)
            got = self._read(want)[0] or got
        valid = self.cap.valid_ids(self.n) if self.cap is not None else set()
        bad = [i for i in got if i not in valid]
        if bad:
            row.note = f"ids {_ids(bad)} are never captured by {self.arch}'s forward ({self.n} layers)"
            return row
        row.ids, row.captures = list(want), [i + shift for i in got]
        return row


class _Sglang(_Tree):
    def __init__(self, sm: Model, arch: str, n: int) -> None:
        from eagle3_lint.engines.sglang import drafter as sdr

        self.sm, self.arch, self.n, self.engine, self.version = sm, arch, n, "sglang", sm.version
        key = sm.keys.get(arch)
        if key is None:
            raise UsageError(f"{arch} does not resolve to a class in SGLang {sm.version}")
        self.hops = sdr.setter_chain(sm, key)
        self.coll = sdr.collection(sm, self.hops) if self.hops else None
        self.shift = self.coll.shift if self.coll is not None else 0
        self.ids_key = sdr.IDS_KEY

    def _stored(self, ids: tuple[int, ...] | None) -> tuple[int, ...] | None:
        from eagle3_lint.engines.sglang import drafter as sdr

        return sdr.stored_indices(self.hops, ids, self.n)[0] if self.hops else None

    def _assumed(self) -> str:
        if self.coll is None or self.coll.decoder is None or self.coll.note:
            why = self.coll.note if self.coll is not None else "no setter"
            return (f"what the decoder collects could not be read ({why}): stored index i is taken as the state "
                    "entering layer i, the in-loop test the setter's list is written for")
        return ""

    def layers_of(self, ids: tuple[int, ...]) -> tuple[tuple[int, ...] | None, str]:
        stored = self._stored(ids)
        if stored is None:
            return None, f"SGLang {self.version}'s setter for {self.arch} cannot be followed"
        hop = self.hops[-1]
        return (tuple(i + self.shift for i in stored),
                f"SGLang {self.version}'s {hop.owner.name}.set_eagle3_layers_to_capture ({hop.path}:"
                f"{hop.transform.line}) stores {_ids(stored)}" + (f"; {self._assumed()}" if self._assumed() else ""))

    def row(self, trained: tuple[int, ...]) -> Row:
        from eagle3_lint.engines.sglang import drafter as sdr

        default = self._stored(None)
        dlayers = [i + self.shift for i in default] if default is not None else None
        hop = self.hops[-1] if self.hops else None
        numbering = (f"the setter ({hop.owner.name}.set_eagle3_layers_to_capture, {hop.path}:{hop.transform.line}) "
                     "turns id k into stored index k + 1" + (" when the first id is 1, k otherwise"
                                                            if hop.transform.conditional else "")
                     + ("; stored index i = the state entering layer i" if self.shift == 0 else
                        f"; stored index i = the state entering layer i + {self.shift}")) if hop else "not known"
        row = Row("sglang", self.version, True, f"eagle_config.{self.ids_key}",
                  "the drafter's config.json, under eagle_config", None, None, numbering, None,
                  list(default) if default is not None else None, dlayers,
                  dlayers == list(trained) if dlayers is not None else None, self._assumed())
        if not self.hops:
            row.field, row.note = None, f"{self.arch} has no set_eagle3_layers_to_capture in SGLang {self.version}"
            return row
        want = sdr.ids_for(self.hops, trained, self.n, self.shift)
        if want is None:
            row.note = (row.note + "; " if row.note else "") + \
                f"no ids make this SGLang's setters store {_ids(i - self.shift for i in trained)}"
            return row
        read = sdr.read_ids(self.sm, {"eagle_config": {self.ids_key: list(want)}})
        row.read_at = f"{read.where.path}:{read.where.line}" if read.where is not None else None
        if read.ids is None or tuple(read.ids) != tuple(want):
            row.field = None
            row.note = read.note or "the runner does not read the ids back as written"
            return row
        stored = self._stored(want) or ()
        row.ids, row.captures = list(want), [i + self.shift for i in stored]
        return row


def trtllm_row(n: int, trained: tuple[int, ...]) -> Row:
    default = [1, n // 2 - 1, n - 4]
    dlayers = [i + 1 for i in default]
    ids = sorted(i - 1 for i in trained)
    return Row(TRTLLM, None, False, TRTLLM_FIELD, "the LLM API's speculative_config (EagleDecodingConfig), not the "
               "drafter's config.json", None, ids, "id k = the output of layer k (the state entering layer k + 1)",
               [i + 1 for i in ids], default, dlayers, sorted(dlayers) == sorted(trained),
               "TensorRT-LLM's convention and default as its public sources state them (NVIDIA/TensorRT-LLM at "
               f"{TRTLLM_COMMIT[:7]}; docs/layers.md), not derived from a tree", list(TRTLLM_SOURCES))


def trtllm_layers_of(ids: tuple[int, ...]) -> tuple[tuple[int, ...], str]:
    return tuple(sorted(i + 1 for i in ids)), "TensorRT-LLM ids name the outputs of those layers: its stated " \
        "convention, not derived from a tree"


# -- the command -------------------------------------------------------------------------------------------
@dataclass
class Request:
    targets: tuple[str, ...]
    arch: str | None
    target_config: str | None
    num_layers: int | None
    trained_on: str | None
    draft_config: str | None


# The engines whose trees `layers` reads ids from, by engine name (the engines between which this module translates).
_READERS: dict[str, Callable[[Model, str, int], _Tree]] = {"vllm": _Vllm, "sglang": _Sglang}


def answer(req: Request, model_of: Callable[[str, tuple[str, ...]], Model]) -> Answer:
    """The answer for ``req``; ``model_of(target, archs)`` is the semantic model of each target tree with ``archs``
    targeted (the caller's check: ``cli.layers`` runs it, as ``check`` would, with the request's cache and config)."""
    tcfg = load_json_file(req.target_config, "--target-config") if req.target_config else None
    text = text_config(tcfg) if tcfg else None
    n = req.num_layers
    if n is None and text:
        v = text.get("num_hidden_layers")
        n = v if isinstance(v, int) and not isinstance(v, bool) else None
    if n is None or not 0 < n <= 100_000:
        raise UsageError("the target's layer count is needed: --target-config (its num_hidden_layers) or "
                         "--num-layers N")
    arch = req.arch
    if arch is None and tcfg and isinstance(tcfg.get("architectures"), list) and tcfg["architectures"]:
        arch = str(tcfg["architectures"][0])
    if arch is None and req.targets:
        raise UsageError("which architecture: --arch NAME or a --target-config that names it")
    if (req.trained_on is None) == (req.draft_config is None):
        raise UsageError("give the layers the drafter was trained on: --trained-on ENGINE:IDS or --draft-config")
    trees: list[_Tree] = []
    for t in req.targets:
        sm = model_of(t, (arch,) if arch else ())
        reader = _READERS.get(sm.engine.name)
        if reader is None:  # a plugin engine: its id reading is not modelled here (yet), so no answer is made up
            raise UsageError(f"layers: how {sm.engine.display} turns drafter ids into layers is not modelled; "
                             f"targets must be {' or '.join(e for e in _READERS)} trees")
        trees.append(reader(sm, arch or "", n))
    if req.trained_on is not None:
        eng, ids = parse_trained_on(req.trained_on)
        if eng == TRTLLM:
            trained, why = trtllm_layers_of(ids)
            why = f"--trained-on {req.trained_on} ({why})"
        else:
            tree = next((tr for tr in trees if tr.engine == eng), None)
            if tree is None:
                raise UsageError(f"--trained-on {req.trained_on}: how {eng} reads ids is read from its tree; add a "
                                 f"{eng} release or tree to the targets (e.g. {eng}==VERSION)")
            got, why = tree.layers_of(ids)
            if got is None:
                raise UsageError(f"--trained-on {req.trained_on}: {why}")
            trained = got
            why = f"--trained-on {req.trained_on} ({why})"
    else:
        assert req.draft_config is not None
        trained, why = from_drafter_config(load_json_file(req.draft_config, "--draft-config"), req.draft_config, n)
    bad = [i for i in trained if not 0 <= i <= n]
    if bad:
        raise UsageError(f"the trained layers {_ids(trained)} name states no {n}-layer model has (the states "
                         f"entering layers 0 … {n - 1}, or {n} for the last layer's output)")
    ans = Answer(arch or "", n, list(trained), why)
    ans.rows = [tr.row(trained) for tr in trees] + [trtllm_row(n, trained)]
    return ans
