"""One partition's commit log: ``PartitionLog``, opening, reads, compaction and lifecycle.

The log is split by concept: its state, locks and fsync are in core.log.log_state (whose
docstring states the threading rules and lock order), appends in core.log.appends, and
retention, DeleteRecords and truncation in core.log.deletion. ``PartitionLog`` combines them;
callers import it, ``AppendInfo`` and ``ReadResult`` from here.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from core.log.appends import AppendInfo, LogAppends
from core.log.config import TopicConfig
from core.log.deletion import LogDeletion
from core.log.dir_health import LogDirHealth
from core.log.errors import OffsetOutOfRangeError, StorageError
from core.log.loader import load_segments
from core.log.reader import ReadResult, StaleView, first_record_at_or_after, read_batches
from core.log.segment import LogSegment

__all__ = ["AppendInfo", "PartitionLog", "ReadResult"]

log = logging.getLogger(__name__)

_READ_ATTEMPTS = 8


class PartitionLog(LogAppends, LogDeletion):
    """One partition: a list of segments, the last one active.

    Lifecycle: ``open()`` (recovers the directory) -> ``append``/``read`` from any threads,
    ``maybe_flush``/``enforce_retention``/``compact`` from a maintenance thread -> ``close()``
    (idempotent; every later call raises ``LogClosedError``) or ``delete()``.
    """

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

    # ------------------------------------------------------------------ compaction

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
