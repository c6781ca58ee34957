"""The support matrix: every architecture's EAGLE-3 status across several vLLM trees.

Each target (a path, a wheel, ``vllm==X.Y.Z``) is analysed with ``analysis.build`` (the facts cache
makes a warm sweep cheap; rules are not needed for a status), in parallel worker processes. The
matrix then tells, per architecture: its status in each release, the first release where it is
supported, the releases where it regressed (supported, then present but no longer supported), and
where it appeared or disappeared. Targets are ordered by version when every one has a version.

``--releases A..B`` expands to the vLLM releases between A and B (inclusive): the releases already
in the cache (``$XDG_CACHE_HOME/eagle3-lint/vllm-X/``), plus, with ``index=True``, the list ``pip
index versions vllm`` prints. Pre-releases are left out.

Statuses are those of ``check``: what ``supports_eagle3()`` of that release says of the class the
registry names (``supported``), or why not (``unsupported``, ``wrapper-gap``, ``partial``,
``unknown``). The config-time model-type gate (``SpeculativeConfig``'s allow-list, until about
0.20) is listed per release: it refuses by HF ``model_type``, which the registry does not know.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle3_lint import releases
from eagle3_lint import target as target_mod
from eagle3_lint.engine import Engine
from eagle3_lint.engines import all_engines
from eagle3_lint.errors import TargetError, UsageError
from eagle3_lint.model import Status
from eagle3_lint.safe_text import printable

SUPPORTED = Status.SUPPORTED.value
SYMBOL = {"supported": "✓", "unsupported": "✗", "wrapper-gap": "W", "partial": "P", "unknown": "?", None: "·"}
_VERSION = re.compile(r"^\d+(?:\.\d+)*$")


def version_key(v: str) -> tuple[int, ...] | None:
    return tuple(int(x) for x in v.split(".")) if _VERSION.match(v) else None


@dataclass
class Release:
    label: str  # the engine's version, or the target when the tree has none
    target: str
    engine: str = ""  # the engine's name (engines.names())
    version: str = "unknown"
    statuses: dict[str, str] = field(default_factory=dict)  # arch -> status
    classes: dict[str, str] = field(default_factory=dict)  # arch -> module.Class
    reasons: dict[str, str] = field(default_factory=dict)  # arch -> the verdict's reason (the HTML page's hover)
    locations: dict[str, str] = field(default_factory=dict)  # arch -> path:line of the judged class
    contract: str = ""
    fallback: str = ""
    gates: list[str] = field(default_factory=list)
    pp_verifier: str | None = None
    error: str | None = None
    internal_errors: int = 0
    seconds: float = 0.0

    def counts(self) -> Counter[str]:
        return Counter(self.statuses.values())


@dataclass
class Row:
    arch: str
    cells: list[str | None]  # status per release, None where the arch is not registered
    first_supported: str | None
    regressions: list[str]  # labels of releases where it stopped being supported
    added: str | None  # first release that registers it
    removed: list[str]  # releases where it disappeared

    @property
    def changed(self) -> bool:
        present = [c for c in self.cells if c is not None]
        return len(set(present)) > 1 or bool(self.removed)


@dataclass
class Matrix:
    releases: list[Release]
    rows: list[Row]
    seconds: float = 0.0

    @property
    def labels(self) -> list[str]:
        return [r.label for r in self.releases]

    @property
    def engine(self) -> Engine:
        """The engine of the releases (the first one's; a matrix mixing engines is read by the first)."""
        from eagle3_lint.engines import get

        name = next((r.engine for r in self.releases if r.engine), "")
        return get(name) if name else all_engines()[0]

    def row(self, arch: str) -> Row | None:
        return next((r for r in self.rows if r.arch == arch), None)


# -- targets ----------------------------------------------------------------------------------------
def cached_releases(cache_dir: str | None = None, engine: Engine | None = None) -> list[str]:
    engine = engine or all_engines()[0]
    root = releases.cache_root(cache_dir)
    out = []
    prefix = f"{engine.package}-"
    try:
        for p in root.iterdir():
            if p.name.startswith(prefix) and (p / releases.COMPLETE_MARKER).is_file():
                v = p.name[len(prefix):]
                if version_key(v) is not None:
                    out.append(v)
    except OSError:
        pass
    return sorted(out, key=lambda v: version_key(v) or ())


def index_releases(engine: Engine | None = None) -> list[str]:
    """``pip index versions <package>`` (the ordinary client), final releases only."""
    engine = engine or all_engines()[0]
    try:
        p = subprocess.run([sys.executable, "-m", "pip", "index", "versions", engine.release_names[0],
                            "--disable-pip-version-check"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"cannot list {engine.display} releases with pip: {exc}") from None
    m = re.search(r"Available versions:\s*(.+)", p.stdout)
    if p.returncode != 0 or not m:
        last = (p.stderr or p.stdout).strip().splitlines()
        raise UsageError(f"cannot list {engine.display} releases with pip: {last[-1] if last else 'no output'}")
    return sorted((v.strip() for v in m.group(1).split(",") if version_key(v.strip()) is not None),
                  key=lambda v: version_key(v) or ())


def expand_range(spec: str, cache_dir: str | None = None, index: bool = False,
                 engine: Engine | None = None) -> list[str]:
    """``A..B`` -> the releases A <= v <= B known to the cache (and to PyPI with ``index``)."""
    lo, sep, hi = spec.partition("..")
    if not sep or version_key(lo.strip()) is None or version_key(hi.strip()) is None:
        raise UsageError(f"--releases takes FIRST..LAST with release numbers, e.g. 0.11.0..0.33.0 (got {spec!r})")
    klo, khi = version_key(lo.strip()), version_key(hi.strip())
    engine = engine or all_engines()[0]
    known = set(cached_releases(cache_dir, engine))
    if index:
        known |= set(index_releases(engine))
    assert klo is not None and khi is not None  # both parsed above
    # Every release in ``known`` parses (cached_releases and index_releases keep only those).
    picked = sorted((v for v in known if klo <= (version_key(v) or ()) <= khi), key=lambda v: version_key(v) or ())
    for end in (lo.strip(), hi.strip()):
        if end not in picked and not index:
            raise UsageError(f"release {end} is not in the cache ({releases.cache_root(cache_dir)}); "
                             f"fetch it with `eagle3-lint check {engine.release_names[0]}=={end}` or add --index to "
                             "ask PyPI")
    if not picked:
        raise UsageError(f"no {engine.display} release between {lo} and {hi}")
    return picked


def missing_series(spec: str, picked: list[str]) -> list[str]:
    """Minor series (``0.12.x``) inside ``A..B`` of which no release was picked: what the cache lacks.

    Without ``--index`` the tool does not know which releases exist, but every minor series
    between the two ends has at least one, so an empty series is certainly missing."""
    lo, _, hi = spec.partition("..")
    klo, khi = version_key(lo.strip()), version_key(hi.strip())
    if klo is None or khi is None or klo[0] != khi[0]:
        return []
    have = {k[:2] for v in picked if (k := version_key(v)) is not None}
    return [f"{klo[0]}.{m}.x" for m in range(klo[1], khi[1] + 1) if (klo[0], m) not in have]


def targets_from(args: list[str], releases: str | None, cache_dir: str | None, index: bool,
                 engine: Engine | None = None) -> list[str]:
    engine = engine or all_engines()[0]
    out = list(args)
    if releases:
        out += [f"{engine.release_names[0]}=={v}" for v in expand_range(releases, cache_dir, index, engine)]
    if not out:
        raise UsageError(f"matrix needs targets (paths, wheels, {engine.release_names[0]}==X.Y.Z) or --releases "
                         "FIRST..LAST")
    seen: set[str] = set()
    return [t for t in out if not (t in seen or seen.add(t))]  # type: ignore[func-returns-value]  # set.add in a dedupe


# -- one release (runs in a worker process) ----------------------------------------------------------
def analyse_one(spec: str, cache_dir: str | None, use_cache: bool) -> Release:
    from eagle3_lint.analysis import Options, build

    rel = Release(label=spec, target=spec)
    t0 = time.perf_counter()
    try:
        source = target_mod.resolve(spec, cache_dir)
        opts = Options(cache_dir=releases.cache_root(cache_dir) if use_cache else None)
        an = build(source, opts)
        an.store.save()  # keeps the next sweep warm
    except Exception as exc:  # noqa: BLE001 - one broken release is a row of the matrix, not the end of it
        rel.error = f"{type(exc).__name__}: {exc}"
        rel.seconds = time.perf_counter() - t0
        return rel
    rel.version = an.version
    rel.engine = an.engine.name
    rel.label = an.version if an.version != "unknown" else spec
    rel.statuses = {a: v.status.value for a, v in an.verdicts.items()}
    rel.classes = {a: f"{v.module}.{v.class_name}" for a, v in an.verdicts.items()}
    rel.reasons = {a: v.reason for a, v in an.verdicts.items()}
    rel.locations = {a: str(v.location) for a, v in an.verdicts.items() if v.location is not None}
    c = an.contract
    rel.contract = f"{c.check.value}: " + ", ".join(
        m.name + ("()" if m.kind == "method" else "") + ("*" if m.kind == "method" and m.has_default else "")
        for m in c.members
    )
    rel.fallback = ", ".join(an.runner.fallback_names)
    rel.gates = [f"{'/'.join(g.methods)} needs {g.config_attr}.model_type containing one of {', '.join(g.allow_list)} "
                 f"({g.path}:{g.line})" for g in an.runner.gates]
    rel.pp_verifier = an.runner.pp_verifier
    rel.internal_errors = len(an.errors)
    rel.seconds = time.perf_counter() - t0
    return rel


def _worker(args: tuple[str, str | None, bool]) -> Release:
    return analyse_one(*args)


def missing_releases(targets: list[str], cache_dir: str | None = None) -> list[tuple[Engine, str]]:
    """The ``<engine>==X`` targets whose release is not in the cache yet, in order."""
    out = []
    for t in targets:
        spec = target_mod.parse_spec(t)
        if spec is not None:
            engine, version = spec
            done = releases.release_dir(version, cache_dir, engine.package) / releases.COMPLETE_MARKER
            if not done.is_file():
                out.append((engine, version))
    return out


def prefetch(missing: list[tuple[Engine, str]], cache_dir: str | None = None,
             say: Any = None, progress: Any = None) -> dict[str, str]:
    """Fetch the missing releases one by one in this process, before the workers run (they would all download
    at once, with no progress shown). ``say(line)`` names each; ``progress`` is pip's bar. Returns the
    releases that could not be fetched (``<engine>==X`` -> reason); their columns become error columns."""
    failed: dict[str, str] = {}
    for i, (engine, version) in enumerate(missing, 1):
        spec = f"{engine.release_names[0]}=={version}"
        if say:
            say(f"fetching {spec} ({i} of {len(missing)}, not in the cache)")
        try:
            engine.fetch_release(version, cache_dir, progress)
        except (TargetError, UsageError) as exc:
            failed[spec] = str(exc)
    return failed


def run(targets: list[str], cache_dir: str | None = None, jobs: int | None = None, use_cache: bool = True,
        progress: Any = None, unfetched: dict[str, str] | None = None) -> Matrix:
    """``unfetched``: targets ``prefetch`` could not fetch (target -> reason); they become error columns
    without a second download attempt."""
    t0 = time.perf_counter()
    unfetched = unfetched or {}
    skipped = [Release(label=t, target=t, error=f"TargetError: {unfetched[t]}") for t in targets if t in unfetched]
    targets = [t for t in targets if t not in unfetched]
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(targets) or 1))
    work = [(t, cache_dir, use_cache) for t in targets]
    if jobs == 1:
        results = []
        for w in work:
            results.append(_worker(w))
            if progress:
                progress(f"{results[-1].label}: {results[-1].seconds:.1f}s")
    else:
        with ProcessPoolExecutor(max_workers=jobs) as ex:
            results = list(ex.map(_worker, work))
    releases = order(results) + skipped
    return Matrix(releases, rows_of(releases), time.perf_counter() - t0)


