"""Source offsets in the offsets topic, in Kafka Connect's format, and the reader tasks use.

Key: JSON ``["<connector>",{partition map}]``; value: the JSON offset map (null: a
tombstone, the partition's offset was reset). Both are written compactly, as Kafka's
JsonConverter with ``schemas.enable=false`` writes them, so the topic is interchangeable
with a Kafka Connect cluster's. The topic is compacted and created if missing.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from connect.api.errors import ConnectError
from connect.api.storage import OffsetStorageReader
from core.backends import LogBackend, OffsetSpec, ProducerRecord, TopicPartition
from core.backends import errors as be

__all__ = ["OffsetStore", "WorkerOffsetStorageReader", "offset_key"]

log = logging.getLogger(__name__)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def offset_key(connector: str, partition: Mapping[str, Any]) -> bytes:
    return _dumps([connector, dict(partition)]).encode()


def _canonical(partition: Mapping[str, Any]) -> str:
    """Lookup form of a partition map: Kafka compares maps by content, not key order."""
    return json.dumps(dict(partition), sort_keys=True, separators=(",", ":"))


class OffsetStore:
    """The worker's view of the offsets topic. Thread-safe: guarded by ``_lock``; the cache
    holds the last value per (connector, partition), None after a tombstone."""

    def __init__(self, backend: LogBackend, topic: str, partitions: int,
                 replication_factor: int) -> None:
        self._backend = backend
        self._topic = topic
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any] | None]] = {}
        self._positions: dict[TopicPartition, int] = {}
        self._ensure_topic(partitions, replication_factor)

    def _ensure_topic(self, partitions: int, replication_factor: int) -> None:
        if self._topic in self._backend.list_topics():
            return
        try:
            self._backend.create_topic(
                self._topic, partitions, {"cleanup.policy": "compact"},
                replication_factor=None if replication_factor < 1 else replication_factor)
            log.info("created offsets topic %s", self._topic)
        except be.TopicExistsError:
            pass

    def refresh(self) -> None:
        """Replay the topic up to its current end (the high watermark when called)."""
        with self._lock:
            count = self._backend.partition_count(self._topic)
            tps = [TopicPartition(self._topic, p) for p in range(count)]
            ends = self._backend.list_offsets(tps, OffsetSpec.LATEST)
            for tp in tps:
                self._positions.setdefault(tp, 0)
            # Bounded: each round advances at least one partition toward its fixed end.
            for _ in range(1_000_000):
                behind = {tp: pos for tp, pos in self._positions.items() if pos < ends[tp]}
                if not behind:
                    return
                try:
                    results = self._backend.fetch(behind)
                except be.OffsetOutOfRangeError:
                    starts = self._backend.list_offsets(list(behind), OffsetSpec.EARLIEST)
                    self._positions.update(starts)
                    continue
                for tp, result in results.items():
                    for rec in result.records:
                        self._apply(rec.key, rec.value)
                    self._positions[tp] = max(result.next_offset, self._positions[tp])
            raise ConnectError(f"replaying offsets topic {self._topic} did not finish")

    def _apply(self, key: bytes | None, value: bytes | None) -> None:
        try:
            connector, partition = json.loads(key or b"null")
            offset = None if value is None else json.loads(value)
        except (ValueError, TypeError):
            log.warning("ignoring malformed record in offsets topic %s", self._topic)
            return
        self._cache[(connector, _canonical(partition))] = (partition, offset)

    def write(self, connector: str,
              offsets: Mapping[str, tuple[Mapping[str, Any], Mapping[str, Any] | None]]) -> None:
        """Store ``{canonical: (partition, offset or None)}``; blocks until durable."""
        if not offsets:
            return
        records = [ProducerRecord(offset_key(connector, partition),
                                  None if offset is None else _dumps(dict(offset)).encode())
                   for partition, offset in offsets.values()]
        self._backend.produce(self._topic, records)
        with self._lock:
            for canonical, (partition, offset) in offsets.items():
                self._cache[(connector, canonical)] = (
                    dict(partition), None if offset is None else dict(offset))

    def offsets_of(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Every live ``(partition, offset)`` of a connector, after a refresh."""
        self.refresh()
        with self._lock:
            return [(p, o) for (c, _), (p, o) in self._cache.items()
                    if c == connector and o is not None]

    def get(self, connector: str, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        with self._lock:
            found = self._cache.get((connector, _canonical(partition)))
        return None if found is None else found[1]


class WorkerOffsetStorageReader(OffsetStorageReader):
    """A connector's offsets; refreshes from the topic once, when first read."""

    def __init__(self, store: OffsetStore, connector: str) -> None:
        self._store = store
        self._connector = connector
        self._refreshed = False
        self._lock = threading.Lock()

    def _ensure(self) -> None:
        with self._lock:
            if not self._refreshed:
                try:
                    self._store.refresh()
                except be.BackendError as exc:
                    raise ConnectError(f"reading source offsets failed: {exc}") from exc
                self._refreshed = True

    def offset(self, partition: Mapping[str, Any]) -> Mapping[str, Any] | None:
        self._ensure()
        return self._store.get(self._connector, partition)

    def offsets(self, partitions: Iterable[Mapping[str, Any]]
                ) -> list[tuple[Mapping[str, Any], Mapping[str, Any] | None]]:
        self._ensure()
        return [(p, self._store.get(self._connector, p)) for p in partitions]
