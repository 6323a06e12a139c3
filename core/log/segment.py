"""One log segment: a ``.log`` file of record batches with its offset and time indexes.

A segment is written only by its ``PartitionLog`` under the log's append lock, and read
by any thread without it. Readers ``acquire()`` a segment for the duration of a read;
``close()`` defers releasing the file descriptors until the last reader is done, so a
segment deleted by retention or replaced by compaction never fails (or, worse, reads a
reused descriptor) under a concurrent reader.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from core.log.config import TopicConfig
from core.log.errors import CorruptRecordError, StorageError
from core.log.index import OffsetIndex, TimeIndex
from core.log.records import HEADER_SIZE
from core.log.scan import BatchInfo, BatchWalk, batch_last_offset, check_stored_batch

__all__ = [
    "INDEX_SUFFIX",
    "LOG_SUFFIX",
    "TIME_INDEX_SUFFIX",
    "LogSegment",
    "file_name",
    "parse_base_offset",
    "roll_jitter",
]

log = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
INT32_MAX = 2**31 - 1
_INDEX_ENTRY = 8  # bytes per offset-index entry
_TIME_ENTRY = 12  # bytes per time-index entry
_LOG_OVERHEAD = 12
_SIZE_PROBE = 4096


def file_name(base_offset: int, suffix: str) -> str:
    """Kafka's file name: the base offset as 20 zero-padded digits plus ``suffix``."""
    return f"{base_offset:020d}{suffix}"


def roll_jitter(config: TopicConfig) -> int:
    """A new segment's random share of segment.jitter.ms, so that partitions roll apart."""
    return random.randrange(config.segment_jitter_ms) if config.segment_jitter_ms > 0 else 0


def parse_base_offset(name: str) -> int | None:
    """The base offset a segment file name starts with, or None if it is not one."""
    stem = name.split(".", 1)[0]
    return int(stem) if len(stem) == 20 and stem.isdigit() else None


