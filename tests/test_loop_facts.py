"""Every loop form over the decoder layers, read once by the facts pass (issue 22): its index form and bounds, and
where it meets layer ids. Each source is the shape of a released decoder's ``forward`` (cited), cut to the loop."""

from __future__ import annotations

import textwrap

import pytest

from eagle3_lint.facts import IndexBase, Loop, LoopForm, SiteKind, extract

HEAD = "from itertools import islice\n\n\nclass M:\n    def forward(self, hidden_states, residual):\n"


def _loops(body: str) -> list[Loop]:
    src = HEAD + textwrap.indent(textwrap.dedent(body), " " * 8)
    mf = extract("m.py", "m", False, src.encode())
    assert mf.error is None and mf.internal_error is None, (mf.error, mf.internal_error)
    return [lp for lp in mf.classes["M"].methods["forward"].loops if lp.over_layers]


# (source, form, index, layer, base, lower, upper): what Python makes of the index in each form.
FORMS = [
    # vLLM 0.16.0 qwen3_vl.py:1147-1149: the index counts over the whole list; islice picks the layers run.
    ("for layer_idx, layer in islice(enumerate(self.layers), self.start_layer, self.end_layer):\n"
     "    hidden_states, residual = layer(hidden_states, residual)\n",
     LoopForm.ENUMERATE, "layer_idx", "layer", IndexBase.ABSOLUTE, "self.start_layer", "self.end_layer"),
    # vLLM 0.16.0 llama.py:420-425: enumerate counts from 0 inside the slice.
    ("for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer)):\n"
     "    hidden_states, residual = layer(hidden_states, residual)\n",
     LoopForm.ENUMERATE, "idx", "layer", IndexBase.RELATIVE, "self.start_layer", "self.end_layer"),
    # vLLM 0.33.0 qwen2.py:427-430: start= makes it absolute.
    ("for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer), start=self.start_layer):\n"
     "    hidden_states, residual = layer(hidden_states, residual)\n",
     LoopForm.ENUMERATE, "idx", "layer", IndexBase.ABSOLUTE, "self.start_layer", "self.end_layer"),
    # vLLM 0.33.0 models/minimax_m3/amd/model.py:1556-1557: a slice bound to a local, enumerated without start=.
    ("layers = self.layers[self.start_layer:self.end_layer]\n"
     "for i, layer in enumerate(layers):\n"
     "    hidden_states, residual = layer(hidden_states, residual)\n",
     LoopForm.ENUMERATE, "i", "layer", IndexBase.RELATIVE, "self.start_layer", "self.end_layer"),
    # SGLang's LlamaModel (0.5.x): range over absolute ids, the layer picked by index.
    ("for i in range(self.start_layer, self.end_layer):\n"
     "    layer = self.layers[i]\n"
     "    hidden_states, residual = layer(hidden_states, residual)\n",
     LoopForm.RANGE, "i", "layer", IndexBase.ABSOLUTE, "self.start_layer", "self.end_layer"),
    # vLLM's plain loop (exaone4.py:355 in 0.33.0): no index at all.
    ("for layer in islice(self.layers, self.start_layer, self.end_layer):\n"
     "    hidden_states, residual = layer(hidden_states, residual)\n",
     LoopForm.PLAIN, "", "layer", IndexBase.NONE, "self.start_layer", "self.end_layer"),
]


@pytest.mark.parametrize(("src", "form", "index", "layer", "base", "lower", "upper"), FORMS)
def test_each_form_has_its_index_base_and_bounds(src: str, form: LoopForm, index: str, layer: str,
                                                  base: IndexBase, lower: str, upper: str) -> None:
    (lp,) = _loops(src)
    assert (lp.form, lp.index_var, lp.layer_var, lp.base, lp.lower, lp.upper) == (form, index, layer, base, lower,
                                                                                 upper)


def test_range_loop_calling_the_layer_in_place_with_a_capture_keyword() -> None:
    """SGLang 0.5.23 llama.py:486-494: no local for the layer; the id test sits in a keyword argument of the layer
    call, so it reads the state entering the layer (the layer captures at its start, llama.py:402-404)."""
    (lp,) = _loops("for i in range(self.start_layer, self.end_layer):\n"
                   "    hidden_states = self.layers[i](\n"
                   "        hidden_states,\n"
                   "        capture_output=aux.capture if i in self.layers_to_capture else None,\n"
                   "    )\n")
    assert (lp.form, lp.index_var, lp.layer_var, lp.base) == (LoopForm.RANGE, "i", None, IndexBase.ABSOLUTE)
    member = [s for s in lp.sites if s.kind is SiteKind.MEMBER]
    assert [(s.name, s.offset, s.before) for s in member] == [("self.layers_to_capture", 0, True)]
    assert [s.target for s in lp.sites if s.kind is SiteKind.KWARG] == ["capture_output"]
    assert lp.layer_line == 7  # the call's line (HEAD is five lines, the loop the sixth)


def test_mixin_collector_before_and_after_the_loop() -> None:
    """vLLM 0.33.0 qwen3_vl.py:1869-1888: the collector with index 0 before the loop, then with ``layer_idx + 1``
    after each layer call."""
    (lp,) = _loops("aux = self._maybe_add_hidden_state([], 0, hidden_states, residual)\n"
                   "for layer_idx, layer in islice(enumerate(self.layers), self.start_layer, self.end_layer):\n"
                   "    hidden_states, residual = layer(hidden_states, residual)\n"
                   "    self._maybe_add_hidden_state(aux, layer_idx + 1, hidden_states, residual)\n")
    calls = [(s.kind, s.target, s.offset, s.before) for s in lp.sites if s.kind in (SiteKind.CALL, SiteKind.PRE)]
    assert calls == [(SiteKind.CALL, "self._maybe_add_hidden_state", 1, False),
                     (SiteKind.PRE, "self._maybe_add_hidden_state", 0, True)]


def test_explicit_test_with_residual_none_before_the_first_layer() -> None:
    """vLLM 0.16.0 qwen3_vl.py:1140-1151: ``residual = None`` before the loop, then ``hidden_states + residual`` at an
    id test before the layer call: id 0 would add None (TypeError)."""
    (lp,) = _loops("residual = None\n"
                   "for layer_idx, layer in islice(enumerate(self.layers), self.start_layer, self.end_layer):\n"
                   "    if layer_idx in self.aux_hidden_state_layers:\n"
                   "        aux.append(hidden_states + residual)\n"
                   "    hidden_states, residual = layer(hidden_states, residual)\n")
    (m,) = [s for s in lp.sites if s.kind is SiteKind.MEMBER]
    assert (m.target, m.offset, m.before, m.none_line) == ("self.aux_hidden_state_layers", 0, True, 9)


def test_loops_not_over_the_layers_are_not_layer_loops() -> None:
    assert _loops("for i, e in enumerate(self.experts):\n    e(hidden_states)\n") == []
    assert _loops("for x in self.norms:\n    x(hidden_states)\n") == []
