"""Which Kafka error codes a call retries, and BackendErrors that carry the broker's message."""

from __future__ import annotations

import re
from collections.abc import Iterable

from core.backends import errors as be
from core.backends.translate import error_for_code
from core.protocol.errors import ErrorCode as E

__all__ = ["COORDINATOR_MOVED", "LEADER_MOVED", "config_key_from_message", "kafka_error"]

#: Partition-level codes after which a fresh Metadata request may name a working leader.
LEADER_MOVED = frozenset({
    E.LEADER_NOT_AVAILABLE, E.NOT_LEADER_OR_FOLLOWER, E.REQUEST_TIMED_OUT,
    E.BROKER_NOT_AVAILABLE, E.REPLICA_NOT_AVAILABLE, E.NETWORK_EXCEPTION,
    E.NOT_ENOUGH_REPLICAS, E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.KAFKA_STORAGE_ERROR,
    E.FENCED_LEADER_EPOCH, E.UNKNOWN_LEADER_EPOCH, E.OFFSET_NOT_AVAILABLE,
    E.THROTTLING_QUOTA_EXCEEDED,
})

#: Group-level codes after which FindCoordinator may name a working coordinator.
COORDINATOR_MOVED = frozenset({
    E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR,
})

_CONFIG_KEY_PATTERNS = (
    re.compile(r"for configuration ([A-Za-z0-9._-]+)"),
    re.compile(r"[Uu]nknown (?:topic )?config(?:uration)?(?: name)?:? '?([A-Za-z0-9._-]+)"),
    re.compile(r"[Cc]onfig(?:uration)? '?([A-Za-z0-9._-]+)'? (?:is|must|cannot)"),
)


def config_key_from_message(message: str | None, candidates: Iterable[str] = ()) -> str | None:
    """The config key an INVALID_CONFIG error message is about.

    Kafka's messages name it ("Invalid value x for configuration retention.ms: ...",
    "Unknown topic config name: foo"); failing a pattern, the longest of ``candidates`` (the
    keys the request sent) that the message mentions.
    """
    if not message:
        return None
    for pattern in _CONFIG_KEY_PATTERNS:
        match = pattern.search(message)
        if match:
            return match.group(1).rstrip(".:")
    mentioned = [key for key in candidates if key and key in message]
    return max(mentioned, key=len) if mentioned else None


def kafka_error(code: int, context: str, message: str | None = None, *,
                config_keys: Iterable[str] = ()) -> be.BackendError:
    """The BackendError for ``code``, its text extended with the broker's ``message``."""
    if code == E.INVALID_CONFIG or code == E.POLICY_VIOLATION:
        text = f"{context}: {message}" if message else str(error_for_code(code, context))
        return be.InvalidConfigError(text, key=config_key_from_message(message, config_keys))
    error = error_for_code(code, context)
    if message and message not in str(error):
        generic = str(error_for_code(code))
        # The broker's message usually says the same more precisely ("Topic 't' already
        # exists." for "topic already exists"): then it replaces the generic text.
        text = f"{context}: {message}" if _says(message, generic) and context else (
            message if _says(message, generic) else f"{error}: {message}")
        error.args = (text,)
    return error


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def _says(message: str, generic: str) -> bool:
    """Whether ``message`` contains every word of ``generic``."""
    return _words(generic) <= _words(message)
