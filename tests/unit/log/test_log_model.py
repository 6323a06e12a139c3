"""Stateful property tests: PartitionLog against a simple in-memory model.

Two machines: one for cleanup.policy=delete (appends, reads, byte-size rolls, retention by
time and size, timestamp lookups, reopen) and one for cleanup.policy=compact (keyed appends
with tombstones, reads, compaction passes on a fake clock, reopen).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from log_testing import FakeClock, config, open_log, read_all

from core.log.errors import OffsetOutOfRangeError
from core.log.records import Record, decode_batch, encode_batch, iter_batches

KEYS = st.sampled_from([b"a", b"b", b"c", b"d", b"e", b"f"])
# Mostly small values; now and then one larger than a segment and the reads' page size.
VALUES = st.one_of(st.none(), st.integers(0, 20).flatmap(
    lambda n: st.binary(min_size=4100, max_size=4200) if n == 0 else st.binary(max_size=120)))
HEADERS = st.lists(st.tuples(st.sampled_from(["h1", "h2"]), st.one_of(st.none(),
                                                                      st.binary(max_size=8))),
                   max_size=2)
MACHINE_SETTINGS = settings(max_examples=int(os.environ.get("FERRY_MODEL_EXAMPLES", "50")),
                            stateful_step_count=50, deadline=None,
                            suppress_health_check=[HealthCheck.too_slow])


@dataclass
class ModelSegment:
    base: int
    size: int = 0
    max_ts: int = -1


@dataclass
class Model:
    records: dict[int, Record] = field(default_factory=dict)
    segments: list[ModelSegment] = field(default_factory=lambda: [ModelSegment(0)])
    end: int = 0

    @property
    def start(self) -> int:
        return self.segments[0].base


def as_tuple(record: Record) -> tuple:
    return (record.offset, record.key, record.value, list(record.headers), record.timestamp)


class LogMachine(RuleBasedStateMachine):
    """Shared parts: the directory, the clock, reads and reopening."""

    cfg = config()

    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="ferry-model-")) / "t-0"
        self.clock = FakeClock()
        self.model = Model()
        self.plog = None

    def open(self) -> None:
        self.plog = open_log(self.directory, self.cfg, self.clock)

    def teardown(self) -> None:
        if self.plog is not None:
            self.plog.close()
        shutil.rmtree(self.directory.parent, ignore_errors=True)

    def append_records(self, records: list[tuple]) -> None:
        batch = encode_batch(records)
        info = self.plog.append(batch)
        assert info.base_offset == self.model.end
        assert info.last_offset == self.model.end + len(records) - 1
        self.roll_model(len(batch))
        active = self.model.segments[-1]
        active.size += len(batch)
        active.max_ts = max(active.max_ts, *(r[3] for r in records))
        for i, (key, value, headers, ts) in enumerate(records):
            offset = self.model.end + i
            self.model.records[offset] = Record(offset, ts, key, value, headers)
        self.model.end += len(records)

    def roll_model(self, size: int) -> None:
        active = self.model.segments[-1]
        if active.size and active.size + size > self.cfg.segment_bytes:
            self.model.segments.append(ModelSegment(self.model.end))

    @rule(data=st.data())
    def read_from_an_offset(self, data) -> None:
        offset = data.draw(st.integers(self.model.start, self.model.end), label="offset")
        max_bytes = data.draw(st.integers(0, 3000), label="max_bytes")
        result = self.plog.read(offset, max_bytes)
        assert (result.high_watermark, result.log_start_offset) == (self.model.end,
                                                                    self.model.start)
        expected = [r for o, r in sorted(self.model.records.items()) if o >= offset]
        if not expected:
            assert result.data == b""
            return
        batches = list(iter_batches(result.data))
        assert batches and sum(h.size for _, h in batches) == len(result.data)
        assert len(batches) == 1 or len(result.data) <= max_bytes
        first = batches[0][1]
        assert first.base_offset <= expected[0].offset <= first.last_offset
        got = [r for pos, _ in batches for r in decode_batch(result.data, pos)[1]
               if r.offset >= offset]
        assert [as_tuple(r) for r in got] == [as_tuple(r) for r in expected[: len(got)]]

    @rule(data=st.data())
    def read_out_of_range(self, data) -> None:
        offset = data.draw(st.one_of(st.integers(-5, self.model.start - 1),
                                     st.integers(self.model.end + 1, self.model.end + 5)))
        try:
            self.plog.read(offset, 100)
        except OffsetOutOfRangeError as exc:
            assert (exc.log_start_offset, exc.log_end_offset) == (self.model.start,
                                                                  self.model.end)
        else:
            raise AssertionError(f"read at {offset} should be out of range")

    @rule()
    def reopen(self) -> None:
        self.plog.close()
        self.open()

    @rule()
    def flush(self) -> None:
        self.plog.flush()
        assert self.plog.flushed_offset == self.model.end

    @invariant()
    def bounds_and_content_match(self) -> None:
        if self.plog is None:
            return
        assert (self.plog.log_start_offset, self.plog.log_end_offset) == (self.model.start,
                                                                          self.model.end)
        expected = [as_tuple(r) for _, r in sorted(self.model.records.items())]
        assert [as_tuple(r) for r in read_all(self.plog, max_bytes=700)] == expected


class DeleteLogMachine(LogMachine):
    """cleanup.policy=delete: rolls, retention by time and size, timestamp lookups."""

    @initialize(segment_bytes=st.integers(200, 1500),
                index_interval=st.sampled_from([0, 64, 4096]),
                retention_bytes=st.sampled_from([-1, 1500, 4000]))
    def setup(self, segment_bytes, index_interval, retention_bytes) -> None:
        self.cfg = config(segment_bytes=segment_bytes, index_interval_bytes=index_interval,
                          retention_ms=600_000, retention_bytes=retention_bytes,
                          file_delete_delay_ms=0)
        self.open()

    @rule(records=st.lists(st.tuples(st.one_of(st.none(), KEYS), VALUES, HEADERS,
                                     st.integers(-600_000, 600_000)), min_size=1, max_size=8))
    def append(self, records) -> None:
        self.append_records([(k, v, h, self.clock.ms + dt) for k, v, h, dt in records])

    @rule(ms=st.integers(0, 1_800_000))
    def retention(self, ms) -> None:
        now = self.clock.advance(ms)
        doomed = self.expected_retention(now)
        assert self.plog.enforce_retention(now) == doomed
        event(f"retention deleted segments: {doomed > 0}")
        assert [s.base_offset for s in self.plog.segments()] == [
            s.base for s in self.model.segments]

    def expected_retention(self, now: int) -> int:
        segments = self.model.segments
        gone = 0
        for i, segment in enumerate(segments):
            if not segment.size or now - segment.max_ts <= self.cfg.retention_ms:
                break
            gone = i + 1
        if gone == len(segments):  # the active segment expired: roll an empty one first
            segments.append(ModelSegment(self.model.end))
        if self.cfg.retention_bytes >= 0:
            excess = sum(s.size for s in segments[gone:]) - self.cfg.retention_bytes
            while gone < len(segments) - 1 and excess - segments[gone].size >= 0:
                excess -= segments[gone].size
                gone += 1
        del segments[:gone]
        start = segments[0].base
        self.model.records = {o: r for o, r in self.model.records.items() if o >= start}
        return gone

    @rule(data=st.data())
    def offset_for_timestamp(self, data) -> None:
        target = data.draw(st.integers(self.clock.ms - 700_000, self.clock.ms + 700_000))
        expected = next(((o, r.timestamp) for o, r in sorted(self.model.records.items())
                         if r.timestamp >= target), None)
        assert self.plog.offset_for_timestamp(target) == expected

    @rule()
    def max_timestamp(self) -> None:
        records = sorted(self.model.records.items())
        best = max((r.timestamp for _, r in records), default=None)
        expected = None if best is None else next((o, best) for o, r in records
                                                  if r.timestamp == best)
        assert self.plog.max_timestamp() == expected

    @invariant()
    def sizes_match(self) -> None:
        if self.plog is not None:
            assert self.plog.size_bytes == sum(s.size for s in self.model.segments)


class CompactLogMachine(LogMachine):
    """cleanup.policy=compact: latest per key, offsets kept, tombstones expire."""

    DELETE_RETENTION = 10_000

    @initialize(segment_bytes=st.integers(150, 800))
    def setup(self, segment_bytes) -> None:
        self.cfg = config(cleanup_policy="compact", segment_bytes=segment_bytes,
                          min_cleanable_dirty_ratio=0.0, file_delete_delay_ms=0,
                          delete_retention_ms=self.DELETE_RETENTION)
        self.cleaned = 0  # where the last pass stopped
        self.first_cleaned: dict[int, int] = {}  # tombstone offset -> time of its first pass
        self.open()

    @rule(records=st.lists(st.tuples(KEYS, VALUES, HEADERS), min_size=1, max_size=6))
    def append(self, records) -> None:
        self.append_records([(k, v, h, self.clock.ms) for k, v, h in records])

    @rule(keys=st.lists(KEYS, min_size=1, max_size=4), tombstone=st.booleans())
    def append_small(self, keys, tombstone) -> None:
        value = None if tombstone else b"small"
        self.append_records([(k, value, [], self.clock.ms) for k in keys])

    @precondition(lambda self: self.plog is not None)
    @rule(ms=st.integers(0, 15_000))
    def compact(self, ms) -> None:
        now = self.clock.advance(ms)
        segments = self.plog.segments()
        boundary = segments[-1].base_offset  # first uncleanable offset (no lag configured)
        records = self.model.records
        latest = {r.key: o for o, r in sorted(records.items())}
        dirty = any(s.next_offset > self.cleaned for s in segments[:-1])
        due = any(o < self.cleaned and at + self.DELETE_RETENTION <= now
                  for o, at in self.first_cleaned.items())
        before = read_all(self.plog)
        ran = self.plog.compact(now)
        event(f"compaction ran: {ran}")
        if dirty or due:
            assert ran
        if not ran:
            assert read_all(self.plog) == before
            return
        kept = {}
        for offset, record in records.items():
            if offset >= boundary:
                kept[offset] = record
            elif latest[record.key] == offset:
                # A tombstone lives DELETE_RETENTION after the pass that first cleaned it.
                first = self.first_cleaned.setdefault(offset, now) if record.value is None else 0
                if record.value is not None or now < first + self.DELETE_RETENTION:
                    kept[offset] = record
        self.first_cleaned = {o: at for o, at in self.first_cleaned.items() if o in kept}
        self.model.records = kept
        self.cleaned = boundary
        # The log start offset never moves; sizes are the log's own business now.
        self.model.segments = [ModelSegment(s.base_offset, s.size, s.max_timestamp)
                               for s in self.plog.segments()]

    @invariant()
    def one_record_per_key_below_the_cleaned_offset(self) -> None:
        keys = [r.key for o, r in self.model.records.items() if o < self.cleaned]
        assert len(keys) == len(set(keys))


DeleteLogMachine.TestCase.settings = MACHINE_SETTINGS
CompactLogMachine.TestCase.settings = MACHINE_SETTINGS
TestDeleteLog = DeleteLogMachine.TestCase
TestCompactLog = CompactLogMachine.TestCase
