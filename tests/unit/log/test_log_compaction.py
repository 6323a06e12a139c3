"""Compaction: latest record per key, offsets kept, tombstones, lag, dirty ratio, crash safety."""

from __future__ import annotations

import json
import os
import threading
import time

from log_testing import FakeClock, config, open_log, read_all

from core.log.cleaner_checkpoint import CHECKPOINT_NAME
from core.log.records import TimestampType, decode_batch, encode_batch, iter_batches

DAY = 86_400_000


def compacted(**overrides: object):
    settings = {"cleanup_policy": "compact", "segment_bytes": 400,
                "min_cleanable_dirty_ratio": 0.01, "file_delete_delay_ms": 0}
    settings.update(overrides)
    return config(**settings)


def put(plog, clock: FakeClock, key: bytes, value: bytes | None) -> int:
    return plog.append(encode_batch([(key, value, [], clock.ms)])).base_offset


def latest(records) -> dict[bytes, tuple[int, bytes | None]]:
    out = {}
    for r in records:
        out[r.key] = (r.offset, r.value)
    return out


def test_keeps_the_latest_record_per_key_at_its_offset(tmp_path):
    clock = FakeClock()
    plog = open_log(tmp_path / "p", compacted(), clock)
    for i in range(60):
        put(plog, clock, b"k%d" % (i % 7), b"v%d" % i)
    before = read_all(plog)
    active_base = plog.segments()[-1].base_offset
    assert plog.compact(clock.ms)
    after = read_all(plog)
    assert latest(after) == latest(before)
    by_offset = {r.offset: r for r in before}
    for r in after:  # same offsets, same records
        assert by_offset[r.offset] == r
    # Below the active segment only the latest copies remain, including those superseded
    # by records in the active segment; the active segment is untouched.
    newest = {offset for offset, _ in latest(before).values()}
    assert {r.offset for r in after if r.offset < active_base} <= newest
    assert [r.offset for r in after if r.offset >= active_base] == list(range(active_base, 60))
    assert plog.log_start_offset == 0 and plog.log_end_offset == 60
    assert plog.size_bytes < sum(len(encode_batch([(b"k0", b"v0", [], 0)])) for _ in range(60))
    plog.close()
    reopened = open_log(tmp_path / "p", compacted(), clock)
    assert read_all(reopened) == after
    reopened.close()


def test_tombstones_survive_delete_retention_ms_then_go(tmp_path):
    clock = FakeClock()
    plog = open_log(tmp_path / "p", compacted(delete_retention_ms=DAY), clock)
    put(plog, clock, b"a", b"1")
    put(plog, clock, b"b", b"1")
    tombstone = put(plog, clock, b"a", None)
    for i in range(12):
        put(plog, clock, b"c%d" % i, b"x" * 40)
    assert plog.compact(clock.ms)
    records = read_all(plog)
    assert (b"a", None) in [(r.key, r.value) for r in records]
    assert b"1" not in [r.value for r in records if r.key == b"a"]
    assert not plog.compact(clock.advance(DAY - 1))  # nothing dirty, nothing due yet
    assert any(r.offset == tombstone for r in read_all(plog))
    # Once the horizon passes, the next pass runs even without new dirty data and drops it.
    assert plog.compact(clock.advance(1))
    records = read_all(plog)
    assert all(r.key != b"a" for r in records)
    assert (b"b", b"1") in [(r.key, r.value) for r in records]
    checkpoint = json.loads((tmp_path / "p" / CHECKPOINT_NAME).read_text())
    assert checkpoint["tombstone_passes"] == []


