"""The ordered segments of one partition and the snapshot that readers load.

Every method runs under the owning log's append lock. Readers only load ``view``, which is
replaced after each change and never mutated.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from core.log.config import TopicConfig
from core.log.loader import DELETED_SUFFIX
from core.log.reader import LogView
from core.log.segment import LogSegment, roll_jitter

__all__ = ["SegmentList"]


class SegmentList:
    """Segments oldest first, the last one active; offsets only grow along the list."""

    def __init__(self, directory: Path, segments: list[LogSegment]) -> None:
        self._directory = directory
        self._segments = segments
        self._deleted: list[tuple[int, LogSegment]] = []  # (due ms, segment renamed .deleted)
        active = segments[-1]
        self.view = LogView(tuple(segments), active.next_offset, active.size)

    @property
    def active(self) -> LogSegment:
        return self._segments[-1]

    def appended(self, end_offset: int) -> None:
        """Publish an append to the active segment that moved the log end to ``end_offset``."""
        self.view = LogView(self.view.segments, end_offset, self.active.size)

    def _publish(self) -> None:
        self.view = LogView(tuple(self._segments), self.view.end_offset, self.active.size)

    def roll(self, config: TopicConfig) -> LogSegment:
        """Seal the active segment and start a new one at the log end."""
        self.active.seal()
        segment = LogSegment(self._directory, self.view.end_offset, create=True)
        segment.roll_jitter_ms = roll_jitter(config)
        self._segments.append(segment)
        self._publish()
        return segment

    def remove(self, doomed: Sequence[LogSegment], now_ms: int, delay_ms: int) -> None:
        """Drop ``doomed`` and rename their files ``.deleted``; the files are unlinked after
        ``delay_ms`` and the descriptors closed when the last reader releases them."""
        gone = set(map(id, doomed))
        self._segments = [s for s in self._segments if id(s) not in gone]
        self._publish()
        for segment in doomed:
            segment.rename(DELETED_SUFFIX)
            self._deleted.append((now_ms + delay_ms, segment))
            segment.close()
        self.remove_deleted_files(now_ms)

    def replace(self, old: Sequence[LogSegment], new: LogSegment, now_ms: int,
                delay_ms: int) -> None:
        """Put ``new`` (named ``.swap``) in place of the consecutive segments ``old``. The old
        files are renamed ``.deleted`` before the swap takes the live name, which for the
        first of them is the same name."""
        index = next(i for i, s in enumerate(self._segments) if s is old[0])
        self._segments.insert(index, new)
        self.remove(old, now_ms, delay_ms)
        new.rename("")

    def truncate(self, offset: int, index_interval: int, now_ms: int) -> list[LogSegment]:
        """Cut the log to end at ``offset`` (a batch boundary): segments starting at or
        after it go (renamed ``.deleted``, unlinked at once), the one holding it is cut
        there. If that was not the active segment, a new empty one starts at ``offset``,
        so an old segment never takes appends again. Returns the segments that went."""
        doomed = [s for s in self._segments if s.base_offset >= offset]
        kept = [s for s in self._segments if s.base_offset < offset]
        if kept:
            kept[-1].recover(index_interval, max_last_offset=offset)  # cuts batches reaching offset
            kept[-1].next_offset = offset
        if doomed:
            self._segments = kept
            for segment in doomed:
                segment.rename(DELETED_SUFFIX)
                self._deleted.append((now_ms, segment))
                segment.close()
            self._segments.append(LogSegment(self._directory, offset, create=True))
            self.remove_deleted_files(now_ms)
        self.view = LogView(tuple(self._segments), offset, self.active.size)
        return doomed

    def remove_deleted_files(self, now_ms: int | None) -> None:
        """Unlink the ``.deleted`` files that are due (all of them when ``now_ms`` is None)."""
        keep = []
        for due, segment in self._deleted:
            if now_ms is None or due <= now_ms:
                segment.unlink()
            else:
                keep.append((due, segment))
        self._deleted = keep

    def close(self) -> None:
        self.remove_deleted_files(None)
        for segment in self._segments:
            segment.close()
