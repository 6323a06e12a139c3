"""The storage engine: partition logs, topic metadata, retention and compaction on disk.

The classes are loaded on first use, so importing a leaf module such as
``core.log.records`` or ``core.log.errors`` does not pull in the whole engine.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from core.log.config import TopicConfig
from core.log.errors import (
    CorruptRecordError,
    InvalidConfigError,
    InvalidRecordError,
    InvalidTopicError,
    LogClosedError,
    LogDirLockedError,
    LogDirOfflineError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    StorageError,
    TopicExistsError,
    UnknownTopicError,
)

if TYPE_CHECKING:
    from core.log.log import AppendInfo, PartitionLog, ReadResult
    from core.log.manager import LogManager
    from core.log.topic_metadata import TopicMetadata

__all__ = [
    "AppendInfo",
    "CorruptRecordError",
    "InvalidConfigError",
    "InvalidRecordError",
    "InvalidTopicError",
    "LogClosedError",
    "LogDirLockedError",
    "LogDirOfflineError",
    "LogManager",
    "OffsetOutOfRangeError",
    "PartitionLog",
    "ReadResult",
    "RecordTooLargeError",
    "StorageError",
    "TopicConfig",
    "TopicExistsError",
    "TopicMetadata",
    "UnknownTopicError",
]

_LAZY = {
    "AppendInfo": "core.log.log",
    "PartitionLog": "core.log.log",
    "ReadResult": "core.log.log",
    "LogManager": "core.log.manager",
    "TopicMetadata": "core.log.topic_metadata",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
