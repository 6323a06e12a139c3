"""PartitionLog: appends, reads, timestamps, rolling, flushing, listeners and lifecycle."""

from __future__ import annotations

import os
import threading
import time

import pytest
from log_testing import FakeClock, batch_of, batches_of, config, open_log, read_all

from core.log.errors import (
    CorruptRecordError,
    InvalidRecordError,
    LogClosedError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
)
from core.log.records import TimestampType, decode_batch, encode_batch, parse_header


def test_append_assigns_offsets_and_stores_the_client_batch(tmp_path):
    plog = open_log(tmp_path / "p")
    first = batch_of([(b"a", b"1"), (b"b", b"2")], 1000, {"h": b"x"})
    second = batch_of([(None, b"3")], 900)
    info1 = plog.append(bytes(first))
    info2 = plog.append(second)
    assert (info1.base_offset, info1.last_offset, info1.max_timestamp) == (0, 1, 1000)
    assert (info2.base_offset, info2.last_offset, info2.log_append_time_ms) == (2, 2, -1)
    assert plog.log_end_offset == 3 and plog.log_start_offset == 0
    data = plog.read(0, 1 << 20).data
    # Stored bytes are the client's batches with only baseOffset (outside the CRC) patched.
    assert data[8 : len(first)] == first[8:]
    assert data[len(first) + 8 :] == second[8:]
    assert parse_header(data, len(first)).base_offset == 2
    records = read_all(plog)
    assert [(r.offset, r.key, r.value, r.timestamp) for r in records] == [
        (0, b"a", b"1", 1000), (1, b"b", b"2", 1000), (2, None, b"3", 900)]
    assert list(records[0].headers) == [("h", b"x")]
    assert plog.size_bytes == len(first) + len(second)


def test_one_append_may_carry_several_batches(tmp_path):
    plog = open_log(tmp_path / "p")
    buf = batch_of([(b"a", b"1")], 1) + batch_of([(b"b", b"2"), (b"c", b"3")], 2)
    info = plog.append(buf)
    assert (info.base_offset, info.last_offset) == (0, 2)
    assert batches_of(plog.read(0, 1 << 20).data) == [(0, 0), (1, 2)]


def test_reads_return_whole_batches_within_limits(tmp_path):
    plog = open_log(tmp_path / "p")
    for i in range(10):
        plog.append(batch_of([(b"k", b"v" * 100)] * 3, i))
    size = len(batch_of([(b"k", b"v" * 100)] * 3, 0))
    # Offset 4 is inside the batch [3, 5]: the read starts with that batch.
    assert batches_of(plog.read(4, 1 << 20).data)[0] == (3, 5)
    # At least one batch even if max_bytes is smaller; otherwise never a partial batch.
    assert batches_of(plog.read(4, 10).data) == [(3, 5)]
    assert batches_of(plog.read(4, 0).data) == [(3, 5)]
    assert batches_of(plog.read(4, 2 * size + 5).data) == [(3, 5), (6, 8)]
    assert batches_of(plog.read(0, 1 << 20, max_offset=9).data) == [(0, 2), (3, 5), (6, 8)]
    result = plog.read(30, 100)
    assert (result.data, result.high_watermark, result.log_start_offset) == (b"", 30, 0)
    with pytest.raises(OffsetOutOfRangeError) as err:
        plog.read(31, 100)
    assert (err.value.log_start_offset, err.value.log_end_offset) == (0, 30)
    with pytest.raises(OffsetOutOfRangeError):
        plog.read(-1, 100)


def test_a_batch_larger_than_max_bytes_is_returned_whole(tmp_path):
    plog = open_log(tmp_path / "p")
    small = batch_of([(b"k", b"v")], 1)
    big = batch_of([(b"k", b"x" * 20_000)], 2)
    for batch in (small, big, small):
        plog.append(batch)
    for max_bytes in (0, 1, 100, 20_000):
        data = plog.read(1, max_bytes).data
        assert batches_of(data) == [(1, 1)] and len(data) == len(big)
    assert batches_of(plog.read(0, len(small) + 10).data) == [(0, 0)]
    assert batches_of(plog.read(0, len(small) + len(big)).data) == [(0, 0), (1, 1)]