def order(releases: list[Release]) -> list[Release]:
    keyed = [(k, r) for r in releases if (k := version_key(r.version)) is not None]
    if len(keyed) == len(releases):
        return [r for _k, r in sorted(keyed, key=lambda kr: kr[0])]
    return releases


def rows_of(releases: list[Release]) -> list[Row]:
    archs = sorted({a for r in releases for a in r.statuses})
    rows = []
    for arch in archs:
        cells = [None if r.error else r.statuses.get(arch) for r in releases]
        first = next((r.label for r, c in zip(releases, cells, strict=True) if c == SUPPORTED), None)
        regressions, removed = [], []
        added = next((r.label for r, c in zip(releases, cells, strict=True) if c is not None), None)
        prev: str | None = None
        for r, c in zip(releases, cells, strict=True):
            if r.error:
                continue
            if prev == SUPPORTED and c is not None and c != SUPPORTED:
                regressions.append(r.label)
            if prev is not None and c is None:
                removed.append(r.label)
            prev = c
        rows.append(Row(arch, cells, first, regressions, added, removed))
    return rows


# -- output -----------------------------------------------------------------------------------------
def select_rows(m: Matrix, archs: tuple[str, ...] = (), changed: bool = False) -> list[Row]:
    rows = m.rows
    if archs:
        want = set(archs)
        unknown = want - {r.arch for r in rows}
        if unknown:
            raise UsageError(f"architecture(s) not registered in any of these releases: {', '.join(sorted(unknown))}")
        rows = [r for r in rows if r.arch in want]
    if changed:
        rows = [r for r in rows if r.changed]
    return rows


