"""acks=all waits on the high watermark (``Replica.waiter``/``wake`` and
``LeaderRequests.wait_acks_all``): a waiter is answered by the follower fetch that moves
the high watermark past its batch, not before and without polling; a leadership change
answers every waiter NOT_LEADER_OR_FOLLOWER; a timeout answers REQUEST_TIMED_OUT and
leaves nothing behind that a later move would trip over.

The replica is a real ``PartitionLog`` in ``tmp_path`` with a real ``PartitionLeader``;
``_Leading`` is ``LeaderRequests`` with the two manager hooks it calls (waking the
replica's waiters when the high watermark moves, and recording ISR proposals)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from core.broker.replication.isr import IsrChange, PartitionLeader
from core.broker.replication.leader_epoch import LeaderEpochCache
from core.broker.replication.leading import LeaderRequests
from core.broker.replication.replica import Replica
from core.cluster.records import PartitionSpec
from core.log.config import TopicConfig
from core.log.log import PartitionLog
from core.log.records import encode_batch
from core.protocol.errors import ErrorCode

EPOCH = 3


class _Leading(LeaderRequests):
    def __init__(self, replica: Replica) -> None:
        self.node_id = 1
        self.replicas = {(replica.topic, replica.partition): replica}
        self.moves = 0
        self.proposals: list[IsrChange] = []

    def _hw_moved(self, replica: Replica) -> None:
        self.moves += 1
        replica.wake()

    def _alter(self, replica: Replica, change: IsrChange) -> None:
        self.proposals.append(change)


def _replica(tmp_path: Path) -> Replica:
    plog = PartitionLog.open(tmp_path / "t-0", "t", 0, TopicConfig())
    spec = PartitionSpec(replicas=(1, 2, 3), isr=(1, 2, 3), leader=1, leader_epoch=EPOCH)
    replica = Replica("t", 0, plog, LeaderEpochCache(), spec)
    replica.epochs.assign(EPOCH, 0)  # as becoming the leader does
    replica.leader = PartitionLeader(
        broker_id=1, replicas=(1, 2, 3), isr=(1, 2, 3), leader_epoch=EPOCH,
        partition_epoch=0, epoch_start_offset=0, log_end=0, min_insync_replicas=2,
        replica_lag_time_max_ms=30000, now_ms=0)
    return replica


def _append(replica: Replica, records: int) -> int:
    info = replica.plog.append(encode_batch([(None, b"v", (), None)] * records))
    return info.last_offset + 1


def test_acks_all_is_answered_by_the_fetch_that_moves_the_high_watermark_past_it(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        replica = _replica(tmp_path)
        leading = _Leading(replica)
        first_end = _append(replica, 5)
        second_end = _append(replica, 5)
        leading.appended(replica)
        first = asyncio.create_task(leading.wait_acks_all(replica, EPOCH, first_end, 30))
        second = asyncio.create_task(leading.wait_acks_all(replica, EPOCH, second_end, 30))
        await asyncio.sleep(0)
        leading.follower_fetch("t", 0, 2, EPOCH, second_end, EPOCH)
        await asyncio.sleep(0)
        assert not first.done()  # follower 3 has nothing yet: the HW stays at 0
        leading.follower_fetch("t", 0, 3, EPOCH, first_end, EPOCH)
        assert await asyncio.wait_for(first, 5) == ErrorCode.NONE
        await asyncio.sleep(0)
        assert not second.done()  # its batch is above the high watermark still
        leading.follower_fetch("t", 0, 3, EPOCH, second_end, EPOCH)
        assert await asyncio.wait_for(second, 5) == ErrorCode.NONE
        assert leading.moves == 2 and not replica._waiters
        replica.plog.close()

    asyncio.run(scenario())


def test_a_lost_leadership_answers_every_waiter_at_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        replica = _replica(tmp_path)
        leading = _Leading(replica)
        end = _append(replica, 3)
        leading.appended(replica)
        waiting = [asyncio.create_task(leading.wait_acks_all(replica, EPOCH, end, 30))
                   for _ in range(3)]
        await asyncio.sleep(0)
        replica.leader = None  # the metadata named another leader
        replica.wake(everyone=True)
        assert await asyncio.wait_for(asyncio.gather(*waiting), 5) == [
            ErrorCode.NOT_LEADER_OR_FOLLOWER] * 3
        replica.plog.close()

    asyncio.run(scenario())


def test_a_timed_out_waiter_is_dropped_when_the_high_watermark_passes(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        replica = _replica(tmp_path)
        leading = _Leading(replica)
        end = _append(replica, 2)
        leading.appended(replica)
        assert await leading.wait_acks_all(replica, EPOCH, end, 0.05) == \
            ErrorCode.REQUEST_TIMED_OUT
        assert len(replica._waiters) == 1  # cancelled, still queued until passed
        leading.follower_fetch("t", 0, 2, EPOCH, end, EPOCH)
        leading.follower_fetch("t", 0, 3, EPOCH, end, EPOCH)
        assert replica.leader is not None and replica.leader.high_watermark == end
        assert not replica._waiters
        replica.plog.close()

    asyncio.run(scenario())


def test_an_isr_shrunk_below_the_minimum_answers_after_append(tmp_path: Path) -> None:
    async def scenario() -> None:
        replica = _replica(tmp_path)
        leading = _Leading(replica)
        end = _append(replica, 1)
        leading.appended(replica)
        leading.follower_fetch("t", 0, 2, EPOCH, end, EPOCH)
        leading.follower_fetch("t", 0, 3, EPOCH, end, EPOCH)
        leader = replica.leader
        assert leader is not None and leader.high_watermark == end
        leader.committed((1,), EPOCH, 1)  # both followers removed meanwhile
        assert await leading.wait_acks_all(replica, EPOCH, end, 5) == \
            ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        replica.plog.close()

    asyncio.run(scenario())
