"""## What it does
Flags a targeted architecture whose top-level class fails vLLM's ``supports_eagle3`` check while
nothing in its delegation graph supports the contract either.

## Why is this bad?
The GPU runner asks the top-level model object (``supports_eagle3(self.get_model())``) once the
weights are loaded. For a 1-trillion-parameter model that is forty minutes in, and then it raises
``RuntimeError: Model does not support EAGLE3 interface``.

## Example
```python
class KimiK25ForConditionalGeneration(nn.Module, SupportsMultiModal, SupportsPP):
    def __init__(self, vllm_config, prefix=""):
        self.language_model = init_vllm_registered_model(..., architectures=["DeepseekV2ForCausalLM"])
# and DeepseekV2ForCausalLM does not implement SupportsEagle3 either
```

## Fix safety
No fix of its own: EGL002, EGL003 and EGL004 carry the fixes for the wrapper, the inner class and
its forward. This rule only reports, and only for architectures named with ``--arch``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from eagle3_lint.model import Finding, Location, Severity, Status
from eagle3_lint.rules import RuleMeta, make

if TYPE_CHECKING:
    from eagle3_lint.analysis import Context

META = RuleMeta("EGL001", "missing-eagle3-interface", Severity.ERROR, False,
                "A targeted architecture, and every model it delegates to, fails the SupportsEagle3 check.")


def check(ctx: Context) -> Iterator[Finding]:
    for arch in ctx.targeted:
        v = ctx.verdicts.get(arch)
        if v is None or v.status not in (Status.UNSUPPORTED, Status.PARTIAL) or v.location is None:
            continue
        key = ctx.keys.get(arch)
        parts = [f"{arch}: {v.class_name} ({v.location}) does not pass {ctx.contract.check_function}(): {v.reason}"]
        related = []
        if key is not None:
            for d in ctx.judge.model_delegations(key):
                if d.target is None:
                    parts.append(f"its inner model self.{d.attr} is chosen by the checkpoint config and cannot be checked statically")
                    continue
                cf = ctx.graph.class_facts(d.target)
                loc = Location(ctx.graph.path_of(d.target), cf.line if cf else 1)
                inner = ctx.judge.check_class(d.target)
                parts.append(f"the inner model self.{d.attr} -> {d.target.name} ({loc}) does not either: {inner.reason}")
                related.append(loc)
        site = ctx.runner.primary
        if site is not None:
            parts.append(f"the runner raises {site.error or 'an error'} at {site.path}:{site.line}")
        from eagle3_lint.model import Step

        yield make(META, "; ".join(parts), v.location, architecture=arch, symbol=v.class_name,
                   related=tuple(Step("inner", "inner model", loc) for loc in related))
