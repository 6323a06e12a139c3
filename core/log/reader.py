"""Reading a partition log from a snapshot: whole batches from an offset, timestamp lookups.

Readers never take the log's lock. They work on a ``LogView`` the writer published, pin
each segment while reading it, and raise ``StaleView`` when a segment of their snapshot
was closed meanwhile (retention or compaction replaced it); the caller then retries on a
fresh view.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import NamedTuple

from core.log.records import decode_batch
from core.log.segment import LogSegment

__all__ = ["LogView", "ReadResult", "StaleView", "first_record_at_or_after", "read_batches"]


@dataclass(frozen=True, slots=True)
class ReadResult:
    """Whole record batches plus the partition's bounds when the read started."""

    data: bytes
    high_watermark: int
    log_start_offset: int


class LogView(NamedTuple):
    """What a reader may see; replaced (never mutated) by the writer."""

    segments: tuple[LogSegment, ...]
    end_offset: int
    end_position: int  # bytes of the active (last) segment that hold offsets < end_offset

    def segment_end(self, segment: LogSegment) -> int:
        """Readable bytes of ``segment`` in this view."""
        return self.end_position if segment is self.segments[-1] else segment.size


class StaleView(Exception):
    """A segment of the view was closed during the read; retry with a fresh view."""


def _base(segment: LogSegment) -> int:
    return segment.base_offset


def read_batches(view: LogView, offset: int, max_bytes: int, limit: int) -> bytes:
    """Whole, CRC-checked batches from the one holding ``offset`` (or the first after it),
    up to ``max_bytes`` but at least one batch, none reaching ``limit``."""
    segments = view.segments
    chunks: list[bytes] = []
    remaining = max_bytes
    for segment in segments[bisect_right(segments, offset, key=_base) - 1 :]:
        if segment.base_offset >= limit:
            break
        if not segment.acquire():
            if chunks:
                break  # what was read is valid; the next read starts from a fresh view
            raise StaleView
        try:
            end = view.segment_end(segment)
            position = segment.find_position(offset, end)
            if position is None:
                continue  # nothing at or after offset here (a compacted tail); try the next
            data, exhausted = segment.read(position, end, remaining, limit, not chunks)
        finally:
            segment.release()
        if data:
            chunks.append(data)
            remaining -= len(data)
        if not exhausted or remaining <= 0:
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def first_record_at_or_after(view: LogView, timestamp: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record, in offset order, whose timestamp is at or
    after ``timestamp``. Segments and batches whose max timestamp is lower are skipped; the
    first candidate batch is decoded."""
    for segment in view.segments:
        if segment.max_timestamp < timestamp:
            continue
        if not segment.acquire():
            raise StaleView
        try:
            for batch in segment.batches_from_timestamp(timestamp, view.segment_end(segment)):
                if batch.max_timestamp < timestamp:
                    continue
                _, records = decode_batch(segment.read_bytes(batch.position, batch.size))
                for record in records:
                    if record.timestamp >= timestamp:
                        return record.offset, record.timestamp
        finally:
            segment.release()
    return None
