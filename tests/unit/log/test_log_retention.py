"""Retention: deleting whole segments by time and size, delayed file removal, readers."""

from __future__ import annotations

import threading

import pytest
from log_testing import FakeClock, batch_of, config, open_log, read_all

from core.log.errors import OffsetOutOfRangeError
from core.log.segment import LogSegment

HOUR = 3_600_000


def fill(plog, clock: FakeClock, batches: int, step_ms: int = 0) -> None:
    for _ in range(batches):
        plog.append(batch_of([(b"k", b"v" * 100)], clock.ms))
        clock.advance(step_ms)


def test_time_retention_deletes_old_segments_from_the_oldest(tmp_path):
    clock = FakeClock()
    cfg = config(segment_bytes=600, retention_ms=HOUR, file_delete_delay_ms=0)
    plog = open_log(tmp_path / "p", cfg, clock)
    fill(plog, clock, 20, step_ms=10 * 60_000)  # 10 minutes apart, 3 per segment
    bases = [s.base_offset for s in plog.segments()]
    assert len(bases) > 3
    # Segments whose newest record is over an hour old go; the rest stay.
    now = clock.ms
    expired = [s for s in plog.segments()[:-1] if now - s.max_timestamp > HOUR]
    assert plog.enforce_retention(now) == len(expired) > 0
    assert plog.log_start_offset == plog.segments()[0].base_offset == bases[len(expired)]
    assert [r.offset for r in read_all(plog)] == list(range(plog.log_start_offset, 20))
    with pytest.raises(OffsetOutOfRangeError):
        plog.read(0, 100)
    assert plog.enforce_retention(now) == 0
    remaining = {p.name for p in (tmp_path / "p").iterdir()}
    assert f"{bases[0]:020d}.log" not in remaining and f"{bases[0]:020d}.index" not in remaining


def test_an_expired_active_segment_is_rolled_so_offsets_never_go_back(tmp_path):
    clock = FakeClock()
    cfg = config(segment_bytes=600, retention_ms=HOUR)
    plog = open_log(tmp_path / "p", cfg, clock)
    fill(plog, clock, 6)
    clock.advance(HOUR + 1)
    assert plog.enforce_retention(clock.ms) == 2
    assert plog.log_start_offset == plog.log_end_offset == 6
    assert plog.read(6, 100).data == b""
    assert plog.append(batch_of([(b"k", b"v")], clock.ms)).base_offset == 6
    plog.close()
    plog = open_log(tmp_path / "p", cfg, clock)
    assert (plog.log_start_offset, plog.log_end_offset) == (6, 7)
    plog.close()


def test_size_retention_keeps_the_log_at_or_above_the_limit(tmp_path):
    clock = FakeClock()
    plog = open_log(tmp_path / "p", config(segment_bytes=600, retention_ms=-1), clock)
    fill(plog, clock, 20)
    sizes = [s.size for s in plog.segments()]
    total = sum(sizes)
    limit = total - sizes[0] - sizes[1] - 10  # room to drop two segments, not three
    plog.update_config(config(segment_bytes=600, retention_ms=-1, retention_bytes=limit))
    assert plog.enforce_retention(clock.ms) == 2
    assert plog.size_bytes == total - sizes[0] - sizes[1] >= limit
    # The active segment never goes for size, however small the limit.
    plog.update_config(config(segment_bytes=600, retention_ms=-1, retention_bytes=0))
    plog.enforce_retention(clock.ms)
    assert len(plog.segments()) == 1 and plog.log_end_offset == 20


def test_compact_only_topics_are_not_deleted(tmp_path):
    clock = FakeClock()
    cfg = config(segment_bytes=600, retention_ms=1, retention_bytes=1, cleanup_policy="compact")
    plog = open_log(tmp_path / "p", cfg, clock)
    fill(plog, clock, 10)
    clock.advance(HOUR)
    assert plog.enforce_retention(clock.ms) == 0
    assert plog.log_start_offset == 0


def test_deleted_files_stay_until_file_delete_delay_ms(tmp_path):
    clock = FakeClock()
    cfg = config(segment_bytes=600, retention_ms=HOUR, file_delete_delay_ms=60_000)
    plog = open_log(tmp_path / "p", cfg, clock)
    fill(plog, clock, 10)
    clock.advance(2 * HOUR)
    assert plog.enforce_retention(clock.ms) == 4  # three full segments and the active one
    names = {p.name for p in (tmp_path / "p").iterdir()}
    assert f"{0:020d}.log.deleted" in names and f"{0:020d}.log" not in names
    plog.maybe_flush(clock.advance(59_999))
    assert (tmp_path / "p" / f"{0:020d}.log.deleted").exists()
    plog.maybe_flush(clock.advance(1))
    assert not any(p.name.endswith(".deleted") for p in (tmp_path / "p").iterdir())


def test_a_reader_holding_a_deleted_segment_finishes_its_read(tmp_path, monkeypatch):
    clock = FakeClock()
    cfg = config(segment_bytes=600, retention_ms=HOUR, file_delete_delay_ms=0)
    plog = open_log(tmp_path / "p", cfg, clock)
    fill(plog, clock, 12)
    first = plog.segments()[0]
    expected = plog.read(0, 1 << 20).data
    reading, deleted = threading.Event(), threading.Event()
    real_read = LogSegment.read

    def slow_read(self, *args, **kwargs):
        if self is first and not deleted.is_set():
            reading.set()
            assert deleted.wait(timeout=10)
        return real_read(self, *args, **kwargs)

    monkeypatch.setattr(LogSegment, "read", slow_read)
    result = {}
    reader = threading.Thread(target=lambda: result.setdefault("r", plog.read(0, 1 << 20)))
    reader.start()
    assert reading.wait(timeout=10)
    clock.advance(2 * HOUR)
    assert plog.enforce_retention(clock.ms) == 4
    assert not (tmp_path / "p" / f"{0:020d}.log").exists()
    deleted.set()
    reader.join(timeout=10)
    # The held segment is read in full through its still-open descriptor; the read stops
    # at the next segment, which was gone before the reader got to it.
    data = result["r"].data
    assert len(data) >= first.size and expected.startswith(data)
    # A reader that starts now sees the new log start.
    with pytest.raises(OffsetOutOfRangeError):
        plog.read(0, 100)
