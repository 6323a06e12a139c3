"""Offset commit and fetch: generation checks, simple commits, the store, retention."""

from __future__ import annotations

import pytest

from core.group import (
    CommittedOffset,
    CoordinatorError,
    ErrorCode,
    GroupCoordinator,
    InMemoryOffsetStore,
    OffsetCommit,
    OffsetStoreError,
    SyncGroupRequest,
)
from core.group.offsets_format import (
    OffsetCommitKey,
    OffsetCommitValue,
    decode_key,
    decode_offset_commit_value,
)

E = ErrorCode
T0 = ("t", 0)
T1 = ("t", 1)


def simple_commit(h, offsets, group="g"):
    return h.coordinator.commit_offsets(group, -1, "", None, offsets)


def test_simple_commit_creates_an_empty_group_and_fetch_returns_it(h, clock):
    assert simple_commit(h, {T0: OffsetCommit(10, 3, "meta"), T1: OffsetCommit(20)}) == {
        T0: E.NONE, T1: E.NONE}
    assert h.coordinator.fetch_offsets("g", None) == {
        T0: CommittedOffset(10, 3, "meta", clock.now),
        T1: CommittedOffset(20, -1, "", clock.now)}
    assert h.coordinator.fetch_offsets("g", [T1, ("t", 9), ("u", 0)]) == {
        T1: CommittedOffset(20, -1, "", clock.now)}
    assert h.coordinator.fetch_offsets("unknown", None) == {}
    assert h.coordinator.list_groups() == [("g", "", "Empty")]
    summary = h.coordinator.describe_group("g")
    assert (summary.state, summary.members) == ("Empty", [])


def test_an_explicit_commit_timestamp_is_kept(h):
    simple_commit(h, {T0: OffsetCommit(1, commit_timestamp=12345)})
    assert h.coordinator.fetch_offsets("g", [T0])[T0].commit_timestamp == 12345


def test_member_commits_are_checked_against_member_and_generation(h):
    a, _ = h.stable_group(2)
    commit = h.coordinator.commit_offsets
    assert commit("g", 2, a.member_id, None, {T0: OffsetCommit(5)}) == {T0: E.NONE}
    assert commit("g", 1, a.member_id, None, {T0: OffsetCommit(6)}) == {
        T0: E.ILLEGAL_GENERATION}
    assert commit("g", 2, "ghost", None, {T0: OffsetCommit(6)}) == {T0: E.UNKNOWN_MEMBER_ID}
    # A simple commit while the group has members is refused.
    assert simple_commit(h, {T0: OffsetCommit(6)}) == {T0: E.UNKNOWN_MEMBER_ID}
    assert h.coordinator.fetch_offsets("g", [T0])[T0].offset == 5
    # A commit from a generation this coordinator never saw.
    assert commit("new-group", 3, "m", None, {T0: OffsetCommit(1)}) == {
        T0: E.ILLEGAL_GENERATION}
    assert [g for g, _, _ in h.coordinator.list_groups()] == ["g"]


def test_commits_during_a_rebalance(h):
    a, b = h.stable_group(2)
    leader, follower = (a, b) if a.leader_id == a.member_id else (b, a)
    commit = h.coordinator.commit_offsets
    h.join(leader.member_id)  # PreparingRebalance: the old generation may still commit
    assert commit("g", 2, follower.member_id, None, {T0: OffsetCommit(7)}) == {T0: E.NONE}
    h.join(follower.member_id)  # CompletingRebalance at generation 3
    assert commit("g", 3, follower.member_id, None, {T0: OffsetCommit(8)}) == {
        T0: E.REBALANCE_IN_PROGRESS}
    assert h.coordinator.fetch_offsets("g", [T0])[T0].offset == 7


def test_a_commit_keeps_the_member_alive(h):
    (a,) = h.stable_group(1, session=10_000)
    for _ in range(4):
        h.tick(6_000)
        commit = h.coordinator.commit_offsets("g", 1, a.member_id, None, {T0: OffsetCommit(1)})
        assert commit == {T0: E.NONE}
    assert h.heartbeat(a.member_id, 1) == E.NONE


def test_metadata_is_limited_in_java_chars(make):
    h = make(offset_metadata_max_bytes=4)
    result = simple_commit(h, {
        ("t", 0): OffsetCommit(1, metadata="abcd"),
        ("t", 1): OffsetCommit(1, metadata="abcde"),
        # Two emoji are four UTF-16 code units: allowed; a fifth unit is one too many.
        ("t", 2): OffsetCommit(1, metadata="😀😀"),
        ("t", 3): OffsetCommit(1, metadata="😀😀a"),
    })
    assert result == {("t", 0): E.NONE, ("t", 1): E.OFFSET_METADATA_TOO_LARGE,
                      ("t", 2): E.NONE, ("t", 3): E.OFFSET_METADATA_TOO_LARGE}
    assert set(h.coordinator.fetch_offsets("g", None)) == {("t", 0), ("t", 2)}


def test_unknown_partitions_are_refused_when_the_driver_says_so(make):
    h = make(partition_exists=lambda topic, partition: topic == "t" and partition < 2)
    assert simple_commit(h, {T0: OffsetCommit(1), ("t", 2): OffsetCommit(1),
                             ("u", 0): OffsetCommit(1)}) == {
        T0: E.NONE, ("t", 2): E.UNKNOWN_TOPIC_OR_PARTITION,
        ("u", 0): E.UNKNOWN_TOPIC_OR_PARTITION}


