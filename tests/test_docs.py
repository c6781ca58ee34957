"""The README and the documentation site (issue 21, item 5).

The README stays a page a newcomer reads in a minute (at most 8 KB, checking one's own model on the first
screens), and everything else is in ``docs/``, built with ``mkdocs build --strict`` from ``mkdocs.yml``: the
README is the home page and ``rules/*.md`` the rule pages (``scripts/mkdocs_hooks.py``), and a broken link, a
missing anchor or a page left out of the navigation fails the build. mkdocs and mkdocs-material are in the
test extra, so these tests run wherever the suite does, CI included.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.cihelp import REPO

README_LIMIT = 8192


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    # NO_MKDOCS_2_WARNING: mkdocs-material prints a banner about MkDocs 2.0 on every build; it is not a warning
    # of the build and --strict ignores it, but it would bury the build's own messages in a failure.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], capture_output=True, text=True, env=env, timeout=600)


def test_readme_is_at_most_8_kb() -> None:
    size = len((REPO / "README.md").read_bytes())
    assert size <= README_LIMIT, f"README.md is {size} bytes (at most {README_LIMIT}): move the detail into docs/"


def test_readme_says_how_to_check_your_own_model_first() -> None:
    """Set-up, then checking one's own model or fork, before anything else; the two commands stay first."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    heads = [line for line in text.splitlines() if line.startswith("## ")]
    assert heads[:3] == ["## Set-up", "## Check your own model or fork", "## CI and pre-commit"], heads
    # On GitHub (code blocks scroll, they do not wrap) the section starts within two 24-row screens, and the
    # first screen of a plain 80-column terminal, wrapped rows counted, links to it.
    before = text[:text.index("## Check your own model or fork")].splitlines()
    assert len(before) <= 48, len(before)
    rows, first_screen = 0, []
    for line in text.splitlines():
        rows += max(1, -(-len(line) // 80))
        if rows > 24:
            break
        first_screen.append(line)
    assert "](#check-your-own-model-or-fork)" in "\n".join(first_screen)
    for flag in ("--arch", "--target-config", "--draft-config", "--fix", "vllm==", "site-packages"):
        assert flag in text.split("## Check your own model or fork", 1)[1].split("\n## ", 1)[0], flag


def test_site_builds_strict_with_every_page(tmp_path: Path) -> None:
    site = tmp_path / "site"
    p = mkdocs_build(REPO / "mkdocs.yml", site)
    assert p.returncode == 0, p.stderr
    # Every page of docs/, every rule page and the README is a page of the site (mkdocs' use_directory_urls).
    docs = REPO / "docs"
    pages = [site / md.relative_to(docs).with_suffix("") / "index.html" for md in docs.rglob("*.md")]
    pages += [site / "rules" / ("" if md.name == "README.md" else md.stem) / "index.html"
              for md in (REPO / "rules").glob("*.md")]
    missing = [str(page.relative_to(site)) for page in pages if not page.is_file()]
    assert not missing, missing
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "Check your own model or fork" in home
    # The README's links into docs/ and rules/ become links between pages of the site ...
    assert 'href="serving/"' in home and 'href="rules/"' in home
    # ... and a rule page's link to its sample tree (outside the site) a link to the repository.
    egl100 = (site / "rules" / "EGL100" / "index.html").read_text(encoding="utf-8")
    assert 'href="https://github.com/eagle3-lint/eagle3-lint/tree/main/sample_trees/workflow/inline_suppression"' \
        in egl100
    # The support matrix page links the generated HTML matrices, which the site carries as they are.
    matrix = (site / "support-matrix" / "index.html").read_text(encoding="utf-8")
    assert 'href="../matrix/vllm.html"' in matrix and 'href="../matrix/sglang.html"' in matrix
    for engine in ("vllm", "sglang"):
        page = (site / "matrix" / f"{engine}.html").read_text(encoding="utf-8")
        assert "Content-Security-Policy" in page and 'id="filter"' in page and 'id="matrix"' in page


def test_strict_build_fails_on_a_broken_link_an_anchor_and_a_page_outside_the_nav(tmp_path: Path) -> None:
    """The copy of the sources with one broken link, one missing anchor and one page nobody lists does not build."""
    copy = tmp_path / "repo"
    (copy / "scripts").mkdir(parents=True)
    for name in ("mkdocs.yml", "README.md"):
        shutil.copy(REPO / name, copy / name)
    shutil.copy(REPO / "scripts" / "mkdocs_hooks.py", copy / "scripts")
    shutil.copytree(REPO / "docs", copy / "docs")
    shutil.copytree(REPO / "rules", copy / "rules")
    for name in ("sample_trees", "bench"):  # what the pages link to on GitHub must exist
        (copy / name).symlink_to(REPO / name)
    with (copy / "docs" / "testing.md").open("a", encoding="utf-8") as f:
        f.write("\n[gone](no-such-page.md), [no anchor](usage.md#no-such-section), [no tree](../sample_trees/nope/)\n")
    (copy / "docs" / "orphan.md").write_text("# Not in the nav\n", encoding="utf-8")
    p = mkdocs_build(copy / "mkdocs.yml", tmp_path / "site")
    assert p.returncode != 0
    for said in ("'no-such-page.md', but the target is not found", "does not contain an anchor '#no-such-section'",
                 "'../sample_trees/nope/'", "orphan.md", "Aborted with 4 warnings in strict mode"):
        assert said in p.stdout + p.stderr, (said, p.stdout, p.stderr)
