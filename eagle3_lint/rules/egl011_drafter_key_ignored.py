"""## What it does
Flags a key the drafter's ``config.json`` sets that the checked release's drafter code never reads, while
another release's drafter code does: an EAGLE 3.1 drafter's ``norm_before_fc`` on vLLM 0.17.1, its ``fc_norm``
or ``norm_output`` on vLLM 0.20.2, ``norm_before_fc`` on SGLang 0.5.16. What a release reads is found in its
tree (``engines/drafter_keys.py``): the attribute reads on the config object (``config.k``,
``getattr(config, "k", d)``, ``hasattr``, ``config.get("k")``, ``config["k"]``, ``"k" in config``) in the
module of the drafter class it builds (``EAGLEConfig``'s renaming, then the registry), the modules of that
module's base classes and, for the speculators format, the tree's converter. Which other release reads the key
comes from a table written with the same reader from the releases in the tool's cache
(``data/drafter_keys.json``); the finding names the first such release after the checked one and where it
reads the key. Not flagged: keys no examined release's drafter code reads, keys every examined release reads
(generic HF keys such as ``hidden_size``), a key set to the value the reading release falls back to (a false
flag builds the same drafter), a count of the aux hidden states ``fc`` takes (``num_aux_hidden_states``) that
gives the checkpoint's ``fc`` the in-width the release's own ``fc`` has (its ``__init__`` run for the config:
vLLM 0.20.2 and SGLang 0.5.11 build it for 3 states), the aux-layer id fields (EGL007's), and
``architectures`` and ``model_type``, which the loader itself consumes.

## Why is this bad?
A Hugging Face config keeps every key it is given, so nothing fails when the drafter code never looks at
one: the release builds the drafter without the part the key turns on, a different network than the one
trained. Where the part has weights (``norm_before_fc``'s ``input_norm``, ``fc_norm``'s ``fc_norm.{i}``), the
checkpoint's tensors have no parameter to load into; where it has none (``norm_output``), the drafter runs on
other hidden states and its drafts are rejected. Either way the speed-up the drafter was trained for is gone,
and the serving chain's ``drafter-class`` step fails: an error, like EGL007's ids that capture other layers
than the drafter was trained on. Its outcome is ``drafter-unloadable`` where vLLM's loader meets tensors the
class has no parameter for, ``drafter-differs`` where the checkpoint loads (``norm_output`` on vLLM; any key on
SGLang, whose ``load_weights`` skips such tensors, but a count of ``fc``'s states: the checkpoint's ``fc.weight``
reaches ``default_weight_loader``, whose size assert refuses it, 0.5.11 ``weight_utils.py:1212``). Which keys
are such counts, and where each release reads and refuses them, is data (``drafter_keys.json``'s ``fc_states``).

## Example
```json
{"architectures": ["LlamaForCausalLM"], "norm_before_fc": true,
 "eagle_aux_hidden_state_layer_ids": [1, 15, 28], "hidden_size": 4096}
```
on vLLM 0.17.1: ``Eagle3LlamaForCausalLM`` (``llama_eagle3.py``) reads no ``norm_before_fc``; vLLM 0.18.0
reads it at ``vllm/model_executor/models/llama_eagle3.py:153`` and builds ``input_norm`` before ``fc``.

## Fix safety
No fix: the release's drafter class lacks the code the key selects. Serve the drafter with the release the
finding names (or a later one), or use a drafter trained without the key.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from eagle3_lint import engine_hooks
from eagle3_lint.engine import Capability
from eagle3_lint.model import Finding, Location, Severity, Step
from eagle3_lint.rules import RuleMeta, fit, make

if TYPE_CHECKING:
    from eagle3_lint.drafter import IgnoredKey
    from eagle3_lint.stages import Model

META = RuleMeta("EGL011", "drafter-key-ignored", Severity.ERROR, False,
                "The drafter config sets a key this release's drafter code never reads, while another release's does.",
                needs=frozenset({Capability.DRAFTER_IDS}))


def message(sm: Model, ik: IgnoredKey) -> str:
    """What the finding and the serving chain's drafter-class step say about ``ik``."""
    eng = sm.engine.display
    head = (f"the drafter config sets {ik.key}, which {eng} {sm.version}'s drafter ({ik.drafter_class}; read in "
            f"{ik.module} and the modules it builds on) never reads: it builds a different drafter than the one "
            "trained")
    if ik.fc is not None:
        head += (f" (the checkpoint's fc takes {ik.fc[0]} inputs for that count of aux hidden states, the fc this "
                 f"release builds {ik.fc[1]})")
    if ik.reader and ik.reader_where is not None:
        w = ik.reader_where
        before = f"; {ik.before}, the examined release before it, does not" if ik.before else ""
        return f"{head}. {eng} {ik.reader} reads it ({w.path}:{w.line}{before})"
    if ik.earlier_where is not None:
        w = ik.earlier_where
        return f"{head}. {eng} {ik.earlier} read it ({w.path}:{w.line}); this release no longer does"
    return head


def check(sm: Model) -> Iterator[Finding]:
    if sm.options.draft_config is None:
        return
    da = engine_hooks.draft_analysis(sm)
    if da is None or not da.ignored_keys:
        return
    for ik in da.ignored_keys:
        w = ik.reader_where or ik.earlier_where
        rel = (Step("read by", f"{ik.reader or ik.earlier} reads {ik.key}", Location(w.path, w.line)),) if w else ()
        since = f"read from {sm.engine.display} {ik.reader}" if ik.reader else "no longer read"
        yield make(META, message(sm, ik), Location(da.draft_path, ik.line), architecture=da.arch, symbol=ik.key,
                   related=rel,
                   title=fit(f"{ik.key} is ignored by {sm.engine.display} {sm.version}'s drafter ({since})",
                             f"{ik.key} is ignored by this release's drafter ({since})",
                             f"drafter key {ik.key} is ignored"))
