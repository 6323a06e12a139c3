"""``KafkaBackend``: the LogBackend interface over the Kafka protocol (Ferry broker or Kafka)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence

from core.backends.base import LogBackend
from core.backends.kafka.admin import TopicAdmin
from core.backends.kafka.client import KafkaClient
from core.backends.kafka.config import ClientConfig
from core.backends.kafka.fetch import Fetcher
from core.backends.kafka.group_admin import GroupAdmin
from core.backends.kafka.groups import GroupMembership
from core.backends.kafka.offsets import OffsetLister
from core.backends.kafka.produce import Producer
from core.backends.types import (
    FetchResult,
    GroupDescription,
    JoinResult,
    OffsetAndMetadata,
    ProducerRecord,
    RecordMetadata,
    TopicDescription,
    TopicPartition,
)

__all__ = ["KafkaBackend"]

log = logging.getLogger(__name__)


class KafkaBackend(LogBackend):
    """Topics on a Ferry broker cluster or an Apache Kafka cluster, by ``kafka://H:P[,H:P]``.

    Nothing is connected until the first call, as with Kafka's clients; a call that cannot
    reach any broker raises ``BackendUnavailableError`` once ``default.api.timeout.ms``
    (``delivery.timeout.ms`` for produce) has passed. ``config`` holds client settings by
    Kafka's names (see ``CLIENT_CONFIGS``); other keys are ignored.
    """

    def __init__(self, config: ClientConfig, url: str = "") -> None:
        self.url = url or "kafka://" + ",".join(str(a) for a in config.bootstrap)
        self.config = config
        self._client = KafkaClient(config)
        self._offsets = OffsetLister(self._client)
        self._producer = Producer(self._client)
        self._fetcher = Fetcher(self._client, self._offsets)
        self._admin = TopicAdmin(self._client, self._offsets)
        self._membership = GroupMembership(self._client)
        self._group_admin = GroupAdmin(self._client)
        self._close_lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str, config: Mapping[str, str] | None = None) -> KafkaBackend:
        backend = cls(ClientConfig.parse(url, config), url.strip())
        log.debug("kafka backend for %s", backend.url)
        return backend

    @property
    def cluster_id(self) -> str | None:
        """The cluster id of the last metadata response (None before the first)."""
        return self._client.metadata.cluster_id

    # ------------------------------------------------------------------ topic admin

    def create_topic(self, name: str, partitions: int | None = None,
                     configs: Mapping[str, str] | None = None, *,
                     replication_factor: int | None = None,
                     validate_only: bool = False) -> None:
        self._admin.create_topic(name, partitions, configs, replication_factor, validate_only)

    def delete_topic(self, name: str) -> None:
        self._admin.delete_topic(name)

    def list_topics(self, *, include_internal: bool = False) -> list[str]:
        return self._admin.list_topics(include_internal)

    def describe_topic(self, name: str) -> TopicDescription:
        return self._admin.describe_topic(name)

    def alter_topic_configs(self, name: str, set_configs: Mapping[str, str] | None = None,
                            delete_configs: Iterable[str] = ()) -> None:
        self._admin.alter_topic_configs(name, set_configs, delete_configs)

    def partition_count(self, topic: str) -> int:
        return self._admin.partition_count(topic)

    # ------------------------------------------------------------------ produce / fetch

    def produce(self, topic: str, records: Sequence[ProducerRecord], *,
                acks: int = -1) -> list[RecordMetadata]:
        # The interface's default (-1) defers to the backend's ``acks`` setting.
        if acks == -1 and self.config.acks_configured:
            acks = self.config.acks
        return self._producer.produce(topic, records, acks)

    def fetch(self, positions: Mapping[TopicPartition, int], *, max_wait_ms: int = 0,
              max_bytes: int = 52428800,
              max_partition_bytes: int = 1048576) -> dict[TopicPartition, FetchResult]:
        return self._fetcher.fetch(positions, max_wait_ms, max_bytes, max_partition_bytes)

    def list_offsets(self, partitions: Iterable[TopicPartition],
                     spec: int) -> dict[TopicPartition, int]:
        return self._offsets.list_offsets(partitions, spec)

    # ------------------------------------------------------------------ group offsets

    def commit_offsets(self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                       *, generation_id: int = -1, member_id: str = "",
                       group_instance_id: str | None = None) -> None:
        self._group_admin.commit_offsets(group_id, offsets, generation_id=generation_id,
                                         member_id=member_id,
                                         group_instance_id=group_instance_id)

    def fetch_offsets(self, group_id: str, partitions: Iterable[TopicPartition] | None = None
                      ) -> dict[TopicPartition, OffsetAndMetadata]:
        return self._group_admin.fetch_offsets(group_id, partitions)

    def delete_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition]) -> None:
        self._group_admin.delete_offsets(group_id, partitions)

    # ------------------------------------------------------------------ group membership

    def join_group(self, group_id: str, *, member_id: str, protocol_type: str,
                   protocols: Sequence[tuple[str, bytes]], session_timeout_ms: int = 45000,
                   rebalance_timeout_ms: int = 300000, group_instance_id: str | None = None,
                   client_id: str = "ferry") -> JoinResult:
        return self._membership.join_group(
            group_id, member_id=member_id, protocol_type=protocol_type, protocols=protocols,
            session_timeout_ms=session_timeout_ms, rebalance_timeout_ms=rebalance_timeout_ms,
            group_instance_id=group_instance_id, client_id=client_id)

    def sync_group(self, group_id: str, *, generation_id: int, member_id: str,
                   assignments: Mapping[str, bytes] | None = None,
                   group_instance_id: str | None = None) -> bytes:
        return self._membership.sync_group(group_id, generation_id=generation_id,
                                           member_id=member_id, assignments=assignments,
                                           group_instance_id=group_instance_id)

    def heartbeat(self, group_id: str, *, generation_id: int, member_id: str,
                  group_instance_id: str | None = None) -> None:
        self._membership.heartbeat(group_id, generation_id=generation_id, member_id=member_id,
                                   group_instance_id=group_instance_id)

    def leave_group(self, group_id: str, *, member_id: str,
                    group_instance_id: str | None = None) -> None:
        self._membership.leave_group(group_id, member_id=member_id,
                                     group_instance_id=group_instance_id)

    def list_groups(self) -> list[tuple[str, str]]:
        return self._group_admin.list_groups()

    def describe_group(self, group_id: str) -> GroupDescription:
        return self._group_admin.describe_group(group_id)

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        with self._close_lock:
            self._client.close()
