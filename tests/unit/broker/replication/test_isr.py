"""A partition leader's ISR and high watermark: scenarios, then a hypothesis-driven run of
one leader and two followers that fetch, stall and recover at random, with a controller
that commits ISR changes late, checking that no acks=all write is acknowledged before
``min.insync.replicas`` replicas hold it and that the high watermark never moves back."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from core.broker.replication.isr import AcksResult, PartitionLeader

LAG_MS = 1000


def _leader(isr=(1, 2, 3), min_isr=2, now=0) -> PartitionLeader:
    return PartitionLeader(broker_id=1, replicas=(1, 2, 3), isr=isr, leader_epoch=4,
                           partition_epoch=7, epoch_start_offset=0, log_end=0,
                           min_insync_replicas=min_isr, replica_lag_time_max_ms=LAG_MS,
                           now_ms=now)


def test_the_high_watermark_is_the_smallest_log_end_in_the_isr():
    leader = _leader()
    leader.appended(10)
    assert leader.high_watermark == 0
    leader.follower_fetched(2, 10, 5)
    assert leader.high_watermark == 0  # follower 3 has nothing yet
    assert leader.acks_all_result(10) == AcksResult.PENDING
    leader.follower_fetched(3, 6, 6)
    assert leader.high_watermark == 6
    leader.follower_fetched(3, 10, 7)
    assert leader.high_watermark == 10 and leader.acks_all_result(10) == AcksResult.NONE


def test_a_lagging_follower_is_removed_through_the_controller_only():
    leader = _leader()
    leader.appended(10)
    leader.follower_fetched(2, 10, 100)
    assert leader.maybe_shrink(LAG_MS) is None  # a full window from election
    change = leader.maybe_shrink(LAG_MS + 1)
    assert change is not None and change.isr == (1, 2) and change.partition_epoch == 7
    # until the controller commits it, the old ISR still holds the high watermark back
    assert leader.high_watermark == 0 and leader.maybe_shrink(LAG_MS + 2) is None
    assert leader.committed((1, 2), 4, 8)
    assert leader.high_watermark == 10


def test_min_insync_replicas_before_and_after_append():
    leader = _leader(isr=(1,), min_isr=2)
    assert leader.check_before_append(-1) == AcksResult.NOT_ENOUGH_REPLICAS
    assert leader.check_before_append(1) == AcksResult.NONE
    leader.appended(5)
    assert leader.high_watermark == 0  # under min ISR the HW does not move
    # the ISR shrank to 2 of min 3 after the append: the acks=all answer says so
    leader = _leader(min_isr=3)
    leader.appended(5)
    for follower in (2, 3):
        leader.follower_fetched(follower, 5, 10)
    assert leader.acks_all_result(5) == AcksResult.NONE
    leader.maybe_shrink(LAG_MS * 3)
    leader.committed((1, 2), 4, 8)
    leader.appended(9)
    assert leader.check_before_append(-1) == AcksResult.NOT_ENOUGH_REPLICAS


def test_a_follower_that_caught_up_is_proposed_back():
    leader = _leader(isr=(1, 2))
    leader.appended(10)
    leader.follower_fetched(2, 10, 1)
    assert leader.high_watermark == 10
    _, change = leader.follower_fetched(3, 4, 2)
    assert change is None
    _, change = leader.follower_fetched(3, 10, 3)
    assert change is not None and change.isr == (1, 2, 3)
    leader.appended(12)
    leader.follower_fetched(2, 12, 4)
    assert leader.high_watermark == 10  # the pending newcomer counts at once
    leader.follower_fetched(3, 12, 5)
    assert leader.high_watermark == 12


def test_a_change_for_another_leader_epoch_ends_leadership():
    leader = _leader()
    assert not leader.committed((2, 3), 5, 8)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), min_isr=st.sampled_from([1, 2, 3]),
       commit_delay=st.integers(0, 400))
def test_no_acks_all_write_is_acknowledged_before_enough_replicas_hold_it(seed, min_isr,
                                                                        commit_delay):
    rng = random.Random(seed)
    leader = _leader(min_isr=min_isr)
    follower_end = {2: 0, 3: 0}
    stalled: dict[int, int] = {}  # follower -> until
    waiting: list[int] = []  # required offsets of acks=all produces
    to_commit: list[tuple[int, tuple[int, ...]]] = []
    hw = 0
    for now in range(0, 20000, 10):
        if rng.random() < 0.3 and leader.check_before_append(-1) == AcksResult.NONE:
            leader.appended(leader.log_end + rng.randint(1, 5))
            waiting.append(leader.log_end)
        for follower in (2, 3):
            if stalled.get(follower, -1) > now:
                continue
            if rng.random() < 0.002:
                stalled[follower] = now + rng.randint(500, 5000)
                continue
            if rng.random() < 0.5:
                # fetch: the follower copies up to the leader's end, then reports it
                _, change = leader.follower_fetched(follower, follower_end[follower], now)
                follower_end[follower] = leader.log_end
                if change:
                    to_commit.append((now + commit_delay, change.isr))
        change = leader.maybe_shrink(now)
        if change:
            to_commit.append((now + commit_delay, change.isr))
        for due, isr in list(to_commit):
            if due <= now:
                to_commit.remove((due, isr))
                leader.committed(isr, 4, leader.partition_epoch + 1)
        assert leader.high_watermark >= hw
        hw = leader.high_watermark
        for member in leader.maximal_isr:
            if member != 1:
                assert leader.followers[member].log_end >= hw
        for required in list(waiting):
            result = leader.acks_all_result(required)
            if result == AcksResult.PENDING:
                continue
            waiting.remove(required)
            if result == AcksResult.NONE:
                # acknowledged: the leader and min_isr - 1 followers reported holding it
                holders = 1 + sum(1 for f in (2, 3) if leader.followers[f].log_end >= required)
                assert holders >= min_isr
