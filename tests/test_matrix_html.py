"""``eagle3-lint matrix --output-format html``: one self-contained page per engine, escaped, filterable.

The page is read back two ways: parsed with the standard library's HTML parser (what is on it, what it
loads, what the tree could have injected), and opened in headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by selenium): a screenshot shows the table's coloured cells, and typing in the
filter box hides the rows whose name does not match. The browser tests run in CI (``CI=true``: a missing
Chromium fails them) and locally (they skip, saying why, where Chromium is not installed).

The trees are the sample releases of ``test_matrix`` (versions and models known by construction), a
hostile tree whose registry keys, module and class names carry markup, and, marked ``real``, the released
vLLM 0.16.0 and 0.33.0.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from eagle3_lint import matrix, matrix_html
from tests.cihelp import run_cli
from tests.conftest import SAMPLES
from tests.test_matrix import BAD, GOOD, _release

# A tree is untrusted: its registry keys, module and class names reach the page (the names, the reasons
# quoting them, the tooltips). Each tries another way out of its text or attribute.
EVIL_KEY = "<script>window.pwned=1</script>ForCausalLM"
EVIL_CLASS = "<img src=x onerror=window.pwned=2>"
EVIL_MODULE = 'evil" onmouseover="window.pwned=3'
EVIL_REGISTRY = f'''_TEXT_GENERATION_MODELS = {{
    "{EVIL_KEY}": ("evil", "EvilForCausalLM"),
    "EvilForCausalLM": ("evil", "{EVIL_CLASS}"),
    "Quote\\"ForCausalLM": ("{EVIL_MODULE.replace('"', chr(92) + '"')}", "EvilForCausalLM"),
}}
_VLLM_MODELS = {{
    **_TEXT_GENERATION_MODELS,
}}
'''
EVIL_MODEL = '''from torch import nn

from .interfaces import SupportsEagle3, SupportsPP


class EvilForCausalLM(nn.Module, SupportsPP, SupportsEagle3):
    """</title><script>window.pwned = 4</script>"""

    def set_aux_hidden_state_layers(self, layers):
        self.layers_ = layers

    def get_eagle3_aux_hidden_state_layers(self):
        return (2, 16, 29)
'''


def _evil(root: Path) -> Path:
    shutil.copytree(SAMPLES / "_bases" / "v016", root)
    (root / "vllm" / "version.py").write_text('__version__ = "0.19.0"\n')
    models = root / "vllm" / "model_executor" / "models"
    (models / "evil.py").write_text(EVIL_MODEL)
    (models / "registry.py").write_text(EVIL_REGISTRY)
    return root


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    base = tmp_path_factory.mktemp("html")
    return [
        _release(base / "a", "0.15.0", {"ToyForCausalLM": BAD, "OldForCausalLM": GOOD}),
        _release(base / "b", "0.16.0", {"ToyForCausalLM": GOOD, "OldForCausalLM": GOOD}),
        _release(base / "c", "0.17.0", {"ToyForCausalLM": BAD, "NewForCausalLM": GOOD}),
        _release(base / "d", "0.18.0", {"ToyForCausalLM": GOOD, "NewForCausalLM": GOOD}),
        _evil(base / "e"),
    ]


class Page(HTMLParser):
    """What a browser would take from the page: elements, attributes, text by element, inline code."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.scripts: list[str] = []
        self.styles: list[str] = []
        self.rows: list[dict[str, Any]] = []  # the matrix's body rows: name, data-arch, cells (class, title, text)
        self._open: list[str] = []
        self._in_matrix = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.append((tag, a))
        self._open.append(tag)
        if tag == "table":
            self._in_matrix = a.get("id") == "matrix"
        if self._in_matrix and tag == "tr" and "data-arch" in a:
            self.rows.append({"data-arch": a["data-arch"], "name": "", "cells": []})
        if self._in_matrix and tag == "td" and self.rows and "cell" in a.get("class", "").split():
            self.rows[-1]["cells"].append({"class": a["class"], "title": a.get("title", ""), "text": ""})

    def handle_endtag(self, tag: str) -> None:
        while self._open and self._open.pop() != tag:
            pass
        if tag == "table":
            self._in_matrix = False

    def handle_data(self, data: str) -> None:
        top = self._open[-1] if self._open else ""
        if top == "script":
            self.scripts.append(data)
        elif top == "style":
            self.styles.append(data)
        elif self._in_matrix and self.rows and top == "th":
            self.rows[-1]["name"] += data
        elif self._in_matrix and self.rows and top == "td" and self.rows[-1]["cells"]:
            self.rows[-1]["cells"][-1]["text"] += data


