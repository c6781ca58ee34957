"""``eagle3-lint matrix --format html``: the support matrix as one self-contained HTML page per engine.

A page is a table of architectures (rows) by releases (columns), one cell per verdict: its symbol, and on
hover (the ``title`` attribute) the release, the status, the judged class, the verdict's reason and the
file:line of the class. A filter box above the table hides the rows whose architecture name does not
contain any of the words typed (a few lines of inline script); ``page.html#Qwen3`` shows it filtered.

Everything on the page that comes from the analysed trees (registry keys, module and class names, reasons
quoting them, paths, config gates, the labels of trees without a version) is untrusted: it is made
printable and HTML-escaped (``html.escape`` with quotes, in text and in attributes alike). The page also
carries a Content-Security-Policy that allows only its own inline style and script, by hash, and nothing
from anywhere else, so even a slip in escaping could not run a script the tree injected or load anything.
The page needs no network, no font, no image, no other file.
"""

from __future__ import annotations

import base64
import hashlib
from html import escape
from pathlib import Path

from eagle3_lint import target as target_mod
from eagle3_lint.engine import Engine
from eagle3_lint.engines import all_engines, get
from eagle3_lint.errors import UsageError
from eagle3_lint.matrix import SYMBOL, Matrix, Release, Row, gate_note, rows_of
from eagle3_lint.model import Status
from eagle3_lint.safe_text import printable