def test_reads_continue_across_segments(tmp_path):
    plog = open_log(tmp_path / "p", config(segment_bytes=300))
    for i in range(12):
        plog.append(batch_of([(b"k", b"v" * 100)], i))
    assert len(plog.segments()) > 3
    assert batches_of(plog.read(0, 1 << 20).data) == [(i, i) for i in range(12)]
    assert [r.offset for r in read_all(plog, 5, max_bytes=1)] == list(range(5, 12))


@pytest.mark.parametrize("damage", ["garbage", "crc", "truncated", "count"])
def test_invalid_batches_are_rejected(tmp_path, damage):
    plog = open_log(tmp_path / "p")
    buf = batch_of([(b"a", b"1"), (b"b", b"2")], 5)
    if damage == "garbage":
        buf = bytearray(b"\x00" * 70)
    elif damage == "crc":
        buf[-1] ^= 0xFF
    elif damage == "truncated":
        buf = buf[:-3]
    else:  # lastOffsetDelta says 5 records but the count says 2
        buf[23:27] = (4).to_bytes(4, "big")
    expected = CorruptRecordError if damage == "crc" else InvalidRecordError
    with pytest.raises(expected):
        plog.append(buf)
    assert plog.log_end_offset == 0 and plog.size_bytes == 0


def test_max_message_bytes_is_enforced(tmp_path):
    plog = open_log(tmp_path / "p", config(max_message_bytes=200))
    plog.append(batch_of([(b"k", b"v" * 50)], 1))
    with pytest.raises(RecordTooLargeError, match=r"max\.message\.bytes=200"):
        plog.append(batch_of([(b"k", b"v" * 300)], 1))
    assert plog.log_end_offset == 1


def test_log_append_time_topics_stamp_the_append_time(tmp_path):
    clock = FakeClock(5_000_000)
    plog = open_log(tmp_path / "p", config(message_timestamp_type="LogAppendTime"), clock)
    info = plog.append(batch_of([(b"a", b"1"), (b"b", b"2")], 1000))
    assert info.log_append_time_ms == 5_000_000 and info.max_timestamp == 5_000_000
    header, records = decode_batch(plog.read(0, 1 << 20).data)  # also checks the new CRC
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in records] == [5_000_000, 5_000_000]
    assert plog.offset_for_timestamp(4_000_000) == (0, 5_000_000)


def test_compacted_topics_reject_records_without_keys(tmp_path):
    plog = open_log(tmp_path / "p", config(cleanup_policy="compact"))
    plog.append(batch_of([(b"a", b"1"), (b"b", None)], 1))
    with pytest.raises(InvalidRecordError, match="rejected due to 2 record errors") as info:
        plog.append(batch_of([(b"a", b"1"), (None, b"2"), (b"c", b"3"), (None, b"4")], 1))
    assert [i for i, _ in info.value.record_errors] == [1, 3]
    assert "Compacted topic cannot accept message without key" in info.value.record_errors[0][1]
    assert plog.log_end_offset == 2


def test_offset_for_timestamp_scans_past_out_of_order_timestamps(tmp_path):
    plog = open_log(tmp_path / "p", config(segment_bytes=400, index_interval_bytes=1))
    stamps = [10, 50, 20, 30, 70, 60, 40, 90, 80, 100]
    for ts in stamps:
        plog.append(encode_batch([(b"k", b"x" * 60, [], ts), (b"k", b"y", [], ts - 5)]))
    assert len(plog.segments()) > 2
    expected = {}
    records = read_all(plog)
    for target in range(0, 105):
        expected[target] = next(((r.offset, r.timestamp) for r in records
                                 if r.timestamp >= target), None)
    for reopen in (False, True):
        if reopen:
            plog.close()
            plog = open_log(tmp_path / "p", config(segment_bytes=400, index_interval_bytes=1))
        for target, answer in expected.items():
            assert plog.offset_for_timestamp(target) == answer, target
        assert plog.offset_for_timestamp(101) is None
        assert plog.max_timestamp() == (18, 100)