def to_json(m: Matrix, rows: list[Row]) -> dict[str, Any]:
    from eagle3_lint import __version__

    return {
        "schema_version": 1,
        "tool": {"name": "eagle3-lint", "version": __version__},
        "releases": [{
            "label": r.label, "target": r.target, "vllm_version": r.version, "error": r.error,
            "internal_errors": r.internal_errors, "contract": r.contract, "fallback": r.fallback,
            "pp_verifier": r.pp_verifier, "gates": r.gates, "statuses": dict(sorted(r.counts().items())),
            "architectures": len(r.statuses), "seconds": round(r.seconds, 3),
        } for r in m.releases],
        "architectures": [{
            "name": row.arch, "status": dict(zip(m.labels, row.cells, strict=True)),
            "first_supported": row.first_supported,
            "regressions": row.regressions, "added": row.added, "removed": row.removed,
        } for row in rows],
        "seconds": round(m.seconds, 3),
    }


def _since(row: Row) -> str:
    return row.first_supported or "-"


def to_markdown(m: Matrix, rows: list[Row], command: str) -> str:
    out = [
        f"# EAGLE-3 support matrix of {m.engine.display} releases",
        "",
        f"Regenerate: `{command}`",
        "",
        "Generated by `eagle3-lint matrix`, which reads each release's source (from its wheel) and never",
        f"imports it. A status is what {m.engine.check_words} says of the class its registry",
        "names for the architecture, as `eagle3-lint check` derives it: "
        + ", ".join(f"{SYMBOL[s]} {s}" for s in (s.value for s in Status)) + f", {SYMBOL[None]} not registered.",
        "`wrapper-gap`: the wrapper class fails while the model it delegates to passes (the runner asks the",
        "wrapper)." + (f" {gate_note(m.engine, 'the config gate column')}" if m.engine.gate_note else ""),
        "",
        "## Releases",
        "",
        "| release | contract (`()` method, `*` default body) | runner fallback | PP verifier | config gate | "
        + " | ".join(s.value for s in Status) + " |",
        "|---|---|---|---|---|" + "---|" * len(Status),
    ]
    for r in m.releases:
        if r.error:
            out.append(f"| {r.label} | error: {r.error} |" + " |" * (3 + len(Status)))
            continue
        c = r.counts()
        gate = "<br>".join(g.replace("|", "\\|") for g in r.gates) or "-"
        out.append(f"| {r.label} | {r.contract} | {r.fallback or '-'} | {r.pp_verifier or '-'} | {gate} | "
                   + " | ".join(str(c.get(s.value, 0)) for s in Status) + " |")
    out += [
        "",
        "## Architectures",
        "",
        f"{len(rows)} architectures. *Supported since*: the first release in this table where it is supported;",
        "*regressed in*: releases where a supported architecture stopped being supported.",
        "",
        "| architecture | supported since | regressed in | " + " | ".join(m.labels) + " |",
        "|---|---|---|" + "---|" * len(m.labels),
    ]
    for row in rows:
        # Registry keys come from the (possibly hostile) tree: no control characters, no cell breaks.
        out.append(
            f"| {printable(row.arch).replace('|', '&#124;')} | {_since(row)} | {', '.join(row.regressions) or '-'} | "
            + " | ".join(SYMBOL[c] for c in row.cells)
            + " |"
        )
    errs = sum(r.internal_errors for r in m.releases)
    failed = [r.label for r in m.releases if r.error]
    out += [
        "",
        f"{len(m.releases)} releases"
        + (f", {len(failed)} could not be read ({', '.join(failed)})" if failed else "")
        + f", {errs} internal errors.",
        "",
    ]
    return "\n".join(out)


