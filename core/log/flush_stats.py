"""How long log flushes (fsyncs) take, for the broker's ``/metrics``.

Kafka's ``kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs`` is one timer for the
whole process; so is ``FLUSH_STATS``: every ``PartitionLog.flush`` that synced something
adds its duration. Flushes are rare (milliseconds each), so a lock costs nothing here.
"""

from __future__ import annotations

import threading
from bisect import bisect_left

__all__ = ["FLUSH_BUCKETS_S", "FLUSH_STATS", "FlushStats"]

FLUSH_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                   2.5, 5.0, 10.0)


class FlushStats:
    """Count, total seconds and bucket counts (the last counts flushes above every bucket)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0
        self.seconds = 0.0
        self.buckets = [0] * (len(FLUSH_BUCKETS_S) + 1)

    def record(self, seconds: float) -> None:
        with self._lock:
            self.count += 1
            self.seconds += seconds
            self.buckets[bisect_left(FLUSH_BUCKETS_S, seconds)] += 1

    def snapshot(self) -> tuple[int, float, list[int]]:
        with self._lock:
            return self.count, self.seconds, list(self.buckets)


FLUSH_STATS = FlushStats()
