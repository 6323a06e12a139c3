"""LogBackend contract: group offsets, classic group membership, and the Consumer on top."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from core.backends import OffsetAndMetadata, ProducerRecord, TopicPartition
from core.backends import errors as be
from core.backends.consumer import Consumer

TIMEOUT_S = 30


def test_simple_commit_and_fetch_survive_reopen(harness, backend):
    backend.create_topic("t", 2)
    tp0, tp1 = TopicPartition("t", 0), TopicPartition("t", 1)
    # Commits name existing partitions only, as Kafka requires.
    with pytest.raises(be.UnknownTopicError):
        backend.commit_offsets("g", {TopicPartition("missing", 0): OffsetAndMetadata(1)})
    backend.commit_offsets("g", {tp0: OffsetAndMetadata(5, "meta"), tp1: OffsetAndMetadata(7)})
    assert backend.fetch_offsets("g", [tp0])[tp0].offset == 5
    assert backend.fetch_offsets("g", [tp0])[tp0].metadata == "meta"
    backend.commit_offsets("g", {tp0: OffsetAndMetadata(6)})
    again = harness.reopen(backend)
    committed = again.fetch_offsets("g")
    assert {tp: om.offset for tp, om in committed.items()} == {tp0: 6, tp1: 7}
    assert again.fetch_offsets("other-group") == {}


def test_delete_group_offsets_survives_reopen(harness, backend):
    backend.create_topic("d", 2)
    tp0, tp1 = TopicPartition("d", 0), TopicPartition("d", 1)
    backend.commit_offsets("eraser", {tp0: OffsetAndMetadata(5), tp1: OffsetAndMetadata(7)})
    backend.delete_group_offsets("eraser", [tp0])
    assert set(backend.fetch_offsets("eraser")) == {tp1}
    with pytest.raises(be.UnknownTopicError):
        backend.delete_group_offsets("eraser", [TopicPartition("missing", 0)])
    with pytest.raises(be.GroupError):
        backend.delete_group_offsets("no-such-group", [tp0])
    again = harness.reopen(backend)
    assert {tp: om.offset for tp, om in again.fetch_offsets("eraser").items()} == {tp1: 7}
    # Deleting the last offset of an Empty group deletes the group.
    again.delete_group_offsets("eraser", [tp1])
    assert again.describe_group("eraser").state == "Dead"


def _join(backend, group, member_id="", protocols=(("range", b"m"),), **kw):
    return backend.join_group(group, member_id=member_id, protocol_type="consumer",
                              protocols=list(protocols), session_timeout_ms=10000,
                              rebalance_timeout_ms=10000, **kw)


def test_single_member_join_sync_heartbeat_leave(backend):
    joined = _join(backend, "solo")
    assert joined.is_leader and joined.member_id
    assert [m.member_id for m in joined.members] == [joined.member_id]
    assert joined.protocol_name == "range"
    assignment = backend.sync_group("solo", generation_id=joined.generation_id,
                                    member_id=joined.member_id,
                                    assignments={joined.member_id: b"all-yours"})
    assert assignment == b"all-yours"
    backend.heartbeat("solo", generation_id=joined.generation_id, member_id=joined.member_id)
    desc = backend.describe_group("solo")
    assert desc.state == "Stable"
    assert desc.protocol_type == "consumer"
    assert [m.assignment for m in desc.members] == [b"all-yours"]
    assert ("solo", "consumer") in backend.list_groups()
    backend.leave_group("solo", member_id=joined.member_id)
    assert backend.describe_group("solo").state == "Empty"
    with pytest.raises(be.GroupError):
        backend.heartbeat("solo", generation_id=joined.generation_id,
                          member_id=joined.member_id)


def test_two_members_rebalance_and_distribute_assignments(backend):
    backend.create_topic("x", 1)
    first = _join(backend, "pair")
    backend.sync_group("pair", generation_id=first.generation_id, member_id=first.member_id,
                       assignments={first.member_id: b"a"})
    with ThreadPoolExecutor(2) as pool:
        # A second member joining forces the first to rejoin; both block until done.
        second_f = pool.submit(_join, backend, "pair")
        # The first member learns of the rebalance through its heartbeat.
        deadline_hits = 0
        while deadline_hits < 300:
            try:
                backend.heartbeat("pair", generation_id=first.generation_id,
                                  member_id=first.member_id)
            except be.RebalanceInProgressError:
                break
            deadline_hits += 1
            threading.Event().wait(0.05)
        else:
            pytest.fail("the first member was never told to rejoin")
        first_again = _join(backend, "pair", member_id=first.member_id)
        second = second_f.result(TIMEOUT_S)
    assert first_again.generation_id == second.generation_id > first.generation_id
    leader = first_again if first_again.is_leader else second
    follower = second if leader is first_again else first_again
    assert {m.member_id for m in leader.members} == {first.member_id, second.member_id}
    assert follower.members == ()
    with ThreadPoolExecutor(1) as pool:
        follower_f = pool.submit(backend.sync_group, "pair", generation_id=follower.generation_id,
                                 member_id=follower.member_id)
        got_leader = backend.sync_group("pair", generation_id=leader.generation_id,
                                        member_id=leader.member_id,
                                        assignments={leader.member_id: b"L",
                                                     follower.member_id: b"F"})
        assert follower_f.result(TIMEOUT_S) == b"F"
    assert got_leader == b"L"
    # Committing with a stale generation is refused.
    with pytest.raises(be.IllegalGenerationError):
        backend.commit_offsets("pair", {TopicPartition("x", 0): OffsetAndMetadata(1)},
                               generation_id=first.generation_id, member_id=first.member_id)
    # A simple commit while the group has members is refused too.
    with pytest.raises(be.GroupError):
        backend.commit_offsets("pair", {TopicPartition("x", 0): OffsetAndMetadata(1)})


def test_protocol_type_must_match(backend):
    _join(backend, "typed")
    with pytest.raises(be.InconsistentGroupProtocolError):
        backend.join_group("typed", member_id="", protocol_type="connect",
                           protocols=[("default", b"")], session_timeout_ms=10000,
                           rebalance_timeout_ms=10000)


def test_consumers_in_a_group_split_partitions_and_resume(backend):
    backend.create_topic("work", 4)
    backend.produce("work", [ProducerRecord(key=b"k%d" % i, value=b"%d" % i) for i in range(200)])
    consumers = [Consumer(backend, ["work"], group_id="workers", auto_offset_reset="earliest",
                          session_timeout_ms=10000, heartbeat_interval_ms=100,
                          client_id=f"c{i}") for i in range(2)]
    seen: set[bytes] = set()
    lock = threading.Lock()
    everything = {TopicPartition("work", p) for p in range(4)}

    def settled() -> bool:
        a, b = (set(c.assignment) for c in consumers)
        return len(seen) == 200 and a.isdisjoint(b) and a | b == everything and a and b

    try:
        with ThreadPoolExecutor(2) as pool:
            def drain(c: Consumer) -> None:
                deadline = time.monotonic() + TIMEOUT_S
                while time.monotonic() < deadline and not settled():
                    records = c.poll(100)
                    with lock:
                        seen.update(r.value for r in records)
            list(pool.map(drain, consumers))
        # At-least-once: a rebalance may redeliver, but every record arrives and the two
        # members end up owning disjoint halves of the topic.
        assert settled(), [c.assignment for c in consumers]
        assert seen == {b"%d" % i for i in range(200)}
        for c in consumers:
            c.commit()
    finally:
        for c in consumers:
            c.close()
    committed = backend.fetch_offsets("workers")
    assert sum(om.offset for om in committed.values()) == 200
    backend.produce("work", [ProducerRecord(value=b"new")])
    with Consumer(backend, ["work"], group_id="workers", auto_offset_reset="earliest",
                  session_timeout_ms=10000) as resumed:
        got = []
        deadline = time.monotonic() + TIMEOUT_S
        while not got and time.monotonic() < deadline:
            got += resumed.poll(100)
    assert [r.value for r in got] == [b"new"]


def test_manual_consumer_positions(backend):
    backend.create_topic("manual", 2)
    backend.produce("manual", [ProducerRecord(value=b"%d" % i, partition=1) for i in range(5)])
    tp = TopicPartition("manual", 1)
    with Consumer(backend, ["manual"], partitions=[1], start_offsets={tp: 3}) as c:
        assert [r.offset for r in c.poll(1000)] == [3, 4]
        c.seek(tp, 0)
        assert [r.offset for r in c.poll(1000)] == [0, 1, 2, 3, 4]
    with Consumer(backend, ["manual"], auto_offset_reset="latest") as latest:
        assert latest.poll(50) == []
    with pytest.raises(be.UnknownTopicError):
        Consumer(backend, ["manual"], partitions=[7])


def test_group_consumer_commits_offsets_it_is_given(backend):
    backend.create_topic("chosen", 1)
    backend.produce("chosen", [ProducerRecord(value=b"%d" % i) for i in range(10)])
    tp = TopicPartition("chosen", 0)
    with Consumer(backend, ["chosen"], group_id="chooser", auto_offset_reset="earliest",
                  enable_auto_commit=False, session_timeout_ms=10000) as consumer:
        got = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < 10 and time.monotonic() < deadline:
            got += consumer.poll(100)
        # Only what the caller says is safe is committed, not the consumer's position (10).
        consumer.commit({tp: OffsetAndMetadata(4, "safe")})
        assert backend.fetch_offsets("chooser", [tp])[tp].offset == 4
        assert backend.fetch_offsets("chooser", [tp])[tp].metadata == "safe"
