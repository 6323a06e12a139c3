"""Consumer lag as the broker sees it: log end minus the group's committed offset.

As kafka_exporter and kafka-consumer-groups compute it, per committed partition; a commit
below the log start (records deleted by retention since) counts from the log start, so
deleted records are not reported as "phantom" lag. The lag in seconds is estimated from
the oldest unconsumed batch: now minus its timestamp (LogAppendTime when the topic stamps
it, else the producer's CreateTime), 0 when nothing is unconsumed.
"""

from __future__ import annotations

import logging
import struct
import time
from dataclasses import dataclass

from core.group import GroupCoordinator
from core.group.errors import CoordinatorError
from core.log.errors import StorageError
from core.log.manager import LogManager

__all__ = ["PartitionLag", "group_lags"]

log = logging.getLogger(__name__)

# RecordBatch v2: attributes at byte 21, baseTimestamp at 27, maxTimestamp at 35.
_ATTRIBUTES = struct.Struct(">h")
_TIMESTAMPS = struct.Struct(">qq")
_LOG_APPEND_TIME = 0x08


@dataclass(frozen=True)
class PartitionLag:
    """One group's position on one partition."""

    group: str
    topic: str
    partition: int
    committed: int
    log_start: int
    log_end: int
    lag: int
    lag_seconds: float


def group_lags(coordinator: GroupCoordinator, manager: LogManager,
               now_ms: int | None = None) -> list[PartitionLag]:
    """Every group's lag on every partition it committed on, sorted by group, topic,
    partition; empty while the coordinator loads. Internal topics are skipped."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    try:
        groups = [group for group, _type, _state in coordinator.list_groups()]
    except CoordinatorError:
        return []
    found = []
    for group in groups:
        try:
            committed = coordinator.fetch_offsets(group, None)
        except CoordinatorError:
            continue
        for (topic, partition), position in sorted(committed.items()):
            lag = partition_lag(manager, group, topic, partition, position.offset, now_ms)
            if lag is not None:
                found.append(lag)
    return found


def partition_lag(manager: LogManager, group: str, topic: str, partition: int,
                  committed: int, now_ms: int) -> PartitionLag | None:
    """The lag of one commit, or None for a partition that is gone (or internal)."""
    try:
        if manager.topic(topic).internal:
            return None
        plog = manager.log(topic, partition)
        start, end = plog.log_start_offset, plog.log_end_offset
    except StorageError:
        return None
    position = min(max(committed, start), end)
    lag = end - position
    seconds = 0.0
    if lag > 0:
        stamp = _batch_timestamp(plog, position)
        if stamp is not None and stamp > 0:
            seconds = max(0.0, (now_ms - stamp) / 1000)
    return PartitionLag(group, topic, partition, committed, start, end, lag, seconds)


def _batch_timestamp(plog: object, offset: int) -> int | None:
    """The timestamp of the batch holding ``offset``: its LogAppendTime when stamped,
    else its first record's CreateTime; None if it cannot be read."""
    try:
        data = plog.read(offset, 1).data  # type: ignore[attr-defined]
    except StorageError as exc:
        log.debug("no timestamp for lag at offset %d: %s", offset, exc)
        return None
    if len(data) < 43:
        return None
    view = memoryview(data)
    (attributes,) = _ATTRIBUTES.unpack_from(view, 21)
    base, latest = _TIMESTAMPS.unpack_from(view, 27)
    return latest if attributes & _LOG_APPEND_TIME else base
