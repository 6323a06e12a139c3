"""Plain data exchanged through the LogBackend interface.

Hot-path types (``TopicPartition``, ``ProducerRecord``, ``ConsumerRecord``,
``RecordMetadata``) are NamedTuples: a consumer builds a million of them a second and tuple
construction is several times cheaper than a dataclass ``__init__``. The rest are frozen
dataclasses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import NamedTuple

__all__ = [
    "ConsumerRecord",
    "FetchResult",
    "GroupDescription",
    "GroupMember",
    "GroupMemberDescription",
    "Header",
    "JoinResult",
    "OffsetAndMetadata",
    "OffsetSpec",
    "PartitionInfo",
    "ProducerRecord",
    "RecordMetadata",
    "TimestampType",
    "TopicDescription",
    "TopicPartition",
]

Header = tuple[str, bytes | None]


class TimestampType(IntEnum):
    """Kafka's record timestamp types."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class ProducerRecord(NamedTuple):
    """A record to produce. ``partition=None`` lets the partitioner choose; ``timestamp=None``
    means the time of the produce call. Headers are ``(str, bytes | None)`` pairs."""

    key: bytes | None = None
    value: bytes | None = None
    headers: Sequence[Header] = ()
    timestamp: int | None = None
    partition: int | None = None


class RecordMetadata(NamedTuple):
    """Where a produced record landed. ``timestamp`` is LogAppendTime when the topic uses it."""

    topic: str
    partition: int
    offset: int
    timestamp: int


class ConsumerRecord(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: Sequence[Header]


@dataclass(frozen=True, slots=True)
class FetchResult:
    """The outcome of fetching one partition.

    ``records`` start at the requested offset (earlier records of the first batch are
    dropped) and never pass ``high_watermark``. ``next_offset`` is where the next fetch of
    this partition should start: one past the last record returned, or past records that
    compaction removed, or the fetch offset itself when nothing was returned.
    """

    topic_partition: TopicPartition
    records: list[ConsumerRecord]
    high_watermark: int
    log_start_offset: int
    next_offset: int


class OffsetSpec(IntEnum):
    """Special timestamps for ``LogBackend.list_offsets``, as in Kafka's ListOffsets."""

    LATEST = -1
    EARLIEST = -2
    MAX_TIMESTAMP = -3


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A committed offset: the next offset the group should consume, with client metadata."""

    offset: int
    metadata: str = ""
    leader_epoch: int = -1
    commit_timestamp: int = -1


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    log_start_offset: int
    high_watermark: int
    #: Bytes of the leader's log on disk (every segment), None where the cluster does not
    #: say (DescribeLogDirs unsupported or not authorized).
    size_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class TopicDescription:
    """A topic as ``describe_topic`` shows it: partitions with offsets, and its configs.

    ``configs`` holds every topic config by its Kafka name with its effective value;
    ``overrides`` only those set on this topic.
    """

    name: str
    partitions: tuple[PartitionInfo, ...]
    configs: dict[str, str]
    overrides: dict[str, str] = field(default_factory=dict)
    internal: bool = False
    topic_id: str = ""


@dataclass(frozen=True, slots=True)
class GroupMember:
    """A member as the leader sees it in a join response: id and protocol metadata."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinResult:
    """The outcome of ``join_group``.

    ``members`` is filled only for the leader (``leader_id == member_id``), which must
    compute an assignment for all of them and pass it to ``sync_group``.
    """

    generation_id: int
    protocol_type: str
    protocol_name: str
    leader_id: str
    member_id: str
    members: tuple[GroupMember, ...]

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.member_id


@dataclass(frozen=True, slots=True)
class GroupMemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """A group as DescribeGroups shows it; ``state`` is Kafka's (Empty, Stable, ...)."""

    group_id: str
    state: str
    protocol_type: str
    protocol_name: str
    generation_id: int
    members: tuple[GroupMemberDescription, ...]
