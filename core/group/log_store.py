"""The OffsetStore on the commit log: Kafka's compacted ``__consumer_offsets`` topic."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from core.group.codes import ErrorCode
from core.group.errors import OffsetStoreError
from core.log.errors import RecordTooLargeError, StorageError, TopicExistsError
from core.log.records import (
    decode_batch,
    encode_batch,
    iter_batches,
    set_partition_leader_epoch,
)

if TYPE_CHECKING:
    from core.log.manager import LogManager

__all__ = [
    "OFFSETS_TOPIC",
    "OFFSETS_TOPIC_CONFIGS",
    "OFFSETS_TOPIC_PARTITIONS",
    "LogOffsetStore",
    "java_string_hash",
    "partition_for",
]

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
#: offsets.topic.num.partitions
OFFSETS_TOPIC_PARTITIONS = 50
#: Kafka's settings for the topic: compacted (the latest commit per key is all that
#: matters) with 100 MiB segments (offsets.topic.segment.bytes).
OFFSETS_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "104857600"}

def java_string_hash(value: str) -> int:
    """Java's ``String.hashCode``: ``h = 31 * h + c`` over UTF-16 code units, wrapping as
    a signed 32-bit int."""
    data = value.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, partitions: int = OFFSETS_TOPIC_PARTITIONS) -> int:
    """The ``__consumer_offsets`` partition of a group, as Kafka computes it:
    ``Utils.abs(groupId.hashCode()) % partitions``, where ``Utils.abs`` maps
    Integer.MIN_VALUE to 0."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


class LogOffsetStore:
    """Offset commits as records of ``__consumer_offsets`` in a LogManager.

    Creates the topic (internal, compacted) if it is missing. One ``append`` is one record
    batch in the group's partition, so a commit of several partitions is atomic. Records
    are flushed per the topic's flush policy, as for any other topic (Kafka's default
    leaves flushing to the OS).
    """

    def __init__(self, manager: LogManager, *, partitions: int = OFFSETS_TOPIC_PARTITIONS,
                 read_max_bytes: int = 1 << 20):
        """``partitions`` applies only when the topic is created; an existing topic keeps
        its partition count, which then places the groups. ``read_max_bytes`` is the size
        of each read while loading. Raises OffsetStoreError if the topic cannot be
        created."""
        self._manager = manager
        self._read_max_bytes = read_max_bytes
        #: In a cluster: the leader epoch to stamp on an append to a partition, or
        #: OffsetStoreError (NOT_COORDINATOR) when this broker does not lead it. None on a
        #: single node, which leads everything.
        self.leader_epoch_of: Callable[[int], int] | None = None
        try:
            if OFFSETS_TOPIC not in manager.topics():
                try:
                    manager.create_topic(OFFSETS_TOPIC, partitions, OFFSETS_TOPIC_CONFIGS,
                                         internal=True)
                    log.info("created %s with %d partitions", OFFSETS_TOPIC, partitions)
                except TopicExistsError:
                    pass  # created concurrently by another store on the same manager
            self._partitions = manager.topic(OFFSETS_TOPIC).partitions
        except StorageError as exc:
            raise OffsetStoreError(f"cannot open the {OFFSETS_TOPIC} topic: {exc}") from exc

    @property
    def partitions(self) -> int:
        return self._partitions

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self._partitions)

    def append(self, group_id: str, records: list[tuple[bytes, bytes | None]]) -> None:
        if not records:
            return
        partition = self.partition_for(group_id)
        try:
            plog = self._manager.log(OFFSETS_TOPIC, partition)
            if self.leader_epoch_of is None:
                plog.append_records([(key, value, (), None) for key, value in records])
            else:
                epoch = self.leader_epoch_of(partition)
                batch = encode_batch([(key, value, (), None) for key, value in records],
                                     default_timestamp=int(time.time() * 1000))
                set_partition_leader_epoch(batch, epoch)
                plog.append(batch)
        except RecordTooLargeError as exc:
            raise OffsetStoreError(
                f"offset records of group {group_id!r} exceed {OFFSETS_TOPIC}'s "
                f"max.message.bytes: {exc}",
                error_code=ErrorCode.INVALID_COMMIT_OFFSET_SIZE) from exc
        except StorageError as exc:
            raise OffsetStoreError(
                f"cannot append to {OFFSETS_TOPIC}-{partition} for group {group_id!r}: "
                f"{exc}") from exc

    def load(self) -> Iterator[tuple[bytes, bytes | None]]:
        """Every record of every partition, each partition in offset order. A group lives
        in one partition, so each group's records come in the order they were appended."""
        for partition in range(self._partitions):
            yield from self._read_partition(partition)

    def records_of(self, partition: int) -> list[tuple[bytes, bytes | None]]:
        """Every record of one partition, in offset order (a new leader reloads it)."""
        return list(self._read_partition(partition))

    def _read_partition(self, partition: int) -> Iterator[tuple[bytes, bytes | None]]:
        try:
            yield from self._read_records(partition)
        except StorageError as exc:
            raise OffsetStoreError(
                f"cannot read {OFFSETS_TOPIC}-{partition}: {exc}") from exc

    def _read_records(self, partition: int) -> Iterator[tuple[bytes, bytes | None]]:
        partition_log = self._manager.log(OFFSETS_TOPIC, partition)
        offset = partition_log.log_start_offset
        end = partition_log.log_end_offset
        while offset < end:
            result = partition_log.read(offset, self._read_max_bytes)
            data = result.data
            if not data:
                break
            progressed = False
            for position, header in iter_batches(data):
                _, records = decode_batch(data, position)
                for record in records:
                    # A batch may start before ``offset``; skip what was already read.
                    if record.offset >= offset and record.key is not None:
                        yield record.key, record.value
                offset = max(offset, header.last_offset + 1)
                progressed = True
            if not progressed:
                raise OffsetStoreError(
                    f"{OFFSETS_TOPIC}-{partition} returned no whole record batch at offset "
                    f"{offset}; the log may be corrupt")