def test_empty_log_answers_lookups(tmp_path):
    plog = open_log(tmp_path / "p")
    assert plog.offset_for_timestamp(0) is None
    assert plog.max_timestamp() is None
    assert plog.read(0, 100).data == b""


def test_rolls_by_segment_bytes_but_never_an_empty_segment(tmp_path):
    plog = open_log(tmp_path / "p", config(segment_bytes=500))
    size = len(batch_of([(b"k", b"v" * 100)], 1))
    for i in range(7):
        plog.append(batch_of([(b"k", b"v" * 100)], i))
    per_segment = 500 // size
    assert [s.base_offset for s in plog.segments()] == list(range(0, 7, per_segment))
    assert all(s.size <= 500 for s in plog.segments())
    # A batch larger than segment.bytes still goes in, alone in its segment.
    plog.append(batch_of([(b"k", b"v" * 900)], 8))
    plog.append(batch_of([(b"k", b"v")], 9))
    assert [s.base_offset for s in plog.segments()][-2:] == [7, 8]
    names = sorted(p.name for p in (tmp_path / "p").iterdir())
    assert "00000000000000000007.log" in names and "00000000000000000007.index" in names
    assert "00000000000000000007.timeindex" in names


def test_rolls_by_segment_ms_on_the_injected_clock(tmp_path):
    clock = FakeClock()
    plog = open_log(tmp_path / "p", config(segment_ms=1000), clock)
    plog.append(batch_of([(b"k", b"v")], 1))
    clock.advance(1000)
    plog.append(batch_of([(b"k", b"v")], 1))
    assert len(plog.segments()) == 1
    clock.advance(1)
    plog.append(batch_of([(b"k", b"v")], 1))
    assert [s.base_offset for s in plog.segments()] == [0, 2]
    clock.advance(10_000)  # an idle, empty active segment is not rolled again
    plog.append(batch_of([(b"k", b"v")], 1))
    assert [s.base_offset for s in plog.segments()] == [0, 2, 3]


def test_flush_messages_one_fsyncs_every_append(tmp_path, monkeypatch):
    synced = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (synced.append(fd), real(fd)))
    plog = open_log(tmp_path / "p", config(flush_messages=1))
    synced.clear()
    for i in range(3):
        plog.append(batch_of([(b"k", b"v")], i))
        assert plog.flushed_offset == i + 1
    assert plog.segments()[-1].fd in synced


def test_flush_messages_counts_records(tmp_path):
    plog = open_log(tmp_path / "p", config(flush_messages=5))
    plog.append(batch_of([(b"k", b"v")] * 3, 1))
    assert plog.flushed_offset == 0
    plog.append(batch_of([(b"k", b"v")] * 2, 1))
    assert plog.flushed_offset == 5
    plog.append(batch_of([(b"k", b"v")], 1))
    assert plog.flushed_offset == 5


def test_flush_ms_flushes_when_the_oldest_unflushed_append_is_old_enough(tmp_path):
    clock = FakeClock()
    plog = open_log(tmp_path / "p", config(flush_ms=1000), clock)
    plog.append(batch_of([(b"k", b"v")], 1))
    clock.advance(600)
    plog.append(batch_of([(b"k", b"v")], 1))
    plog.maybe_flush(clock.ms)
    assert plog.flushed_offset == 0
    plog.maybe_flush(clock.advance(400))
    assert plog.flushed_offset == 2


def test_default_policy_flushes_only_on_request(tmp_path):
    clock = FakeClock()
    plog = open_log(tmp_path / "p", clock=clock)
    for _ in range(100):
        plog.append(batch_of([(b"k", b"v")], 1))
    plog.maybe_flush(clock.advance(10**9))
    assert plog.flushed_offset == 0
    plog.flush()
    assert plog.flushed_offset == 100


