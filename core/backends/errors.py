"""Errors raised through the LogBackend interface, whatever the backend.

Backends translate their own failures (storage errors, Kafka error codes) into these, so a
caller handles one tree::

    BackendError
    ├── BackendUnavailableError       the log cannot be reached (RetriableError)
    ├── RetriableError                try the same call again later
    │   ├── BackendUnavailableError
    │   ├── NotCoordinatorError       the group moved; retry finds the new coordinator
    │   └── RebalanceInProgressError  rejoin the group (heartbeat, sync, commit)
    ├── InvalidBackendUrlError        the --log URL cannot be parsed or names no backend
    ├── LogDirInUseError              embedded: the data directory is open in another process
    ├── TopicExistsError
    ├── UnknownTopicError             topic or partition does not exist
    ├── InvalidTopicError             illegal name or partition count
    ├── InvalidConfigError            bad config key or value; ``key`` names it
    ├── AuthenticationError           the broker refused the client's SASL credentials
    ├── RecordTooLargeError
    ├── InvalidRecordError            e.g. a keyless record for a compacted topic
    ├── CorruptRecordError            a stored batch failed its CRC check
    ├── OffsetOutOfRangeError         fetch below the log start or past the log end
    └── GroupError                    group membership / offset errors
        ├── UnknownMemberIdError      rejoin with an empty member id
        ├── MemberIdRequiredError     rejoin with ``member_id`` (KIP-394)
        ├── IllegalGenerationError    rejoin the group
        ├── InconsistentGroupProtocolError
        ├── FencedInstanceIdError     another member uses the same group.instance.id
        ├── GroupMaxSizeReachedError
        └── CoordinatorLoadInProgressError  (RetriableError too)
"""

from __future__ import annotations

__all__ = [
    "AuthenticationError",
    "BackendError",
    "BackendUnavailableError",
    "CoordinatorLoadInProgressError",
    "CorruptRecordError",
    "FencedInstanceIdError",
    "GroupError",
    "GroupMaxSizeReachedError",
    "IllegalGenerationError",
    "InconsistentGroupProtocolError",
    "InvalidBackendUrlError",
    "InvalidConfigError",
    "InvalidRecordError",
    "InvalidTopicError",
    "LogDirInUseError",
    "MemberIdRequiredError",
    "NotCoordinatorError",
    "OffsetOutOfRangeError",
    "RebalanceInProgressError",
    "RecordTooLargeError",
    "RetriableError",
    "TopicExistsError",
    "UnknownMemberIdError",
    "UnknownTopicError",
]


class BackendError(Exception):
    """Base of every error raised through the LogBackend interface."""


class RetriableError(BackendError):
    """A transient condition: the same call may succeed later."""


class BackendUnavailableError(RetriableError):
    """The log cannot be reached (broker down, network, timeout)."""


class InvalidBackendUrlError(BackendError):
    """The log URL is malformed or names no installed backend."""


class LogDirInUseError(BackendError):
    """The embedded data directory is locked by another process; the message says which."""


class TopicExistsError(BackendError):
    pass


class UnknownTopicError(BackendError):
    pass


class InvalidTopicError(BackendError):
    pass


class InvalidConfigError(BackendError):
    """A config key is unknown or its value invalid; ``key`` names it."""

    def __init__(self, message: str, *, key: str | None = None):
        super().__init__(message)
        self.key = key


class AuthenticationError(BackendError):
    """The broker refused to authenticate the client (wrong password, unknown user or
    mechanism); retrying with the same settings cannot help."""


class RecordTooLargeError(BackendError):
    pass


class InvalidRecordError(BackendError):
    """The log refused a record, e.g. a record without a key for a compacted topic."""


class CorruptRecordError(BackendError):
    pass


class OffsetOutOfRangeError(BackendError):
    def __init__(self, message: str, *, log_start_offset: int = -1, log_end_offset: int = -1):
        super().__init__(message)
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class GroupError(BackendError):
    """A group membership or group offset error (Kafka's group error codes)."""


class NotCoordinatorError(GroupError, RetriableError):
    pass


class CoordinatorLoadInProgressError(GroupError, RetriableError):
    pass


class RebalanceInProgressError(GroupError, RetriableError):
    """The group is rebalancing: the member must rejoin (``join_group``)."""


class UnknownMemberIdError(GroupError):
    pass


class MemberIdRequiredError(GroupError):
    """First join of a dynamic member: rejoin with ``member_id`` (KIP-394)."""

    def __init__(self, message: str, *, member_id: str):
        super().__init__(message)
        self.member_id = member_id


class IllegalGenerationError(GroupError):
    pass


class InconsistentGroupProtocolError(GroupError):
    pass


class FencedInstanceIdError(GroupError):
    pass


class GroupMaxSizeReachedError(GroupError):
    pass
