"""The LogBackend interface and backend selection: the only door to topics outside ``core``."""

from core.backends.base import DEFAULT_FETCH_MAX_BYTES, DEFAULT_PARTITION_MAX_BYTES, LogBackend
from core.backends.errors import BackendError
from core.backends.partitioner import murmur2, partition_for_key
from core.backends.registry import available_backends, open_backend
from core.backends.types import (
    ConsumerRecord,
    FetchResult,
    GroupDescription,
    GroupMember,
    GroupMemberDescription,
    JoinResult,
    OffsetAndMetadata,
    OffsetSpec,
    PartitionInfo,
    ProducerRecord,
    RecordMetadata,
    TimestampType,
    TopicDescription,
    TopicPartition,
)

__all__ = [
    "DEFAULT_FETCH_MAX_BYTES",
    "DEFAULT_PARTITION_MAX_BYTES",
    "BackendError",
    "ConsumerRecord",
    "FetchResult",
    "GroupDescription",
    "GroupMember",
    "GroupMemberDescription",
    "JoinResult",
    "LogBackend",
    "OffsetAndMetadata",
    "OffsetSpec",
    "PartitionInfo",
    "ProducerRecord",
    "RecordMetadata",
    "TimestampType",
    "TopicDescription",
    "TopicPartition",
    "available_backends",
    "murmur2",
    "open_backend",
    "partition_for_key",
]
