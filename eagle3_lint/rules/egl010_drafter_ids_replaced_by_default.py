"""## What it does
Flags a runner call site that hands the aux-layer setter no ids (the model's own default layers) and
then, in the same function, captures (a CUDA graph) while the release passes the drafter's ids
elsewhere; and a release whose runner never passes the drafter's ids at all. The sites come from
the tree's runner path (``RunnerSite.setter_ids``). A default call that a later call with the
drafter's ids replaces, with nothing captured in between in its function, is not flagged.

## Why is this bad?
The setter decides which hidden states the decoder collects. A CUDA graph replays the collection as
it was when the graph was captured, so graphs captured after a call with no ids collect the model's
default layers for every step they run, whatever ids are set later: a drafter trained on other
layers gets other hidden states than it was trained on. Nothing fails: the drafter accepts fewer
tokens. A drafter trained on the model's default layers is not affected.

## Example
```python
# model_executor/cuda_graph_runner.py, CudaGraphRunner.__init__ (run by init_device_graphs())
self.model_runner.model.set_eagle3_layers_to_capture()
self.capture()

# model_executor/model_runner.py
self.init_device_graphs()
self.model.set_eagle3_layers_to_capture(self.eagle_aux_hidden_state_layer_ids)
```

## Fix safety
No fix: the call belongs to the engine's runner, not to a model. Use a release whose runner passes
the drafter's ids wherever it sets the layers, or a drafter trained on the model's default layers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from eagle3_lint.model import Finding, Location, Severity, Step
from eagle3_lint.rules import RuleMeta, fit, make
from eagle3_lint.runner import SetterIds

if TYPE_CHECKING:
    from eagle3_lint.stages import Model

META = RuleMeta("EGL010", "drafter-ids-replaced-by-default", Severity.WARNING, False,
                "A runner hands the aux-layer setter the model's default layers instead of the drafter's ids.",
                asked_of_model=True)


def check(sm: Model) -> Iterator[Finding]:
    sites = [s for s in sm.runner.sites if s.setter_ids is not None]
    drafter = [s for s in sites if s.setter_ids is SetterIds.DRAFTER]
    defaults = [s for s in sites if s.setter_ids is not SetterIds.DRAFTER]
    if not drafter:
        # No call passes the drafter's ids at all: one finding, at the first call.
        for s in defaults[:1]:
            yield make(META, f"{s.function}() calls {s.setter}() with no ids, and no runner call passes the "
                             "drafter's ids: every drafter gets the model's default layers, whatever it was trained on",
                       Location(s.path, s.setter_line or s.line), symbol=s.setter,
                       title=f"no runner call passes the drafter's ids to {s.setter}(): every drafter gets the "
                             "default layers")
        return
    d = drafter[0]
    where = Location(d.path, d.setter_line or d.line)
    for s in defaults:
        # A plain default call is replaced by the drafter's ids where the release sets them; one that the same
        # function then captures persists in the capture, whatever is set afterwards.
        if s.setter_ids is not SetterIds.CAPTURED_DEFAULT:
            continue
        yield make(
            META,
            f"{s.function}() calls {s.setter}() with no ids and then captures, so what it captured collects the "
            f"model's default layers; the drafter's ids ({d.path}:{where.line}, {d.function}) do not reach it. A "
            "drafter trained on other layers gets other hidden states there and accepts fewer tokens",
            Location(s.path, s.setter_line or s.line), symbol=s.setter,
            related=(Step("drafter ids", f"{d.function}() passes the drafter's ids", where),),
            title=fit(f"{s.setter}() is called with no ids before a capture: the drafter's ids do not reach it",
                      f"{s.setter}() called with no ids before a capture"),
        )
