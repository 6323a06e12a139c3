"""Rebalances driven by leaving, failing and slow members, and static membership."""

from __future__ import annotations

from core.group import ErrorCode, OffsetCommit

E = ErrorCode


def _leader_and_follower(a, b):
    return (a, b) if a.leader_id == a.member_id else (b, a)


def test_leave_rebalances_the_rest(h):
    a, b = h.stable_group(2)
    assert h.coordinator.leave_group("g", [(b.member_id, None)]) == (E.NONE, [E.NONE])
    assert h.heartbeat(a.member_id, 2) == E.REBALANCE_IN_PROGRESS
    alone = h.join(a.member_id).one()
    assert (alone.generation_id, alone.leader_id, len(alone.members)) == (3, a.member_id, 1)
    assert h.heartbeat(b.member_id, 2) == E.UNKNOWN_MEMBER_ID


def test_leaving_leader_hands_leadership_over(h):
    a, b = h.stable_group(2)
    leader, follower = _leader_and_follower(a, b)
    h.coordinator.leave_group("g", [(leader.member_id, None)])
    answer = h.join(follower.member_id).one()
    assert answer.leader_id == follower.member_id


def test_leave_errors_per_member(h):
    (a,) = h.stable_group(1)
    top, errors = h.coordinator.leave_group("g", [("ghost", None), (a.member_id, None)])
    assert (top, errors) == (E.NONE, [E.UNKNOWN_MEMBER_ID, E.NONE])
    assert h.coordinator.leave_group("nope", [("x", None)]) == (E.NONE, [E.UNKNOWN_MEMBER_ID])
    assert h.coordinator.leave_group("", [("x", None)]) == (E.INVALID_GROUP_ID, [])
    # The last member left: the group is Empty at the next generation.
    summary = h.coordinator.describe_group("g")
    assert (summary.state, summary.generation_id, summary.members) == ("Empty", 2, [])


def test_a_pending_member_may_leave(h):
    pending = h.join("").one()
    assert h.coordinator.leave_group("g", [(pending.member_id, None)]) == (E.NONE, [E.NONE])
    assert h.join(pending.member_id).one().error_code == E.UNKNOWN_MEMBER_ID


def test_session_expiry_removes_a_silent_member_and_rebalances(h):
    a, b = h.stable_group(2, session=10_000)
    for _ in range(2):
        h.tick(4_000)
        assert h.heartbeat(a.member_id, 2) == E.NONE
    h.tick(4_000)  # b has now been silent for 12 s, past its 10 s session
    assert h.heartbeat(b.member_id, 2) == E.UNKNOWN_MEMBER_ID
    assert h.heartbeat(a.member_id, 2) == E.REBALANCE_IN_PROGRESS
    assert [m.member_id for m in h.join(a.member_id).one().members] == [a.member_id]


def test_heartbeat_errors(h):
    (a,) = h.stable_group(1)
    assert h.heartbeat(a.member_id, 0) == E.ILLEGAL_GENERATION
    assert h.heartbeat("ghost", 1) == E.UNKNOWN_MEMBER_ID
    assert h.heartbeat(a.member_id, 1, group="other") == E.UNKNOWN_MEMBER_ID
    assert h.heartbeat(a.member_id, 1, group="") == E.INVALID_GROUP_ID


def test_rebalance_timeout_evicts_a_member_that_does_not_rejoin(h):
    a, b = h.stable_group(2, session=10_000, rebalance=30_000)
    c = h.join_new(session=10_000, rebalance=30_000)
    a_rejoin = h.join(a.member_id, session=10_000, rebalance=30_000)
    # b keeps heartbeating (it is alive) but never rejoins.
    for _ in range(5):
        h.tick(5_000)
        assert h.heartbeat(b.member_id, 2) == E.REBALANCE_IN_PROGRESS
    assert not a_rejoin.done and not c.done
    h.tick(5_000)  # 30 s since the rebalance began
    assert a_rejoin.one().generation_id == c.one().generation_id == 3
    leader = a_rejoin.one() if a_rejoin.one().members else c.one()
    assert {m.member_id for m in leader.members} == {a.member_id, c.one().member_id}
    assert h.heartbeat(b.member_id, 3) == E.UNKNOWN_MEMBER_ID


