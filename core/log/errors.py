"""Errors raised by the storage engine.

::

    StorageError
    ├── InvalidRecordError        a batch is malformed (bad magic, truncated, bad count)
    │   └── CorruptRecordError    a stored or received batch fails its CRC-32C check
    ├── RecordTooLargeError       a batch exceeds max.message.bytes
    ├── OffsetOutOfRangeError     a read below the log start offset or past the log end
    ├── InvalidConfigError        a topic config key is unknown or its value invalid
    ├── TopicExistsError          create of a topic that exists
    ├── UnknownTopicError         a topic or partition that does not exist
    ├── InvalidTopicError         an illegal topic name or partition count
    ├── LogDirLockedError         the data directory is open in another process
    ├── LogDirOfflineError        a write failed (disk full, I/O error): no writes until the
    │                             directory is writable again (or, for a damaged partition,
    │                             until the broker restarts and recovers it)
    └── LogClosedError            the log or manager was closed
"""

from __future__ import annotations

__all__ = [
    "CorruptRecordError",
    "InvalidConfigError",
    "InvalidRecordError",
    "InvalidTopicError",
    "LogClosedError",
    "LogDirLockedError",
    "LogDirOfflineError",
    "OffsetOutOfRangeError",
    "RecordTooLargeError",
    "StorageError",
    "TopicExistsError",
    "UnexpectedAppendOffsetError",
    "UnknownTopicError",
]


class StorageError(Exception):
    """Base of every error the storage engine raises."""


class InvalidRecordError(StorageError):
    """A record batch is malformed, or some of its records are not acceptable.

    ``record_errors`` names those records as Kafka's produce response does (KIP-467):
    ``(index of the record within its batch, why it was refused)``; empty when the batch
    as a whole is at fault.
    """

    def __init__(self, message: str, *, record_errors: tuple[tuple[int, str], ...] = ()):
        super().__init__(message)
        self.record_errors = record_errors


class CorruptRecordError(InvalidRecordError):
    """A record batch fails its CRC-32C check or cannot be decoded."""


class RecordTooLargeError(StorageError):
    """A batch is larger than the topic's ``max.message.bytes``."""


class UnexpectedAppendOffsetError(StorageError):
    """A follower was given batches that start below its log end: its log ends inside a
    batch of the leader's, a boundary the leader does not have. Nothing was appended; the
    fetcher cuts its log to the leader's batch and fetches again (Kafka's
    ``UnexpectedAppendOffsetException``)."""

    def __init__(self, message: str, *, first_offset: int, log_end_offset: int):
        super().__init__(message)
        self.first_offset = first_offset
        self.log_end_offset = log_end_offset


class OffsetOutOfRangeError(StorageError):
    """A read asked for an offset outside [log start offset, log end offset]."""

    def __init__(self, message: str, *, log_start_offset: int = -1, log_end_offset: int = -1):
        super().__init__(message)
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class InvalidConfigError(StorageError):
    """A config key is unknown or its value invalid; ``key`` names it."""

    def __init__(self, message: str, *, key: str | None = None):
        super().__init__(message)
        self.key = key


class TopicExistsError(StorageError):
    """The topic already exists."""


class UnknownTopicError(StorageError):
    """The topic or partition does not exist."""


class InvalidTopicError(StorageError):
    """The topic name is illegal or the partition count is out of range."""


class LogDirLockedError(StorageError):
    """The data directory is locked by another process.

    ``holder`` is what the holder recorded about itself (pid, command, listener), if readable.
    """

    def __init__(self, message: str, *, holder: dict | None = None):
        super().__init__(message)
        self.holder = holder or {}


class LogDirOfflineError(StorageError):
    """The data directory (or one partition of it) takes no writes after a failed write.

    The Kafka protocol answer is KAFKA_STORAGE_ERROR, which clients retry.
    """


class LogClosedError(StorageError):
    """The log, partition or manager has been closed."""
