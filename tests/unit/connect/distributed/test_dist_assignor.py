"""The incremental cooperative assignor: KIP-415's rules, as examples and as properties."""

from __future__ import annotations

from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from connect.runtime.distributed.assignor import (
    AssignmentResult,
    MemberState,
    assign,
    configured_work,
    max_config_offset,
    revocation_backoff_ms,
)
from connect.runtime.distributed.protocol import ConnectorsAndTasks
from connect.runtime.herder import ConnectorTaskId

EMPTY = ConnectorsAndTasks()
DELAY = 300_000


def url(member: str) -> str:
    return f"http://{member}:8083"


def fresh(names, counts=None) -> dict[str, MemberState]:
    return {m: MemberState(url(m), 0, (counts or {}).get(m, EMPTY)) for m in names}


def after(result: AssignmentResult, names=None, urls: Mapping[str, str] | None = None
          ) -> dict[str, MemberState]:
    """Members as they rejoin after applying ``result`` (optionally only ``names``, and new
    members with nothing)."""
    names = list(result.members) if names is None else names
    out = {}
    for m in names:
        full = result.members[m].full if m in result.members else EMPTY
        out[m] = MemberState((urls or {}).get(m, url(m)), 0, full)
    return out


def spread(result: AssignmentResult) -> tuple[int, int]:
    c = [len(a.full.connectors) for a in result.members.values()]
    t = [len(a.full.tasks) for a in result.members.values()]
    return max(c) - min(c), max(t) - min(t)


def all_full(result: AssignmentResult) -> list:
    items: list = []
    for a in result.members.values():
        items += list(a.full.connectors) + list(a.full.tasks)
    return items


def run(members, counts, state=None, now=0, delay=DELAY) -> AssignmentResult:
    return assign(members, counts, state, max_delay_ms=delay, now_ms=now)


COUNTS = {"c1": 3, "c2": 3, "c3": 3}


def test_new_cluster_spreads_connectors_and_each_connectors_tasks():
    r = run(fresh("abc"), COUNTS)
    assert spread(r) == (0, 0)
    for a in r.members.values():
        assert len(a.full.connectors) == 1
        assert sorted(t.connector for t in a.full.tasks) == ["c1", "c2", "c3"]
        assert a.assigned == a.full and a.revoked.is_empty()
    assert r.delay_ms == 0 and r.unassigned.is_empty()


def test_stable_cluster_is_a_fixpoint():
    r1 = run(fresh("abc"), COUNTS)
    r2 = run(after(r1), COUNTS, r1.state, now=10)
    assert all(a.assigned.is_empty() and a.revoked.is_empty() for a in r2.members.values())
    assert {m: a.full for m, a in r2.members.items()} == {m: a.full for m, a in r1.members.items()}


def test_deleted_connector_is_revoked_and_its_tasks_too():
    r1 = run(fresh("ab"), {"x": 2, "y": 2})
    r2 = run(after(r1), {"x": 2}, r1.state, now=1)
    revoked = ConnectorsAndTasks()
    for a in r2.members.values():
        revoked = revoked | a.revoked
        assert not any(t.connector == "y" for t in a.full.tasks)
    assert revoked == configured_work({"y": 2})


def test_fewer_tasks_revokes_the_extra_ones():
    r1 = run(fresh("ab"), {"x": 4})
    r2 = run(after(r1), {"x": 2}, r1.state, now=1)
    revoked = {t for a in r2.members.values() for t in a.revoked.tasks}
    assert revoked == {ConnectorTaskId("x", 2), ConnectorTaskId("x", 3)}


