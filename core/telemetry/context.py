"""Context fields for log records, bound with ``contextvars`` (Kafka Connect's MDC).

``with log_context(connector="c", task=0): ...`` adds those fields to every record logged
inside, on this thread or asyncio task only (a new thread starts with none). Nested
blocks add to the outer fields. ``ContextFilter`` puts the fields on each record as
``record.ferry_context`` (a dict), which the formatters show.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["CONTEXT_FIELDS", "ContextFilter", "bind_context", "current_context", "log_context",
           "unbind_context"]

#: The fields services bind (OpenTelemetry attributes of the record), in display order.
CONTEXT_FIELDS = ("connector", "task", "topic", "partition", "group", "request_id",
                  "method", "path", "api_key", "api_version", "correlation_id", "client_id",
                  "peer")

# The default is an empty mapping never mutated: every binding sets a new dict.
_EMPTY: dict[str, object] = {}
_context: contextvars.ContextVar[dict[str, object] | None] = contextvars.ContextVar(
    "ferry_log_context", default=None)


@contextmanager
def log_context(**fields: object) -> Iterator[None]:
    """Bind ``fields`` (None values are left out) for the records logged inside."""
    added = {k: v for k, v in fields.items() if v is not None}
    token = _context.set({**(_context.get() or _EMPTY), **added})
    try:
        yield
    finally:
        _context.reset(token)


def bind_context(fields: dict[str, object]) -> contextvars.Token[dict[str, object] | None]:
    """Replace the bound fields with ``fields`` (not copied: the caller gives a new dict)
    until ``unbind_context``: ``log_context`` without the merge, for a per-request hot
    path (the broker binds each request's API, correlation id, client id and peer)."""
    return _context.set(fields)


def unbind_context(token: contextvars.Token[dict[str, object] | None]) -> None:
    _context.reset(token)


def current_context() -> dict[str, object]:
    """The fields bound here now (a copy)."""
    return dict(_context.get() or _EMPTY)


class ContextFilter(logging.Filter):
    """Puts the bound fields on every record as ``record.ferry_context``; keeps a record's
    own ``ferry_context`` (given with ``extra=``) on top."""

    def filter(self, record: logging.LogRecord) -> bool:
        bound = _context.get() or _EMPTY
        own = getattr(record, "ferry_context", None)
        if own:
            record.ferry_context = {**bound, **own}
        else:
            record.ferry_context = bound
        return True
