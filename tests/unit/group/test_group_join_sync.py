"""JoinGroup and SyncGroup: member ids, generations, leaders, protocols, waiting syncs."""

from __future__ import annotations

import threading

from core.group import ErrorCode, JoinGroupRequest

E = ErrorCode


def test_a_new_member_gets_an_id_first_then_joins_and_leads_a_group_of_one(h):
    first = h.join("", client_id="app").one()
    assert first.error_code == E.MEMBER_ID_REQUIRED
    assert first.member_id.startswith("app-") and len(first.member_id) > len("app-")
    assert first.generation_id == -1

    answer = h.join(first.member_id, client_id="app").one()
    assert answer.error_code == E.NONE
    assert answer.member_id == first.member_id
    assert answer.generation_id == 1
    assert answer.leader_id == answer.member_id
    assert (answer.protocol_type, answer.protocol_name) == ("consumer", "range")
    assert [tuple(m) for m in answer.members] == [(answer.member_id, None, b"range-meta")]

    sync = h.sync(answer.member_id, 1, {answer.member_id: b"p0,p1"}).one()
    assert (sync.error_code, sync.assignment) == (E.NONE, b"p0,p1")
    assert (sync.protocol_type, sync.protocol_name) == ("consumer", "range")
    assert h.heartbeat(answer.member_id, 1) == E.NONE

    summary = h.coordinator.describe_group("g")
    assert (summary.state, summary.protocol_type, summary.protocol_name,
            summary.generation_id) == ("Stable", "consumer", "range", 1)
    (member,) = summary.members
    assert (member.member_id, member.client_id, member.client_host, member.metadata,
            member.assignment) == (answer.member_id, "app", "/127.0.0.1", b"range-meta",
                                   b"p0,p1")


def test_pending_member_keeps_the_group_known_but_empty(h):
    h.join("")
    assert h.coordinator.list_groups() == [("g", "", "Empty")]


def test_without_require_known_member_id_the_member_is_added_directly(h):
    answer = h.join("", require_known=False, client_id="old").one()
    assert answer.error_code == E.NONE
    assert answer.member_id.startswith("old-")
    assert answer.generation_id == 1


def test_join_errors_before_any_state_change(h):
    assert h.join("", group="").one().error_code == E.INVALID_GROUP_ID
    assert h.join("", session=5_999).one().error_code == E.INVALID_SESSION_TIMEOUT
    assert h.join("", session=1_800_001).one().error_code == E.INVALID_SESSION_TIMEOUT
    # A member id the coordinator never issued, for a group it does not know.
    assert h.join("ghost").one().error_code == E.UNKNOWN_MEMBER_ID
    assert h.join("", protocols=[]).one().error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.join("", protocol_type="").one().error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.coordinator.list_groups() == []


def test_second_member_triggers_a_rebalance_and_the_follower_waits_for_the_leader(h):
    (a,) = h.stable_group(1)
    b_pending = h.join_new(client_id="b")
    assert not b_pending.done  # waits for the known member to rejoin
    assert h.heartbeat(a.member_id, 1) == E.REBALANCE_IN_PROGRESS
    assert h.coordinator.describe_group("g").state == "PreparingRebalance"

    a2 = h.join(a.member_id).one()
    b = b_pending.one()
    assert a2.generation_id == b.generation_id == 2
    assert a2.leader_id == b.leader_id == a.member_id
    assert [m.member_id for m in a2.members] == [a.member_id, b.member_id]
    assert b.members == []
    assert h.heartbeat(b.member_id, 2) == E.NONE  # CompletingRebalance

    b_sync = h.sync(b.member_id, 2)
    assert not b_sync.done
    assert h.coordinator.describe_group("g").state == "CompletingRebalance"
    a_sync = h.sync(a.member_id, 2, {a.member_id: b"A", b.member_id: b"B"})
    assert a_sync.one().assignment == b"A"
    assert b_sync.one().assignment == b"B"
    assert h.coordinator.describe_group("g").state == "Stable"


