"""## What it does
Flags an inline suppression comment, `# eagle3-lint: ignore[EGLnnn]`, that suppressed nothing in
this run: the named rule reported nothing on that line (or, for a comment on a line of its own, on
the line after it), the rule id does not exist, or the comment names no rule at all.

## Why is this bad?
A suppression outlives the problem it hid. When the class is fixed, moved or renamed, the comment
stays and silently swallows the next, different finding of the same rule on that line. Unused
suppressions are also noise that readers must reason about. This is ruff's `RUF100` for
eagle3-lint.

A suppression names the rules it silences, in brackets, with an optional reason after `--`:

```python
class MyModelForCausalLM(nn.Module, SupportsPP):  # eagle3-lint: ignore[EGL001] -- served without EAGLE-3
    ...

# eagle3-lint: ignore[EGL001, EGL002] -- tracked in our fork, see FORK-123
class OtherForCausalLM(nn.Module):
    ...
```

## Example
```python
# LlamaForCausalLM implements SupportsEagle3, so EGL001 never fires here:
class LlamaForCausalLM(nn.Module, SupportsEagle3):  # eagle3-lint: ignore[EGL001]
    ...
```

## Fix safety
Safe: the fix removes the comment (the whole line when the comment stood alone), or only the
unused ids when others in the same brackets are still used. It changes no code. A rule that did not
run (deselected with `select`/`ignore`) is never reported as unused, and a rule scoped to targeted
architectures (EGL001) is unused when run without that `--arch`: select the architectures in the
configuration (`architectures = [...]`) so every run sees the same findings.

## References
- [ruff RUF100 unused-noqa](https://docs.astral.sh/ruff/rules/unused-noqa/)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from eagle3_lint.model import Finding, Severity
from eagle3_lint.rules import Role, RuleMeta

if TYPE_CHECKING:
    from eagle3_lint.stages import Model

META = RuleMeta("EGL100", "unused-suppression", Severity.WARNING, True,
                "An `# eagle3-lint: ignore[...]` comment suppressed nothing.", role=Role.UNUSED_SUPPRESSION)


def check(sm: Model) -> Iterator[Finding]:
    # The suppression layer (suppress.py) reports these once every other rule has run: whether a
    # comment is used depends on all the other findings.
    return iter(())