class LogSegment:
    """A ``.log`` file plus its indexes; mutable state is guarded by the owning log's lock.

    ``suffix`` is appended to every file name ('' for a live segment, ``.cleaned`` or
    ``.swap`` while compaction builds a replacement).
    """

    def __init__(
        self, directory: Path, base_offset: int, *, suffix: str = "", create: bool = False
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.suffix = suffix
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | (os.O_TRUNC if create else 0)
        self._fd = os.open(self.path(LOG_SUFFIX), flags, 0o644)
        try:
            self.size = os.fstat(self._fd).st_size
            self.offset_index = OffsetIndex(self.path(INDEX_SUFFIX), create=create)
            try:
                self.time_index = TimeIndex(self.path(TIME_INDEX_SUFFIX), create=create)
            except OSError:
                self.offset_index.close()
                raise
        except OSError:
            os.close(self._fd)
            if create:  # leave no half-made segment behind (a roll on a full disk)
                for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                    with contextlib.suppress(OSError):
                        self.path(suffix).unlink()
            raise
        self.next_offset = base_offset  # one past the last stored offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset  # base offset of the batch that reached it
        self.created_ms: int | None = None  # clock time of the first append (segment.ms)
        self.first_batch_timestamp: int | None = None  # set by recovery
        self.roll_jitter_ms = 0
        self._bytes_since_index = 0
        self.damaged = False  # a failed append could not be rolled back: recover first
        self._refs = 0
        self._closing = False
        self._closed = False
        self._ref_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LogSegment({self.path(LOG_SUFFIX)}, size={self.size}, next={self.next_offset})"

    def path(self, kind: str) -> Path:
        return self.directory / (file_name(self.base_offset, kind) + self.suffix)

    @property
    def fd(self) -> int:
        return self._fd

    @property
    def is_empty(self) -> bool:
        return self.size == 0

    # ------------------------------------------------------------------ writing

    def append(self, buf: bytes | bytearray, batches: list[BatchInfo], index_interval: int) -> None:
        """Write ``buf`` (whole batches described by ``batches``, positions relative to buf)
        and index it: all or nothing.

        One ``os.write`` for the whole buffer, so a killed process leaves at most one torn
        write at the tail. If any write fails (disk full, I/O error), the log and both
        indexes are cut back to where they were and StorageError is raised; if even that
        fails, ``damaged`` is set and the segment must be recovered before more appends.
        """
        start = self.size
        saved = (self.next_offset, self.max_timestamp, self.offset_of_max_timestamp,
                 self._bytes_since_index)
        try:
            marks = (self.offset_index.mark(), self.time_index.mark())
        except OSError as exc:
            raise StorageError(f"cannot open the indexes of {self.path(LOG_SUFFIX)}: {exc}") \
                from exc
        try:
            written = os.write(self._fd, buf)
            while written < len(buf):  # only a signal or a full disk make writes short
                written += os.write(self._fd, memoryview(buf)[written:])
            self.size = start + len(buf)
            self._index_batches(batches, start, index_interval)
        except OSError as exc:
            self._roll_back(start, saved, marks)
            raise StorageError(f"cannot append to {self.path(LOG_SUFFIX)}: {exc}; the append "
                               "was rolled back") from exc

    def _roll_back(self, size: int, saved: tuple[int, int, int, int],
                   marks: tuple[tuple[int, int], tuple[int, int]]) -> None:
        (self.next_offset, self.max_timestamp, self.offset_of_max_timestamp,
         self._bytes_since_index) = saved
        try:
            self.offset_index.reset(marks[0])
            self.time_index.reset(marks[1])
            os.ftruncate(self._fd, size)
        except OSError as exc:
            self.damaged = True
            log.error("cannot roll back a failed append to %s (%s); the partition takes no "
                      "more appends until it is recovered at the next start",
                      self.path(LOG_SUFFIX), exc)
        self.size = size

    def _index_batches(self, batches: list[BatchInfo], start: int, interval: int) -> None:
        base = self.base_offset
        for b in batches:
            position = start + b.position
            if b.max_timestamp > self.max_timestamp:
                self.max_timestamp = b.max_timestamp
                self.offset_of_max_timestamp = b.base_offset
            if position > 0 and self._bytes_since_index >= interval:
                self.offset_index.append(b.base_offset - base, position)
                self.time_index.maybe_append(self.max_timestamp,
                                             self.offset_of_max_timestamp - base)
                self._bytes_since_index = 0
            self._bytes_since_index += b.size
            self.next_offset = b.last_offset + 1

    def seal(self) -> None:
        """The segment stops being active: record its max timestamp in the time index (as
        Kafka does on roll), so that reopening finds it without a scan."""
        if self.max_timestamp >= 0:
            self.time_index.maybe_append(
                self.max_timestamp, self.offset_of_max_timestamp - self.base_offset
            )

    def flush(self, *, indexes: bool = True) -> None:
        """fsync the data and (unless told not to) the indexes."""
        os.fdatasync(self._fd)
        if indexes:
            self.offset_index.flush()
            self.time_index.flush()

    def truncate(self, size: int) -> None:
        os.ftruncate(self._fd, size)
        self.size = size

    def should_roll(self, config: TopicConfig, size: int, last_offset: int, batches: int,
                    now_ms: int) -> bool:
        """Whether an append of ``size`` bytes and ``batches`` batches up to ``last_offset``
        must go to a new segment: segment.bytes, segment.ms (minus this segment's jitter),
        relative offsets past int32, or a full index. An empty segment never rolls."""
        if self.size == 0:
            return False
        return (
            self.size + size > config.segment_bytes
            or (self.created_ms is not None
                and now_ms - self.created_ms > config.segment_ms - self.roll_jitter_ms)
            or last_offset - self.base_offset > INT32_MAX
            or len(self.offset_index) + batches > config.segment_index_bytes // _INDEX_ENTRY
            or len(self.time_index) + batches > config.segment_index_bytes // _TIME_ENTRY
        )

    # ------------------------------------------------------------------ recovery

    def recover(self, index_interval: int, *, max_last_offset: int | None = None) -> int:
        """Check every batch (length, magic, CRC-32C, offsets), cut the file at the first bad
        or partial one and rebuild both indexes. Returns the number of bytes cut."""
        walk = BatchWalk(self._fd, 0, self.size, segment_base=self.base_offset,
                         verify_crc=True, max_last_offset=max_last_offset)
        self._rebuild_indexes(walk, index_interval)
        cut = self.size - walk.position
        if walk.problem:
            log.warning("%s: %s; truncating %d bytes at position %d",
                        self.path(LOG_SUFFIX), walk.problem, cut, walk.position)
            self.truncate(walk.position)
        return cut

    def _rebuild_indexes(self, batches: Iterable[BatchInfo], interval: int) -> None:
        base = self.base_offset
        offsets: list[tuple[int, int]] = []
        times: list[tuple[int, int]] = []
        max_ts, max_ts_offset, since, first_ts = -1, base, 0, None
        self.next_offset = base
        for b in batches:
            if first_ts is None:
                first_ts = b.max_timestamp
            if b.max_timestamp > max_ts:
                max_ts, max_ts_offset = b.max_timestamp, b.base_offset
            if b.position > 0 and since >= interval:
                offsets.append((b.base_offset - base, b.position))
                if not times or max_ts > times[-1][0]:
                    times.append((max_ts, max_ts_offset - base))
                since = 0
            since += b.size
            self.next_offset = b.last_offset + 1
        self.offset_index.rebuild(offsets)
        self.time_index.rebuild(times)
        self.max_timestamp, self.offset_of_max_timestamp = max_ts, max_ts_offset
        self.first_batch_timestamp = first_ts
        self._bytes_since_index = since

    def load_sealed(self, next_base_offset: int) -> bool:
        """Take a sealed segment's state from its indexes and a walk of the batches after the
        last offset-index entry. False when the indexes are missing or do not match the
        log (the caller then recovers the segment); the files are not changed."""
        index_entries = self.offset_index.file_entries()
        time_entries = self.time_index.file_entries()
        if index_entries is None or time_entries is None:
            return False
        if self.size == 0:
            return index_entries == 0 and time_entries == 0
        base = self.base_offset
        last_index = self.offset_index.last_entry()
        start, expected = (0, base) if last_index is None else (last_index[1], base + last_index[0])
        if not 0 <= start < self.size or expected < base:
            return False
        walk = BatchWalk(self._fd, start, self.size, segment_base=base,
                         min_base_offset=expected, max_last_offset=next_base_offset)
        max_ts, max_ts_offset = -1, base
        for b in walk:
            if b.position == start and b.base_offset != expected:
                return False
            if b.max_timestamp > max_ts:
                max_ts, max_ts_offset = b.max_timestamp, b.base_offset
            self.next_offset = b.last_offset + 1
        if walk.problem or self.next_offset == base:
            return False
        last_time = self.time_index.last_entry()
        if last_time is not None:
            timestamp, relative = last_time
            if not 0 <= relative < self.next_offset - base:
                return False
            if timestamp >= max_ts:
                max_ts, max_ts_offset = timestamp, base + relative
        elif start > 0:
            return False  # the batches before the walk have no recorded timestamps
        self.max_timestamp, self.offset_of_max_timestamp = max_ts, max_ts_offset
        return True

    # ------------------------------------------------------------------ reading

    def walk(self, start: int, end: int, *, verify_crc: bool = False) -> BatchWalk:
        return BatchWalk(self._fd, start, end, segment_base=self.base_offset,
                         verify_crc=verify_crc)

    def find_position(self, offset: int, end: int) -> int | None:
        """Position of the first batch holding an offset at or after ``offset``, before ``end``.

        Starts at the offset index entry at or before ``offset`` and walks batch headers;
        None when no batch before ``end`` qualifies.
        """
        relative = offset - self.base_offset
        start = self.offset_index.lookup(relative) if relative > 0 else 0
        if start >= end:
            start = 0  # an entry past a reader's snapshot cannot be for its offset
        walk = self.walk(start, end)
        for b in walk:
            if start and b.position == start and b.base_offset > offset:
                return self._find_without_index(offset, end)
            if b.last_offset >= offset:
                return b.position
        if walk.problem and start:
            return self._find_without_index(offset, end)  # a bad entry, or a bad log?
        walk.raise_problem(self.path(LOG_SUFFIX))
        return None

    def _find_without_index(self, offset: int, end: int) -> int | None:
        log.warning("offset index %s does not match its log; walking the log instead",
                    self.offset_index.path)
        walk = self.walk(0, end)
        for b in walk:
            if b.last_offset >= offset:
                return b.position
        walk.raise_problem(self.path(LOG_SUFFIX))
        return None

    def read(
        self, position: int, end: int, max_bytes: int, max_offset: int, min_one: bool
    ) -> tuple[bytes, bool]:
        """Whole, CRC-checked batches from ``position``.

        Stops before ``end``, before the first batch reaching ``max_offset`` and at
        ``max_bytes`` (but returns at least one batch if ``min_one``). Returns the bytes and
        whether the segment's data up to ``end`` was exhausted, so the caller may go on
        with the next segment.
        """
        available = end - position
        if available <= 0:
            return b"", True
        budget = max(max_bytes, 0)
        want = min(max(budget, _SIZE_PROBE if min_one else 0), available)
        buf = os.pread(self._fd, want, position) if want else b""
        p = 0
        while p < available:
            if p + _LOG_OVERHEAD > len(buf):
                return buf[:p], False
            size = _LOG_OVERHEAD + int.from_bytes(buf[p + 8 : p + 12], "big", signed=True)
            if size < HEADER_SIZE or p + size > available:
                raise CorruptRecordError(
                    f"batch at position {position + p} of {self.path(LOG_SUFFIX)} has length "
                    f"{size}, past the end of the segment; the file is corrupt"
                )
            if (p or not min_one) and p + size > budget:
                return buf[:p], False
            if p + size > len(buf):  # the first batch, bigger than what was read
                buf = os.pread(self._fd, size, position)
            if batch_last_offset(buf, p) >= max_offset:
                return buf[:p], False
            check_stored_batch(buf, p, self.path(LOG_SUFFIX), position + p)
            p += size
        return (buf if p == len(buf) else buf[:p]), True

    def read_bytes(self, position: int, size: int) -> bytes:
        data = os.pread(self._fd, size, position)
        if len(data) != size:
            raise CorruptRecordError(
                f"{self.path(LOG_SUFFIX)} ended at {position + len(data)} inside a batch "
                f"expected to end at {position + size}"
            )
        return data

    def batches_from_timestamp(self, timestamp: int, end: int) -> Iterator[BatchInfo]:
        """Headers of the batches that may hold a record at or after ``timestamp``, in order:
        the time index skips the batches that cannot."""
        start = 0
        relative = self.time_index.lookup_before(timestamp)
        if relative:
            start = self.find_position(self.base_offset + relative, end) or 0
        walk = self.walk(start, end)
        yield from walk
        walk.raise_problem(self.path(LOG_SUFFIX))

    # ------------------------------------------------------------------ readers and lifecycle

    def acquire(self) -> bool:
        """Pin the file descriptors for a read; False if the segment is already closed."""
        with self._ref_lock:
            if self._closing:
                return False
            self._refs += 1
            return True

    def release(self) -> None:
        with self._ref_lock:
            self._refs -= 1
            close_now = self._closing and self._refs == 0
        if close_now:
            self._close_files()

    def close(self) -> None:
        """Close now, or when the last reader releases the segment."""
        with self._ref_lock:
            if self._closing:
                return
            self._closing = True
            close_now = self._refs == 0
        if close_now:
            self._close_files()

    def _close_files(self) -> None:
        with self._ref_lock:
            if self._closed:
                return
            self._closed = True
        self.offset_index.close()
        self.time_index.close()
        os.close(self._fd)

    def rename(self, suffix: str) -> None:
        """Give every file the new ``suffix``; the log file last, so that its name is the
        commit point for anyone reading the directory after a crash."""
        old = self.path(LOG_SUFFIX)
        self.suffix = suffix
        self.offset_index.rename(self.path(INDEX_SUFFIX))
        self.time_index.rename(self.path(TIME_INDEX_SUFFIX))
        os.replace(old, self.path(LOG_SUFFIX))

    def unlink(self) -> None:
        """Remove the files (an open descriptor keeps the data readable until closed)."""
        self.offset_index.unlink()
        self.time_index.unlink()
        with contextlib.suppress(FileNotFoundError):
            self.path(LOG_SUFFIX).unlink()
