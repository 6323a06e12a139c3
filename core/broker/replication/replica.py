"""One partition this broker holds a replica of, and the requests parked on its high
watermark (Kafka's delayed-produce purgatory, keyed by offset).

An acks=all Produce (or a replicated offset commit) parks until the high watermark covers
its batch: it registers the offset its batch ends before and is woken exactly when the
high watermark passes it, or at once when the leadership changes. Nothing polls.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from core.broker.replication.isr import PartitionLeader
    from core.broker.replication.leader_epoch import LeaderEpochCache
    from core.cluster.records import PartitionSpec
    from core.log.log import PartitionLog

__all__ = ["Replica", "ReplicationError"]

_order = itertools.count()  # ties between waiters of one offset: first come, first woken


class ReplicationError(Exception):
    """A request reached a broker that cannot serve it for this partition; ``code`` is
    the Kafka error to answer (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, ...)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(eq=False)
class Replica:
    """One partition this broker holds a replica of. ``leader`` is set while this broker
    leads it at ``spec.leader_epoch``; ``follower_high_watermark`` is what a follower
    learnt from its leader (a leader's is ``leader.high_watermark``).

    Event loop only: the waiters are futures of the broker's loop.
    """

    topic: str
    partition: int
    plog: PartitionLog
    epochs: LeaderEpochCache
    spec: PartitionSpec
    leader: PartitionLeader | None = None
    follower_high_watermark: int = 0
    # (offset the waiter needs the high watermark at, arrival, future): a min-heap, so a
    # move of the high watermark wakes exactly the waiters it satisfies.
    _waiters: list[tuple[int, int, asyncio.Future[None]]] = field(
        default_factory=list, repr=False)

    @property
    def high_watermark(self) -> int:
        if self.leader is not None:
            return min(self.leader.high_watermark, self.plog.log_end_offset)
        return min(self.follower_high_watermark, self.plog.log_end_offset)

    def waiter(self, required_offset: int) -> asyncio.Future[None]:
        """A future done once the leader's high watermark reaches ``required_offset`` or
        the leadership changes (``wake``); the caller checks the outcome again."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (required_offset, next(_order), future))
        return future

    def wake(self, *, everyone: bool = False) -> None:
        """Wake the waiters the high watermark now satisfies; ``everyone`` when the
        leadership changed (they answer NOT_LEADER_OR_FOLLOWER) or the replica went away.
        A waiter that timed out meanwhile is dropped here."""
        waiters = self._waiters
        if not waiters:
            return
        leader = self.leader
        if leader is None:
            everyone = True
        high_watermark = leader.high_watermark if leader is not None else 0
        while waiters and (everyone or waiters[0][0] <= high_watermark):
            future = heapq.heappop(waiters)[2]
            if not future.done():
                future.set_result(None)
