"""The CLI's own error: bad input that the user fixes by changing the command line."""

from __future__ import annotations

__all__ = ["CliError"]


class CliError(Exception):
    """A problem with the command's input; ``main`` prints ``ferry: error: <message>``
    and exits 1. Backend failures stay ``BackendError`` and are reported the same way."""
