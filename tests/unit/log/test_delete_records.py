"""DeleteRecords on a PartitionLog: the log start offset moves inside a segment, whole
segments below it go, the new start survives reopening, offsets past the end are refused."""

from __future__ import annotations

import pytest
from log_testing import FakeClock, batch_of, config, open_log, read_all

from core.log.errors import OffsetOutOfRangeError, StorageError
from core.log.start_offset import CHECKPOINT_NAME


def fill(plog, clock: FakeClock, batches: int) -> None:
    for _ in range(batches):
        plog.append(batch_of([(b"k", b"v" * 100)], clock.ms))


def test_delete_records_moves_the_start_and_removes_whole_segments(tmp_path):
    clock = FakeClock()
    plog = open_log(tmp_path / "p", config(segment_bytes=600, file_delete_delay_ms=0), clock)
    fill(plog, clock, 10)  # 3 batches per segment: bases 0, 3, 6, 9
    assert [s.base_offset for s in plog.segments()] == [0, 3, 6, 9]
    assert plog.delete_records(4) == 4
    assert plog.log_start_offset == 4
    assert [s.base_offset for s in plog.segments()] == [3, 6, 9]  # 3 still holds 4 and 5
    assert [r.offset for r in read_all(plog)] == list(range(4, 10))
    with pytest.raises(OffsetOutOfRangeError) as info:
        plog.read(3, 100)
    assert info.value.log_start_offset == 4
    assert plog.offset_for_timestamp(0) == (4, clock.ms)  # not a hidden record
    assert plog.delete_records(2) == 4  # below the start: nothing changes
    assert plog.delete_records(-1) == 10  # the high watermark
    assert [s.base_offset for s in plog.segments()] == [9]  # the active segment stays
    assert read_all(plog) == []
    plog.append(batch_of([(b"k", b"after")], clock.ms))
    assert [r.value for r in read_all(plog)] == [b"after"]


def test_the_new_start_survives_reopening(tmp_path):
    clock = FakeClock()
    plog = open_log(tmp_path / "p", config(segment_bytes=600), clock)
    fill(plog, clock, 5)
    plog.delete_records(2)
    plog.close()
    assert (tmp_path / "p" / CHECKPOINT_NAME).read_text().strip() == "2"
    reopened = open_log(tmp_path / "p", config(segment_bytes=600), clock)
    assert reopened.log_start_offset == 2
    assert [r.offset for r in read_all(reopened)] == [2, 3, 4]
    reopened.close()


def test_offsets_past_the_high_watermark_are_refused(tmp_path):
    clock = FakeClock()
    plog = open_log(tmp_path / "p", config(), clock)
    fill(plog, clock, 3)
    for offset in (4, -2):
        with pytest.raises(OffsetOutOfRangeError):
            plog.delete_records(offset)
    assert plog.log_start_offset == 0
    assert not (tmp_path / "p" / CHECKPOINT_NAME).exists()


def test_a_failed_checkpoint_write_changes_nothing(tmp_path, monkeypatch):
    clock = FakeClock()
    plog = open_log(tmp_path / "p", config(), clock)
    fill(plog, clock, 3)

    def no_space(*args, **kwargs):  # disk full, injected
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("core.log.start_offset.os.fsync", no_space)
    with pytest.raises(StorageError):
        plog.delete_records(2)
    assert plog.log_start_offset == 0
    assert len(read_all(plog)) == 3


def test_delete_records_while_appending(tmp_path):
    import threading

    clock = FakeClock()
    plog = open_log(tmp_path / "p", config(segment_bytes=600, file_delete_delay_ms=0), clock)
    fill(plog, clock, 5)
    stop = threading.Event()

    def append_until_stopped() -> None:
        while not stop.is_set():
            plog.append(batch_of([(b"k", b"v" * 100)], clock.ms))

    appender = threading.Thread(target=append_until_stopped)
    appender.start()
    starts = []
    try:
        for _ in range(20):
            starts.append(plog.delete_records(-1))
    finally:
        stop.set()
        appender.join(10)
    assert starts == sorted(starts) and starts[-1] > 5
    offsets = [r.offset for r in read_all(plog)]
    assert offsets == list(range(plog.log_start_offset, plog.log_end_offset))
