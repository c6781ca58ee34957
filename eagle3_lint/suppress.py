"""Inline suppressions: ``# eagle3-lint: ignore[EGL005, EGL003] -- reason``.

A post-processing layer of the core, run once every rule has reported: rules never see comments.
A directive silences the named rules on its own line; a directive on a line holding only a comment
also silences the line after it. The reason is what follows the closing bracket (a leading ``--``
or ``:`` is dropped), up to another ``# word:`` comment. Directives that silenced nothing become
EGL100 findings (ruff's RUF100), each with a safe fix that removes the comment or the unused ids.

``# noqa: EGLnnn`` is not a suppression here, and says so: on the line of a finding it names, an EGL100 finding
tells which comment is meant (and the finding stays reported). ``noqa`` belongs to ruff and flake8, which the
engines' own repositories run: ruff's RUF100 reports an unknown code in it and ``ruff --fix`` deletes it, so a
suppression written that way would vanish in the next lint pass; and a blanket ``# noqa`` would silence
eagle3-lint along with everything else. One syntax, owned by this tool, stays where it is written.

Comments are found with ``tokenize`` (so a directive quoted inside a string or docstring is not one),
only in files whose bytes contain the marker at all: the model files, the runner, gate and
interface files, and any other file that holds a finding. A file that does not tokenize (it is already an
EGL000 finding) is scanned line by line.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import re
import tokenize
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from eagle3_lint.facts import SUPPRESSION_MARKER, decode_source
from eagle3_lint.model import Edit, Finding, Fix, Location, Suppression
from eagle3_lint.rules import Role, make, with_role

if TYPE_CHECKING:
    from eagle3_lint.stages import Model

MARKER = SUPPRESSION_MARKER
DIRECTIVE = re.compile(r"#\s*eagle3-lint\s*:\s*ignore\b(?:\[(?P<codes>[^\]]*)\])?(?P<rest>.*)")
# Where the reason stops: the start of another directive-like comment (``# expect: ...``, ``# type: ...``).
_NEXT_COMMENT = re.compile(r"\s+#\s*[A-Za-z][\w-]*\s*:")
_CODE_SPLIT = re.compile(r"[\s,]+")
NOQA = re.compile(r"#\s*noqa\s*:\s*(?P<codes>[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*)", re.IGNORECASE)


@dataclass
class Directive:
    path: str
    line: int
    col: int  # of the ``#``, in characters
    end_col: int  # just past the directive and its reason
    codes: tuple[str, ...]
    codes_col: int  # span of the text between the brackets
    codes_end_col: int
    reason: str
    own_line: bool  # nothing but whitespace before it on its line
    line_text: str
    used: set[str] = field(default_factory=set)

    @property
    def location(self) -> Location:
        return Location(self.path, self.line, self.col, self.line, self.end_col)


def _parse(path: str, row: int, col: int, comment: str, line_text: str) -> Iterator[Directive]:
    for m in DIRECTIVE.finditer(comment):
        rest = m.group("rest")
        cut = _NEXT_COMMENT.search(rest)
        body = (rest[: cut.start()] if cut else rest).rstrip()
        reason = body.strip()
        for lead in ("--", ":", "-"):
            if reason.startswith(lead):
                reason = reason[len(lead):].strip()
                break
        raw = m.group("codes")
        codes = tuple(c.upper() for c in _CODE_SPLIT.split(raw or "") if c)
        start = col + m.start()
        codes_col = col + (m.start("codes") if raw is not None else m.end())
        yield Directive(
            path=path, line=row, col=start, end_col=col + m.start("rest") + len(body), codes=codes,
            codes_col=codes_col, codes_end_col=codes_col + len(raw or ""), reason=reason,
            own_line=not line_text[:start].strip(), line_text=line_text,
        )


def scan(text: str, path: str) -> list[Directive]:
    """Every directive in a file's comments."""
    lines = text.splitlines()
    out: list[Directive] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT and "eagle3-lint" in tok.string:
                row, col = tok.start
                out.extend(_parse(path, row, col, tok.string, lines[row - 1] if row <= len(lines) else ""))
    except (tokenize.TokenError, SyntaxError):
        # Unparsable file: a plain line scan is the best we can do, and such files are rare.
        out = []
        for row, line in enumerate(lines, 1):
            i = line.find("#")
            if i >= 0 and "eagle3-lint" in line[i:]:
                out.extend(_parse(path, row, i, line[i:], line))
    return out