STYLE = {"supported": "green", "unsupported": "red", "wrapper-gap": "magenta", "partial": "yellow", "unknown": "dim",
         None: "dim"}


def gate_note(engine: Engine, where: str) -> str:
    """The engine's note on the config-time gate, pointing at ``where`` the gates are listed (the markdown's
    "config gate" column, the lines under the terminal table), without backticks for the terminal."""
    note = engine.gate_note.replace("(the gate column)", f"({where})" if where else "").replace("  ", " ")
    return note.replace(" .", ".").replace(" ;", ";")


def table_blocks(first: int, columns: list[int], width: int | None, gap: int = 1) -> list[list[int]]:
    """Which columns each printed table holds, so that every table fits ``width`` cells: each table starts
    with a column ``first`` wide (the architecture names), then as many of ``columns`` (their widths, in
    order) as fit. A table holds at least one of them, even one that does not fit (a terminal narrower than
    an architecture name and a release). ``width=None``: one table with everything."""
    if width is None:
        return [list(range(len(columns)))]
    blocks: list[list[int]] = [[]]
    used = first
    for i, w in enumerate(columns):
        if blocks[-1] and used + gap + w > width:
            blocks.append([])
            used = first
        blocks[-1].append(i)
        used += gap + w
    return blocks


def render_table(m: Matrix, rows: list[Row], console: Any, fit: bool = True) -> None:
    """The matrix as terminal tables no wider than ``console.width`` (with ``fit``; otherwise, for a file, one
    table as wide as its content). The columns after the architecture (since, regressed, one per release) go
    into one table while they fit beside the architecture names, then into the next table, which repeats the
    architecture column. Nothing is cut: an architecture name is never shortened, a list of regressions
    wraps between releases."""
    from rich import box
    from rich.cells import cell_len
    from rich.console import JustifyMethod
    from rich.markup import escape
    from rich.table import Table

    names = [printable(r.arch) for r in rows]
    w_arch = max([len("architecture"), *(cell_len(n) for n in names)])
    # (header, width, cells, justify, wraps): a long list of regressions wraps at its commas rather than
    # widening every table.
    regressed = [", ".join(r.regressions) or "-" for r in rows]
    cols: list[tuple[str, int, list[str], JustifyMethod, bool]] = [
        ("since", max([len("since"), *(len(_since(r)) for r in rows)]), [_since(r) for r in rows], "left", False),
        ("regressed", min(max([len("regressed"), *(len(x) for x in regressed)]), 22,
                          max(len("regressed"), console.width - w_arch - 1) if fit else 22), regressed, "left", True),
    ]
    for i, label in enumerate(m.labels):
        head = printable(label)
        cols.append((head, max(cell_len(head), 1), [f"[{STYLE[r.cells[i]]}]{SYMBOL[r.cells[i]]}[/]" for r in rows],
                     "center", False))
    blocks = table_blocks(w_arch, [c[1] for c in cols], console.width if fit else None)
    need = max(w_arch + sum(cols[i][1] + 1 for i in b) for b in blocks)
    if not fit or need > console.width:
        console.width = need  # a file, or a terminal narrower than one name and one column: wider, never cut
    for n, block in enumerate(blocks):
        # SIMPLE_HEAD without padding: one space between columns and a rule under the header, the narrowest
        # layout that still reads as a table (the boxed one took 3 cells per column: 90 wide at 2 releases).
        t = Table(box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 0), header_style="bold")
        t.add_column("architecture", no_wrap=True, min_width=w_arch)
        for i in block:
            head, width, _cells, justify, wraps = cols[i]
            t.add_column(escape(head), justify=justify, no_wrap=not wraps, min_width=width,
                         max_width=width if wraps else None)
        for k, name in enumerate(names):
            t.add_row(escape(name), *[cols[i][2][k] if i >= 2 else escape(cols[i][2][k]) for i in block])
        if n:
            console.print()
        console.print(t)
    legend = ", ".join(f"{SYMBOL[s.value]} {s.value}" for s in Status) + f", {SYMBOL[None]} not registered"
    # What each column means, as the markdown says it, and where the config gates are (lines below).
    legend += (". since: the first release here where it is supported; regressed: the releases where a supported "
               f"architecture stopped being supported. A status is what {m.engine.check_words.replace('`', '')} "
               "says of the class its registry names; wrapper-gap: the wrapper fails while the model it delegates "
               "to passes")
    gated = [r for r in m.releases if r.gates and not r.error]
    if m.engine.gate_note:
        legend += ". " + gate_note(m.engine, "listed below" if gated else "").replace("`", "").rstrip(".")
    parts = f" in {len(blocks)} tables of at most {console.width} columns" if len(blocks) > 1 else ""
    console.print(f"[dim]{escape(legend)}. {len(rows)} architectures x {len(m.releases)} releases{parts}, "
                  f"in {m.seconds:.1f}s.[/]")
    for r in gated:
        for g in r.gates:
            console.print(f"[dim]config gate of {escape(printable(r.label))}: {escape(printable(g))}[/]")
    for r in m.releases:
        if r.error:
            console.print(f"[red]could not read {escape(printable(f'{r.label}: {r.error}'))}[/]")


def write_markdown(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