def test_new_worker_gets_surplus_in_the_round_after_it_was_revoked():
    r1 = run(fresh("ab"), {"x": 6, "y": 0})
    members = after(r1) | fresh("c")
    r2 = run(members, {"x": 6, "y": 0}, r1.state, now=1)
    revoked = [t for a in r2.members.values() for t in a.revoked.tasks]
    assert len(revoked) == 2  # a and b each give up one of their three
    assert r2.members["c"].assigned.tasks == frozenset()  # never revoke and assign at once
    assert set(revoked).isdisjoint(all_full(r2))
    r3 = run(after(r2), {"x": 6, "y": 0}, r2.state, now=2)
    assert r3.members["c"].assigned.tasks == frozenset(revoked)
    assert spread(r3) == (1, 0) and r3.unassigned.is_empty()  # 2 connectors, 3 workers


def test_duplicate_keeps_the_remembered_owner():
    r1 = run(fresh("ab"), {"x": 2})
    task = next(iter(r1.members["b"].full.tasks))
    members = after(r1)
    members["a"] = MemberState(url("a"), 0, members["a"].assignment | ConnectorsAndTasks.of(
        (), [task]))
    r2 = run(members, {"x": 2}, r1.state, now=1)
    assert task in r2.members["a"].revoked.tasks
    assert task in r2.members["b"].full.tasks and task not in r2.members["b"].revoked.tasks


def test_departed_worker_work_is_held_then_reassigned_after_the_delay():
    r1 = run(fresh("abc"), COUNTS)
    gone = r1.members["b"].full
    r2 = run(after(r1, ["a", "c"]), COUNTS, r1.state, now=1000)
    assert r2.delay_ms == DELAY and r2.unassigned == gone
    assert all(a.assigned.is_empty() and a.revoked.is_empty() for a in r2.members.values())
    # A round during the delay (say a config change) keeps holding and counts down.
    r3 = run(after(r2), COUNTS, r2.state, now=61_000)
    assert r3.delay_ms == DELAY - 60_000 and r3.unassigned == gone
    r4 = run(after(r3), COUNTS, r3.state, now=1000 + DELAY)
    assert r4.delay_ms == 0
    assert r4.members["a"].assigned | r4.members["c"].assigned == gone
    assert r4.unassigned.is_empty() and spread(r4) == (1, 1)


def test_zero_delay_reassigns_lost_work_at_once():
    r1 = run(fresh("abc"), COUNTS, delay=0)
    r2 = run(after(r1, ["a", "c"]), COUNTS, r1.state, now=1, delay=0)
    assert r2.delay_ms == 0 and r2.unassigned.is_empty()
    assert sorted(map(str, all_full(r2))) == sorted(map(str, all_full(r1)))


def test_restarted_worker_with_the_same_url_gets_its_work_back_at_once():
    r1 = run(fresh("abc"), COUNTS)
    r2 = run(after(r1, ["a", "c"]), COUNTS, r1.state, now=1000)
    members = after(r2) | {"b-new": MemberState(url("b"), 0, EMPTY)}
    r3 = run(members, COUNTS, r2.state, now=2000)
    assert r3.members["b-new"].assigned == r1.members["b"].full
    assert r3.delay_ms == 0 and r3.unassigned.is_empty()


def test_worker_returning_within_the_delay_with_its_work_keeps_it():
    r1 = run(fresh("abc"), COUNTS)
    r2 = run(after(r1, ["a", "c"]), COUNTS, r1.state, now=1000)
    members = after(r2) | {"b": MemberState(url("b"), 0, r1.members["b"].full)}
    r3 = run(members, COUNTS, r2.state, now=2000)
    assert all(a.assigned.is_empty() and a.revoked.is_empty() for a in r3.members.values())
    assert r3.delay_ms == 0 and r3.members["b"].full == r1.members["b"].full


def test_work_a_member_never_received_is_assigned_again_at_once():
    r1 = run(fresh("ab"), {"x": 2})
    members = after(r1)
    members["b"] = MemberState(url("b"), 0, EMPTY)  # b's SyncGroup answer was lost
    r2 = run(members, {"x": 2}, r1.state, now=1)
    assert r2.delay_ms == 0 and r2.unassigned.is_empty()
    assert r2.members["b"].full == r1.members["b"].full