def test_a_member_waiting_in_join_is_not_expired(h):
    a, b = _leader_and_follower(*h.stable_group(2, session=10_000, rebalance=60_000))
    h.join(a.member_id, session=10_000, rebalance=60_000)  # the leader: a rebalance, waits
    for _ in range(5):
        h.tick(5_000)  # 25 s: well past a's session, but a is waiting in its join
        assert h.heartbeat(b.member_id, 2) == E.REBALANCE_IN_PROGRESS
    assert {m.member_id for m in h.coordinator.describe_group("g").members} == {
        a.member_id, b.member_id}
    b_rejoin = h.join(b.member_id, session=10_000, rebalance=60_000).one()
    assert b_rejoin.generation_id == 3


def test_pending_member_holds_the_rebalance_until_it_expires(h):
    (a,) = h.stable_group(1)
    b = h.join("", require_known=False)
    assert not b.done
    pending = h.join("", session=8_000).one()  # gets an id, never comes back
    a_rejoin = h.join(a.member_id)
    assert not a_rejoin.done, "the join phase must wait for the pending member"
    h.tick(7_999)
    assert not a_rejoin.done
    h.tick(1)
    assert a_rejoin.one().generation_id == b.one().generation_id == 2
    assert h.join(pending.member_id, session=8_000).one().error_code == E.UNKNOWN_MEMBER_ID


def test_followers_are_not_stuck_when_the_leader_never_syncs(h):
    a, b = h.stable_group(2, session=10_000, rebalance=20_000)
    leader, follower = _leader_and_follower(a, b)
    h.join(leader.member_id, session=10_000, rebalance=20_000)
    h.join(follower.member_id, session=10_000, rebalance=20_000)
    waiting = h.sync(follower.member_id, 3)
    for _ in range(3):
        h.tick(6_000)
        # The leader heartbeats, so only the SyncGroup deadline can catch it.
        h.heartbeat(leader.member_id, 3)
    h.tick(2_000)  # 20 s after the join completed
    assert waiting.one().error_code == E.REBALANCE_IN_PROGRESS
    assert h.heartbeat(leader.member_id, 3) == E.UNKNOWN_MEMBER_ID
    answer = h.join(follower.member_id, session=10_000, rebalance=20_000).one()
    assert (answer.generation_id, answer.leader_id) == (4, follower.member_id)


def test_static_member_joins_without_a_member_id_round_trip(h):
    answer = h.join("", instance="host-1").one()
    assert answer.error_code == E.NONE
    assert answer.member_id.startswith("host-1-")
    assert answer.members[0].group_instance_id == "host-1"


def test_static_member_restart_replaces_its_old_id_without_a_rebalance(h):
    i1 = h.join("", instance="i1").one()
    h.sync(i1.member_id, 1, {i1.member_id: b"alone"}, instance="i1")
    i2_join = h.join("", instance="i2")
    i1 = h.join(i1.member_id, instance="i1").one()
    i2 = i2_join.one()
    assert i1.leader_id == i1.member_id and i1.generation_id == 2
    i2_sync = h.sync(i2.member_id, 2, instance="i2")
    h.sync(i1.member_id, 2, {i1.member_id: b"one", i2.member_id: b"two"}, instance="i1")
    assert i2_sync.one().assignment == b"two"
    leader, generation = i1, 2

    restarted = h.join("", instance="i1").one()
    assert restarted.error_code == E.NONE
    assert restarted.member_id != i1.member_id
    assert restarted.generation_id == generation
    assert restarted.leader_id == leader.member_id  # the old leader id, even if it was i1
    assert h.coordinator.describe_group("g").state == "Stable"
    assert h.heartbeat(i2.member_id, generation, instance="i2") == E.NONE
    assert h.sync(restarted.member_id, generation, instance="i1").one().assignment == b"one"

    # The old incarnation is fenced everywhere.
    assert h.heartbeat(i1.member_id, generation, instance="i1") == E.FENCED_INSTANCE_ID
    assert h.sync(i1.member_id, generation, instance="i1").one().error_code == \
        E.FENCED_INSTANCE_ID
    assert h.join(i1.member_id, instance="i1").one().error_code == E.FENCED_INSTANCE_ID
    assert h.coordinator.commit_offsets("g", generation, i1.member_id, "i1",
                                        {("t", 0): OffsetCommit(5)}) == {
        ("t", 0): E.FENCED_INSTANCE_ID}
    assert h.coordinator.leave_group("g", [(i1.member_id, "i1")]) == (
        E.NONE, [E.FENCED_INSTANCE_ID])