def test_tombstone_horizon_survives_a_restart(tmp_path):
    clock = FakeClock()
    cfg = compacted(delete_retention_ms=DAY)
    plog = open_log(tmp_path / "p", cfg, clock)
    put(plog, clock, b"a", b"1")
    put(plog, clock, b"a", None)
    for i in range(12):
        put(plog, clock, b"c%d" % i, b"x" * 40)
    assert plog.compact(clock.ms)
    plog.close()
    plog = open_log(tmp_path / "p", cfg, clock)
    clock.advance(DAY // 2)
    for i in range(12):  # new dirty data: a pass runs but the tombstone is not due
        put(plog, clock, b"d%d" % i, b"x" * 40)
    assert plog.compact(clock.ms)
    assert any(r.key == b"a" and r.value is None for r in read_all(plog))
    assert plog.compact(clock.advance(DAY // 2))
    assert all(r.key != b"a" for r in read_all(plog))
    plog.close()


def test_min_compaction_lag_keeps_recent_segments_uncompacted(tmp_path):
    clock = FakeClock()
    plog = open_log(tmp_path / "p", compacted(min_compaction_lag_ms=60_000), clock)
    for i in range(12):
        put(plog, clock, b"k", b"old-%d" % i)
    clock.advance(60_001)
    for i in range(12):
        put(plog, clock, b"k", b"new-%d" % i)
    # The first segment holding a record younger than the lag, and all after it, stay as
    # they are; before it, every copy of k is superseded.
    young = next(s.base_offset for s in plog.segments()
                 if s.max_timestamp > clock.ms - 60_000)
    assert young > 0
    before = read_all(plog)
    assert plog.compact(clock.ms)
    after = read_all(plog)
    assert [r for r in after if r.offset >= young] == [r for r in before if r.offset >= young]
    assert all(r.offset >= young for r in after)
    assert not plog.compact(clock.ms)


def test_dirty_ratio_gates_passes(tmp_path):
    clock = FakeClock()
    plog = open_log(tmp_path / "p", compacted(min_cleanable_dirty_ratio=0.5), clock)
    for i in range(40):
        put(plog, clock, b"k%d" % i, b"x" * 30)  # unique keys: nothing to remove
    assert plog.compact(clock.ms)
    assert json.loads((tmp_path / "p" / CHECKPOINT_NAME).read_text())["cleaned_offset"] > 0
    assert not plog.compact(clock.ms)  # everything clean
    for i in range(6):
        put(plog, clock, b"k%d" % i, b"y" * 30)
    assert not plog.compact(clock.ms)  # a little dirty: below the ratio
    for i in range(60):
        put(plog, clock, b"k%d" % i, b"z" * 30)
    assert plog.compact(clock.ms)


def test_rewritten_batches_keep_their_attributes(tmp_path):
    clock = FakeClock()
    cfg = compacted(message_timestamp_type="LogAppendTime")
    plog = open_log(tmp_path / "p", cfg, clock)
    records = [(b"a", b"1", [("h", b"x")], 5), (b"b", b"2", [], 6), (b"a", b"3", [], 7)]
    plog.append(encode_batch(records, compression=1, producer_id=77, producer_epoch=3))
    for i in range(10):
        put(plog, clock, b"c%d" % i, b"x" * 40)
    assert plog.compact(clock.ms)
    header, kept = decode_batch(plog.read(0, 1 << 20).data)
    assert [(r.offset, r.key, r.value) for r in kept] == [(1, b"b", b"2"), (2, b"a", b"3")]
    assert header.base_offset == 0 and header.compression == 1
    assert (header.producer_id, header.producer_epoch) == (77, 3)
    assert header.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert all(r.timestamp == clock.ms for r in kept)


def test_appends_and_reads_during_compaction_lose_nothing(tmp_path):
    clock = FakeClock()
    plog = open_log(tmp_path / "p", compacted(segment_bytes=2000), clock)
    written: dict[bytes, bytes] = {}
    stop = threading.Event()
    errors: list[BaseException] = []

    def appender() -> None:
        try:
            for i in range(2000):
                key, value = b"k%d" % (i % 50), b"v%d" % i
                put(plog, clock, key, value)
                written[key] = value
        except BaseException as exc:
            errors.append(exc)
        finally:
            stop.set()

    def reader() -> None:
        try:
            deadline = time.monotonic() + 60
            # Paced: a reader spinning on the GIL would starve the appender, not test it.
            while time.monotonic() < deadline:
                offsets = [r.offset for r in read_all(plog, max_bytes=3000)]
                assert offsets == sorted(set(offsets))
                if stop.wait(0.01):
                    break
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=appender), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    passes = 0
    deadline = time.monotonic() + 60
    while not stop.wait(0.005) and time.monotonic() < deadline:  # paced, as a cleaner is
        passes += plog.compact(clock.ms)
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert passes > 0
    plog.compact(clock.ms)
    assert plog.log_end_offset == 2000
    assert {k: v for k, (_, v) in latest(read_all(plog)).items()} == written


def test_an_emptied_first_segment_keeps_the_log_start_offset(tmp_path):
    clock = FakeClock()
    plog = open_log(tmp_path / "p", compacted(), clock)
    for i in range(30):
        put(plog, clock, b"same", b"v%d" % i)
    assert plog.compact(clock.ms)
    assert plog.log_start_offset == 0
    assert plog.segments()[0].base_offset == 0
    assert [r.offset for r in read_all(plog)] == list(range(plog.segments()[-1].base_offset, 30))
    assert plog.read(0, 1 << 20).data  # reading from the start lands on the next batch


class SimulatedCrash(Exception):
    pass


def test_a_crash_at_any_rename_of_a_swap_recovers_a_consistent_log(tmp_path, monkeypatch):
    real_replace = os.replace
    step = 0
    while True:
        step += 1
        directory = tmp_path / f"run{step}"
        clock = FakeClock()
        plog = open_log(directory, compacted(segment_bytes=700), clock)
        for i in range(40):
            put(plog, clock, b"k%d" % (i % 6), b"v%d" % i)
        before = read_all(plog)
        calls = 0

        def replace(src, dst, *, _crash_at=step):
            nonlocal calls
            calls += 1
            if calls == _crash_at:
                raise SimulatedCrash(f"crash before rename {calls}: {src} -> {dst}")
            return real_replace(src, dst)

        monkeypatch.setattr(os, "replace", replace)
        crashed = False
        try:
            plog.compact(clock.ms)
        except SimulatedCrash:
            crashed = True
        finally:
            monkeypatch.setattr(os, "replace", real_replace)
        # The crashed process's log object is abandoned, as a killed process's would be.
        recovered = open_log(directory, compacted(segment_bytes=700), clock)
        after = read_all(recovered)
        by_offset = {r.offset: r for r in before}
        assert all(by_offset[r.offset] == r for r in after), step
        assert latest(after) == latest(before), step
        assert recovered.log_end_offset == 40
        names = {p.name for p in directory.iterdir()}
        assert not any(n.endswith((".swap", ".cleaned", ".deleted")) for n in names)
        recovered.close()
        if not crashed:
            break
        assert step < 100
    assert step > 3  # the pass did several renames, each one crashed once


def test_batches_in_a_compacted_log_stay_ordered_and_valid(tmp_path):
    clock = FakeClock()
    plog = open_log(tmp_path / "p", compacted(delete_retention_ms=DAY), clock)
    for i in range(80):
        put(plog, clock, b"k%d" % (i % 9), b"v%d" % i if i % 5 else None)
    plog.compact(clock.advance(1))
    plog.compact(clock.advance(DAY + 1))
    data = plog.read(0, 1 << 20).data
    lasts = [h.last_offset for _, h in iter_batches(data)]
    assert lasts == sorted(lasts)
    active = plog.segments()[-1].base_offset
    cleaned = [r.key for r in read_all(plog) if r.offset < active]
    assert len(cleaned) == len(set(cleaned))  # one record per key below the active segment


def test_compact_and_delete_applies_both(tmp_path):
    clock = FakeClock()
    cfg = compacted(cleanup_policy="compact,delete", retention_ms=DAY)
    plog = open_log(tmp_path / "p", cfg, clock)
    for i in range(30):
        put(plog, clock, b"k%d" % (i % 3), b"v%d" % i)
    assert plog.compact(clock.ms)
    clock.advance(DAY + 1)
    assert plog.enforce_retention(clock.ms) > 0
    assert plog.log_start_offset == plog.log_end_offset == 30
