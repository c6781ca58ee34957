"""Errors that end a run with a one-line message and exit code 2."""


class UsageError(Exception):
    """Bad input from the user: a missing path, a tree that is not vLLM, an unknown option value."""


class TargetError(UsageError):
    """The target cannot be read (missing, unreadable, corrupt wheel, failed download)."""
