"""Log context and redaction shared by every Ferry service (a leaf: imports nothing of
Ferry). ``log_context`` binds fields such as the connector, task or request id to the
current thread or task; ``ContextFilter`` copies them onto each record; ``RedactionFilter``
hides secrets. ``core.cli.logging_setup`` installs both filters on the one log handler."""

from core.telemetry.context import (
    CONTEXT_FIELDS,
    ContextFilter,
    bind_context,
    current_context,
    log_context,
    unbind_context,
)
from core.telemetry.redaction import RedactionFilter, redact

__all__ = ["CONTEXT_FIELDS", "ContextFilter", "RedactionFilter", "bind_context",
           "current_context", "log_context", "redact", "unbind_context"]
