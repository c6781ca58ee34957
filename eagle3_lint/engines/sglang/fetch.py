"""``sglang==X`` as a read-only tree, fetched and cached like ``vllm==X``.

The download, the ``.py``-only extraction and the ``.complete`` marker are ``releases.fetch_release``'s;
this module only says which package and which wheel tags. Up to about 0.5.14 SGLang ships pure
Python wheels; from 0.5.11 on (seen on PyPI) only CPython manylinux builds, tagged
``cp3XX-cp3XX-manylinux_2_34_x86_64`` (cp311 and newer from 0.5.22), which pip picks for another
interpreter or an older glibc only when told the tags. ``manylinux2014`` is not enough: pip expands a
``--platform`` to the older manylinux tags, never to newer ones, so the newest needed one is given.
The tags are passed for every release: a pure wheel matches them as well, so no version threshold
has to be guessed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from eagle3_lint import releases

PACKAGE = "sglang"
SPEC_RE = re.compile(r"^sglang==(?P<ver>[0-9][0-9A-Za-z.+\-]*)$")
# The interpreter and platform the compiled SGLang wheels are built for; ``--only-binary=:all:``
# (which releases.fetch_release always passes) is what pip requires alongside these.
WHEEL_TAGS = ("--python-version", "3.11", "--platform", "manylinux_2_34_x86_64",
              "--implementation", "cp", "--abi", "cp311")


def release_dir(version: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/eagle3-lint/sglang-<version>/`` (or under ``cache_dir``)."""
    return releases.release_dir(version, cache_dir, PACKAGE)


def fetch_release(
    version: str,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """The cached source tree (``.py`` files and dist-info) of ``sglang==version``; downloads it once."""
    return releases.fetch_release(version, cache_dir, progress, package=PACKAGE, pip_args=WHEEL_TAGS)


def parse_spec(text: str) -> str | None:
    """The version of an ``sglang==X`` target argument, or None when the argument is not one."""
    m = SPEC_RE.match(text.strip())
    return m.group("ver") if m else None
