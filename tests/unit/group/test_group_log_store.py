"""The offset store on __consumer_offsets: Kafka's partitioning and persistence in the log."""

from __future__ import annotations

import pytest

from core.group import (
    OFFSETS_TOPIC,
    CommittedOffset,
    ErrorCode,
    GroupCoordinator,
    LogOffsetStore,
    OffsetCommit,
    java_string_hash,
    partition_for,
)
from core.group.offsets_format import OffsetCommitKey, decode_key
from core.log.manager import LogManager
from core.log.records import decode_batch, iter_batches

# Java's String.hashCode is h = 31*h + c over UTF-16 code units, wrapped to a signed int32.
HASHES = [
    ("", 0),
    ("a", 97),                   # 'a' = 97
    ("ab", 3105),                # 97*31 + 98
    ("abc", 96354),              # 3105*31 + 99
    # U+1F600 is the surrogate pair D83D DE00: 0xD83D*31 + 0xDE00 = 55357*31 + 56832.
    ("\U0001F600", 1772899),
    # Seven '~' (126): 126 * (31^6 + ... + 1) = 126 * 917087137 = 115552979262, which is
    # 3883829566 modulo 2^32, or 3883829566 - 2^32 = -411137730 as a signed int32.
    ("~~~~~~~", -411137730),
    # A well-known Java string whose hashCode is Integer.MIN_VALUE.
    ("polygenelubricants", -(2**31)),
]


@pytest.mark.parametrize(("value", "expected"), HASHES)
def test_java_string_hash(value, expected):
    assert java_string_hash(value) == expected


@pytest.mark.parametrize(("group", "partition"), [
    ("a", 47),                   # 97 % 50
    ("abc", 4),                  # 96354 % 50
    ("\U0001F600", 49),          # 1772899 % 50
    ("~~~~~~~", 30),             # |-411137730| % 50
    ("polygenelubricants", 0),   # Utils.abs(Integer.MIN_VALUE) is 0
])
def test_partition_for_follows_kafka(group, partition):
    assert partition_for(group) == partition


def test_partition_count_is_a_parameter():
    assert partition_for("abc", 7) == 96354 % 7


@pytest.fixture
def data_dir(tmp_path):
    return tmp_path / "data"


def _open(data_dir):
    return LogManager.open(data_dir, background=False)


def test_the_topic_is_created_internal_and_compacted(data_dir):
    with _open(data_dir) as manager:
        store = LogOffsetStore(manager)
        topic = manager.topic(OFFSETS_TOPIC)
        assert (topic.partitions, topic.internal) == (50, True)
        assert topic.overrides["cleanup.policy"] == "compact"
        assert store.partitions == 50
        # A second store on the same manager uses the existing topic.
        assert LogOffsetStore(manager, partitions=3).partitions == 50


def test_commits_persist_across_a_log_manager_restart(data_dir):
    with _open(data_dir) as manager:
        coordinator = GroupCoordinator(LogOffsetStore(manager))
        coordinator.load()
        commit = coordinator.commit_offsets
        assert commit("abc", -1, "", None, {("t", 0): OffsetCommit(5, 1, "first")}) == {
            ("t", 0): ErrorCode.NONE}
        commit("abc", -1, "", None, {("t", 0): OffsetCommit(6, 1, "second"),
                                     ("t", 1): OffsetCommit(9)})
        commit("other", -1, "", None, {("u", 0): OffsetCommit(1)})
        commit("gone", -1, "", None, {("u", 0): OffsetCommit(1)})
        assert coordinator.delete_groups(["gone"]) == {"gone": ErrorCode.NONE}
        expected = coordinator.fetch_offsets("abc", None)

        # The records sit in the group's partition, in Kafka's key format.
        partition_log = manager.log(OFFSETS_TOPIC, partition_for("abc"))
        data = partition_log.read(partition_log.log_start_offset, 1 << 20).data
        keys = [decode_key(record.key) for position, _ in iter_batches(data)
                for record in decode_batch(data, position)[1]]
        assert keys[0] == OffsetCommitKey("abc", "t", 0)
        coordinator.close()

    with _open(data_dir) as manager:
        coordinator = GroupCoordinator(LogOffsetStore(manager))
        coordinator.load()
        assert coordinator.fetch_offsets("abc", None) == expected
        assert coordinator.fetch_offsets("abc", [("t", 0)])[("t", 0)].metadata == "second"
        assert coordinator.fetch_offsets("other", None)[("u", 0)].offset == 1
        assert coordinator.fetch_offsets("gone", None) == {}
        assert [g for g, _, _ in coordinator.list_groups()] == ["abc", "other"]
        assert isinstance(expected[("t", 1)], CommittedOffset)


def test_load_reads_a_partition_across_many_batches(data_dir):
    with _open(data_dir) as manager:
        store = LogOffsetStore(manager, partitions=1)
        coordinator = GroupCoordinator(store)
        coordinator.load()
        for offset in range(300):
            coordinator.commit_offsets("g", -1, "", None,
                                       {("t", offset % 3): OffsetCommit(offset)})
    with _open(data_dir) as manager:
        # Small reads: loading takes many of them, each starting where the last ended.
        records = list(LogOffsetStore(manager, read_max_bytes=200).load())
        assert len(records) == 300
        assert [decode_key(key).partition for key, _ in records] == [
            offset % 3 for offset in range(300)]
        coordinator = GroupCoordinator(LogOffsetStore(manager))
        coordinator.load()
        assert {tp: c.offset for tp, c in coordinator.fetch_offsets("g", None).items()} == {
            ("t", 0): 297, ("t", 1): 298, ("t", 2): 299}
