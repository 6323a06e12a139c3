"""Which offsets are safe to commit: per partition, everything before the first record
whose bulk item has not completed (Confluent's ``AsyncOffsetTracker``). Records are
added in offset order on the task's thread and completed from bulk threads."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Mapping

from connect.api import OffsetAndMetadata, TopicPartition

__all__ = ["OffsetState", "OffsetTracker"]


class OffsetState:
    """One record's place in its partition; ``done()`` once it is indexed, skipped or
    reported to the dead letter queue."""

    __slots__ = ("offset", "processed")

    def __init__(self, offset: int) -> None:
        self.offset = offset
        self.processed = False

    def done(self) -> None:
        self.processed = True  # a bool store is atomic; offsets() reads it under the lock


class OffsetTracker:
    def __init__(self) -> None:
        self._pending: dict[TopicPartition, deque[OffsetState]] = {}
        self._lock = threading.Lock()

    def add(self, tp: TopicPartition, offset: int) -> OffsetState:
        state = OffsetState(offset)
        with self._lock:
            self._pending.setdefault(tp, deque()).append(state)
        return state

    def offsets(self, current: Mapping[TopicPartition, OffsetAndMetadata]
                ) -> dict[TopicPartition, OffsetAndMetadata]:
        """For each partition of ``current``: its next offset when every record added
        is done, else the offset of the first record not done (never past it)."""
        out: dict[TopicPartition, OffsetAndMetadata] = {}
        with self._lock:
            for tp, next_offset in current.items():
                queue = self._pending.get(tp)
                while queue and queue[0].processed:
                    queue.popleft()
                out[tp] = OffsetAndMetadata(queue[0].offset) if queue else next_offset
        return out

    def pending(self) -> int:
        with self._lock:
            return sum(sum(1 for s in q if not s.processed) for q in self._pending.values())

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        """Partitions closed: their records will be redelivered to whoever owns them."""
        with self._lock:
            for tp in partitions:
                self._pending.pop(tp, None)
