"""A cluster broker's group coordination: a group's coordinator is the leader of its
``__consumer_offsets`` partition, that topic is replicated like any other, and the
coordinator writes only where this broker leads, reloading a partition's groups from the
replicated log when it takes the partition over."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from core.broker.replication.manager import Replica, ReplicaManager, ReplicationError
from core.group import (
    OFFSETS_TOPIC,
    OFFSETS_TOPIC_CONFIGS,
    GroupCoordinator,
    LogOffsetStore,
    partition_for,
)
from core.group.errors import OffsetStoreError
from core.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from core.broker.config import BrokerConfig
    from core.cluster.config import ClusterConfig

__all__ = ["commit_replicated", "coordinate_groups", "coordinator_error",
           "create_offsets_topic"]

_COMMIT_TIMEOUT_S = 5.0

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


def coordinator_error(replicas: ReplicaManager | None, group_id: str) -> ErrorCode | None:
    """Why this broker may not coordinate ``group_id`` (None: it may): Kafka's coordinator
    answers JoinGroup, SyncGroup, Heartbeat and LeaveGroup with NOT_COORDINATOR for a group
    whose ``__consumer_offsets`` partition it does not lead (the client finds the
    coordinator again), COORDINATOR_LOAD_IN_PROGRESS while it is taking that partition
    over, COORDINATOR_NOT_AVAILABLE before that topic exists. A single node
    (``replicas`` None) coordinates every group."""
    if replicas is None:
        return None
    topic = replicas.image.topics.get(OFFSETS_TOPIC)
    if topic is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    partition = partition_for(group_id, len(topic.partitions))
    replica = replicas.replicas.get((OFFSETS_TOPIC, partition))
    if replica is None or replica.leader is None:
        if topic.partitions[partition].leader == replicas.node_id:
            # Named leader by the metadata, not applied yet: Kafka's coordinator is then
            # loading the partition, and the client retries here.
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NOT_COORDINATOR
    return None


async def commit_replicated(replicas: ReplicaManager, group_id: str,
                            results: dict[Any, int]) -> dict[Any, int]:
    """An OffsetCommit is answered once its records are below the high watermark of the
    group's ``__consumer_offsets`` partition (Kafka's coordinator appends with acks=all):
    a commit answered here survives the coordinator's death. If they do not get there
    (leadership lost, ISR too small, timeout), the commit's successes answer that error,
    which clients retry (after finding the coordinator again)."""
    if not any(code == ErrorCode.NONE for code in results.values()):
        return results
    topic = replicas.image.topics.get(OFFSETS_TOPIC)
    if topic is None:
        return results
    replica = replicas.replicas.get((OFFSETS_TOPIC, partition_for(group_id,
                                                                  len(topic.partitions))))
    leader = replica.leader if replica is not None else None
    if replica is None or leader is None:
        code = ErrorCode.NOT_COORDINATOR
    else:
        code = await replicas.wait_acks_all(replica, leader.leader_epoch,
                                            replica.plog.log_end_offset, _COMMIT_TIMEOUT_S)
        if code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            code = ErrorCode.NOT_COORDINATOR
    if code == ErrorCode.NONE:
        return results
    log.info("offset commit of group %r not replicated: %s", group_id, code.name)
    return {key: (code if value == ErrorCode.NONE else value)
            for key, value in results.items()}
