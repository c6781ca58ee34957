"""``python -m eagle3_lint`` entry point."""

import os
import sys

# ``python -m`` puts the working directory first on sys.path. Run inside an analyzed checkout, that
# would let the tree's top-level files shadow our dependencies (a ``click.py`` there would run on
# ``import click``). Keep it only when it is where this package itself lives (a dev checkout).
_cwd = os.getcwd()
_home = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _cwd or _cwd == _home]

from eagle3_lint.cli import entry  # noqa: E402 - must follow the sys.path clean-up

if __name__ == "__main__":
    entry()
