"""The coordinator under concurrent members and a ticking driver, on the real clock."""

from __future__ import annotations

import threading

from core.group import (
    ErrorCode,
    GroupCoordinator,
    JoinGroupRequest,
    OffsetCommit,
    SyncGroupRequest,
)
from core.group.outbox import Outbox

E = ErrorCode
WAIT_S = 20.0  # a bound on any single blocking call; a hang fails the test instead


def _blocking(call, request):
    done = threading.Event()
    box = []

    def callback(response):
        box.append(response)
        done.set()

    call(request, callback)
    assert done.wait(WAIT_S), f"no answer to {request}"
    return box[0]


def _member(coordinator: GroupCoordinator, name: str, rounds: int, results: dict) -> None:
    member_id = ""
    synced = 0
    for _ in range(rounds * 10):  # bounded: retries included
        if synced >= rounds:
            break
        answer = _blocking(coordinator.join_group, JoinGroupRequest(
            "g", member_id, None, "consumer", [("range", name.encode())], 6_000, 3_000,
            name))
        if answer.error_code == E.MEMBER_ID_REQUIRED:
            member_id = answer.member_id
            continue
        if answer.error_code == E.UNKNOWN_MEMBER_ID:
            member_id = ""
            continue
        if answer.error_code != E.NONE:
            continue
        assignments = {m.member_id: m.metadata for m in answer.members}
        sync = _blocking(coordinator.sync_group, SyncGroupRequest(
            "g", answer.generation_id, member_id, assignments=assignments))
        if sync.error_code != E.NONE:
            continue
        assert sync.assignment == name.encode()
        coordinator.heartbeat("g", answer.generation_id, member_id)
        coordinator.commit_offsets("g", answer.generation_id, member_id, None,
                                   {(name, 0): OffsetCommit(synced)})
        synced += 1
    coordinator.leave_group("g", [(member_id, None)])
    results[name] = synced


def test_concurrent_members_all_get_their_assignment_and_leave_an_empty_group():
    coordinator = GroupCoordinator(group_initial_rebalance_delay_ms=0)
    stop = threading.Event()

    def ticker():
        while not stop.wait(0.01):
            coordinator.tick()

    tick_thread = threading.Thread(target=ticker, daemon=True)
    tick_thread.start()
    results: dict[str, int] = {}
    errors: list[BaseException] = []

    def run(name):
        try:
            _member(coordinator, name, 3, results)
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)

    members = [threading.Thread(target=run, args=(f"m{i}",), daemon=True) for i in range(3)]
    for thread in members:
        thread.start()
    for thread in members:
        thread.join(timeout=60)
    stop.set()
    tick_thread.join(timeout=5)
    assert not any(t.is_alive() for t in members), "a member is stuck"
    assert errors == []
    assert results == {"m0": 3, "m1": 3, "m2": 3}
    assert coordinator.describe_group("g").state == "Empty"
    assert {tp for tp in coordinator.fetch_offsets("g", None)} == {
        ("m0", 0), ("m1", 0), ("m2", 0)}
    coordinator.close()


def test_a_failing_callback_does_not_stop_the_others():
    seen = []

    def broken(response):
        raise RuntimeError("driver bug")

    out = Outbox()
    out.add(broken, 1)
    out.add(seen.append, 2)
    out.deliver()
    assert seen == [2]