def test_static_member_restart_with_changed_protocols_rebalances(h):
    first = h.join("", instance="i1").one()
    h.sync(first.member_id, 1, {first.member_id: b"x"}, instance="i1").one()
    # It is the only member and it rejoined at once, so the new generation completes.
    answer = h.join("", instance="i1", protocols=[("range", b"other-topics")]).one()
    assert (answer.error_code, answer.generation_id) == (E.NONE, 2)
    assert answer.members[0].metadata == b"other-topics"
    assert h.heartbeat(first.member_id, 2, instance="i1") == E.FENCED_INSTANCE_ID


def test_static_member_may_be_removed_by_instance_id(h):
    first = h.join("", instance="i1").one()
    assert h.coordinator.leave_group("g", [("", "i1")]) == (E.NONE, [E.NONE])
    assert h.coordinator.leave_group("g", [("", "i1")]) == (E.NONE, [E.UNKNOWN_MEMBER_ID])
    assert h.heartbeat(first.member_id, 1, instance="i1") == E.UNKNOWN_MEMBER_ID


def test_static_member_that_does_not_rejoin_stays_through_the_rebalance(h):
    static = h.join("", instance="s").one()
    dynamic_pending = h.join_new()
    h.join(static.member_id, instance="s")
    dynamic = dynamic_pending.one()
    h.sync(static.member_id, 2, instance="s", assignments={})
    h.sync(dynamic.member_id, 2)
    # The dynamic member asks for a rebalance; the static one does not rejoin in time.
    waiting = h.join(dynamic.member_id, protocols=[("range", b"changed")])
    for _ in range(6):
        h.tick(5_000)  # the static member stays alive but does not rejoin
        assert h.heartbeat(static.member_id, 2, instance="s") in (
            E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION)
    answer = waiting.one()
    assert answer.generation_id == 3
    assert {m.member_id for m in h.coordinator.describe_group("g").members} == {
        static.member_id, dynamic.member_id}


def test_close_answers_waiting_requests_and_refuses_the_rest(make):
    h = make(group_initial_rebalance_delay_ms=3_000)
    waiting = h.join_new()
    h.coordinator.close()
    assert waiting.one().error_code == E.COORDINATOR_NOT_AVAILABLE
    assert h.join("").one().error_code == E.COORDINATOR_NOT_AVAILABLE
    assert h.heartbeat("x", 1) == E.COORDINATOR_NOT_AVAILABLE
    h.coordinator.close()  # idempotent


def test_a_repeated_join_supersedes_the_waiting_one(h):
    a, b = h.stable_group(2)
    leader, follower = _leader_and_follower(a, b)
    first = h.join(leader.member_id)
    second = h.join(leader.member_id)
    assert first.one().error_code == E.REBALANCE_IN_PROGRESS
    assert not second.done
    h.join(follower.member_id)
    assert second.one().generation_id == 3


def test_a_new_member_stuck_in_its_first_join_expires_after_five_minutes(h):
    (a,) = h.stable_group(1, rebalance=600_000)
    newcomer = h.join_new(rebalance=600_000)
    for _ in range(59):
        h.tick(5_000)  # a heartbeats but never rejoins; the join phase lasts 10 minutes
        assert h.heartbeat(a.member_id, 1) == E.REBALANCE_IN_PROGRESS
    assert not newcomer.done
    h.tick(5_000)  # 300 s
    assert newcomer.one().error_code == E.UNKNOWN_MEMBER_ID
    assert [m.member_id for m in h.coordinator.describe_group("g").members] == [a.member_id]