# The colours of the terminal table (green, red, magenta, yellow, dim), light enough to read the symbol on.
STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1b1b1b; }
h1 { font-size: 1.4em; margin: 0 0 .3em; }
h2 { font-size: 1.15em; margin: 1.5em 0 .4em; }
p { max-width: 70em; margin: .4em 0; }
code { font-family: ui-monospace, monospace; font-size: .95em; }
.filter { margin: 1em 0 .6em; }
.filter input { font-size: 1em; padding: .3em .5em; width: 22em; }
#count { margin-left: 1em; color: #555; }
table { border-collapse: collapse; }
th, td { border: 1px solid #d0d0d0; padding: .15em .5em; }
thead th { position: sticky; top: 0; background: #f2f2f2; }
tbody th { text-align: left; font-weight: normal; font-family: ui-monospace, monospace; white-space: nowrap; }
td.cell { text-align: center; min-width: 3.5em; cursor: default; }
.supported { background: #c8efd0; }
.unsupported { background: #f6c9c9; }
.wrapper-gap { background: #ecd0f0; }
.partial { background: #f7ebb5; }
.unknown { background: #e4e4e4; }
.absent { color: #9a9a9a; }
.error { background: #fbe0c4; }
table.releases { table-layout: fixed; width: 100%; max-width: 90em; }
.releases th:nth-child(1) { width: 6em; }
.releases th:nth-child(2) { width: 9em; }
.releases td { vertical-align: top; overflow-wrap: break-word; }
"""

# Hides the rows whose name (data-arch, lower-cased) contains none of the words in the box; keeps a count.
SCRIPT = """
(function () {
  var box = document.getElementById("filter"), count = document.getElementById("count");
  var rows = Array.prototype.slice.call(document.querySelectorAll("#matrix tbody tr"));
  function apply() {
    var words = box.value.toLowerCase().split(/\\s+/).filter(Boolean), shown = 0;
    rows.forEach(function (tr) {
      var name = tr.getAttribute("data-arch");
      tr.hidden = words.length > 0 && !words.some(function (w) { return name.indexOf(w) >= 0; });
      if (!tr.hidden) { shown++; }
    });
    count.textContent = shown + " of " + rows.length + " architectures";
  }
  function fromHash() {
    if (location.hash.length > 1) { box.value = decodeURIComponent(location.hash.slice(1)); }
    apply();
  }
  box.addEventListener("input", apply);
  window.addEventListener("hashchange", fromHash);
  fromHash();
})();
"""


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


# Only this page's own style and script may apply; no request leaves the page (images, fonts, frames,
# forms, connections), whatever the markup.
CSP = (f"default-src 'none'; style-src '{_sha256(STYLE)}'; script-src '{_sha256(SCRIPT)}'; "
       "base-uri 'none'; form-action 'none'")


def _t(text: str) -> str:
    """Untrusted text for an HTML text node or a quoted attribute: printable, then escaped."""
    return escape(printable(text), quote=True)


def engine_of(rel: Release) -> str:
    """The engine of a release: the analysis says, or, for one that could not be read, its ``<engine>==X``."""
    if rel.engine:
        return rel.engine
    spec = target_mod.parse_spec(rel.target)
    return spec[0].name if spec else ""


def by_engine(m: Matrix) -> list[Matrix]:
    """One matrix per engine, in the order the engines first appear (a release nothing could read joins the
    first engine's matrix)."""
    groups: dict[str, list[Release]] = {}
    for r in m.releases:
        groups.setdefault(engine_of(r), []).append(r)
    if "" in groups and len(groups) > 1:
        orphans = groups.pop("")
        groups[next(iter(groups))].extend(orphans)
    return [Matrix(rels, rows_of(rels), m.seconds) for rels in groups.values()]


def _cell(rel: Release, arch: str, status: str | None) -> str:
    if rel.error:
        return f'<td class="cell error" title="{_t(rel.label)}: could not be read: {_t(rel.error)}">!</td>'
    if status is None:
        return f'<td class="cell absent" title="{_t(rel.label)}: {_t(arch)} is not registered">{SYMBOL[None]}</td>'
    hover = [f"{rel.label}: {status}", rel.classes.get(arch, ""), rel.reasons.get(arch, ""),
             rel.locations.get(arch, "")]
    title = "&#10;".join(_t(h) for h in hover if h)  # one line each in the tooltip
    return f'<td class="cell {escape(status)}" title="{title}">{SYMBOL.get(status, "?")}</td>'


def page(m: Matrix, rows: list[Row], command: str, engine: Engine | None = None) -> str:
    """The HTML page of one engine's matrix (``m`` holds that engine's releases), ``rows`` in order."""
    from eagle3_lint import __version__

    engine = engine or m.engine
    title = f"EAGLE-3 support matrix of {engine.display} releases"
    legend = ", ".join(f"{SYMBOL[s.value]} {s.value}" for s in Status) + f", {SYMBOL[None]} not registered"
    if any(r.error for r in m.releases):
        legend += ", ! the release could not be read"
    note = gate_note(engine, "the config gate column of the releases below") if engine.gate_note else ""
    out = [
        "<!doctype html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{escape(CSP)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_t(title)}</title>",
        f"<style>{STYLE}</style>",
        "</head>",
        "<body>",
        f"<h1>{_t(title)}</h1>",
        f"<p>Which {_t(engine.display)} release serves which model architecture with EAGLE-3 speculative "
        f"decoding, as <code>eagle3-lint</code> {_t(__version__)} reads each release's source, without "
        f"importing it. Regenerate: <code>{_t(command)}</code></p>",
        f"<p>{_t(legend)}. A status is what {_t(engine.check_words.replace('`', ''))} says of the class its "
        "registry names for the architecture; <em>wrapper-gap</em>: the wrapper class fails while the model it "
        "delegates to passes (the runner asks the wrapper). <em>since</em>: the first release here where it is "
        "supported; <em>regressed</em>: releases where a supported architecture stopped being supported. Hover "
        "a cell for the class, the reason and its file:line." + (f" {_t(note.replace('`', ''))}" if note else "")
        + "</p>",
        '<p class="filter"><label for="filter">Filter models</label> '
        '<input id="filter" type="search" placeholder="e.g. Llama Qwen3" autocomplete="off" spellcheck="false">'
        f'<span id="count">{len(rows)} of {len(rows)} architectures</span></p>',
        '<table id="matrix">',
        "<thead><tr><th>architecture</th><th>since</th><th>regressed</th>"
        + "".join(f'<th title="{_t(r.target)}">{_t(r.label)}</th>' for r in m.releases) + "</tr></thead>",
        "<tbody>",
    ]
    for row in rows:
        cells = "".join(_cell(r, row.arch, c) for r, c in zip(m.releases, row.cells, strict=True))
        out.append(f'<tr data-arch="{_t(row.arch.lower())}"><th scope="row">{_t(row.arch)}</th>'
                   f"<td>{_t(row.first_supported or '-')}</td><td>{_t(', '.join(row.regressions) or '-')}</td>"
                   f"{cells}</tr>")
    out += [
        "</tbody>",
        "</table>",
        "<h2>Releases</h2>",
        '<table class="releases">',
        "<thead><tr><th>release</th><th>architectures</th><th>contract (<code>()</code> method, <code>*</code> "
        "default body)</th><th>runner fallback</th><th>PP verifier</th><th>config gate</th></tr></thead>",
        "<tbody>",
    ]
    for r in m.releases:
        if r.error:
            out.append(f'<tr><th scope="row">{_t(r.label)}</th><td colspan="5">could not be read: {_t(r.error)}</td>'
                       "</tr>")
            continue
        c = r.counts()
        counts = "<br>".join(f"{c.get(s.value, 0)} {escape(s.value)}" for s in Status)
        out.append(f'<tr><th scope="row">{_t(r.label)}</th><td>{counts}</td><td>{_t(r.contract)}</td>'
                   f"<td>{_t(r.fallback or '-')}</td><td>{_t(r.pp_verifier or '-')}</td>"
                   f"<td>{'<br>'.join(_t(g) for g in r.gates) or '-'}</td></tr>")
    out += ["</tbody>", "</table>", f"<script>{SCRIPT}</script>", "</body>", "</html>", ""]
    return "\n".join(out)


def pages(m: Matrix, rows: list[Row], command: str) -> list[tuple[Engine, str]]:
    """(engine, page) for each engine of ``m``, with the rows of ``rows`` (``select_rows`` of the whole
    matrix) that the engine registers."""
    wanted = {r.arch for r in rows}
    out = []
    for sub in by_engine(m):
        name = next((engine_of(r) for r in sub.releases if engine_of(r)), "")
        engine = get(name) if name else all_engines()[0]
        out.append((engine, page(sub, [r for r in sub.rows if r.arch in wanted], command, engine)))
    return out


def destinations(output: str | None, engines: list[Engine]) -> list[Path | None]:
    """Where each engine's page goes. No ``-o``: standard output, for one engine. ``-o FILE.html``: that
    file, for one engine. Any other ``-o``: a folder (made if missing; its parent must exist) holding
    ``<engine>.html`` (``vllm.html``, ``sglang.html``)."""
    if output is None or output == "-":
        if len(engines) > 1:
            raise UsageError(f"matrix --format html: {len(engines)} engines make {len(engines)} pages; give -o "
                             f"FOLDER to write them ({', '.join(f'FOLDER/{e.name}.html' for e in engines)})")
        return [None]
    out = Path(output)
    if out.suffix.lower() in (".html", ".htm") and not out.is_dir():
        if len(engines) > 1:
            raise UsageError(f"matrix --format html: {len(engines)} engines make {len(engines)} pages; -o needs "
                             f"a folder, not the file {output}")
        if not out.parent.is_dir():
            raise UsageError(f"cannot write {output}: the folder {out.parent} does not exist")
        return [out]
    if not out.is_dir():
        if not out.parent.is_dir():
            raise UsageError(f"cannot write into {output}: its parent folder {out.parent} does not exist")
        try:
            out.mkdir()
        except OSError as exc:
            raise UsageError(f"cannot create the folder {output}: {exc.strerror or exc}") from None
    return [out / f"{e.name}.html" for e in engines]