def test_a_member_left_out_of_the_leaders_assignment_gets_empty_bytes(h):
    a, b = h.stable_group(2)
    leader, follower = (a, b) if a.leader_id == a.member_id else (b, a)
    h.join(leader.member_id)  # a leader's rejoin starts generation 3
    assert h.join(follower.member_id).one().generation_id == 3
    follower_sync = h.sync(follower.member_id, 3)
    leader_sync = h.sync(leader.member_id, 3, {leader.member_id: b"all", "stranger": b"x"})
    assert leader_sync.one().assignment == b"all"
    assert (follower_sync.one().error_code, follower_sync.one().assignment) == (E.NONE, b"")


def test_sync_errors(h):
    (a,) = h.stable_group(1)
    assert h.sync("ghost", 1).one().error_code == E.UNKNOWN_MEMBER_ID
    assert h.sync(a.member_id, 0).one().error_code == E.ILLEGAL_GENERATION
    assert h.sync(a.member_id, 1, group="other").one().error_code == E.UNKNOWN_MEMBER_ID
    assert h.sync(a.member_id, 1, protocol_name="roundrobin").one().error_code == \
        E.INCONSISTENT_GROUP_PROTOCOL
    assert h.sync(a.member_id, 1, protocol_name="range").one().error_code == E.NONE
    h.join_new()  # a newcomer: PreparingRebalance
    assert h.sync(a.member_id, 1).one().error_code == E.REBALANCE_IN_PROGRESS


def test_waiting_syncs_are_told_to_rejoin_when_a_new_rebalance_starts(h):
    a, b = h.stable_group(2)
    leader, follower = (a, b) if a.leader_id == a.member_id else (b, a)
    h.join(leader.member_id)
    follower3 = h.join(follower.member_id).one()
    waiting = h.sync(follower.member_id, follower3.generation_id)
    assert not waiting.done
    h.join_new()  # a newcomer during CompletingRebalance
    assert waiting.one().error_code == E.REBALANCE_IN_PROGRESS
    assert h.coordinator.describe_group("g").state == "PreparingRebalance"


def test_stable_follower_rejoining_unchanged_gets_the_current_generation_at_once(h):
    a, b = h.stable_group(2)
    follower = a if a.leader_id != a.member_id else b
    again = h.join(follower.member_id).one()
    assert (again.error_code, again.generation_id, again.members) == (E.NONE, 2, [])
    assert again.leader_id == follower.leader_id
    assert h.coordinator.describe_group("g").state == "Stable"
    assert h.sync(follower.member_id, 2).one().assignment == follower.member_id.encode()


def test_stable_leader_rejoin_or_changed_metadata_starts_a_rebalance(h):
    a, b = h.stable_group(2)
    leader, follower = (a, b) if a.leader_id == a.member_id else (b, a)
    h.join(leader.member_id)
    assert h.coordinator.describe_group("g").state == "PreparingRebalance"
    h.join(follower.member_id).one()
    h.sync(follower.member_id, 3)
    h.sync(leader.member_id, 3, {})
    assert h.coordinator.describe_group("g").state == "Stable"

    h.join(follower.member_id, protocols=[("range", b"new-subscription")])
    assert h.coordinator.describe_group("g").state == "PreparingRebalance"
    leader4 = h.join(leader.member_id).one()
    assert {m.member_id: m.metadata for m in leader4.members}[follower.member_id] == \
        b"new-subscription"


def test_member_rejoining_during_completing_rebalance_gets_the_same_answer_again(h):
    a, b = h.stable_group(2)
    leader, follower = (a, b) if a.leader_id == a.member_id else (b, a)
    h.join(leader.member_id)
    h.join(follower.member_id)
    again = h.join(leader.member_id).one()  # e.g. the first answer was lost
    assert again.generation_id == 3
    assert len(again.members) == 2
    assert h.coordinator.describe_group("g").state == "CompletingRebalance"