def test_append_listeners(tmp_path):
    plog = open_log(tmp_path / "p")
    seen = []

    def broken(end):
        raise RuntimeError("listener bug")

    plog.add_append_listener(seen.append)
    plog.add_append_listener(broken)
    plog.append(batch_of([(b"k", b"v")] * 2, 1))
    plog.remove_append_listener(seen.append)
    plog.append(batch_of([(b"k", b"v")], 1))
    assert seen == [2]
    assert plog.log_end_offset == 3


def test_close_is_idempotent_and_later_calls_fail(tmp_path):
    plog = open_log(tmp_path / "p")
    plog.append(batch_of([(b"k", b"v")], 1))
    plog.close()
    plog.close()
    assert plog.flushed_offset == 1
    calls = [lambda: plog.append(batch_of([(b"k", b"v")], 1)), lambda: plog.read(0, 10),
             plog.flush, lambda: plog.maybe_flush(0), lambda: plog.enforce_retention(0),
             lambda: plog.compact(0), lambda: plog.offset_for_timestamp(0)]
    for call in calls:
        with pytest.raises(LogClosedError):
            call()
    reopened = open_log(tmp_path / "p")
    assert reopened.log_end_offset == 1
    reopened.delete()
    assert not (tmp_path / "p").exists()


def test_append_records_uses_the_log_clock_for_missing_timestamps(tmp_path):
    clock = FakeClock(42_000)
    plog = open_log(tmp_path / "p", clock=clock)
    info = plog.append_records([(b"k", b"v", [("h", b"1")], None), (b"k2", None, [], 7)])
    assert (info.base_offset, info.last_offset) == (0, 1)
    records = read_all(plog)
    assert [(r.timestamp, r.value) for r in records] == [(42_000, b"v"), (7, None)]


def test_readers_run_concurrently_with_appends(tmp_path):
    plog = open_log(tmp_path / "p", config(segment_bytes=4000, index_interval_bytes=100))
    total = 400
    errors: list[BaseException] = []
    done = threading.Event()

    def reader() -> None:
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                end = plog.log_end_offset
                records = read_all(plog, 0, max_bytes=2000)
                # A reader sees a prefix: at least what was there when it started, no gaps.
                assert [r.offset for r in records] == list(range(len(records)))
                assert len(records) >= end
                assert all(r.value == b"%d" % r.offset for r in records)
                if done.wait(0.001):
                    break
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for i in range(0, total, 2):
        plog.append(encode_batch([(b"k", b"%d" % i, [], i), (b"k", b"%d" % (i + 1), [], i)]))
    done.set()
    for t in threads:
        t.join(timeout=30)
    assert not errors, errors
    assert [r.value for r in read_all(plog)] == [b"%d" % i for i in range(total)]


def test_flush_records_leaves_the_indexes_to_the_next_full_flush(tmp_path, monkeypatch):
    synced = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (synced.append(fd), real(fd)))
    plog = open_log(tmp_path / "p", config(index_interval_bytes=1))
    plog.flush()
    for i in range(3):
        plog.append(batch_of([(b"k", b"v")], i))
    segment = plog.segments()[-1]
    synced.clear()
    plog.flush_records()
    assert plog.flushed_offset == 3
    assert synced == [segment.fd]
    synced.clear()
    plog.flush()
    # The offset and time indexes, whose entries were not synced (and the log again: cheap).
    assert len(set(synced) - {segment.fd}) == 2


def test_a_reopened_log_counts_nothing_as_fsynced_until_its_first_flush(tmp_path, monkeypatch):
    # A killed process leaves its writes in the page cache only: the next process must not
    # acknowledge them as durable (acks=all + ferry.acks.all.fsync) without an fsync.
    plog = open_log(tmp_path / "p")
    plog.append(batch_of([(b"k", b"v")] * 3, 1))
    plog.close()
    synced = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (synced.append(fd), real(fd)))
    plog = open_log(tmp_path / "p")
    assert (plog.flushed_offset, plog.log_end_offset) == (0, 3)
    plog.flush_records()
    assert plog.flushed_offset == 3
    assert plog.segments()[-1].fd in synced
