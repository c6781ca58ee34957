"""## What it does
Reads the config-time EAGLE-3 gates of the tree (``SpeculativeConfig`` refuses ``method ==
"eagle3"`` unless the target's ``hf_text_config.model_type`` contains one of a hard-coded list of
substrings, from the early releases to about 0.20) and checks the target against them.

With ``--target-config config.json`` the check is exact: the ``model_type`` the gate compares is
derived the way the analysed release builds the config (its ``_CONFIG_REGISTRY`` config class,
that class's text sub-config, and the JSON), and a refused target is an error. Without a config,
every architecture named with ``--arch`` gets a note naming the allow-list and where it lives.
Nothing is reported for architectures nobody targets, nor for trees without such a gate.

## Why is this bad?
``vllm serve --speculative-config '{"method": "eagle3", ...}'`` fails before any weight loads
with ``ValueError: Eagle3 is only supported for [...] models. Got ...model_type=...``, even when
the model classes implement ``SupportsEagle3`` (Kimi-K2.5 on 0.16.0, whose text config is a
DeepSeek-V3 one).

## Example
```python
eagle3_target_supported = ["llama", "qwen", "minicpm", "gpt_oss"]
if self.method == "eagle3" and not any(
        m in self.target_model_config.hf_text_config.model_type for m in eagle3_target_supported):
    raise ValueError(...)
```

## Fix safety
Unsafe: the fix adds the target's ``model_type`` to the allow-list, as upstream did in 0.18.x
(``deepseek_v2``, ``deepseek_v3``, ``kimi_k2``, ``kimi_k25``). That only lifts the config-time
refusal; whether the model's classes and forward support EAGLE-3 is what EGL001-EGL006 check.
For the one-literal form of 0.9/0.10 (``"llama" not in ...model_type``) the condition becomes an
``any(...)`` over a tuple holding the old literal and the new type.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from eagle3_lint import engine_hooks
from eagle3_lint.engine import Capability
from eagle3_lint.lazyimport import lazy
from eagle3_lint.model import (
    Applicability,
    Finding,
    Fix,
    Location,
    Severity,
    Step,
)
from eagle3_lint.rules import Role, RuleMeta, make
from eagle3_lint.runner import Gate

if TYPE_CHECKING:
    from eagle3_lint import fixgen
    from eagle3_lint.stages import Model
else:
    fixgen = lazy("eagle3_lint.fixgen")  # imported on first use (lazyimport.py)

META = RuleMeta("EGL009", "eagle3-model-type-gate", Severity.ERROR, True,
                "The tree refuses EAGLE-3 at config time for this target's HF model_type.",
                needs=frozenset({Capability.CONFIG_GATES}), role=Role.CONFIG_GATE)


def _gates(sm: Model) -> list[Gate]:
    return [g for g in sm.runner.gates if "eagle3" in g.methods and g.allow_list]


def _where(g: Gate) -> Location:
    return Location(g.path, g.list_line or g.line)


def _list_text(g: Gate) -> str:
    where = f"({g.path}:{g.list_line or g.line})"
    if g.list_name:
        return f"{g.list_name} = {list(g.allow_list)} {where}"
    return f"the literal {g.allow_list[0]!r} {where}" if len(g.allow_list) == 1 else f"{list(g.allow_list)} {where}"


def _arch_location(sm: Model, arch: str | None, g: Gate) -> Location:
    """The architecture's class when the tree registers it (the finding is about that target), else the list."""
    v = sm.verdicts.get(arch) if arch else None
    return v.location if v is not None and v.location is not None else _where(g)


def _target_arch(sm: Model) -> str | None:
    cfg = sm.options.target_config or {}
    archs = cfg.get("architectures")
    if isinstance(archs, list) and archs and isinstance(archs[0], str):
        return archs[0]
    return sm.targeted[0] if sm.targeted else None


def check(sm: Model) -> Iterator[Finding]:
    gates = _gates(sm)
    if not gates:
        return
    cfg = sm.options.target_config
    if cfg is None:
        for arch in sm.targeted:
            for g in gates:
                yield make(META, (
                    f"{arch}: this {sm.engine.display} refuses EAGLE-3 at config time unless the target's "
                    f"{g.config_attr}.model_type "
                    f"contains one of {_list_text(g)}; the check raises {g.error or 'an error'} at {g.path}:{g.line}. "
                    "Pass --target-config config.json to check this target exactly."),
                    _arch_location(sm, arch, g), severity=Severity.NOTE, architecture=arch, symbol=g.list_name,
                    related=(Step("gate", f"the allow-list {g.list_name or ''}".rstrip(), _where(g)),),
                    title=f"{arch}: model_type not checked against the EAGLE-3 config gate (pass --target-config)")
        return
    target_arch = _target_arch(sm)
    src = sm.options.target_config_path or "the target config"
    for g in gates:
        res = engine_hooks.target_model_type(sm, g.config_attr)
        related = tuple(Step("derivation", s) for s in res.steps) + (
            Step("gate", f"the allow-list {g.list_name or ''}".rstrip(), _where(g)),
            Step("gate", f"raises {g.error}", Location(g.path, g.line)))
        chain = "; ".join(res.steps)
        if res.model_type is None:
            yield make(
                META,
                (
                    f"{target_arch or 'the target'}: cannot tell which {g.config_attr}.model_type "
                    f"this {sm.engine.display} gives "
                    f"{src} ({chain}), so whether the EAGLE-3 gate {_list_text(g)} lets it through is unknown"
                ),
                _arch_location(sm, target_arch, g),
                severity=Severity.NOTE,
                architecture=target_arch,
                symbol=g.list_name,
                related=related,
                title=f"{target_arch or 'the target'}: cannot tell the model_type the EAGLE-3 config gate sees",
            )
            continue
        mt = res.model_type
        if any(s in mt for s in g.allow_list):
            continue
        yield make(
            META,
            (
                f"{target_arch or 'the target'}: {g.config_attr}.model_type is {mt!r} ({chain}), and "
                f"{'none of ' if len(g.allow_list) > 1 else ''}{_list_text(g)} is "
                f"{'a ' if len(g.allow_list) > 1 else 'not a '}substring of it, so method='eagle3' raises "
                f"{g.error or 'an error'} at "
                f"{g.path}:{g.line} before any weight loads"
            ),
            _arch_location(sm, target_arch, g),
            architecture=target_arch,
            symbol=mt,
            related=related,
            title=f"{target_arch or 'the target'}: model_type {mt!r} is not on the EAGLE-3 config gate's allow-list",
        )


def fix(sm: Model, finding: Finding) -> Fix | None:
    if finding.severity is not Severity.ERROR or not finding.symbol:
        return None
    mt = finding.symbol
    for g in _gates(sm):
        if not any(st.location == _where(g) for st in finding.related):
            continue  # the finding names the gate it is about among its related steps
        edits = fixgen.allow_list_edits(sm, g, mt)
        if not edits:
            return None
        return Fix(f"add {mt!r} to the EAGLE-3 model_type allow-list", edits, Applicability.UNSAFE)
    return None
