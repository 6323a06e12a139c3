"""Group metadata records: written per generation, restored by a new coordinator."""

from __future__ import annotations

from core.group import ErrorCode, GroupState, InMemoryOffsetStore, OffsetCommit, OffsetStoreError
from core.group.metadata_format import decode_group_metadata_value
from core.group.offsets_format import GroupMetadataKey, decode_key

RANGE_METADATA = b"range-meta"  # what the harness (conftest) joins with


def group_records(store: InMemoryOffsetStore, group: str = "g") -> list:
    """The decoded group metadata values of ``group`` in log order (None: tombstone)."""
    return [None if value is None else decode_group_metadata_value(value)
            for key, value in store.records if decode_key(key) == GroupMetadataKey(group)]


def test_a_completed_generation_is_stored_with_members_and_assignments(make):
    store = InMemoryOffsetStore()
    h = make(store)
    a, b = h.stable_group(2, instance=None)
    records = group_records(store)
    # Generation 1 (one member), then generation 2 (two), each written at its SyncGroup.
    assert [r.generation for r in records] == [1, 2]
    last = records[-1]
    assert (last.protocol_type, last.protocol, last.leader) == ("consumer", "range", a.leader_id)
    assert {m.member_id: (m.subscription, m.assignment, m.session_timeout,
                          m.rebalance_timeout, m.client_host) for m in last.members} == {
        a.member_id: (RANGE_METADATA, a.member_id.encode(), 10_000, 30_000, "/127.0.0.1"),
        b.member_id: (RANGE_METADATA, b.member_id.encode(), 10_000, 30_000, "/127.0.0.1"),
    }


def test_a_new_coordinator_restores_the_group_and_its_members_keep_working(make, clock):
    store = InMemoryOffsetStore()
    h = make(store)
    a, b = h.stable_group(2)
    h.coordinator.close()

    clock.advance(60_000)  # longer than the session timeout: the sessions restart on load
    restored = make(InMemoryOffsetStore(store.records))
    summary = restored.coordinator.describe_group("g")
    assert summary.state == "Stable" and summary.generation_id == 2
    assert sorted(m.member_id for m in summary.members) == sorted([a.member_id, b.member_id])
    assert restored.heartbeat(a.member_id, 2) == ErrorCode.NONE
    assert restored.coordinator.commit_offsets(
        "g", 2, b.member_id, None, {("t", 0): OffsetCommit(5)}) == {("t", 0): ErrorCode.NONE}
    # A member's SyncGroup of the restored generation returns its stored assignment.
    sync = restored.sync(b.member_id, 2).one()
    assert (sync.error_code, sync.assignment) == (ErrorCode.NONE, b.member_id.encode())


def test_restored_members_that_never_come_back_expire_after_their_session(make, clock):
    store = InMemoryOffsetStore()
    make(store).stable_group(1)
    restored = make(InMemoryOffsetStore(store.records))
    restored.tick(9_999)
    assert restored.coordinator.describe_group("g").state == "Stable"
    restored.tick(1)
    assert restored.coordinator.describe_group("g").state == "Empty"
    assert restored.coordinator.delete_groups(["g"]) == {"g": ErrorCode.NONE}


def test_an_emptied_group_is_stored_empty_and_a_deleted_one_as_a_tombstone(make):
    store = InMemoryOffsetStore()
    h = make(store)
    (a,) = h.stable_group(1)
    assert h.coordinator.leave_group("g", [(a.member_id, None)]) == (ErrorCode.NONE,
                                                                      [ErrorCode.NONE])
    empty = group_records(store)[-1]
    assert (empty.generation, empty.members, empty.protocol) == (2, (), None)
    restored = make(InMemoryOffsetStore(store.records))
    summary = restored.coordinator.describe_group("g")
    assert (summary.state, summary.generation_id) == ("Empty", 2)

    assert h.coordinator.delete_groups(["g"]) == {"g": ErrorCode.NONE}
    assert group_records(store)[-1] is None
    assert make(InMemoryOffsetStore(store.records)).coordinator.list_groups() == []


class FailingStore(InMemoryOffsetStore):
    """An OffsetStore whose appends fail while ``failing`` is set: a real store raises the
    same error when the log cannot be written (the disk-full tests cover the log)."""

    failing = False

    def append(self, group_id, records):
        if self.failing:
            raise OffsetStoreError("injected append failure")
        super().append(group_id, records)


def test_a_generation_that_cannot_be_stored_is_not_acknowledged(make):
    store = FailingStore()
    h = make(store)
    first = h.join_new().one()
    store.failing = True
    sync = h.sync(first.member_id, first.generation_id, {first.member_id: b"p0"}).one()
    # Kafka's doSyncGroup: the storage error goes to the members and the group rebalances.
    assert sync.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert h.coordinator.describe_group("g").state == str(GroupState.PREPARING_REBALANCE)
    store.failing = False
    again = h.join(first.member_id).one()
    assert again.error_code == ErrorCode.NONE
    assert h.sync(again.member_id, again.generation_id,
                  {again.member_id: b"p0"}).one().error_code == ErrorCode.NONE
    assert group_records(store)[-1].generation == again.generation_id


def test_a_deletion_that_cannot_be_stored_keeps_the_group(make):
    store = FailingStore()
    h = make(store)
    h.coordinator.commit_offsets("g", -1, "", None, {("t", 0): OffsetCommit(3)})
    store.failing = True
    assert h.coordinator.delete_groups(["g"]) == {"g": ErrorCode.COORDINATOR_NOT_AVAILABLE}
    assert h.coordinator.fetch_offsets("g", None)[("t", 0)].offset == 3


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription version 1, field by field: int16 version, int32 topic
    count, int16-length topic names, nullable user data (-1), owned partitions (none)."""
    body = b"".join(len(t).to_bytes(2, "big") + t.encode() for t in topics)
    return (b"\x00\x01" + len(topics).to_bytes(4, "big") + body + b"\xff\xff\xff\xff"
            + b"\x00\x00\x00\x00")


def test_offset_delete_spares_subscribed_topics_even_after_a_restore(make):
    store = InMemoryOffsetStore()
    h = make(store)
    (a,) = h.stable_group(1, protocols=[("range", subscription("orders"))])
    commit = {("orders", 0): OffsetCommit(1), ("audit", 0): OffsetCommit(2)}
    assert set(h.coordinator.commit_offsets("g", 1, a.member_id, None, commit).values()) == {
        ErrorCode.NONE}
    restored = make(InMemoryOffsetStore(store.records)).coordinator
    for coordinator in (h.coordinator, restored):
        error, results = coordinator.delete_offsets("g", [("orders", 0), ("audit", 0)])
        assert (error, results) == (ErrorCode.NONE, {
            ("orders", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("audit", 0): ErrorCode.NONE})
        assert set(coordinator.fetch_offsets("g", None)) == {("orders", 0)}
    assert restored.delete_offsets("nobody", [("orders", 0)]) == (
        ErrorCode.GROUP_ID_NOT_FOUND, {})


def test_offset_delete_of_a_non_consumer_group_with_members_is_refused(make):
    h = make()
    h.stable_group(1, protocol_type="connect")
    assert h.coordinator.delete_offsets("g", [("t", 0)]) == (ErrorCode.NON_EMPTY_GROUP, {})