def test_protocol_is_the_one_all_members_support(make):
    h = make(group_initial_rebalance_delay_ms=1_000)
    prefs = [[("roundrobin", b"a-rr"), ("range", b"a-range")],
             [("range", b"b-range"), ("roundrobin", b"b-rr")],
             [("range", b"c-range"), ("sticky", b"c-sticky")]]
    joins = [h.join_new(protocols=p) for p in prefs]
    for _ in range(10):
        if all(j.done for j in joins):
            break
        h.tick(1_000)
    answers = [j.one() for j in joins]
    assert {a.protocol_name for a in answers} == {"range"}
    leader = next(a for a in answers if a.members)
    assert sorted(m.metadata for m in leader.members) == [b"a-range", b"b-range", b"c-range"]


def test_votes_pick_the_protocol_most_members_prefer(h):
    both = [("roundrobin", b"r"), ("range", b"g")]
    answers = h.stable_group(3, protocols=both)
    assert {a.protocol_name for a in answers} == {"roundrobin"}
    # Two of three now prefer range; the oldest member, which votes first, does not.
    newest, middle, oldest = answers
    h.join(middle.member_id, protocols=list(reversed(both)))
    rejoins = [h.join(oldest.member_id, protocols=both),
               h.join(newest.member_id, protocols=list(reversed(both)))]
    assert {r.one().protocol_name for r in rejoins} == {"range"}


def test_inconsistent_protocols_are_refused(h):
    (a,) = h.stable_group(1)
    assert h.join("", protocols=[("sticky", b"")]).one().error_code == \
        E.INCONSISTENT_GROUP_PROTOCOL
    assert h.join("", protocol_type="connect").one().error_code == \
        E.INCONSISTENT_GROUP_PROTOCOL
    # A member that is alone may switch assignor (it only has to agree with itself).
    alone = h.join(a.member_id, protocols=[("sticky", b"s")]).one()
    assert (alone.error_code, alone.protocol_name) == (E.NONE, "sticky")


def test_group_max_size_refuses_newcomers_but_not_members(make):
    h = make(group_max_size=2)
    a, b = h.stable_group(2)
    assert h.join("").one().error_code == E.GROUP_MAX_SIZE_REACHED
    assert h.join("", require_known=False).one().error_code == E.GROUP_MAX_SIZE_REACHED
    follower = a if a.leader_id != a.member_id else b
    assert h.join(follower.member_id).one().error_code == E.NONE
    assert len(h.coordinator.describe_group("g").members) == 2


def test_initial_rebalance_delay_gathers_members_and_extends_per_newcomer(make):
    h = make(group_initial_rebalance_delay_ms=3_000)
    a = h.join_new(rebalance=10_000)
    h.tick(1_000)
    b = h.join_new(rebalance=10_000)
    h.tick(1_999)
    assert not a.done and not b.done
    h.tick(1)  # 3 s: the delay ends, but b arrived during it: wait once more
    assert not a.done
    h.tick(2_999)
    assert not a.done
    h.tick(1)
    assert a.one().generation_id == b.one().generation_id == 1
    assert len(a.one().members) == 2


def test_initial_rebalance_delay_is_bounded_by_the_rebalance_timeout(make):
    h = make(group_initial_rebalance_delay_ms=3_000)
    first = h.join_new(rebalance=7_000)
    waited = 0
    while not first.done:
        h.join_new(rebalance=7_000)  # a newcomer in every delay period
        h.tick(1_000)
        waited += 1_000
        assert waited <= 7_000, "the initial delay outlasted the rebalance timeout"
    assert first.one().generation_id == 1
    assert waited == 7_000


def test_callbacks_run_outside_the_lock_so_they_may_call_the_coordinator(h):
    seen = []

    def on_join(response):
        # A heartbeat from inside the callback, as an eager driver might send one.
        seen.append(h.heartbeat(response.member_id, response.generation_id))

    first = h.join("").one()
    worker = threading.Thread(target=h.coordinator.join_group, args=(JoinGroupRequest(
        "g", first.member_id, None, "consumer", [("range", b"")], 10_000, 30_000), on_join))
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "join_group deadlocked calling back into the coordinator"
    assert seen == [E.NONE]