def collect(sm: Model, findings: Collection[Finding]) -> dict[str, list[Directive]]:
    # Model files, plus the runner, gate and interface files a rule may flag: an unused directive
    # there is reported too, even when that file has no finding this run.
    files = set(sm.model_files()) | {f.location.path for f in findings}
    files |= {s.path for s in sm.runner.sites} | {g.path for g in sm.runner.gates}
    if sm.contract.path:
        files.add(sm.contract.path)
    out: dict[str, list[Directive]] = {}
    for rel in sorted(files):
        # One answer per file, kept between runs; ``used`` is this run's own (marked as findings meet it).
        found = sm.queries.get(("directives", rel), functools.partial(_directives_in, sm, rel), persist=True)
        if found:
            out[rel] = [dataclasses.replace(d, used=set()) for d in found]
    return out


def _directives_in(sm: Model, rel: str) -> list[Directive]:
    sm.queries.note(rel)  # also when the loaded facts answer without reading the bytes
    mf = sm.store.loaded_facts(rel)
    if mf is not None and not mf.mentions_marker:
        return []  # its facts, made from the bytes this run hashed, say no comment can be there
    try:
        data = sm.source.read_bytes(rel)
    except OSError:
        return []
    if MARKER not in data:
        return []
    try:
        text = decode_source(data)
    except (UnicodeError, LookupError, SyntaxError):
        text = data.decode("utf-8", "replace")
    return scan(text, rel)


def _removal(d: Directive, keep: list[str]) -> Edit:
    if keep:
        return Edit(d.path, d.line, d.codes_col, d.line, d.codes_end_col, ", ".join(keep))
    before, after = d.line_text[: d.col], d.line_text[d.end_col:]
    if not before.strip() and not after.strip():
        return Edit(d.path, d.line, 0, d.line + 1, 0, "")
    if not before.strip():
        return Edit(d.path, d.line, d.col, d.line, d.end_col + len(after) - len(after.lstrip()), "")
    return Edit(d.path, d.line, len(before.rstrip()), d.line, d.end_col, "")


