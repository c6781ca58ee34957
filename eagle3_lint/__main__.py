"""``python -m eagle3_lint`` entry point."""

from eagle3_lint.cli import main

if __name__ == "__main__":
    main()