def _sha(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def _class_line(path: Path, name: str) -> int:
    """The 1-based line of ``class name`` in ``path``: the file:line a cell must show, read from the source."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.startswith(f"class {name}("))


def _html(trees: list[Path], out: Path, cache: bool = False) -> Path:
    """``matrix --output-format html -o out`` of ``trees`` (the sample trees without the facts cache; the released
    ones with the shared cache, warm after their first analysis)."""
    p = run_cli(["matrix", *map(str, trees), *([] if cache else ["--no-cache"]), "-j", "1", "--output-format", "html",
                 "-o", str(out)], cwd=out.parent)
    assert p.returncode == 0, p.stderr
    return out


def test_page_is_self_contained_escaped_and_says_why(trees: list[Path], tmp_path: Path) -> None:
    page_path = _html(trees, tmp_path / "matrix.html")
    text = page_path.read_text(encoding="utf-8")
    page = Page(text)
    # Self-contained: nothing to fetch (no src, href, action, url(), @import), one inline style and script,
    # and a policy that lets only those two run, by hash.
    tags = [t for t, _a in page.tags]
    assert tags.count("script") == 1 and tags.count("style") == 1
    assert not {"link", "img", "iframe", "object", "embed", "base", "form"} & set(tags)
    attrs = {k for _t, a in page.tags for k in a}
    assert not {"src", "href", "action", "srcset", "style"} & attrs
    assert not [k for k in attrs if k.startswith("on")]  # no event handler, the hostile tree's neither
    assert "url(" not in "".join(page.styles) and "@import" not in "".join(page.styles)
    csp = next(a["content"] for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in csp
    assert f"script-src '{_sha(page.scripts[0])}'" in csp and f"style-src '{_sha(page.styles[0])}'" in csp
    # The hostile names are text on the page, not markup: the parser sees them as the rows' names.
    rows = {r["name"]: r for r in page.rows}
    assert set(rows) == {"NewForCausalLM", "OldForCausalLM", "ToyForCausalLM", EVIL_KEY, "EvilForCausalLM",
                         'Quote"ForCausalLM'}
    assert EVIL_CLASS in rows["EvilForCausalLM"]["cells"][-1]["title"]
    assert EVIL_MODULE in rows['Quote"ForCausalLM']["cells"][-1]["title"]
    assert "window.pwned" not in page.scripts[0]
    # One cell per release, in version order; the symbol and the class name the status.
    heads = re.findall(r"<th title=\"[^\"]*\">([^<]+)</th>", text)
    assert heads == ["0.15.0", "0.16.0", "0.17.0", "0.18.0", "0.19.0"]
    toy = rows["ToyForCausalLM"]["cells"]
    assert [c["text"] for c in toy] == ["✗", "✓", "✗", "✓", "·"]
    assert [c["class"].split()[1] for c in toy] == ["unsupported", "supported", "unsupported", "supported", "absent"]
    # The hover says the release, the status, the class, the reason and the class's file:line (the line from
    # the source written above, not from the tool).
    toy_py = trees[1] / "vllm" / "model_executor" / "models" / "toyforcausallm.py"
    assert toy[1]["title"].split("\n") == [
        "0.16.0: supported", "vllm.model_executor.models.toyforcausallm.ToyForCausalLM",
        "every contract member is present in the MRO",
        f"vllm/model_executor/models/toyforcausallm.py:{_class_line(toy_py, 'ToyForCausalLM')}"]
    bad = toy[0]["title"].split("\n")
    assert bad[0] == "0.15.0: unsupported" and "missing" in bad[2] and "set_aux_hidden_state_layers" in bad[2]
    assert toy[4]["title"] == "0.19.0: ToyForCausalLM is not registered"
    # The regressions and first supported release, as the other formats say them.
    assert re.search(r"<th scope=\"row\">ToyForCausalLM</th><td>0\.16\.0</td><td>0\.17\.0</td>", text)
    assert 'id="filter"' in text and 'data-arch="toyforcausallm"' in text


def test_html_destinations(trees: list[Path], tmp_path: Path) -> None:
    """One engine: standard output or ``-o FILE.html``. Several engines: ``-o FOLDER`` gets ``<engine>.html``
    each; anything else is a one-line error and exit 2."""
    one = run_cli(["matrix", str(trees[0]), "--no-cache", "--output-format", "html"], cwd=tmp_path)
    assert one.returncode == 0 and one.stdout.startswith("<!doctype html>"), one.stderr
    both = [str(trees[0]), str(SAMPLES / "_bases" / "sglang_small")]
    site = tmp_path / "site"
    p = run_cli(["matrix", *both, "--no-cache", "--output-format", "html", "-o", str(site)], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert sorted(f.name for f in site.iterdir()) == ["sglang.html", "vllm.html"]
    assert "EAGLE-3 support matrix of SGLang releases" in (site / "sglang.html").read_text(encoding="utf-8")
    vllm_page = Page((site / "vllm.html").read_text(encoding="utf-8"))
    assert {r["name"] for r in vllm_page.rows} == {"ToyForCausalLM", "OldForCausalLM"}  # its own rows only
    for args, says in [
        ([], "give -o FOLDER"),
        (["-o", str(tmp_path / "m.html")], "-o needs a folder"),
    ]:
        bad = run_cli(["matrix", *both, "--no-cache", "--output-format", "html", *args], cwd=tmp_path)
        assert bad.returncode == 2 and says in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    for out in (tmp_path / "no" / "such" / "m.html", tmp_path / "no" / "such"):
        bad = run_cli(["matrix", str(trees[0]), "--no-cache", "--output-format", "html", "-o", str(out)], cwd=tmp_path)
        assert bad.returncode == 2 and "does not exist" in bad.stderr, bad.stderr
    assert not (tmp_path / "no").exists()


def test_engine_of_an_unreadable_release() -> None:
    """A release that could not be read is put on its engine's page by its ``<engine>==X`` spec."""
    rels = [matrix.Release(label="0.5.1", target="sglang==0.5.1", error="TargetError: offline"),
            matrix.Release(label="0.16.0", target="vllm==0.16.0", engine="vllm", version="0.16.0",
                           statuses={"ToyForCausalLM": "supported"})]
    split = matrix_html.by_engine(matrix.Matrix(rels, matrix.rows_of(rels)))
    assert [[r.target for r in m.releases] for m in split] == [["sglang==0.5.1"], ["vllm==0.16.0"]]
    assert split[1].rows[0].cells == ["supported"]


# -- in headless Chromium ------------------------------------------------------------------------------
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--window-size=1100,900"]


@pytest.fixture
def browser() -> Iterator[Any]:
    """A selenium-driven headless Chromium (Debian's chromium and chromium-driver; no browser download)."""
    chromium = shutil.which("chromium")
    driver_path = shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        webdriver = None  # type: ignore[assignment]
    if not (chromium and driver_path and webdriver):
        why = (f"needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver) and selenium "
               f"(the test extra): chromium={chromium}, chromedriver={driver_path}, selenium={bool(webdriver)}")
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the browser test: {why}")  # .ci/run installs them
        pytest.skip(why)
    profile = tempfile.mkdtemp(prefix="eagle3-lint-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={profile}"]:
        opts.add_argument(flag)
    driver = webdriver.Chrome(options=opts, service=Service(executable_path=driver_path))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


# The cell colours of the page's style sheet (matrix_html.STYLE), as a screenshot shows them.
GREEN, RED = (0xC8, 0xEF, 0xD0), (0xF6, 0xC9, 0xC9)


def _pixels(png: bytes) -> dict[str, Any]:
    """Size, colour spread and the number of pixels of each cell colour of a PNG screenshot."""
    import statistics

    import png as pypng

    width, height, rows, _info = pypng.Reader(bytes=png).asRGBA8()
    data = b"".join(bytes(row) for row in rows)
    # A screenshot is opaque (alpha 0xff), so an RGBA pattern can only match on a pixel's boundary.
    return {"size": (width, height), "variance": statistics.pvariance(data[::4 * 7]),  # red of every 7th pixel
            "green": data.count(bytes([*GREEN, 0xFF])), "red": data.count(bytes([*RED, 0xFF]))}


def _visible(driver: Any) -> list[str]:
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('#matrix tbody tr')).filter(r => !r.hidden && "
        "r.offsetParent !== null).map(r => r.querySelector('th').textContent)")


