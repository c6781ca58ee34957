"""mkdocs hook (``hooks:`` in mkdocs.yml): the documentation site is built from the Markdown where it lives.

Two pages live outside ``docs/`` and keep one source each: ``README.md`` is the site's home page, and the rule
pages stay in ``rules/`` because ``eagle3-lint rules --write-docs rules/`` generates them and ``explain`` and
SARIF's ``helpUri`` point there. They are added to the site as they are, never copied (``on_files``).

Links are written for the repository (GitHub renders them), so a relative link is resolved against the file's
real place (``on_page_markdown``): one that reaches a page of the site is rewritten to that page, one that
reaches another file of the repository (``sample_trees/``, ``bench/README.md``) becomes a link to it on GitHub,
and one that reaches nothing is left alone, so ``mkdocs build --strict`` fails on it.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parent.parent
RULES = REPO / "rules"
# A Markdown link or image target, `](target)` or `](target "title")`; <...> targets are not used in this repo.
LINK = re.compile(r"\]\(([^()\s]+)((?:\s+\"[^\"]*\")?)\)")
FENCE = re.compile(r"^\s*(```|~~~)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def _outside_pages() -> dict[Path, str]:
    """Real file -> its place in the site, for the pages that live outside docs/."""
    pages = {REPO / "README.md": "index.md"}
    pages.update({p: f"rules/{p.name}" for p in sorted(RULES.glob("*.md"))})
    return pages


def on_files(files: Files, config: Any) -> Files:
    for real, uri in _outside_pages().items():
        if files.get_file_from_path(uri) is not None:
            raise SystemExit(f"mkdocs_hooks: docs/{uri} would hide {real.relative_to(REPO)}; remove one of them")
        files.append(File.generated(config, uri, abs_src_path=str(real)))
    return files


def _site_uri(real: Path, docs_dir: Path) -> str | None:
    """The page of the site a real file is, if it is one."""
    if real.suffix == ".md" and real.is_relative_to(docs_dir):
        return real.relative_to(docs_dir).as_posix()
    return _outside_pages().get(real)


def _rewrite(target: str, page_real: Path, page_uri: str, docs_dir: Path, repo_url: str) -> str:
    if not target or target.startswith(("#", "/")) or SCHEME.match(target):
        return target
    path, hash_, fragment = target.partition("#")
    real = Path(posixpath.normpath((page_real.parent / path).as_posix()))
    uri = _site_uri(real, docs_dir)
    if uri is not None:
        return posixpath.relpath(uri, posixpath.dirname(page_uri) or ".") + hash_ + fragment
    if real.is_file() and real.is_relative_to(docs_dir):
        return target  # a file the site carries as it is (docs/matrix/*.html): mkdocs resolves the link
    if real.exists() and real.is_relative_to(REPO):
        kind = "tree" if real.is_dir() else "blob"
        return f"{repo_url.rstrip('/')}/{kind}/main/{real.relative_to(REPO).as_posix()}" + hash_ + fragment
    return target  # reaches nothing: mkdocs reports it, and --strict fails


def _outside_code(line: str, change: Any) -> str:
    """Apply `change` to the parts of a line that are not inline code (`...`)."""
    parts = re.split(r"(`+[^`]*`+)", line)
    return "".join(p if p.startswith("`") else change(p) for p in parts)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    docs_dir = Path(config["docs_dir"]).resolve()
    page_real = Path(page.file.abs_src_path).resolve()
    repo_url = config["repo_url"]

    def links(text: str) -> str:
        return LINK.sub(lambda m: "](" + _rewrite(m.group(1), page_real, page.file.src_uri, docs_dir, repo_url)
                        + m.group(2) + ")", text)

    out, fenced = [], False
    for line in markdown.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
        out.append(line if fenced or FENCE.match(line) else _outside_code(line, links))
    return "\n".join(out)
