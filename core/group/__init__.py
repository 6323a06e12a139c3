"""The classic group coordinator: Kafka's join/sync/heartbeat/leave protocol and offsets.

``GroupCoordinator`` is a thread-safe state machine driven by requests and ``tick()``;
committed offsets go through an ``OffsetStore``, normally ``LogOffsetStore`` on the
``__consumer_offsets`` topic in Kafka's binary formats (``offsets_format``).
"""

from core.group.api import (
    CommittedOffset,
    GroupMemberSummary,
    GroupSummary,
    JoinGroupMember,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommit,
    SyncGroupRequest,
    SyncGroupResponse,
    TopicPartitionKey,
)
from core.group.codes import ErrorCode
from core.group.config import CoordinatorConfig
from core.group.coordinator import GroupCoordinator, now_ms
from core.group.errors import (
    CoordinatorError,
    GroupError,
    IllegalGroupStateError,
    InvalidCoordinatorConfigError,
    OffsetsFormatError,
    OffsetStoreError,
)
from core.group.group import GroupState
from core.group.log_store import (
    OFFSETS_TOPIC,
    OFFSETS_TOPIC_CONFIGS,
    OFFSETS_TOPIC_PARTITIONS,
    LogOffsetStore,
    java_string_hash,
    partition_for,
)
from core.group.store import InMemoryOffsetStore, OffsetStore

__all__ = [
    "OFFSETS_TOPIC",
    "OFFSETS_TOPIC_CONFIGS",
    "OFFSETS_TOPIC_PARTITIONS",
    "CommittedOffset",
    "CoordinatorConfig",
    "CoordinatorError",
    "ErrorCode",
    "GroupCoordinator",
    "GroupError",
    "GroupMemberSummary",
    "GroupState",
    "GroupSummary",
    "IllegalGroupStateError",
    "InMemoryOffsetStore",
    "InvalidCoordinatorConfigError",
    "JoinGroupMember",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "LogOffsetStore",
    "OffsetCommit",
    "OffsetStore",
    "OffsetStoreError",
    "OffsetsFormatError",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "TopicPartitionKey",
    "java_string_hash",
    "now_ms",
    "partition_for",
]
