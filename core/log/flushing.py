"""The flush policy's bookkeeping: what is not yet fsynced and when an fsync is due.

Kafka's ``flush.messages`` and ``flush.ms`` default to "never": the OS writes pages back
on its own and durability comes from replication. A process that is killed loses
nothing it wrote either way; the policy only matters for a machine that loses power.
"""

from __future__ import annotations

from collections.abc import Iterable

from core.log.config import TopicConfig
from core.log.segment import LogSegment

__all__ = ["FlushState"]


class FlushState:
    """Unflushed segments, records and age; every method runs under the log's lock."""

    def __init__(self, flushed_offset: int) -> None:
        self.flushed_offset = flushed_offset  # every offset below it has been fsynced
        self.directory_dirty = False  # files were created or renamed since the last fsync
        self._dirty: set[LogSegment] = set()
        self._index_dirty: set[LogSegment] = set()  # data fsynced, indexes not yet
        self._records = 0
        self._oldest_ms: int | None = None

    def unknown(self, segments: Iterable[LogSegment]) -> None:
        """A log just opened: what an earlier process wrote may still be only in the page
        cache (a killed process loses nothing, a power cut would), so the first flush
        fsyncs every segment and the directory."""
        self._dirty.update(segments)
        self.directory_dirty = True

    def note_append(self, segment: LogSegment, records: int, now_ms: int) -> None:
        self._dirty.add(segment)
        self._records += records
        if self._oldest_ms is None:
            self._oldest_ms = now_ms

    def due_by_count(self, config: TopicConfig) -> bool:
        """``flush.messages``: that many records were appended since the last flush."""
        return self._records >= config.flush_messages

    def due_by_age(self, config: TopicConfig, now_ms: int) -> bool:
        """``flush.ms``: the oldest unflushed append is that old."""
        return self._oldest_ms is not None and now_ms - self._oldest_ms >= config.flush_ms

    def take(self, *, indexes: bool = True) -> tuple[list[LogSegment], bool]:
        """Start a flush: the segments to fsync (pinned; release them afterwards) and whether
        the directory needs one. Appends after this count toward the next flush. Without
        ``indexes``, only segments with new data are returned (``indexes_left`` then)."""
        dirty = self._dirty
        if indexes:
            dirty |= self._index_dirty
            self._index_dirty = set()
        segments = [s for s in dirty if s.acquire()]
        directory = self.directory_dirty
        self._dirty = set()
        self.directory_dirty = False
        self._records = 0
        self._oldest_ms = None
        return segments, directory

    def indexes_left(self, segments: Iterable[LogSegment]) -> None:
        """A flush without indexes synced these segments' data; a later one syncs the rest."""
        self._index_dirty.update(segments)

    def give_back(self, segments: list[LogSegment], directory: bool) -> None:
        """A flush failed: its segments still need one."""
        self._dirty.update(segments)
        self.directory_dirty |= directory

    def forget(self, segment: LogSegment) -> None:
        """``segment`` left the log (retention, compaction); it needs no flush."""
        self._dirty.discard(segment)
        self._index_dirty.discard(segment)
