#!/usr/bin/env python3
"""Print, rewrite or check the report's JSON Schema file from the typed model (eagle3_lint/report/schema.py).

    python scripts/report_schema.py            # print the generated schema
    python scripts/report_schema.py --write    # rewrite eagle3_lint/data/report.schema.json
    python scripts/report_schema.py --check    # exit 1 if the file is not what the model generates

The file is what ``eagle3-lint schema json`` prints; the tests check it against the model and the
snapshot of its schema_version (tests/test_ci_schema.py).
"""

from __future__ import annotations

import sys

from eagle3_lint.report.schema import DATA_FILE, schema_text


def main(argv: list[str]) -> int:
    text = schema_text()
    if argv == ["--write"]:
        DATA_FILE.write_text(text, encoding="utf-8")
        return 0
    if argv == ["--check"]:
        if DATA_FILE.read_text(encoding="utf-8") != text:
            print(f"{DATA_FILE} is not what the model generates: run python scripts/report_schema.py --write",
                  file=sys.stderr)
            return 1
        return 0
    if argv:
        print("usage: python scripts/report_schema.py [--write | --check]", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