def _type(driver: Any, text: str) -> None:
    from selenium.webdriver.common.by import By

    box = driver.find_element(By.ID, "filter")
    box.clear()
    box.send_keys(text)  # real key events: the page's input listener filters as the user types


@pytest.mark.browser
def test_in_chromium_the_table_shows_and_the_filter_hides_rows(browser: Any, trees: list[Path],
                                                             tmp_path: Path) -> None:
    page_path = _html(trees, tmp_path / "matrix.html")
    browser.get(page_path.as_uri())
    shot = tmp_path / "before.png"
    browser.save_screenshot(str(shot))
    before = _pixels(shot.read_bytes())
    # The table is drawn: the screenshot is the window's size, not blank, with the green (supported) and red
    # (unsupported) cells of the sample releases.
    assert before["size"][0] >= 1000 and shot.stat().st_size > 20_000
    assert before["variance"] > 100 and before["green"] > 1000 and before["red"] > 1000, before
    names = {"NewForCausalLM", "OldForCausalLM", "ToyForCausalLM", EVIL_KEY, "EvilForCausalLM", 'Quote"ForCausalLM'}
    assert set(_visible(browser)) == names
    # Nothing the hostile tree carried ran: its names are text; the page's one script is its own.
    assert browser.execute_script("return [window.pwned === undefined, document.scripts.length]") == [True, 1]
    _type(browser, "toy")
    assert _visible(browser) == ["ToyForCausalLM"]
    assert browser.execute_script("return document.getElementById('count').textContent") == "1 of 6 architectures"
    browser.save_screenshot(str(tmp_path / "toy.png"))
    after = _pixels((tmp_path / "toy.png").read_bytes())
    assert 0 < after["green"] < before["green"] / 2, (before, after)  # the other rows' cells are gone
    _type(browser, "new OLD")  # several words: rows matching any of them, whatever the case
    assert sorted(_visible(browser)) == ["NewForCausalLM", "OldForCausalLM"]
    _type(browser, "nomodelcalledthis")
    assert _visible(browser) == [] and browser.execute_script("return window.pwned === undefined")
    # Opened with #Toy the page starts filtered (a link from the docs to one model's row), and a new hash
    # filters again.
    browser.get("about:blank")
    browser.get(page_path.as_uri() + "#Toy")
    assert _visible(browser) == ["ToyForCausalLM"]
    from selenium.webdriver.support.wait import WebDriverWait

    browser.execute_script("location.hash = 'Old'")
    WebDriverWait(browser, 10).until(lambda d: _visible(d) == ["OldForCausalLM"])  # hashchange is asynchronous
    _keep(tmp_path, "before.png", "toy.png")


