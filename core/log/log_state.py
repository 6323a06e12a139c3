"""A partition log's state, its locks, and what every path over them shares: the guards,
rolling, removing segments, and fsync.

Threading: appends, rolls and segment-list changes are serialised by ``_lock``. Reads
never take it: they load the segment list's ``view``, an immutable snapshot (segments, log
end offset and the byte position of the log end in the active segment) that the writer
replaces after every change, so a reader never sees past the log end it loaded. fsync
runs outside ``_lock`` under ``_flush_lock``; retention and compaction are serialised by
``_maintenance_lock`` and take ``_lock`` only to swap segments. Lock order:
``_maintenance_lock`` -> ``_flush_lock`` -> ``_lock``.

``PartitionLog`` (core.log.log) is this state plus the append path (core.log.appends) and
the deletion path (core.log.deletion); each path sees the state through this class.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from core.log.config import TopicConfig
from core.log.dir_health import LogDirHealth
from core.log.errors import LogClosedError, LogDirOfflineError, StorageError
from core.log.flush_stats import FLUSH_STATS
from core.log.flushing import FlushState
from core.log.loader import fsync_directory
from core.log.page_cache import PageCacheWindow
from core.log.segment import LogSegment
from core.log.segment_list import SegmentList
from core.log.start_offset import load_start_offset

__all__ = ["LogState"]

log = logging.getLogger(__name__)


class LogState:
    """One partition's segments, offsets, flush state and locks (see the module docstring
    for the lock order)."""

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
        self._page_cache = PageCacheWindow()  # guarded by _lock
        # Where DeleteRecords moved the start (0: never); only grows, changed under _lock.
        self._deleted_below = min(load_start_offset(directory), self._segments.view.end_offset)

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
    # ------------------------------------------------------------------ guards

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

    # ------------------------------------------------------------------ segment-list changes

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

    def _forget(self, segments: Sequence[LogSegment]) -> None:
        """``segments`` leave the log: they need no flush, the directory does."""
        for segment in segments:
            self._flush.forget(segment)
        self._flush.directory_dirty = True

    def _remove_deleted_files(self, now_ms: int) -> None:
        with self._lock:
            self._segments.remove_deleted_files(now_ms)

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

    def _sync(self, dirty: Iterable[LogSegment], directory_dirty: bool, *,
              indexes: bool = True) -> None:
        """fsync the given segments and, when segments were added or removed, the directory."""
        for segment in dirty:
            segment.flush(indexes=indexes)
        if directory_dirty:
            fsync_directory(self.directory)
            # The partition directory's own entry, new with the topic, must survive too.
            fsync_directory(self.directory.parent)
