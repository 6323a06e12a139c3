"""Cluster metadata: brokers, topics and partition leaders from Metadata responses, cached."""

from __future__ import annotations

import base64
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from core.backends.kafka.config import BrokerAddress

__all__ = ["MetadataCache", "MetadataSnapshot", "PartitionMetadata", "TopicMetadata",
           "parse_metadata", "topic_id_string"]


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    partition: int
    leader: int  # -1 while there is none
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error_code: int


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """One topic; ``partitions[i].partition == i``."""

    name: str
    partitions: tuple[PartitionMetadata, ...]
    internal: bool
    topic_id: str
    fetched_at: float = field(default=0.0, compare=False)


@dataclass(frozen=True, slots=True)
class MetadataSnapshot:
    """What one Metadata response said. ``topic_errors`` holds topics answered with an error
    (UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE while a topic is being created ...)."""

    brokers: dict[int, BrokerAddress]
    controller_id: int
    cluster_id: str | None
    topics: dict[str, TopicMetadata]
    topic_errors: dict[str, int]
    internal: frozenset[str] = frozenset()


def topic_id_string(value: Any) -> str:
    """Kafka's string form of a topic id (URL-safe base64 without padding); "" for none."""
    if not isinstance(value, uuid.UUID) or value.int == 0:
        return ""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


def parse_metadata(response: Any, now: float | None = None) -> MetadataSnapshot:
    """Turn a kafka-python MetadataResponse into plain, immutable metadata."""
    fetched_at = time.monotonic() if now is None else now
    brokers = {b.node_id: BrokerAddress(b.host, b.port) for b in response.brokers}
    topics: dict[str, TopicMetadata] = {}
    errors: dict[str, int] = {}
    internal = set()
    for t in response.topics:
        if t.name is None:
            continue
        if t.is_internal:
            internal.add(t.name)
        parts = sorted(
            (PartitionMetadata(p.partition_index, p.leader_id, p.leader_epoch,
                               tuple(p.replica_nodes or ()), tuple(p.isr_nodes or ()),
                               p.error_code)
             for p in t.partitions),
            key=lambda p: p.partition)
        # A topic whose partition list is empty or has holes is being changed: report it as
        # LEADER_NOT_AVAILABLE so that callers refresh instead of routing by a wrong index.
        dense = bool(parts) and all(p.partition == i for i, p in enumerate(parts))
        if t.error_code or not dense:
            errors[t.name] = t.error_code or 5
            continue
        topics[t.name] = TopicMetadata(t.name, tuple(parts), bool(t.is_internal),
                                       topic_id_string(getattr(t, "topic_id", None)),
                                       fetched_at)
    return MetadataSnapshot(brokers, response.controller_id, response.cluster_id, topics,
                            errors, frozenset(internal))


class MetadataCache:
    """The latest known metadata; entries older than ``max_age_s`` count as missing."""

    def __init__(self, max_age_s: float) -> None:
        self._max_age_s = max_age_s
        self._lock = threading.Lock()
        self._brokers: dict[int, BrokerAddress] = {}  # guarded by _lock
        self._topics: dict[str, TopicMetadata] = {}  # guarded by _lock
        self.controller_id = -1
        self.cluster_id: str | None = None

    def update(self, snapshot: MetadataSnapshot, *, complete: bool = False) -> None:
        """Merge a response; ``complete`` (a list of every topic) also drops topics it lacks."""
        with self._lock:
            if snapshot.brokers:
                self._brokers = dict(snapshot.brokers)
            self.controller_id = snapshot.controller_id
            self.cluster_id = snapshot.cluster_id
            if complete:
                self._topics = dict(snapshot.topics)
            else:
                self._topics.update(snapshot.topics)
                for name in snapshot.topic_errors:
                    self._topics.pop(name, None)

    def add_broker(self, node_id: int, address: BrokerAddress) -> None:
        with self._lock:
            self._brokers[node_id] = address

    def broker(self, node_id: int) -> BrokerAddress | None:
        with self._lock:
            return self._brokers.get(node_id)

    def brokers(self) -> dict[int, BrokerAddress]:
        with self._lock:
            return dict(self._brokers)

    def topic(self, name: str) -> TopicMetadata | None:
        with self._lock:
            meta = self._topics.get(name)
        if meta is None or time.monotonic() - meta.fetched_at > self._max_age_s:
            return None
        return meta

    def forget(self, name: str) -> None:
        with self._lock:
            self._topics.pop(name, None)

    def forget_all(self) -> None:
        """Drop every topic (after a leader moved or a broker failed) but keep the brokers."""
        with self._lock:
            self._topics.clear()