def test_consecutive_revoking_rounds_back_off():
    counts = {"x": 12}
    r1 = run(fresh("a"), counts)
    r2 = run(after(r1) | fresh("b"), counts, r1.state, now=100)  # revokes 6 from a
    assert len(r2.members["a"].revoked.tasks) == 6
    # c joins before the revoked tasks were handed out: a second revoking round backs off.
    r3 = run(after(r2) | fresh("c"), counts, r2.state, now=200)
    assert all(a.revoked.is_empty() for a in r3.members.values())
    assert r3.delay_ms == revocation_backoff_ms(1, DELAY) == 40
    # Assignment of new and revoked work continues meanwhile.
    assert r3.unassigned.is_empty()
    r4 = run(after(r3), counts, r3.state, now=240)
    assert any(a.revoked for a in r4.members.values())
    r5 = run(after(r4), counts, r4.state, now=250)
    assert spread(r5) == (1, 0) and r5.unassigned.is_empty()  # one connector
    assert r5.state.successive_revoking_rounds == 0


def test_zero_delay_never_backs_off_revocations():
    counts = {"x": 12}
    r1 = run(fresh("a"), counts, delay=0)
    r2 = run(after(r1) | fresh("b"), counts, r1.state, now=100, delay=0)
    r3 = run(after(r2) | fresh("c"), counts, r2.state, now=200, delay=0)
    assert any(a.revoked for a in r3.members.values()) and r3.delay_ms == 0
    assert r3.state.successive_revoking_rounds == 1


def test_backoff_grows_and_is_capped():
    assert [revocation_backoff_ms(n, DELAY) for n in range(5)] == [0, 40, 1600, 64000, DELAY]
    assert revocation_backoff_ms(3, 0) == 0


def test_max_config_offset():
    assert max_config_offset({"a": MemberState("u", 5), "b": MemberState("v", 9)}) == 9
    assert max_config_offset({}) == -1


def test_result_does_not_depend_on_member_order():
    r1 = run(fresh("abcd"), {"x": 5, "y": 2})
    shuffled = dict(reversed(list(after(r1).items()))) | fresh("e")
    a = run(shuffled, {"x": 5, "y": 3, "z": 1}, r1.state, now=5)
    b = run(dict(sorted(shuffled.items())), {"z": 1, "y": 3, "x": 5}, r1.state, now=5)
    assert a == b


# ---------------------------------------------------------------------------- properties

member_names = st.lists(st.sampled_from("abcdefg"), min_size=1, max_size=7, unique=True)
task_counts = st.dictionaries(st.sampled_from(["c1", "c2", "c3", "c4", "c5"]),
                              st.integers(0, 7), max_size=5)


@st.composite
def clusters(draw):
    """Members holding random work: configured or not, possibly on several members."""
    names = draw(member_names)
    counts = draw(task_counts)
    pool = list(configured_work(counts).connectors) + list(configured_work(counts).tasks)
    pool += ["gone", ConnectorTaskId("gone", 0), ConnectorTaskId("c1", 9)]
    held: dict[str, ConnectorsAndTasks] = {}
    for m in names:
        items = draw(st.lists(st.sampled_from(pool), max_size=10))
        held[m] = ConnectorsAndTasks.of([i for i in items if isinstance(i, str)],
                                        [i for i in items if isinstance(i, ConnectorTaskId)])
    return names, counts, held


def check_round(members: Mapping[str, MemberState], counts, r: AssignmentResult) -> None:
    configured = configured_work(counts)
    items = all_full(r)
    assert len(items) == len(set(items)), "something is assigned twice"
    assert set(items) <= set(configured.connectors) | set(configured.tasks)
    placed = ConnectorsAndTasks.of([i for i in items if isinstance(i, str)],
                                   [i for i in items if isinstance(i, ConnectorTaskId)])
    assert placed | r.unassigned == configured and (placed & r.unassigned).is_empty()
    for m, a in r.members.items():
        held = members[m].assignment
        assert (a.revoked - held).is_empty()
        # Never revoke and assign in the same round: revoked work runs afterwards only
        # where it ran already (a duplicate's keeper).
        for k, other in r.members.items():
            assert (a.revoked & other.assigned).is_empty()
            assert (a.revoked & other.full - members[k].assignment).is_empty()
        # Work that stays does not restart: full = held - revoked + assigned.
        assert a.full == (held - a.revoked) | a.assigned
        assert (a.assigned & held).is_empty()


