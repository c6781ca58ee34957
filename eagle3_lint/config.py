"""Project configuration: ``[tool.eagle3-lint]`` in pyproject.toml, or an ``eagle3-lint.toml``.

Discovery walks from the working directory up to the filesystem root; in each folder an
``eagle3-lint.toml`` wins over a ``pyproject.toml``, and a pyproject.toml without a
``[tool.eagle3-lint]`` table is skipped (as ruff does), so a vLLM checkout's own pyproject.toml
does not stop the walk. ``--config PATH`` names the file instead; ``--no-config`` ignores files.

Command-line flags override the file: ``--select`` and ``--arch`` replace ``select`` and
``architectures``; ``--extend-select`` and ``--ignore`` add to the file's lists; ``--fail-on``,
``--baseline`` and ``--[no-]unsafe-fixes`` replace their keys. Relative paths in a file
(``baseline``) are relative to that file's folder.

Rule ids come from the rule plugins (``rules.all_rules()``), never from a list kept here. A
selector is a rule id or a prefix of one (``EGL00``), or ``ALL``. Among the selectors that match a
rule, the longest decides; on a tie ``ignore`` wins, so ``select = ["EGL"]`` with
``ignore = ["EGL005"]`` drops EGL005 and ``ignore = ["EGL00"]`` with ``select = ["EGL005"]`` keeps it.
"""

from __future__ import annotations

import difflib
import fnmatch
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from eagle3_lint._compat import tomllib
from eagle3_lint.errors import UsageError
from eagle3_lint.model import Severity

CONFIG_FILE = "eagle3-lint.toml"
TOOL_TABLE = "eagle3-lint"
LEVELS = tuple(s.value for s in Severity)

KEYS = ("select", "ignore", "extend-select", "fail-on", "architectures", "per-arch-ignores",
        "per-file-ignores", "severity", "baseline", "unsafe-fixes")

_SELECTOR = re.compile(r"^(ALL|EGL\d{0,3})$")


def rule_ids() -> tuple[str, ...]:
    from eagle3_lint.rules import rule_ids as ids  # from the module names: no rule is imported

    return ids()


@dataclass(frozen=True)
class FileConfig:
    """What one configuration file says; ``None`` means the key is absent."""

    path: Path | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    fail_on: str | None = None
    architectures: tuple[str, ...] | None = None
    per_arch_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    severity: dict[str, Severity] = field(default_factory=dict)
    baseline: str | None = None
    unsafe_fixes: bool | None = None


@dataclass(frozen=True)
class Selection:
    """Which rules run: selectors resolved by specificity (see the module docstring)."""

    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()

    def enabled(self, rule_id: str) -> bool:
        best: tuple[int, int] | None = None  # (specificity, 1 for select / 0 for ignore)
        for sel, on in [(s, 1) for s in self.select] + [(s, 0) for s in self.ignore]:
            if matches(sel, rule_id):
                cand = (0 if sel == "ALL" else len(sel), -on)
                if best is None or cand > best:
                    best = cand
        return best is not None and best[1] == -1

    def __call__(self, rule_id: str) -> bool:
        return self.enabled(rule_id)


@dataclass(frozen=True)
class Settings:
    """The effective settings of one run: file config merged with command-line flags."""

    config_path: Path | None = None
    selection: Selection = Selection()
    fail_on: str = "error"
    archs: tuple[str, ...] = ()
    per_arch_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    severity: dict[str, Severity] = field(default_factory=dict)
    baseline: str | None = None
    write_baseline: str | None = None
    unsafe_fixes: bool = False
    path_prefixes: tuple[tuple[str, str], ...] = ()

    def severity_for(self, rule_id: str) -> Severity | None:
        """The configured override for a rule: the longest matching selector wins."""
        hits = [(len(k) if k != "ALL" else 0, v) for k, v in self.severity.items() if matches(k, rule_id)]
        return max(hits, key=lambda h: h[0])[1] if hits else None

    def ignored_for(self, rule_id: str, arch: str | None, paths: Iterable[str]) -> bool:
        if arch is not None and any(matches(s, rule_id) for s in self.per_arch_ignores.get(arch, ())):
            return True
        for pattern, sels in self.per_file_ignores.items():
            if any(matches(s, rule_id) for s in sels) and any(glob_match(pattern, p) for p in paths):
                return True
        return False


def matches(selector: str, rule_id: str) -> bool:
    return selector == "ALL" or rule_id.startswith(selector)


@lru_cache(maxsize=256)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        out.append("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c))
        i += 1
    return re.compile("".join(out))


def glob_match(pattern: str, path: str) -> bool:
    """Glob over tree-relative POSIX paths: ``*`` stays in one folder, ``**`` crosses folders.

    A pattern without ``/`` matches the file name in any folder; one ending in ``/`` matches
    everything below that folder.
    """
    if "/" not in pattern:
        return fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], pattern)
    if pattern.endswith("/"):
        pattern += "**"
    return _glob_regex(pattern).fullmatch(path) is not None


