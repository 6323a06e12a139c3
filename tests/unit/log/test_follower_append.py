"""PartitionLog.append_as_follower: a follower stores its leader's batches byte for byte
(Kafka's ``appendAsFollower``), never assigning offsets or stamping its own clock."""

from __future__ import annotations

from pathlib import Path

import pytest
from log_testing import FakeClock, batch_of, batches_of, config, open_log, read_all

from core.log.errors import CorruptRecordError, InvalidRecordError, UnexpectedAppendOffsetError
from core.log.log import PartitionLog
from core.log.records import encode_batch, iter_batches, set_partition_leader_epoch

LOG_APPEND_TIME = config(message_timestamp_type="LogAppendTime")


def _leader_batches(directory: Path, count: int = 5, *, epoch: int = 3) -> bytes:
    """What a fetch from a LogAppendTime leader returns: ``count`` batches, each stamped
    with the leader's epoch (as the Produce handler does) and the leader's clock."""
    clock = FakeClock(1_000_000)
    leader = open_log(directory, LOG_APPEND_TIME, clock)
    for i in range(count):
        batch = batch_of([(b"k%d" % i, b"v%d" % i), (None, b"w%d" % i)], timestamp=42)
        set_partition_leader_epoch(batch, epoch)
        leader.append(batch)
        clock.advance(7)
    data = leader.read(0, 1 << 20).data
    leader.close()
    return data


def _follower(directory: Path, cfg=LOG_APPEND_TIME) -> PartitionLog:
    # A clock far from the leader's: a re-stamping follower would show it.
    return open_log(directory, cfg, FakeClock(9_000_000_000))


def test_the_follower_stores_the_leaders_bytes_and_log_append_times(tmp_path: Path) -> None:
    data = _leader_batches(tmp_path / "leader")
    follower = _follower(tmp_path / "follower")
    info = follower.append_as_follower(data)
    assert (info.base_offset, info.last_offset) == (0, 9)
    assert info.log_append_time_ms == info.max_timestamp == 1_000_000 + 4 * 7
    assert follower.read(0, 1 << 20).data == data  # offsets, epochs, timestamps, CRCs
    assert [h.partition_leader_epoch for _, h in iter_batches(data)] == [3] * 5
    assert [r.timestamp for r in read_all(follower)] == [1_000_000 + 7 * (i // 2)
                                                         for i in range(10)]
    # The time index holds the leader's times too.
    assert follower.offset_for_timestamp(1_000_000 + 14) == (4, 1_000_014)
    assert follower.max_timestamp() == (8, 1_000_028)


def test_the_bytes_survive_a_restart_of_the_follower(tmp_path: Path) -> None:
    data = _leader_batches(tmp_path / "leader")
    follower = _follower(tmp_path / "follower")
    follower.append_as_follower(data)
    follower.close()
    reopened = _follower(tmp_path / "follower")
    assert reopened.read(0, 1 << 20).data == data
    assert reopened.log_end_offset == 10


def test_appends_continue_from_the_log_end_in_pieces(tmp_path: Path) -> None:
    data = _leader_batches(tmp_path / "leader")
    cut = [pos for pos, _ in iter_batches(data)][2]
    follower = _follower(tmp_path / "follower")
    follower.append_as_follower(data[:cut + 20])  # two batches and a partial third
    assert follower.log_end_offset == 4
    follower.append_as_follower(data[cut:])
    assert follower.read(0, 1 << 20).data == data


def test_a_batch_starting_below_the_log_end_is_refused(tmp_path: Path) -> None:
    data = _leader_batches(tmp_path / "leader")
    follower = _follower(tmp_path / "follower")
    follower.append_as_follower(data)
    second = [pos for pos, _ in iter_batches(data)][1]
    with pytest.raises(UnexpectedAppendOffsetError) as caught:
        follower.append_as_follower(data[second:])
    assert (caught.value.first_offset, caught.value.log_end_offset) == (2, 10)
    assert follower.read(0, 1 << 20).data == data  # nothing appended


def test_batches_going_back_in_offsets_are_refused(tmp_path: Path) -> None:
    first = encode_batch([(b"k", b"v", (), 5)], base_offset=3)
    second = encode_batch([(b"k", b"v", (), 5)], base_offset=3)
    follower = _follower(tmp_path / "follower")
    with pytest.raises(InvalidRecordError, match="go back in offsets"):
        follower.append_as_follower(first + second)
    assert follower.log_end_offset == 0


def test_a_corrupt_batch_is_refused_and_nothing_is_appended(tmp_path: Path) -> None:
    data = bytearray(_leader_batches(tmp_path / "leader"))
    data[-3] ^= 0xFF  # inside the last batch's records: its CRC no longer matches
    follower = _follower(tmp_path / "follower")
    with pytest.raises(CorruptRecordError):
        follower.append_as_follower(data)
    assert follower.log_end_offset == 0
    assert follower.size_bytes == 0


def test_holes_left_by_the_leaders_cleaner_keep_their_offsets(tmp_path: Path) -> None:
    """A compacted leader's log has batches with holes in their offsets and offsets
    between batches that no batch holds: the follower keeps them all where they are,
    never renumbering (a renumbered __consumer_offsets would move committed offsets)."""
    sparse = encode_batch([(b"a", b"1", (), 5), (b"b", b"2", (), 6)], offset_deltas=[0, 3])
    later = encode_batch([(b"c", b"3", (), 7)], base_offset=9)
    follower = _follower(tmp_path / "follower", config(cleanup_policy="compact"))
    follower.append_as_follower(sparse + later)
    assert batches_of(follower.read(0, 1 << 20).data) == [(0, 3), (9, 9)]
    assert [r.offset for r in read_all(follower)] == [0, 3, 9]
    assert follower.log_end_offset == 10
    follower.append_as_follower(encode_batch([(b"d", b"4", (), 8)], base_offset=12))
    assert follower.log_end_offset == 13


def test_flush_messages_fsyncs_a_followers_append_as_a_leaders(tmp_path: Path) -> None:
    data = _leader_batches(tmp_path / "leader")
    follower = _follower(tmp_path / "follower",
                         config(message_timestamp_type="LogAppendTime", flush_messages=1))
    follower.append_as_follower(data)
    assert follower.flushed_offset == 10


def test_a_follower_rolls_segments_at_the_leaders_offsets(tmp_path: Path) -> None:
    data = _leader_batches(tmp_path / "leader", count=8)
    size = next(iter_batches(data))[1].size
    follower = _follower(tmp_path / "follower",
                         config(message_timestamp_type="LogAppendTime",
                                segment_bytes=3 * size))
    for pos, header in iter_batches(data):
        follower.append_as_follower(data[pos:pos + header.size])
    assert [s.base_offset for s in follower.segments()] == [0, 6, 12]
    assert follower.read(0, 1 << 20).data == data