@settings(max_examples=300)
@given(clusters())
def test_two_rounds_balance_any_cluster_and_nothing_is_assigned_twice(cluster):
    names, counts, held = cluster
    members = fresh(names, held)
    r1 = run(members, counts)
    check_round(members, counts, r1)
    members2 = after(r1)
    r2 = run(members2, counts, r1.state, now=1)
    check_round(members2, counts, r2)
    assert spread(r2)[0] <= 1 and spread(r2)[1] <= 1
    assert r2.unassigned.is_empty() and r2.delay_ms == 0
    assert all(a.revoked.is_empty() for a in r2.members.values())
    # Balanced, so a third round changes nothing.
    r3 = run(after(r2), counts, r2.state, now=2)
    assert all(not a.assigned and not a.revoked for a in r3.members.values())


@settings(max_examples=300)
@given(clusters())
def test_only_surplus_deleted_or_duplicate_work_is_revoked(cluster):
    names, counts, held = cluster
    members = fresh(names, held)
    r = run(members, counts)
    configured = configured_work(counts)
    n = len(names)
    holders: dict[object, int] = {}
    for m in names:
        for item in list(held[m].connectors) + list(held[m].tasks):
            holders[item] = holders.get(item, 0) + 1
    for kind, total in (("connectors", len(configured.connectors)),
                        ("tasks", len(configured.tasks))):
        base, share = total // n, -(-total // n)  # the smallest and largest even shares
        for m in names:
            mine = getattr(held[m] & configured, kind)
            revoked = getattr(r.members[m].revoked, kind)
            kept = mine - revoked
            moved_for_balance = {i for i in revoked & mine if holders[i] == 1}
            if len(mine) <= base:
                assert not moved_for_balance, f"{m} gave up {kind} it needed not move"
            if moved_for_balance:
                assert len(kept) >= base
            assert len(kept) <= share


@settings(max_examples=200)
@given(clusters(), st.data())
def test_lost_work_is_held_for_the_delay_then_everything_is_assigned(cluster, data):
    names, counts, held = cluster
    if len(names) < 2:
        names = [*names, "z"]
    r1 = run(fresh(names, held), counts)
    r2 = run(after(r1), counts, r1.state, now=1)  # balanced, nothing unassigned
    leaving = data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=len(names) - 1,
                                 unique=True))
    stay = [m for m in names if m not in leaving]
    lost = ConnectorsAndTasks()
    for m in leaving:
        lost = lost | r2.members[m].full
    r3 = run(after(r2, stay), counts, r2.state, now=1000)
    check_round(after(r2, stay), counts, r3)
    assert r3.unassigned == lost
    assert all(a.revoked.is_empty() and a.assigned.is_empty() for a in r3.members.values())
    assert r3.delay_ms == (DELAY if lost else 0)
    r4 = run(after(r3), counts, r3.state, now=1000 + DELAY)
    check_round(after(r3), counts, r4)
    assert r4.delay_ms == 0
    r5 = run(after(r4), counts, r4.state, now=1001 + DELAY)
    assert r5.unassigned.is_empty()
    assert spread(r5)[0] <= 1 and spread(r5)[1] <= 1


@settings(max_examples=200)
@given(clusters())
def test_assignment_is_deterministic(cluster):
    names, counts, held = cluster
    a = run(fresh(names, held), counts)
    b = run(dict(reversed(list(fresh(names, held).items()))), dict(reversed(counts.items())))
    assert a == b

