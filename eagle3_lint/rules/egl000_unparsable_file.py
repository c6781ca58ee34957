"""## What it does
Reports a model file that cannot be decoded or parsed.

## Why is this bad?
vLLM imports the model module when the architecture is served; a file that does not parse raises
at import time, so every architecture it defines cannot load at all. The rest of the tree is still
checked.

## Example
```python
class LlamaForCausalLM(nn.Module
    ...
```

## Fix safety
No automatic fix: the file needs a human.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from eagle3_lint.model import Finding, Location, Severity
from eagle3_lint.rules import Role, RuleMeta, Scope, fit, make

if TYPE_CHECKING:
    from eagle3_lint.stages import Model

META = RuleMeta("EGL000", "unparsable-file", Severity.ERROR, False,
                "A model file cannot be decoded or parsed, so the engine cannot import it.", role=Role.UNPARSABLE,
                scope=Scope.FILE)


def check(sm: Model, rel: str) -> list[Finding]:
    mf = sm.store.load_path(rel)
    if mf is None:
        why = sm.store.read_errors.get(rel, "not readable")
        return [make(META, f"{rel} cannot be read ({why}), so the engine cannot import it", Location(rel, 1),
                     title=fit(f"{rel} cannot be read ({why}).", f"{rel} cannot be read."))]
    if mf.error:
        words = mf.error if mf.error.startswith("cannot ") else f"does not parse ({mf.error})"
        short = "cannot be decoded" if mf.error.startswith("cannot decode") else "does not parse"
        return [make(META, f"{rel} {words}, so the engine cannot import it", Location(rel, max(1, mf.error_line)),
                     title=fit(f"{rel} {words}.", f"{rel} {short}."))]
    return []