def test_commits_are_written_in_kafkas_format_and_survive_a_reload(make, clock):
    store = InMemoryOffsetStore()
    h = make(store)
    simple_commit(h, {T0: OffsetCommit(10, 2, "m")})
    simple_commit(h, {T0: OffsetCommit(11, 2, "m")})
    ((key, _), (key2, value2)) = store.records
    assert decode_key(key) == decode_key(key2) == OffsetCommitKey("g", "t", 0)
    assert decode_offset_commit_value(value2) == OffsetCommitValue(11, 2, "m", clock.now)

    reloaded = GroupCoordinator(store, clock=clock)
    reloaded.load()
    assert reloaded.fetch_offsets("g", None) == {T0: CommittedOffset(11, 2, "m", clock.now)}
    assert reloaded.list_groups() == [("g", "", "Empty")]


def test_delete_groups(make):
    store = InMemoryOffsetStore()
    h = make(store)
    simple_commit(h, {T0: OffsetCommit(1), T1: OffsetCommit(2)}, group="idle")
    h.stable_group(1)
    assert h.coordinator.delete_groups(["idle", "g", "nope"]) == {
        "idle": E.NONE, "g": E.NON_EMPTY_GROUP, "nope": E.GROUP_ID_NOT_FOUND}
    assert h.coordinator.fetch_offsets("idle", None) == {}
    assert [g for g, _, _ in h.coordinator.list_groups()] == ["g"]
    assert [value for _, value in store.records[-2:]] == [None, None]

    reloaded = GroupCoordinator(store)
    reloaded.load()
    assert reloaded.fetch_offsets("idle", None) == {}


def test_requests_wait_for_load(clock):
    store = InMemoryOffsetStore()
    coordinator = GroupCoordinator(store, clock=clock)
    assert coordinator.commit_offsets("g", -1, "", None, {T0: OffsetCommit(1)}) == {
        T0: E.COORDINATOR_LOAD_IN_PROGRESS}
    with pytest.raises(CoordinatorError) as info:
        coordinator.fetch_offsets("g", None)
    assert info.value.error_code == E.COORDINATOR_LOAD_IN_PROGRESS
    with pytest.raises(CoordinatorError):
        coordinator.list_groups()
    # Kafka's answers while loading, chosen so that clients simply carry on or rejoin.
    assert coordinator.heartbeat("g", 1, "m") == E.NONE
    answers = []
    coordinator.sync_group(SyncGroupRequest("g", 1, "m"), answers.append)
    assert [a.error_code for a in answers] == [E.REBALANCE_IN_PROGRESS]
    coordinator.load()
    assert coordinator.commit_offsets("g", -1, "", None, {T0: OffsetCommit(1)}) == {T0: E.NONE}


class FailingStore(InMemoryOffsetStore):
    def append(self, group_id, records):
        raise OffsetStoreError("disk on fire")


def test_a_failed_append_is_not_acknowledged_nor_cached(make):
    h = make(FailingStore())
    assert simple_commit(h, {T0: OffsetCommit(1)}) == {T0: E.COORDINATOR_NOT_AVAILABLE}
    assert h.coordinator.fetch_offsets("g", None) == {}
    assert h.coordinator.list_groups() == []


def test_offsets_of_a_simple_group_expire_from_their_commit_time(make):
    h = make(offsets_retention_ms=60_000, offsets_retention_check_interval_ms=1_000)
    simple_commit(h, {T0: OffsetCommit(1)})
    h.tick(30_000)
    simple_commit(h, {T1: OffsetCommit(2)})
    h.tick(30_000)  # T0 is 60 s old, T1 30 s
    assert set(h.coordinator.fetch_offsets("g", None)) == {T1}
    h.tick(30_000)
    assert h.coordinator.fetch_offsets("g", None) == {}
    assert h.coordinator.list_groups() == []


def test_offsets_of_an_emptied_consumer_group_expire_from_when_it_became_empty(make):
    h = make(offsets_retention_ms=60_000, offsets_retention_check_interval_ms=1_000)
    (a,) = h.stable_group(1, session=10_000)
    h.coordinator.commit_offsets("g", 1, a.member_id, None, {T0: OffsetCommit(1)})
    for _ in range(10):  # 100 s as a member: its offsets must not expire meanwhile
        h.tick(10_000 - 1)
        h.heartbeat(a.member_id, 1)
    assert set(h.coordinator.fetch_offsets("g", None)) == {T0}
    h.coordinator.leave_group("g", [(a.member_id, None)])
    h.tick(59_000)
    assert set(h.coordinator.fetch_offsets("g", None)) == {T0}
    assert h.coordinator.list_groups() == [("g", "consumer", "Empty")]
    h.tick(1_000)
    assert h.coordinator.fetch_offsets("g", None) == {}
    assert h.coordinator.list_groups() == []


def test_describe_shows_assignments_only_while_stable(h):
    (a,) = h.stable_group(1)
    assert h.coordinator.describe_group("g").members[0].assignment == a.member_id.encode()
    h.join(a.member_id)  # the leader rejoins: CompletingRebalance at once (alone)
    summary = h.coordinator.describe_group("g")
    assert (summary.state, summary.protocol_name) == ("CompletingRebalance", "")
    assert (summary.members[0].metadata, summary.members[0].assignment) == (b"", b"")
    unknown = h.coordinator.describe_group("nope")
    assert (unknown.state, unknown.members, unknown.error_code) == ("Dead", [], E.NONE)


def test_after_close_offsets_are_unavailable(h):
    simple_commit(h, {T0: OffsetCommit(1)})
    h.coordinator.close()
    assert simple_commit(h, {T0: OffsetCommit(2)}) == {T0: E.COORDINATOR_NOT_AVAILABLE}
    with pytest.raises(CoordinatorError) as info:
        h.coordinator.fetch_offsets("g", None)
    assert info.value.error_code == E.COORDINATOR_NOT_AVAILABLE
    assert h.coordinator.describe_group("g").error_code == E.COORDINATOR_NOT_AVAILABLE