def check_selectors(values: Iterable[str], where: str, known: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    for v in values:
        sel = v.strip().upper()
        if not sel:
            continue
        if not _SELECTOR.match(sel) or (sel != "ALL" and not any(r.startswith(sel) for r in known)):
            close = difflib.get_close_matches(sel, known, n=1, cutoff=0.8)
            hint = f" (did you mean {close[0]}?)" if close else f" (known: {', '.join(known)})"
            raise UsageError(f"{where}: unknown rule id or prefix {v!r}{hint}")
        out.append(sel)
    return tuple(out)


def split_csv(values: Iterable[str]) -> list[str]:
    """``--select EGL001,EGL002 --select EGL003`` -> three selectors."""
    return [p.strip() for v in values for p in v.split(",") if p.strip()]


def discover(start: Path | None = None) -> Path | None:
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        own = d / CONFIG_FILE
        if own.is_file():
            return own
        pp = d / "pyproject.toml"
        if pp.is_file() and _has_tool_table(pp):
            return pp
    return None


def _has_tool_table(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        # A broken pyproject.toml is ours to reject only if it holds our table; then load() says why.
        return f"[tool.{TOOL_TABLE}" in text
    tool = data.get("tool")
    return isinstance(tool, dict) and TOOL_TABLE in tool


def load(path: Path) -> FileConfig:
    """Read and validate one configuration file; raises UsageError with a one-line message."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"config file not found: {path}") from None
    except (OSError, UnicodeError) as exc:
        raise UsageError(f"cannot read config file {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML: {exc}") from None
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get(TOOL_TABLE) if isinstance(data.get("tool"), dict) else None
        if table is None:
            raise UsageError(f"{path}: no [tool.{TOOL_TABLE}] table")
        where = f"{path} [tool.{TOOL_TABLE}]"
    else:
        table = data
        where = str(path)
    if not isinstance(table, dict):
        raise UsageError(f"{where}: must be a table")
    return parse(table, where, path)


def parse(table: Mapping[str, Any], where: str, path: Path | None = None) -> FileConfig:
    known = rule_ids()
    for key in table:
        if key not in KEYS:
            close = difflib.get_close_matches(key, KEYS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f" (known keys: {', '.join(KEYS)})"
            raise UsageError(f"{where}: unknown key {key!r}{hint}")

    # Types first, by the schema below (msgspec, as userconfig.py checks the JSON configs): one line naming the key,
    # what it must be and what was found. What the types cannot say (rule ids, levels) is checked after.
    from eagle3_lint import userconfig

    typed = userconfig.convert(dict(table), userconfig.ToolTable, where)

    def sels(values: list[str] | None, key: str) -> tuple[str, ...] | None:
        return None if values is None else check_selectors(values, f"{where} {key}", known)

    def level(key: str, v: str) -> str:
        if v.lower() not in LEVELS:
            raise UsageError(f"{where}: {key} must be one of {', '.join(LEVELS)}, not {v!r}")
        return v.lower()

    def sel_map(key: str, v: dict[str, list[str]]) -> dict[str, tuple[str, ...]]:
        return {str(k): check_selectors(ids, f"{where} {key}.{k}", known) for k, ids in v.items()}

    severity: dict[str, Severity] = {}
    for k, v in typed.severity.items():
        (sel,) = check_selectors([k], f"{where} severity", known)
        severity[sel] = Severity(level(f"severity.{k}", v))

    fail_on = level("fail-on", typed.fail_on) if typed.fail_on is not None else None
    baseline = typed.baseline
    if baseline is not None:
        if not baseline:
            raise UsageError(f"{where}: baseline: expected a file path, found \"\"")
        if path is not None and not os.path.isabs(baseline):
            baseline = str(path.parent / baseline)
    return FileConfig(
        path=path,
        select=sels(typed.select, "select"),
        ignore=sels(typed.ignore, "ignore") or (),
        extend_select=sels(typed.extend_select, "extend-select") or (),
        fail_on=fail_on,
        architectures=None if typed.architectures is None else tuple(typed.architectures),
        per_arch_ignores=sel_map("per-arch-ignores", typed.per_arch_ignores),
        per_file_ignores=sel_map("per-file-ignores", typed.per_file_ignores),
        severity=severity,
        baseline=baseline,
        unsafe_fixes=typed.unsafe_fixes,
    )


def parse_path_prefixes(values: Iterable[str]) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for v in values:
        if "=" not in v:
            raise UsageError(f"--path-prefix expects FROM=TO, got {v!r}")
        frm, to = v.split("=", 1)
        out.append((frm, to))
    return tuple(out)


def resolve(
    *,
    config: str | None = None,
    no_config: bool = False,
    select: Iterable[str] = (),
    extend_select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    archs: Iterable[str] = (),
    fail_on: str | None = None,
    baseline: str | None = None,
    write_baseline: str | None = None,
    unsafe_fixes: bool | None = None,
    path_prefixes: Iterable[str] = (),
    cwd: Path | None = None,
) -> Settings:
    """Merge the configuration file (found or named) with command-line values."""
    if config and no_config:
        raise UsageError("--config and --no-config are mutually exclusive")
    path = Path(config) if config else (None if no_config else discover(cwd))
    fc = load(path) if path is not None else FileConfig()
    known = rule_ids()
    cli_select = check_selectors(split_csv(select), "--select", known)
    cli_extend = check_selectors(split_csv(extend_select), "--extend-select", known)
    cli_ignore = check_selectors(split_csv(ignore), "--ignore", known)
    base_select = cli_select or (fc.select if fc.select is not None else ("ALL",))
    return Settings(
        config_path=path,
        selection=Selection(select=base_select + fc.extend_select + cli_extend, ignore=fc.ignore + cli_ignore),
        fail_on=fail_on or fc.fail_on or "error",
        archs=tuple(archs) or fc.architectures or (),
        per_arch_ignores=fc.per_arch_ignores,
        per_file_ignores=fc.per_file_ignores,
        severity=fc.severity,
        baseline=baseline or fc.baseline,
        write_baseline=write_baseline,
        unsafe_fixes=bool(fc.unsafe_fixes) if unsafe_fixes is None else unsafe_fixes,
        path_prefixes=parse_path_prefixes(path_prefixes),
    )
