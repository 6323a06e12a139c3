"""Where records live in Kafka: topic partitions, offsets, timestamps, produce results.

These are the Kafka client types that Kafka Connect's API borrows from ``kafka-clients``.
``TopicPartition`` and ``RecordMetadata`` are NamedTuples with the same fields, in the same
order, as the log backend's, so the runtime passes those through without copying and
they compare equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

__all__ = ["OffsetAndMetadata", "RecordMetadata", "TimestampType", "TopicPartition"]


class TopicPartition(NamedTuple):
    """One partition of a topic."""

    topic: str
    partition: int


class TimestampType(IntEnum):
    """What a record's timestamp means; the values are Kafka's."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class RecordMetadata(NamedTuple):
    """Where a source record landed once the log acknowledged it; ``timestamp`` is the
    log append time when the topic uses LogAppendTime."""

    topic: str
    partition: int
    offset: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A consumer offset to commit for a sink task: the offset of the *next* record to
    consume, with optional metadata, as Kafka commits it."""

    offset: int
    metadata: str = ""
