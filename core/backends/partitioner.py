"""Kafka's default partitioner: murmur2 of the key for keyed records, sticky for unkeyed."""

from __future__ import annotations

import itertools
import threading

import murmurhash2 as _murmurhash2

__all__ = ["StickyPartitioner", "murmur2", "partition_for_key"]

#: The seed of Kafka's ``Utils.murmur2``.
MURMUR2_SEED = 0x9747B28C


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` of ``data`` as a signed 32-bit int (as Java returns it)."""
    h = _murmurhash2.murmurhash2(data, MURMUR2_SEED)
    return h - (1 << 32) if h >= (1 << 31) else h


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's Java client picks for ``key``: ``toPositive(murmur2) % n``.

    ``toPositive`` is ``& 0x7fffffff``, not ``abs``, so that ``Integer.MIN_VALUE`` maps to 0.
    """
    return (_murmurhash2.murmurhash2(key, MURMUR2_SEED) & 0x7FFFFFFF) % num_partitions


class StickyPartitioner:
    """Unkeyed records of one produce call share one partition; the next call moves on.

    This is the behaviour of Kafka's sticky partitioner (KIP-480) when every call is one
    batch: batches stay large and the load still spreads over all partitions.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[str, itertools.count] = {}

    def next_partition(self, topic: str, num_partitions: int) -> int:
        with self._lock:
            counter = self._counters.get(topic)
            if counter is None:
                counter = self._counters[topic] = itertools.count()
            return next(counter) % num_partitions
