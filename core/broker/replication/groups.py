"""A cluster broker's group coordination: a group's coordinator is the leader of its
``__consumer_offsets`` partition, that topic is replicated like any other, and the
coordinator writes only where this broker leads, reloading a partition's groups from the
replicated log when it takes the partition over."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from core.broker.replication.manager import Replica, ReplicaManager, ReplicationError
from core.group import OFFSETS_TOPIC, OFFSETS_TOPIC_CONFIGS, GroupCoordinator, LogOffsetStore
from core.group.errors import OffsetStoreError
from core.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from core.broker.config import BrokerConfig
    from core.cluster.config import ClusterConfig

__all__ = ["coordinate_groups", "create_offsets_topic"]

log = logging.getLogger(__name__)


def coordinate_groups(replicas: ReplicaManager, coordinator: GroupCoordinator) -> None:
    """The group coordinator writes to ``__consumer_offsets`` only where this broker leads
    the group's partition (stamping its leader epoch), and reloads a partition's groups
    from the replicated log when it becomes that partition's leader."""
    store = coordinator.offset_store
    if not isinstance(store, LogOffsetStore):
        return
    log_store: LogOffsetStore = store

    def leader_epoch_of(partition: int) -> int:
        try:
            return replicas.leader_epoch_for_append(OFFSETS_TOPIC, partition)
        except ReplicationError as exc:
            raise OffsetStoreError(str(exc), error_code=exc.code) from exc

    def on_leader(replica: Replica) -> None:
        if replica.topic == OFFSETS_TOPIC:
            groups = coordinator.load_partition(log_store.records_of(replica.partition))
            log.info("coordinating the %d groups of %s-%d", groups, OFFSETS_TOPIC,
                     replica.partition)

    log_store.leader_epoch_of = leader_epoch_of
    replicas.on_leader = on_leader


async def create_offsets_topic(config: BrokerConfig, cluster: ClusterConfig,
                                replicas: ReplicaManager) -> None:
    """Create ``__consumer_offsets`` through the controller once enough brokers are live
    for offsets.topic.replication.factor (Kafka creates it at the first FindCoordinator;
    here at start, so the coordinators are placed before the first group asks)."""
    factor = cluster.offsets_topic_replication_factor
    while OFFSETS_TOPIC not in replicas.image.topics:
        if len(replicas.live_brokers()) >= factor:
            code = await replicas.create_topic(OFFSETS_TOPIC,
                                               config.offsets_topic_num_partitions, factor,
                                               dict(OFFSETS_TOPIC_CONFIGS))
            if code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
                log.info("cannot create %s yet: %s", OFFSETS_TOPIC, replicas.last_error)
        await asyncio.sleep(0.5)
