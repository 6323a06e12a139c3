"""The CLI's own error: bad input that the user fixes by changing the command line."""

from __future__ import annotations

__all__ = ["CliError", "cannot_listen"]


class CliError(Exception):
    """A problem with the command's input; ``main`` prints ``ferry: error: <message>``
    and exits 1. Backend failures stay ``BackendError`` and are reported the same way."""


def cannot_listen(what: str, where: str, error: OSError) -> CliError:
    """The error for a server that cannot bind ``where`` (a port in use, a bad address),
    e.g. ``cannot serve the Schema Registry on 127.0.0.1:8081: Address already in use``."""
    import os

    reason = os.strerror(error.errno) if error.errno else str(error)
    return CliError(f"cannot serve {what} on {where}: {reason}")
