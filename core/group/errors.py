"""Errors raised by the group coordinator and its offset store.

::

    GroupError
    ├── CoordinatorError             a request cannot be served now; ``error_code`` is Kafka's
    │                                (COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS)
    ├── OffsetStoreError             the offset store could not append; ``error_code`` is what
    │                                the affected offset commits answer
    ├── OffsetsFormatError           a __consumer_offsets key or value cannot be decoded
    ├── InvalidCoordinatorConfigError  a coordinator setting is out of range
    └── IllegalGroupStateError       a state transition the protocol forbids (a bug in Ferry)

Membership and commit outcomes are not exceptions: they are Kafka error codes in the
results, because both drivers (the embedded backend and the broker) need the code itself.
"""

from __future__ import annotations

from core.group.codes import ErrorCode

__all__ = [
    "CoordinatorError",
    "GroupError",
    "IllegalGroupStateError",
    "InvalidCoordinatorConfigError",
    "OffsetStoreError",
    "OffsetsFormatError",
]


class GroupError(Exception):
    """Base of every error the group coordinator raises."""


class CoordinatorError(GroupError):
    """The coordinator cannot serve the request now; retry after ``error_code`` clears."""

    def __init__(self, message: str, *, error_code: int):
        super().__init__(message)
        self.error_code = error_code


class OffsetStoreError(GroupError):
    """An append to the offset store failed; the commit was not made durable.

    ``error_code`` is the code the commit answers: COORDINATOR_NOT_AVAILABLE (retriable) by
    default, INVALID_COMMIT_OFFSET_SIZE when the records were too large for the topic.
    """

    def __init__(self, message: str, *, error_code: int = ErrorCode.COORDINATOR_NOT_AVAILABLE):
        super().__init__(message)
        self.error_code = error_code


class OffsetsFormatError(GroupError, ValueError):
    """A ``__consumer_offsets`` record key or value is truncated or of an unknown version."""


class InvalidCoordinatorConfigError(GroupError, ValueError):
    """A coordinator setting is out of range; the message names it."""


class IllegalGroupStateError(GroupError):
    """A group state transition the classic protocol does not allow (a bug in Ferry)."""
