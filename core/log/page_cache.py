"""``ferry.page.cache.window.bytes``: how much of a partition's newly written data stays in
the OS page cache.

Kafka leaves every page it writes to the kernel, which keeps it until memory runs short. A
partition that takes a long stream of writes then fills the page cache with data that is
written once and, by consumers at the head, read once within seconds. Ferry bounds that:
as a partition grows, the pages more than the window behind its end are written back and
dropped from the page cache (``posix_fadvise(POSIX_FADV_DONTNEED)``), as PostgreSQL does
for its WAL files and BookKeeper for its journal. The memory they held is free again
at once, and the next appends reuse it.

What that buys depends on the machine. Where the memory a guest frees goes back to its
host (a virtio balloon with free page reporting, as on the VM the benchmarks run on), every
page the page cache takes from that memory faults on the host first; there, a stream
of appends past the first gigabytes costs several times more kernel time without the
window (``docs/benchmarks.md``). Elsewhere it keeps the page cache for data that is read.

The cost: a reader more than the window behind the end of a partition reads from disk
instead of memory. ``-1`` leaves the page cache to the kernel, as Kafka does.

Each call to ``posix_fadvise`` starts writing back the dirty pages of its range and drops
the clean ones, while pages still being written back stay. So each range is given again at
the next steps, ``PASSES`` in all: the first starts its write-back, the later ones drop what
has been written back by then. (With two passes a fast writer outran the disk and kept half
its pages; ``docs/benchmarks.md``.) A disk slower than the appends for longer than that
leaves the rest to the kernel, as without the window.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from dataclasses import dataclass, field

from core.log.segment import LogSegment

__all__ = ["PASSES", "STEP_BYTES", "PageCacheWindow", "drop_from_page_cache"]

log = logging.getLogger(__name__)

#: The window is applied each time a partition has grown by this much.
STEP_BYTES = 16 << 20
#: How many steps in a row each range is given to the kernel.
PASSES = 8

_ADVISE = getattr(os, "posix_fadvise", None)  # absent on macOS: the window does nothing


def drop_from_page_cache(fd: int, start: int, end: int) -> None:
    """Start writing back the dirty pages of ``[start, end)`` and drop the clean ones."""
    if _ADVISE is not None and end > start:
        _ADVISE(fd, start, end - start, os.POSIX_FADV_DONTNEED)


@dataclass(slots=True)
class _Segment:
    segment: LogSegment
    origin: int  # the partition's count of written bytes at this segment's position 0
    ends: deque[int] = field(default_factory=lambda: deque(maxlen=PASSES))  # latest passes

    @property
    def floor(self) -> int:
        """Below it, every page has been given ``PASSES`` times."""
        return self.ends[0] if len(self.ends) == PASSES else 0


class PageCacheWindow:
    """One partition's window; its methods run under the log's ``_lock``."""

    def __init__(self) -> None:
        self._written = 0  # bytes appended since the log was opened
        self._next_step = STEP_BYTES
        self._segments: list[_Segment] = []  # oldest first; the last is the active one

    def appended(self, segment: LogSegment, position: int, size: int, window: int) -> None:
        """``size`` bytes were written to ``segment`` at ``position``."""
        entries = self._segments
        if entries and entries[-1].segment is segment:
            entries[-1].origin = self._written - position  # a truncation may have moved it
        else:
            entries.append(_Segment(segment, self._written - position))
        self._written += size
        if self._written < self._next_step:
            return
        self._next_step = self._written + STEP_BYTES
        if window < 0:
            del entries[:-1]
            return
        self._apply(self._written - window)

    def _apply(self, cut: int) -> None:
        """Give every page below ``cut`` (a count of written bytes)."""
        kept = []
        last = self._segments[-1]
        for entry in self._segments:
            segment = entry.segment
            end = min(cut - entry.origin, segment.size)
            if end > entry.floor:
                if not segment.acquire():  # removed from the log: nothing left to drop
                    continue
                try:
                    drop_from_page_cache(segment.fd, entry.floor, end)
                except OSError as exc:  # advice only: the log is fine without it
                    log.debug("posix_fadvise on %s failed: %s", segment, exc)
                finally:
                    segment.release()
                entry.ends.append(end)
            if entry is last or entry.floor < segment.size:
                kept.append(entry)
        self._segments = kept
