"""Which segments retention deletes: by ``retention.ms`` and ``retention.bytes``, oldest first."""

from __future__ import annotations

import os
from collections.abc import Sequence

from core.log.config import TopicConfig
from core.log.segment import LOG_SUFFIX, LogSegment

__all__ = ["deletable_segments", "largest_timestamp"]


def largest_timestamp(segment: LogSegment) -> int:
    """The segment's largest record timestamp; its file's modification time if no record has
    a timestamp (as Kafka does)."""
    if segment.max_timestamp >= 0:
        return segment.max_timestamp
    try:
        return int(os.stat(segment.path(LOG_SUFFIX)).st_mtime * 1000)
    except FileNotFoundError:
        return segment.max_timestamp


def deletable_segments(
    segments: Sequence[LogSegment], active_size: int, config: TopicConfig, now_ms: int
) -> list[LogSegment]:
    """The oldest segments that retention deletes, in order.

    By time: every segment from the oldest whose largest timestamp is more than
    ``retention.ms`` old, the active one included when it holds records (the caller rolls
    before deleting it). By size: further non-active segments, oldest first, while the log
    stays at or above ``retention.bytes`` without them.
    """
    doomed: list[LogSegment] = []
    last = len(segments) - 1
    if config.retention_ms >= 0:
        for i, segment in enumerate(segments):
            if i == last and active_size == 0:
                break
            # An empty older segment (left by compaction to keep the log start) holds
            # nothing to retain, and must not hold back the segments after it.
            if (segment.size or i == last) and (
                now_ms - largest_timestamp(segment) <= config.retention_ms
            ):
                break
            doomed.append(segment)
    if config.retention_bytes >= 0:
        sizes = [s.size for s in segments[:-1]] + [active_size]
        excess = sum(sizes[len(doomed):]) - config.retention_bytes
        for i in range(len(doomed), last):
            if excess - sizes[i] < 0:
                break
            doomed.append(segments[i])
            excess -= sizes[i]
    return doomed

