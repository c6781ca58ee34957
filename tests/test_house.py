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
