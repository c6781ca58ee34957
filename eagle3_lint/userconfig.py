"""The configs a user hands in, validated before anything reads them: the target's and the drafter's
``config.json`` and ``--speculative-config``.

A config the tool reads with a wrong type must not be read around: a ``num_hidden_layers`` of ``"sixty"`` would
drop the layer count and the gates that need it, and ``"eagle_aux_hidden_state_layer_ids": "2,16"`` would let the
model default stand in for ids the user meant to give. Each key the tool reads (and the id fields drafter configs
are known to carry, ``drafter_fields.ID_FIELDS``) has a declared type, checked by msgspec (a typed decoder
of JSON values: a schema written as classes, about 50 ms to import, and imported only when a config is given);
unknown keys are allowed, since a Hugging Face config carries dozens the tool never reads. A wrong value is one
line, ``FILE: KEY: expected TYPE, found VALUE``, and exit 2 (errors.UsageError).

Aux-layer ids are layer numbers: each must be an integer of at least 0 (not a bool; a negative id matches no
layer, so the engine would silently hand the drafter fewer states). A repeated id, or one past the target's
layers, has a consequence that depends on the target: EGL007 reports it as an error finding with that
consequence, not as an input error.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, TypeVar

import msgspec

from eagle3_lint.checkpoint import TEXT_CONFIG_KEYS
from eagle3_lint.drafter_fields import ID_FIELDS, dig
from eagle3_lint.errors import UsageError

Count = Annotated[int, msgspec.Meta(ge=0)]
Size = Annotated[int, msgspec.Meta(gt=0)]


class HFConfig(msgspec.Struct, forbid_unknown_fields=False):
    """The keys of a Hugging Face ``config.json`` the tool reads (Transformers' ``PretrainedConfig`` names), at the
    top or in a text sub-config."""

    architectures: list[str] | None = None
    model_type: str | None = None
    num_hidden_layers: Count | None = None
    hidden_size: Size | None = None
    vocab_size: Size | None = None
    draft_vocab_size: Size | None = None
    target_hidden_size: Size | None = None
    # Sub-configs (checkpoint.TEXT_CONFIG_KEYS, Qwen-Omni's thinker): the same keys, when they are objects.
    decoder: HFConfig | None = None
    generator: HFConfig | None = None
    text_config: HFConfig | None = None
    llm_config: HFConfig | None = None
    language_config: HFConfig | None = None
    thinker_config: HFConfig | None = None


class EagleConfig(msgspec.Struct, forbid_unknown_fields=False):
    """``eagle_config`` of a SpecForge/SGLang drafter."""

    use_aux_hidden_state: bool | None = None


class DrafterConfig(HFConfig, forbid_unknown_fields=False):
    eagle_config: EagleConfig | None = None
    # The speculators format keeps the drafter's own transformer config here.
    transformer_layer_config: HFConfig | None = None


class SpeculativeConfig(msgspec.Struct, forbid_unknown_fields=False):
    """vLLM's ``--speculative-config`` keys the tool reads."""

    method: str | None = None
    model: str | None = None
    num_speculative_tokens: Annotated[int, msgspec.Meta(ge=1)] | None = None
    hf_overrides: dict[str, Any] | None = None


class ToolTable(msgspec.Struct, forbid_unknown_fields=True, rename="kebab"):
    """``[tool.eagle3-lint]`` in pyproject.toml, or eagle3-lint.toml (config.py checks rule ids and levels)."""

    select: list[str] | None = None
    ignore: list[str] | None = None
    extend_select: list[str] | None = None
    fail_on: str | None = None
    architectures: list[str] | None = None
    per_arch_ignores: dict[str, list[str]] = {}
    per_file_ignores: dict[str, list[str]] = {}
    severity: dict[str, str] = {}
    baseline: str | None = None
    unsafe_fixes: bool | None = None


assert set(TEXT_CONFIG_KEYS) <= set(HFConfig.__struct_fields__), "a text sub-config key is not validated"


def validate_target(cfg: dict[str, Any], where: str) -> None:
    _check(cfg, HFConfig, where)


def validate_drafter(cfg: dict[str, Any], where: str) -> None:
    _check(cfg, DrafterConfig, where)
    for path, *_ in ID_FIELDS:
        v = dig(cfg, path)
        if v is not None:
            validate_ids(v, f"{where}: {'.'.join(path)}")


def validate_speculative(spec: dict[str, Any], where: str) -> None:
    _check(spec, SpeculativeConfig, where)


def validate_ids(value: Any, where: str) -> tuple[int, ...]:
    """Aux-layer ids as a tuple of integers >= 0, else UsageError naming ``where``. A repeated id is valid JSON
    with a consequence the target decides (its forward collects that layer once): EGL007 reports it."""
    if not isinstance(value, list):
        raise UsageError(f"{where}: expected a list of layer ids (integers >= 0), found {_found(value)}")
    for i, x in enumerate(value):
        if isinstance(x, bool) or not isinstance(x, int):
            raise UsageError(f"{where}[{i}]: expected a layer id (an integer >= 0), found {_found(x)}")
        if x < 0:
            raise UsageError(f"{where}[{i}]: expected a layer id (an integer >= 0), found {x}")
    return tuple(value)


_PATH = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_STEP = re.compile(r"\.([^.[]+)|\[(\d+|\.\.\.)\]")
# JSON types by msgspec's names, to find which value of a table (msgspec says ``[...]``) is the wrong one.
_PY = {"array": list, "object": dict, "str": str, "int": int, "bool": bool}


S = TypeVar("S", bound=msgspec.Struct)


def convert(cfg: dict[str, Any], schema: type[S], where: str) -> S:
    """``cfg`` as ``schema``, else UsageError: ``WHERE: KEY: expected TYPE, found VALUE``."""
    try:
        return msgspec.convert(cfg, schema, strict=True)
    except msgspec.ValidationError as exc:
        raise UsageError(f"{where}: {_explain(cfg, str(exc))}") from None


def _check(cfg: dict[str, Any], schema: type[msgspec.Struct], where: str) -> None:
    convert(cfg, schema, where)


def _explain(cfg: dict[str, Any], message: str) -> str:
    """msgspec's "Expected `int`, got `str` - at `$.a.b`" as "a.b: expected int, found "sixty"" (the value too)."""
    m = _PATH.search(message)
    if m is None:
        return message
    what = message[: m.start()].replace("`", "")
    want = _PY.get(what.removeprefix("Expected ").split(" ")[0].split(",")[0])
    value: Any = cfg
    steps: list[str | int] = []
    for k, i in _STEP.findall(m.group("path")):
        step: str | int = int(i) if i.isdigit() else (k or "")
        if i == "..." and isinstance(value, dict):
            # A table's value: the first that is not of the expected type.
            step = next((key for key, v in value.items() if want is None or not _is(v, want)), "")
        steps.append(step)
        value = _at(value, step)
    key = "".join(f"[{s}]" if isinstance(s, int) else (f".{s}" if n else s) for n, s in enumerate(steps))
    expected = what
    if what.startswith("Expected "):
        expected = "expected " + _words(what[len("Expected "):].split(", got ")[0])
    return f"{key}: {expected}, found {_found(value)}"


# msgspec's type names in the words of JSON's users; ``| null``: an absent key or null is always allowed.
_WORDS = (("array | null", "a list"), ("object | null", "an object"), ("int | null", "an integer"),
          ("str | null", "a string"), ("bool | null", "true or false"), ("array", "a list"), ("object", "an object"),
          ("int", "an integer"), ("str", "a string"), ("bool", "true or false"))


def _words(expected: str) -> str:
    for a, b in _WORDS:
        if expected.startswith(a):
            return b + expected[len(a):]
    return expected


def _is(value: Any, want: type) -> bool:
    return isinstance(value, want) and not (want is int and isinstance(value, bool))


def _at(container: Any, step: str | int) -> Any:
    """``container[step]``, or None where there is no such entry."""
    if isinstance(container, dict):
        return container.get(step) if isinstance(step, str) else None
    if isinstance(container, list) and isinstance(step, int) and step < len(container):
        return container[step]
    return None


def _found(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."
