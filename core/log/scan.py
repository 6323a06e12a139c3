"""Walking the batches stored in a segment file: header walks, CRC scans and read checks.

These work on raw header fields with ``struct`` instead of ``records.parse_header``: a
recovery scan of a segment of small batches visits millions of headers, and building a
dataclass per header would dominate the scan.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from core.log.errors import CorruptRecordError
from core.log.records import HEADER_SIZE, LOG_OVERHEAD, crc32c

__all__ = ["BatchInfo", "BatchWalk", "batch_last_offset", "check_stored_batch"]

INT32_MAX = 2**31 - 1
_MAGIC = 2
_CRC_START = 21
# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
_HEADER = struct.Struct(">qiibIhiqqqhii")
_LAST_OFFSET_FIELDS = struct.Struct(">qiibIhi")  # the header up to lastOffsetDelta
_HEADER_CHUNK = 8192
_CRC_CHUNK = 1 << 20


class BatchInfo(NamedTuple):
    """Where one batch is and what it covers (a tuple: scans create millions of these)."""

    position: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    size: int


class BatchWalk:
    """Iterate the batches of a segment file from ``start`` to ``end``.

    The walk stops quietly at the first batch that is partial, malformed, fails its CRC
    (with ``verify_crc``), goes back in offsets, overflows the segment's relative offsets
    or reaches ``max_last_offset``; ``problem`` then says why and ``position`` is the end
    of the last good batch. Readers call ``raise_problem`` since they must never serve a
    bad batch; recovery truncates at ``position`` instead.
    """

    def __init__(
        self,
        fd: int,
        start: int,
        end: int,
        *,
        segment_base: int,
        verify_crc: bool = False,
        min_base_offset: int | None = None,
        max_last_offset: int | None = None,
    ) -> None:
        self._fd = fd
        self._end = end
        self._segment_base = segment_base
        self._verify_crc = verify_crc
        self._min_base = segment_base if min_base_offset is None else min_base_offset
        self._max_last = max_last_offset
        self.position = start
        self.problem: str | None = None

    def __iter__(self) -> Iterator[BatchInfo]:
        fd, end, pos = self._fd, self._end, self.position
        verify = self._verify_crc
        chunk_size = _CRC_CHUNK if verify else _HEADER_CHUNK
        chunk = b""
        chunk_start = pos
        expected = self._min_base
        relative_limit = self._segment_base + INT32_MAX
        while pos < end:
            off = pos - chunk_start
            if off + HEADER_SIZE > len(chunk):
                if end - pos < HEADER_SIZE:
                    self.problem = f"{end - pos} trailing bytes at {pos} are not a whole batch"
                    return
                chunk = os.pread(fd, min(chunk_size, end - pos), pos)
                chunk_start, off = pos, 0
                if len(chunk) < HEADER_SIZE:
                    self.problem = f"file ends inside the batch header at {pos}"
                    return
            (base, length, _, magic, crc, _, last_delta, _, max_ts, _, _, _,
             count) = _HEADER.unpack_from(chunk, off)
            size = LOG_OVERHEAD + length
            last = base + last_delta
            if magic != _MAGIC:
                self.problem = f"batch at {pos} has magic {magic}, not {_MAGIC}"
            elif length < HEADER_SIZE - LOG_OVERHEAD or pos + size > end:
                self.problem = f"batch at {pos} has length {length}, past the end at {end}"
            elif last_delta < 0 or count < 0:
                self.problem = f"batch at {pos} has offset delta {last_delta}, count {count}"
            elif base < expected:
                self.problem = f"batch at {pos} starts at offset {base}, before {expected}"
            elif last > relative_limit:
                self.problem = f"batch at {pos} ends at offset {last}, past this segment's range"
            elif self._max_last is not None and last >= self._max_last:
                self.problem = f"batch at {pos} reaches offset {last}, the next segment's range"
            if self.problem:
                return
            if verify:
                if off + size > len(chunk):
                    chunk = os.pread(fd, min(max(chunk_size, size), end - pos), pos)
                    chunk_start, off = pos, 0
                    if len(chunk) < size:
                        self.problem = f"file ends inside the batch at {pos}"
                        return
                if crc32c(memoryview(chunk)[off + _CRC_START : off + size]) != crc:
                    self.problem = f"batch at {pos} (offset {base}) fails its CRC-32C check"
                    return
            expected = last + 1
            pos += size
            self.position = pos
            yield BatchInfo(pos - size, base, last, max_ts, size)

    def raise_problem(self, path: Path) -> None:
        """Raise CorruptRecordError if the walk stopped at a bad batch."""
        if self.problem:
            raise CorruptRecordError(f"{path}: {self.problem}; the segment is corrupt")


def batch_last_offset(buf: bytes, pos: int) -> int:
    """The last offset of the batch whose header starts at ``buf[pos]``."""
    base, _, _, _, _, _, last_delta = _LAST_OFFSET_FIELDS.unpack_from(buf, pos)
    return base + last_delta


def check_stored_batch(buf: bytes, pos: int, path: Path, file_position: int) -> None:
    """Check the magic and CRC-32C of the whole batch at ``buf[pos]``.

    Every batch a read returns goes through here, so a corrupt batch is never served.
    """
    (base, length, _, magic, crc, *_) = _LAST_OFFSET_FIELDS.unpack_from(buf, pos)
    if magic != _MAGIC:
        raise CorruptRecordError(
            f"{path}: batch at position {file_position} has magic {magic}; the segment is corrupt"
        )
    actual = crc32c(memoryview(buf)[pos + _CRC_START : pos + LOG_OVERHEAD + length])
    if actual != crc:
        raise CorruptRecordError(
            f"{path}: batch at position {file_position} (base offset {base}) failed its CRC-32C "
            f"check (stored {crc:#010x}, computed {actual:#010x}); it will not be served"
        )
