"""Small shims for Python 3.10 (tomllib and ``ast.TryStar`` arrived in 3.11)."""

import ast
import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

# ``try`` statements (``try/except*`` arrived in 3.11).
if sys.version_info >= (3, 11):
    TRY_NODES = (ast.Try, ast.TryStar)
else:  # pragma: no cover - exercised on 3.10 only
    TRY_NODES = (ast.Try,)

__all__ = ["TRY_NODES", "tomllib"]
