"""One partition's commit log: segments, appends, reads, flushing, retention, compaction.

Threading: appends, rolls and segment-list changes are serialised by ``_lock``. Reads
never take it: they load the segment list's ``view``, an immutable snapshot (segments, log
end offset and the byte position of the log end in the active segment) that the writer
replaces after every change, so a reader never sees past the log end it loaded. fsync
runs outside ``_lock`` under ``_flush_lock``; retention and compaction are serialised by
``_maintenance_lock`` and take ``_lock`` only to swap segments. Lock order:
``_maintenance_lock`` -> ``_flush_lock`` -> ``_lock``.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from core.log.config import TopicConfig
from core.log.dir_health import LogDirHealth
from core.log.errors import (
    LogClosedError,
    LogDirOfflineError,
    OffsetOutOfRangeError,
    StorageError,
    UnexpectedAppendOffsetError,
)
from core.log.flush_stats import FLUSH_STATS
from core.log.flushing import FlushState
from core.log.loader import fsync_directory, load_segments
from core.log.reader import ReadResult, StaleView, first_record_at_or_after, read_batches
from core.log.records import Header, encode_batch, set_base_offset, set_log_append_time
from core.log.retention import deletable_segments
from core.log.scan import BatchInfo
from core.log.segment import LogSegment
from core.log.segment_list import SegmentList
from core.log.start_offset import load_start_offset, save_start_offset
from core.log.validation import require_keys, validate_append, validate_follower_append

__all__ = ["AppendInfo", "PartitionLog", "ReadResult"]

log = logging.getLogger(__name__)

_READ_ATTEMPTS = 8


@dataclass(frozen=True, slots=True)
class AppendInfo:
    """Where an append landed. ``log_append_time_ms`` is -1 for CreateTime topics."""

    base_offset: int
    last_offset: int
    log_append_time_ms: int
    max_timestamp: int


class PartitionLog:
    """One partition: a list of segments, the last one active.

    Lifecycle: ``open()`` (recovers the directory) -> ``append``/``read`` from any threads,
    ``maybe_flush``/``enforce_retention``/``compact`` from a maintenance thread -> ``close()``
    (idempotent; every later call raises ``LogClosedError``) or ``delete()``.
    """

    def __init__(self, directory: Path, topic: str, partition: int, config: TopicConfig,
                 clock: Callable[[], float], segments: list[LogSegment],
                 health: LogDirHealth | None = None) -> None:
        self.directory = directory
        self.topic = topic
        self.partition = partition
        self.config = config
        self._clock = clock
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._maintenance_lock = threading.Lock()
        self._closed = False
        self._segments = SegmentList(directory, segments)  # changed under _lock only
        self._listeners: list[Callable[[int], None]] = []
        # Whether the data directory takes writes; shared by every log of a LogManager.
        self.health = health or LogDirHealth(directory.parent)
        self._damaged: str | None = None  # why appends must wait for recovery (a restart)
        start = segments[0].base_offset
        self._flush = FlushState(start)  # guarded by _lock
        self._flush.unknown(segments)
        # Where DeleteRecords moved the start (0: never); only grows, changed under _lock.
        self._deleted_below = min(load_start_offset(directory), self._segments.view.end_offset)

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, directory: Path, topic: str, partition: int, config: TopicConfig,
             *, clock: Callable[[], float] = time.time,
             health: LogDirHealth | None = None) -> PartitionLog:
        """Open (creating if missing) and recover the partition stored in ``directory``.
        ``health`` is the data directory's write state, shared by its logs."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        segments = load_segments(directory, config, int(clock() * 1000))
        plog = cls(directory, topic, partition, config, clock, segments, health)
        log.debug("opened %s-%d: offsets [%d, %d), %d segments, %d bytes", topic, partition,
                 plog.log_start_offset, plog.log_end_offset, len(segments), plog.size_bytes)
        return plog

    # ------------------------------------------------------------------ state

    @property
    def log_start_offset(self) -> int:
        """First offset served: the base offset of the first segment, or where DeleteRecords
        moved it within that segment."""
        return max(self._segments.view.segments[0].base_offset, self._deleted_below)

    @property
    def log_end_offset(self) -> int:
        """The next offset to assign; the high watermark on a single node."""
        return self._segments.view.end_offset

    @property
    def size_bytes(self) -> int:
        view = self._segments.view
        return sum(s.size for s in view.segments[:-1]) + view.end_position

    @property
    def flushed_offset(self) -> int:
        """Every offset below this has been fsynced."""
        return self._flush.flushed_offset

    @property
    def closed(self) -> bool:
        return self._closed

    def segments(self) -> tuple[LogSegment, ...]:
        """The current segments, oldest first (a snapshot; for tests and tools)."""
        return self._segments.view.segments

    def _check_open(self) -> None:
        if self._closed:
            raise LogClosedError(
                f"partition {self.topic}-{self.partition} is closed; reopen it to use it"
            )

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    # ------------------------------------------------------------------ appending

    def append(self, batch: bytes | bytearray, *, now_ms: int | None = None) -> AppendInfo:
        """Validate ``batch`` (one or more whole v2 batches), assign offsets and store it.

        All or nothing: if a write fails (disk full, I/O error) the log, its indexes and
        its end offset stay as they were, the data directory goes offline for writes and
        StorageError is raised; while it is offline, LogDirOfflineError.
        Raises InvalidRecordError/CorruptRecordError for a malformed batch,
        RecordTooLargeError above ``max.message.bytes``, LogClosedError after close.
        """
        buf = batch if type(batch) is bytearray else bytearray(batch)
        config = self.config
        infos, records = validate_append(buf, config)
        if config.compact:
            require_keys(buf, infos)
        with self._lock:
            self._check_open()
            self._check_writable()
            now = self._now_ms() if now_ms is None else now_ms
            if config.log_append_time:
                for b in infos:
                    set_log_append_time(buf, now, b.position)
                infos = [b._replace(max_timestamp=now) for b in infos]
            offset = first_offset = self._segments.view.end_offset
            for i, b in enumerate(infos):
                set_base_offset(buf, offset, b.position)
                last = offset + b.last_offset
                infos[i] = BatchInfo(b.position, offset, last, b.max_timestamp, b.size)
                offset = last + 1
            flush_now, listeners = self._store(buf, infos, records, now)
        self._after_append(listeners, flush_now)
        return AppendInfo(first_offset, offset - 1, now if config.log_append_time else -1,
                          max(b.max_timestamp for b in infos))

    def append_as_follower(self, batches: bytes | bytearray) -> AppendInfo:
        """A follower's append of its leader's batches (Kafka's ``appendAsFollower``):
        stored byte for byte, so every replica holds the leader's offsets, timestamps
        (LogAppendTime ones included), partition leader epochs and CRCs.

        The batches must be well formed with valid CRCs and continue the log: the first
        may start past the log end (the leader's cleaner removed the offsets between),
        never below it. A trailing partial batch is left out. Indexes, rolling and
        count-based fsync (``flush.messages``) are as for ``append``; so are the errors,
        plus UnexpectedAppendOffsetError for batches starting below the log end (nothing
        is appended then).
        """
        buf = batches if type(batches) is bytearray else bytearray(batches)
        infos, records, length = validate_follower_append(buf)
        if length < len(buf):
            buf = buf[:length]
        with self._lock:
            self._check_open()
            self._check_writable()
            end = self._segments.view.end_offset
            first_offset = infos[0].base_offset
            if first_offset < end:
                raise UnexpectedAppendOffsetError(
                    f"cannot append the leader's batches from offset {first_offset} to "
                    f"{self.topic}-{self.partition}: its log already ends at {end}",
                    first_offset=first_offset, log_end_offset=end)
            flush_now, listeners = self._store(buf, infos, records, self._now_ms())
        self._after_append(listeners, flush_now)
        append_time = -1
        if self.config.log_append_time:
            append_time = max(b.max_timestamp for b in infos)
        return AppendInfo(first_offset, infos[-1].last_offset, append_time,
                          max(b.max_timestamp for b in infos))

    def _store(self, buf: bytearray, infos: list[BatchInfo], records: int,
               now: int) -> tuple[bool, list[Callable[[int], None]]]:
        """Write batches whose offsets are set (caller holds ``_lock``): roll if needed,
        append, move the log end. Returns whether a count-based flush is due, and the
        listeners to call once the lock is released."""
        config = self.config
        last = infos[-1].last_offset
        try:
            segment = self._maybe_roll(len(buf), last, len(infos), now)
            segment.append(buf, infos, config.index_interval_bytes)
        except (StorageError, OSError) as exc:
            self._write_failed("append", exc, segment_damaged=self._segments.active.damaged)
            if isinstance(exc, StorageError):
                raise
            raise StorageError(f"cannot append to {self.topic}-{self.partition}: {exc}") \
                from exc
        if segment.created_ms is None:
            segment.created_ms = now
        self._segments.appended(last + 1)
        self._flush.note_append(segment, records, now)
        return self._flush.due_by_count(config), self._listeners

    def _after_append(self, listeners: list[Callable[[int], None]], flush_now: bool) -> None:
        """Outside ``_lock``: tell the listeners, then fsync if ``flush.messages`` says so."""
        for listener in listeners:
            self._notify(listener)
        if flush_now:
            self.flush()

    def append_records(
        self,
        records: Sequence[tuple[bytes | None, bytes | None, Sequence[Header], int | None]],
        *,
        compression: int = 0,
        now_ms: int | None = None,
    ) -> AppendInfo:
        """Encode ``(key, value, headers, timestamp_ms)`` tuples as one batch and append it.

        A ``None`` timestamp means now, by this log's clock.
        """
        now = self._now_ms() if now_ms is None else now_ms
        batch = encode_batch(records, compression=compression, default_timestamp=now)
        return self.append(batch, now_ms=now)

    def _maybe_roll(self, size: int, last_offset: int, batches: int, now: int) -> LogSegment:
        """The segment to append to, after rolling if the active one is full or old."""
        segment = self._segments.active
        if segment.should_roll(self.config, size, last_offset, batches, now):
            return self._roll()
        return segment

    def _check_writable(self) -> None:
        """LogDirOfflineError while this partition or its data directory takes no writes."""
        if self._damaged is not None:
            raise LogDirOfflineError(
                f"{self.topic}-{self.partition} takes no appends since {self._damaged}; "
                "restart the broker once the file system is writable: recovery then "
                "checks the partition and keeps every whole batch")
        self.health.check_writable()

    def _write_failed(self, what: str, exc: Exception, *, segment_damaged: bool) -> None:
        if segment_damaged and self._damaged is None:
            self._damaged = f"a failed {what} could not be undone ({exc})"
        self.health.failed(f"{what} to {self.topic}-{self.partition}", exc)

    def _roll(self) -> LogSegment:
        """Start a new active segment at the log end (caller holds ``_lock``); StorageError
        if its files cannot be created (nothing changed then)."""
        old = self._segments.active
        try:
            segment = self._segments.roll(self.config)
        except OSError as exc:
            raise StorageError(f"cannot roll {self.topic}-{self.partition} to a new segment "
                               f"at offset {self.log_end_offset}: {exc}") from exc
        self._flush.directory_dirty = True
        log.info("rolled %s-%d: new segment at offset %d (previous held %d bytes)",
                 self.topic, self.partition, segment.base_offset, old.size)
        return segment

    def add_append_listener(self, fn: Callable[[int], None]) -> None:
        """Call ``fn(log_end_offset)`` after every append, on the appending thread, outside
        the log's locks. A listener must be quick and must not raise."""
        with self._lock:
            self._listeners = [*self._listeners, fn]

    def remove_append_listener(self, fn: Callable[[int], None]) -> None:
        with self._lock:
            listeners = list(self._listeners)  # appends iterate the old list without the lock
            if fn in listeners:
                listeners.remove(fn)
            self._listeners = listeners

    def _notify(self, listener: Callable[[int], None]) -> None:
        try:
            listener(self._segments.view.end_offset)  # the current end, never a stale one
        except Exception:  # a listener's bug must not fail an append that has succeeded
            log.exception("append listener of %s-%d failed", self.topic, self.partition)

    # ------------------------------------------------------------------ reading

    def read(self, offset: int, max_bytes: int, *, max_offset: int | None = None) -> ReadResult:
        """Whole batches starting with the one that holds ``offset``.

        At least one batch even if it is larger than ``max_bytes``; never a batch reaching
        ``max_offset`` (default: the log end). Every returned batch's CRC is checked
        (CorruptRecordError, never served). OffsetOutOfRangeError below the log start or
        past the log end; at the log end the data is empty.
        """
        for _ in range(_READ_ATTEMPTS):
            self._check_open()
            view = self._segments.view
            start = max(view.segments[0].base_offset, self._deleted_below)
            end = view.end_offset
            if offset < start or offset > end:
                raise OffsetOutOfRangeError(
                    f"offset {offset} is out of range for {self.topic}-{self.partition}: "
                    f"the log holds [{start}, {end})",
                    log_start_offset=start, log_end_offset=end,
                )
            limit = end if max_offset is None else min(max_offset, end)
            if offset >= limit:
                return ReadResult(b"", end, start)
            try:
                return ReadResult(read_batches(view, offset, max_bytes, limit), end, start)
            except StaleView:
                continue
        raise StorageError(f"{self.topic}-{self.partition} kept changing during a read; retry")

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record whose timestamp is at or after
        ``timestamp_ms``, or None if there is none."""
        for _ in range(_READ_ATTEMPTS):
            self._check_open()
            try:
                found = first_record_at_or_after(self._segments.view, timestamp_ms)
            except StaleView:
                continue
            if found is not None and found[0] < self._deleted_below:
                # In the part of the first segment DeleteRecords hid: answer the start.
                return self._deleted_below, found[1]
            return found
        raise StorageError(f"{self.topic}-{self.partition} kept changing during a lookup; retry")

    def max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with the largest timestamp, or None."""
        best = max((s.max_timestamp for s in self._segments.view.segments), default=-1)
        return None if best < 0 else self.offset_for_timestamp(best)

    # ------------------------------------------------------------------ durability

    def flush(self, *, indexes: bool = True) -> None:
        """fsync every segment written since the last flush, up to the current log end.

        ``indexes=False`` makes the records durable but leaves the indexes to a later
        flush (or close): they are derived data that recovery checks and rebuilds, and
        skipping their fsyncs makes an acks=all group commit about a third cheaper.
        """
        with self._flush_lock:
            with self._lock:
                self._check_open()
                end = self._segments.view.end_offset
                dirty, directory_dirty = self._flush.take(indexes=indexes)
            started = time.monotonic()
            try:
                self._sync(dirty, directory_dirty, indexes=indexes)
                if dirty or directory_dirty:
                    FLUSH_STATS.record(time.monotonic() - started)
                if not indexes:
                    with self._lock:
                        self._flush.indexes_left(dirty)
            except OSError as exc:
                with self._lock:
                    self._flush.give_back(dirty, directory_dirty)
                    # After a failed fsync the kernel may have dropped the dirty pages (a
                    # later fsync can then succeed without them): only recovery can tell
                    # what is on disk, so no acknowledgement may rest on this log any more.
                    self._write_failed("fsync", exc, segment_damaged=True)
                raise StorageError(
                    f"cannot fsync {self.topic}-{self.partition} in {self.directory}: {exc}"
                ) from exc
            finally:
                for segment in dirty:
                    segment.release()
            self._flush.flushed_offset = max(self._flush.flushed_offset, end)

    def flush_records(self) -> None:
        """``flush(indexes=False)``: what an acknowledgement needs, and no more."""
        self.flush(indexes=False)

    def maybe_flush(self, now_ms: int) -> None:
        """Apply ``flush.ms``: flush if the oldest unflushed append is that old. Also removes
        deleted segment files whose ``file.delete.delay.ms`` has passed."""
        self._check_open()
        self._remove_deleted_files(now_ms)
        if self._flush.due_by_age(self.config, now_ms):
            self.flush()

    # ------------------------------------------------------------------ retention

    def enforce_retention(self, now_ms: int) -> int:
        """Delete whole segments past ``retention.ms``/``retention.bytes`` (cleanup.policy
        delete only); returns how many were deleted."""
        with self._maintenance_lock:
            self._check_open()
            self._remove_deleted_files(now_ms)
            config = self.config
            if not config.delete:
                return 0
            view = self._segments.view
            doomed = deletable_segments(view.segments, view.end_position, config, now_ms)
            if not doomed:
                return 0
            with self._lock:
                self._check_open()
                if doomed[-1] is view.segments[-1]:
                    # The active segment expired: roll so that the log start offset moves to
                    # the log end. If an append got in since the decision, keep it instead.
                    if doomed[-1].size != view.end_position:
                        doomed = doomed[:-1]
                    elif doomed[-1] is self._segments.active:
                        self._roll()
                if not doomed:
                    return 0
                self._forget(doomed)
                self._segments.remove(doomed, now_ms, config.file_delete_delay_ms)
            log.info("retention deleted %d segments of %s-%d; log start offset is now %d",
                     len(doomed), self.topic, self.partition, self.log_start_offset)
            return len(doomed)

    def delete_records(self, offset: int, now_ms: int | None = None) -> int:
        """DeleteRecords: make ``offset`` the log start offset (``-1``: the log end) and
        delete the segments wholly below it; returns the new log start offset. An offset at
        or below the current start changes nothing. OffsetOutOfRangeError past the log end.
        The new start is stored durably before it is returned (core.log.start_offset)."""
        now_ms = self._now_ms() if now_ms is None else now_ms
        # Under the maintenance lock only the appender changes the log, and it only moves
        # the end forward: the checks hold, and the fsync of the checkpoint does not keep
        # appends waiting.
        with self._maintenance_lock:
            self._check_open()
            start, end = self.log_start_offset, self._segments.view.end_offset
            target = end if offset == -1 else offset
            if target < 0 or target > end:
                raise OffsetOutOfRangeError(
                    f"cannot delete records of {self.topic}-{self.partition} below offset "
                    f"{offset}: the log holds [{start}, {end})",
                    log_start_offset=start, log_end_offset=end)
            if target <= start:
                return start
            save_start_offset(self.directory, target)
            with self._lock:
                self._check_open()
                self._deleted_below = target
                # A segment goes when the next one starts at or below the new start; the
                # active segment always stays, as in Kafka.
                doomed = [s for s, nxt in pairwise(self._segments.view.segments)
                          if nxt.base_offset <= target]
                if doomed:
                    self._forget(doomed)
                    self._segments.remove(doomed, now_ms, self.config.file_delete_delay_ms)
            log.info("deleted records of %s-%d below offset %d (%d segments removed)",
                     self.topic, self.partition, target, len(doomed))
            return target

    def _forget(self, segments: Sequence[LogSegment]) -> None:
        """``segments`` leave the log: they need no flush, the directory does."""
        for segment in segments:
            self._flush.forget(segment)
        self._flush.directory_dirty = True

    def _remove_deleted_files(self, now_ms: int) -> None:
        with self._lock:
            self._segments.remove_deleted_files(now_ms)

    # ------------------------------------------------------------------ compaction

    def truncate_to(self, offset: int) -> None:
        """A follower's log diverged from its leader's: drop every batch from ``offset`` on
        (a batch boundary; nothing if the log ends before it). The cut is fsynced before
        this returns, so a restart never brings the dropped batches back."""
        with self._maintenance_lock, self._flush_lock, self._lock:
            self._check_open()
            if offset >= self._segments.view.end_offset:
                return
            offset = max(offset, 0)
            for segment in self._segments.truncate(offset, self.config.index_interval_bytes,
                                                   self._now_ms()):
                self._flush.forget(segment)
            self._deleted_below = min(self._deleted_below, offset)
            active = self._segments.active
            active.flush()
            fsync_directory(self.directory)
        log.warning("truncated %s-%d to offset %d", self.topic, self.partition, offset)

    def compact(self, now_ms: int) -> bool:
        """One compaction pass if cleanup.policy has compact and the log is dirty enough
        (or tombstones are due for removal); True if a pass ran."""
        from core.log.cleaner import clean  # the cleaner imports this module

        with self._maintenance_lock:
            self._check_open()
            if not self.config.compact:
                return False
            ran = clean(self, now_ms)
            self._remove_deleted_files(now_ms)
            return ran

    def _replace_segments(self, old: Sequence[LogSegment], new: LogSegment | None,
                          now_ms: int) -> bool:
        """Compaction's swap: replace the consecutive segments ``old`` by ``new`` (named
        ``.swap``), or drop them if ``new`` is None. False (nothing changed) if the log was
        closed meanwhile."""
        with self._lock:
            if self._closed:
                return False
            self._forget(old)
            if new is None:
                self._segments.remove(old, now_ms, self.config.file_delete_delay_ms)
            else:
                self._segments.replace(old, new, now_ms, self.config.file_delete_delay_ms)
            return True

    def _snapshot(self) -> tuple[tuple[LogSegment, ...], int, int]:
        """(segments, log end offset, end position of the active segment) for the cleaner."""
        view = self._segments.view
        return view.segments, view.end_offset, view.end_position

    # ------------------------------------------------------------------ configuration, lifecycle

    def update_config(self, config: TopicConfig) -> None:
        """Use ``config`` from now on (appends, rolls, flushing, retention, compaction)."""
        with self._lock:
            self.config = config

    def _sync(self, dirty: Iterable[LogSegment], directory_dirty: bool, *,
              indexes: bool = True) -> None:
        """fsync the given segments and, when segments were added or removed, the directory."""
        for segment in dirty:
            segment.flush(indexes=indexes)
        if directory_dirty:
            fsync_directory(self.directory)
            # The partition directory's own entry, new with the topic, must survive too.
            fsync_directory(self.directory.parent)

    def close(self) -> None:
        """Flush and release everything; idempotent. Reads in progress finish first."""
        with self._flush_lock, self._lock:
            if self._closed:
                return
            self._closed = True
            self._listeners = []
            dirty, directory_dirty = self._flush.take()
            try:
                self._sync(dirty, directory_dirty)
                self._flush.flushed_offset = self._segments.view.end_offset
            finally:
                for segment in dirty:
                    segment.release()
                self._segments.close()
        log.debug("closed %s-%d at offset %d", self.topic, self.partition, self.log_end_offset)

    def delete(self) -> None:
        """Close the log and remove its directory with every file in it."""
        self.close()
        try:
            shutil.rmtree(self.directory)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise StorageError(f"cannot remove {self.directory}: {exc}; remove it by hand") from exc
        log.info("deleted %s-%d (%s)", self.topic, self.partition, self.directory)