@pytest.mark.real
@pytest.mark.browser
def test_in_chromium_the_released_trees(browser: Any, real_trees: Any, tmp_path: Path) -> None:
    """The page of vLLM 0.16.0 and 0.33.0: typing "kimi" leaves the Kimi architectures the two registries
    name (read from their registry.py), and Kimi-K2.5's cells say why, with the class's file:line."""
    roots = [real_trees.get(v) for v in ("0.16.0", "0.33.0")]
    kimi = set()
    for root in roots:
        registry = (root / "vllm/model_executor/models/registry.py").read_text(encoding="utf-8")
        kimi |= {k for k in re.findall(r'^\s+"(\w+)": \(', registry, re.M) if "kimi" in k.lower()}
    assert "KimiK25ForConditionalGeneration" in kimi
    page_path = _html([Path(r) for r in roots], tmp_path / "vllm.html", cache=True)
    browser.get(page_path.as_uri())
    browser.save_screenshot(str(tmp_path / "vllm.png"))
    shown = _pixels((tmp_path / "vllm.png").read_bytes())
    assert shown["green"] > 1000 and shown["red"] > 1000, shown
    total = len(_visible(browser))
    assert total > 400
    _type(browser, "kimi")
    assert set(_visible(browser)) == kimi
    assert browser.execute_script("return document.getElementById('count').textContent") == \
        f"{len(kimi)} of {total} architectures"
    titles = browser.execute_script(
        "return Array.from(Array.from(document.querySelectorAll('#matrix tbody tr')).find(r => "
        "r.querySelector('th').textContent === 'KimiK25ForConditionalGeneration').querySelectorAll('td.cell'))"
        ".map(td => td.title)")
    line_016 = _class_line(roots[0] / "vllm/model_executor/models/kimi_k25.py", "KimiK25ForConditionalGeneration")
    assert titles[0].startswith("0.16.0: unsupported\n") and "missing supports_eagle3" in titles[0]
    assert titles[0].endswith(f"vllm/model_executor/models/kimi_k25.py:{line_016}")
    assert titles[1].startswith("0.33.0: supported\n")
    browser.save_screenshot(str(tmp_path / "kimi.png"))
    _keep(tmp_path, "vllm.png", "kimi.png")


