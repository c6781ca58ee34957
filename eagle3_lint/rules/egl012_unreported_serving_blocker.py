"""## What it does
Reports a targeted architecture whose serving chain stops at a failing step while no rule that ran
reports an error about that architecture. The chain (``eagle3-lint check --arch``, docs/serving.md) is
read from the tree for the method being checked (``--method``, ``--speculative-config``'s ``method``), and
some of its steps are modelled by the chain alone: SGLang's EAGLE worker calling the target's
``get_embed_and_head()`` (0.5.23 ``pp_draft_embedding.py:95``) on a class without it, the runner's own
selection of the target layers raising for the drafter config (DSPARK without ``markov_rank``, an id out of
range), a launch-time pipeline-parallel refusal checked without a drafter config, a platform's model runner
refusing speculative decoding. The finding carries the step's own message and points where the engine refuses.

Not reported: an architecture that some finding of a rule that ran already reports as an error (a
suppressed or baselined finding counts as reported: the user chose to silence it), chains that end
``servable``, ``unchecked`` or ``unknown``, and ``drafter-differs``, where the drafter loads and runs
(EGL011 reports the key).

## Why is this bad?
Without it the check exits 0 on a target the engine refuses: the verdict line says it is refused, but
nothing fails CI, a silent pass.

## Example
```text
eagle3-lint check sglang==0.5.23 --arch LlamaForCausalLM --method DFLASH --pipeline-parallel-size 2
```
``LlamaForCausalLM`` passes every rule under ``DFLASH`` (it has ``set_dflash_layers_to_capture``), but SGLang's
``check_pipeline_parallel_compat`` asserts that any algorithm but DSPARK is EAGLE when the pipeline has more than
one stage (``validation_hook.py:132``): the launch is refused. (A class without the method's setter is the
method-aware EGL001-EGL003's: under ``DFLASH`` they judge by ``set_dflash_layers_to_capture``.)

## Fix safety
No fix: what the step needs is the engine's (a setter for the method, another drafter config, no
pipeline parallelism); the finding says which.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from eagle3_lint.model import Finding, Severity
from eagle3_lint.rules import Role, RuleMeta

if TYPE_CHECKING:
    from eagle3_lint.stages import Model

META = RuleMeta("EGL012", "unreported-serving-blocker", Severity.ERROR, False,
                "A targeted architecture's serving chain stops at a step no rule that ran reports.",
                role=Role.UNREPORTED_BLOCKER)


def check(sm: Model) -> Iterator[Finding]:
    # The pipeline reports these once every other rule has run (serving_steps.unreported_blockers): whether a failing
    # step is reported depends on all the other findings.
    return iter(())
