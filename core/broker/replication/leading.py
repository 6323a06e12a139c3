"""What the request handlers ask of the replicas (Produce, Fetch, ListOffsets,
OffsetForLeaderEpoch, the group coordinator): who leads a partition at which epoch, the
checks before a leader's append, the wait for acks=all, and a follower's fetch as the
leader sees it (its log end, the high watermark, a diverging epoch).

Event loop only, except ``leader_epoch_for_append`` (any thread).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from core.broker.replication.isr import AcksResult
from core.broker.replication.isr_updates import now_ms
from core.broker.replication.leader_epoch import diverging_epoch
from core.broker.replication.replica import Replica, ReplicationError
from core.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from core.broker.replication.isr import IsrChange
    from core.cluster.image import MetadataImage
    from core.log.log import PartitionLog

__all__ = ["LeaderRequests"]


class LeaderRequests:
    """A part of ``ReplicaManager``."""

    node_id: int
    replicas: dict[tuple[str, int], Replica]
    image: MetadataImage
    _hw_moved: Callable[[Replica], None]
    _alter: Callable[[Replica, IsrChange], None]

    def leader_epoch_for_append(self, topic: str, partition: int) -> int:
        """The epoch to stamp on a broker-internal append (the group coordinator's), which
        only the leader may make; ReplicationError otherwise. Any thread."""
        replica = self.replicas.get((topic, partition))
        leader = replica.leader if replica is not None else None
        if leader is None:
            raise ReplicationError(ErrorCode.NOT_COORDINATOR,
                                   f"broker {self.node_id} does not lead {topic}-{partition}")
        return leader.leader_epoch

    def replica(self, topic: str, partition: int) -> Replica:
        """The local replica; UNKNOWN_TOPIC_OR_PARTITION if this broker has none."""
        replica = self.replicas.get((topic, partition))
        if replica is None:
            if self.image.partition(topic, partition) is None:
                raise ReplicationError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                       f"{topic}-{partition} does not exist")
            raise ReplicationError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                   f"this broker ({self.node_id}) holds no replica of "
                                   f"{topic}-{partition}")
        return replica

    def leader_replica(self, topic: str, partition: int, current_leader_epoch: int = -1
                       ) -> Replica:
        """The replica if this broker leads it; otherwise the error Kafka gives: a client
        that names a newer epoch than ours is ahead of our metadata (UNKNOWN_LEADER_EPOCH),
        an older one is behind (FENCED_LEADER_EPOCH)."""
        replica = self.replica(topic, partition)
        leader = replica.leader
        epoch = replica.spec.leader_epoch
        if current_leader_epoch >= 0 and current_leader_epoch > epoch:
            raise ReplicationError(ErrorCode.UNKNOWN_LEADER_EPOCH,
                                   f"leader epoch {current_leader_epoch} of {topic}-"
                                   f"{partition} is newer than this broker's {epoch}")
        if current_leader_epoch >= 0 and current_leader_epoch < epoch:
            raise ReplicationError(ErrorCode.FENCED_LEADER_EPOCH,
                                   f"leader epoch {current_leader_epoch} of {topic}-"
                                   f"{partition} is older than {epoch}; refresh metadata")
        if leader is None:
            raise ReplicationError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                   f"broker {self.node_id} does not lead {topic}-{partition} "
                                   f"(the leader is {replica.spec.leader})")
        return replica

    def check_produce(self, topic: str, partition: int, acks: int) -> tuple[Replica, int]:
        """The led replica and the leader epoch to stamp; NOT_ENOUGH_REPLICAS for acks=all
        when the ISR is below min.insync.replicas."""
        replica = self.leader_replica(topic, partition)
        assert replica.leader is not None
        replica.leader.min_insync_replicas = replica.plog.config.min_insync_replicas
        if replica.leader.check_before_append(acks) != AcksResult.NONE:
            raise ReplicationError(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                f"{topic}-{partition} has {len(replica.leader.isr)} in-sync replicas "
                f"{list(replica.leader.isr)}, fewer than min.insync.replicas="
                f"{replica.leader.min_insync_replicas}")
        return replica, replica.leader.leader_epoch

    def appended(self, replica: Replica) -> None:
        """The leader appended to ``replica``: with an ISR of one the HW moves now."""
        leader = replica.leader
        if leader is not None and leader.appended(replica.plog.log_end_offset):
            self._hw_moved(replica)

    async def wait_acks_all(self, replica: Replica, leader_epoch: int, end_offset: int,
                            timeout_s: float) -> ErrorCode:
        """Wait until the batch ending before ``end_offset`` is below the high watermark:
        NONE, NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER if this broker lost
        the leadership meanwhile (the batch may be truncated away), REQUEST_TIMED_OUT.
        Woken by the follower fetch that moves the high watermark past the batch."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            leader = replica.leader
            if leader is None or leader.leader_epoch != leader_epoch:
                return ErrorCode.NOT_LEADER_OR_FOLLOWER
            result = leader.acks_all_result(end_offset)
            if result != AcksResult.PENDING:
                return ErrorCode(result)
            if loop.time() >= deadline:
                return ErrorCode.REQUEST_TIMED_OUT
            try:
                async with asyncio.timeout_at(deadline):
                    await replica.waiter(end_offset)
            except TimeoutError:
                return ErrorCode.REQUEST_TIMED_OUT

    def follower_fetch(self, topic: str, partition: int, replica_id: int,
                       current_leader_epoch: int, fetch_offset: int, last_fetched_epoch: int
                       ) -> tuple[Replica, tuple[int, int] | None]:
        """A follower's Fetch reached this leader: check its epoch, find a divergence
        (then the follower truncates and its log end says nothing yet), else note its log
        end, which may move the HW or call for an ISR expansion."""
        replica = self.leader_replica(topic, partition, current_leader_epoch)
        leader = replica.leader
        assert leader is not None
        if replica_id not in leader.replicas:
            raise ReplicationError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                   f"broker {replica_id} is no replica of {topic}-{partition}")
        end = replica.plog.log_end_offset
        diverging = diverging_epoch(replica.epochs, end, fetch_offset, last_fetched_epoch)
        if diverging is not None:
            return replica, diverging
        if fetch_offset > end:
            return replica, None  # ahead of this log: the read answers OFFSET_OUT_OF_RANGE
        leader.log_end = end
        moved, change = leader.follower_fetched(replica_id, fetch_offset, now_ms())
        if moved:
            self._hw_moved(replica)
        if change is not None:
            self._alter(replica, change)
        return replica, None

    def unrequested_logs(self, replica_id: int, requested: Collection[tuple[str, int]]
                         ) -> list[PartitionLog]:
        """Logs of the partitions this broker leads with ``replica_id`` among their
        replicas that its fetch did not name: it learnt of them (a new topic, a new
        leader) after sending it. An append to one ends that fetch's long poll, so the
        follower asks again with it instead of after ``replica.fetch.wait.max.ms``."""
        return [r.plog for key, r in self.replicas.items()
                if r.leader is not None and replica_id in r.leader.replicas
                and key not in requested]