def unused_findings(directives: dict[str, list[Directive]], ran: Collection[str],
                    known: Collection[str]) -> list[Finding]:
    UNUSED = with_role(Role.UNUSED_SUPPRESSION)  # the rule's declaration, not an id written here
    out: list[Finding] = []
    for ds in directives.values():
        for d in ds:
            if not d.codes:
                out.append(make(UNUSED, "suppression names no rule and suppresses nothing: write "
                                "`# eagle3-lint: ignore[EGLnnn]`", d.location,
                                fix=Fix("Remove the suppression that names no rule", (_removal(d, []),))))
                continue
            unknown = [c for c in d.codes if c not in known]
            unused = [c for c in d.codes if c in known and c in ran and c not in d.used and c != UNUSED.id]
            if not unknown and not unused:
                continue
            keep = [c for c in d.codes if c not in unknown and c not in unused]
            where = f"line {d.line}" + (f" or {d.line + 1}" if d.own_line else "")
            parts = []
            if unused:
                parts.append(f"{', '.join(unused)} reported nothing on {where}")
            if unknown:
                parts.append(f"unknown rule id{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
            title = ("Remove the unused suppression" if not keep
                     else f"Remove {', '.join(unused + unknown)} from the suppression")
            out.append(make(UNUSED, "unused suppression: " + "; ".join(parts), d.location,
                            fix=Fix(title, (_removal(d, keep),))))
    return out


def apply(sm: Model, findings: Sequence[Finding],
          ran: Collection[str]) -> tuple[list[Finding], list[tuple[Finding, Suppression]]]:
    """Split ``findings`` into (reported, suppressed with why); add EGL100 findings if that rule ran."""
    from eagle3_lint.rules import all_rules

    UNUSED = with_role(Role.UNUSED_SUPPRESSION)
    suppressed: list[tuple[Finding, Suppression]] = []
    directives = collect(sm, findings)
    noqa = noqa_findings(sm, findings) if UNUSED.id in ran else []
    if not directives:
        return sorted([*findings, *noqa], key=Finding.sort_key) if noqa else list(findings), suppressed
    by_line: dict[tuple[str, int], list[Directive]] = {}
    for ds in directives.values():
        for d in ds:
            by_line.setdefault((d.path, d.line), []).append(d)
            if d.own_line:
                by_line.setdefault((d.path, d.line + 1), []).append(d)
    kept: list[Finding] = []
    for f in findings:
        hit = next((d for d in by_line.get((f.location.path, f.location.line), ()) if f.rule in d.codes), None)
        if hit is None:
            kept.append(f)
            continue
        hit.used.add(f.rule)
        suppressed.append((f, Suppression("inSource", hit.reason, hit.location)))
    if UNUSED.id in ran:
        for u in unused_findings(directives, ran, {r.meta.id for r in all_rules()}):
            # An EGL100 can itself be silenced by naming EGL100 in the same comment.
            same = next((d for d in by_line.get((u.location.path, u.location.line), ()) if UNUSED.id in d.codes), None)
            if same is not None:
                suppressed.append((u, Suppression("inSource", same.reason, same.location)))
            else:
                kept.append(u)
    kept += [n for n in noqa
             if not any(UNUSED.id in d.codes for d in by_line.get((n.location.path, n.location.line), ()))]
    kept.sort(key=Finding.sort_key)
    return kept, suppressed


def noqa_findings(sm: Model, findings: Collection[Finding]) -> list[Finding]:
    """EGL100 for a ``# noqa: EGLnnn`` on the line of a finding it names (see the module docstring)."""
    UNUSED = with_role(Role.UNUSED_SUPPRESSION)
    out: list[Finding] = []
    texts: dict[str, list[str]] = {}
    seen: set[tuple[str, int]] = set()
    for f in findings:
        path, row = f.location.path, f.location.line
        if (path, row) in seen or not path.endswith(".py"):
            continue
        if path not in texts:
            try:
                texts[path] = sm.read_text(path).splitlines()
            except (OSError, UnicodeError, LookupError, SyntaxError):
                texts[path] = []
        line = texts[path][row - 1] if 0 < row <= len(texts[path]) else ""
        m = NOQA.search(line)
        if m is None:
            continue
        codes = [c.upper() for c in _CODE_SPLIT.split(m.group("codes")) if c]
        ours = [c for c in codes if c.startswith("EGL")]
        if f.rule not in ours:
            continue
        seen.add((path, row))
        loc = Location(path, row, m.start(), row, m.end())
        fix = None
        if ours == codes:  # nothing of ruff's or flake8's in it: the comment becomes eagle3-lint's own
            fix = Fix(f"Write `# eagle3-lint: ignore[{', '.join(ours)}]`",
                      (Edit(path, row, m.start(), row, m.end(), f"# eagle3-lint: ignore[{', '.join(ours)}]"),))
        out.append(make(UNUSED, f"`# noqa: {', '.join(ours)}` is not an eagle3-lint suppression (noqa is ruff's and "
                        "flake8's, and ruff --fix deletes codes it does not know): the finding is still reported; "
                        f"write `# eagle3-lint: ignore[{', '.join(ours)}]`", loc, fix=fix,
                        title=f"`# noqa` does not silence eagle3-lint: write "
                              f"`# eagle3-lint: ignore[{', '.join(ours)}]`"))
    return out