def _keep(tmp: Path, *names: str) -> None:
    """EAGLE3_LINT_KEEP_SCREENSHOTS=FOLDER copies the screenshots there, to look at them."""
    keep = os.environ.get("EAGLE3_LINT_KEEP_SCREENSHOTS")
    for name in names if keep else ():
        shutil.copy(tmp / name, Path(keep or ".") / name)


# -- the pages in docs/ are current ---------------------------------------------------------------------------
def assert_newest_column_is_current(engine: str, root: Path) -> None:
    """``docs/matrix/<engine>.html`` is generated (docs/support-matrix.md has the command): its newest release's
    column, every row, is what the tool says of that release today, cell for cell (status, class, reason, file:line),
    and the page has a row for each architecture the release registers. Only the newest release is analysed (one
    verdicts-only build, facts from this session's cache); a change to the verdicts shows there first."""
    from tests.conftest import session_cache

    page = (Path(__file__).resolve().parent.parent / "docs" / "matrix" / f"{engine}.html").read_text(encoding="utf-8")
    rel = matrix.analyse_one(str(root), str(session_cache()), True)
    assert not rel.error, rel.error
    rows = dict(re.findall(r'<tr data-arch="[^"]*"><th scope="row">([^<]+)</th>(.*?)</tr>', page, flags=re.S))
    assert set(rel.statuses) <= set(rows), sorted(set(rel.statuses) - set(rows))
    stale = [arch for arch, cells in rows.items()
             if matrix_html._cell(rel, arch, rel.statuses.get(arch)) not in cells]
    regen = "regenerate it with the command in docs/support-matrix.md"
    assert not stale, f"docs/matrix/{engine}.html is stale for {rel.label} ({regen}): {stale[:10]}"


@pytest.mark.real
def test_vllm_page_in_docs_is_current(real_trees: Any) -> None:
    assert_newest_column_is_current("vllm", real_trees.get("0.33.0"))
