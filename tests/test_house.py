"""House-keeping of the suite itself (issue 15): a test that reads a real release must say so with the
``real`` marker, or the fast set (``-m 'not real and not oracle'``) would download releases."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def test_real_trees_without_the_marker_stops_collection(pytester: pytest.Pytester) -> None:
    """The suite's conftest, loaded as a plugin into a pytest run in this process (pytester), over a file with
    an unmarked, a marked and a plain test."""
    test_file = pytester.makepyfile(test_x=(
        "import pytest\n\n\ndef test_unmarked(real_trees):\n    pass\n\n\n"
        "@pytest.mark.real\ndef test_marked(real_trees):\n    pass\n\n\ndef test_plain():\n    pass\n"))
    # Without hypothesis' plugin, whose end-of-session summary would import hypothesis into the inner run.
    args = ("--collect-only", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
            "-W", "ignore::pytest.PytestUnknownMarkWarning", str(test_file))
    r = pytester.runpytest_inprocess(*args)
    out, err = r.stdout.str(), r.stderr.str()
    assert r.ret == pytest.ExitCode.USAGE_ERROR, out + err
    assert "real_trees without @pytest.mark.real: test_x.py::test_unmarked" in err
    assert "test_marked" not in err and "test_plain" not in err
    # With the marker added, the same file collects.
    test_file.write_text(test_file.read_text().replace("def test_unmarked", "@pytest.mark.real\ndef test_unmarked"))
    r = pytester.runpytest_inprocess(*args)
    assert r.ret == pytest.ExitCode.OK and "3 tests collected" in r.stdout.str(), r.stdout.str() + r.stderr.str()


def test_every_type_ignore_in_the_package_has_a_code_and_a_reason() -> None:
    """``# type: ignore[code]`` in eagle3_lint/ says why: a comment after it on its line, or the comment line
    right above it (``# ignore below: ...``) where the line would not fit."""
    import io
    import re
    import tokenize

    from tests.conftest import REPO

    bare = []
    for path in sorted((REPO / "eagle3_lint").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type != tokenize.COMMENT or "type: ignore" not in tok.string:
                continue
            row = tok.start[0]
            coded = re.search(r"# type: ignore\[[\w\-]+(,\s*[\w\-]+)*\]", tok.string)
            inline = re.search(r"# type: ignore\[[^\]]*\]\s+#\s*\S", tok.string)
            above = row > 1 and lines[row - 2].lstrip().startswith("#")
            if not coded or not (inline or above):
                bare.append(f"{path.relative_to(REPO)}:{row}: {lines[row - 1].strip()}")
    assert not bare, "\n".join(bare)
