"""Removing records from either end of a partition log: retention and DeleteRecords move
its start forward, a follower's truncation cuts its end back."""

from __future__ import annotations

import logging
from itertools import pairwise

from core.log.errors import OffsetOutOfRangeError
from core.log.loader import fsync_directory
from core.log.log_state import LogState
from core.log.retention import deletable_segments
from core.log.start_offset import save_start_offset

__all__ = ["LogDeletion"]

log = logging.getLogger(__name__)


class LogDeletion(LogState):
    """The deletion path of ``PartitionLog``, serialised by ``_maintenance_lock``."""

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
