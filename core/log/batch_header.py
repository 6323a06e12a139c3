"""Kafka RecordBatch v2 (magic 2) headers: parsing, validation and in-place patching.

Everything here works on the fixed header with ``struct`` and the ``crc32c`` C extension,
never on the records inside (core.log.records encodes and decodes those).

Byte layout of the 61-byte header (big-endian)::

    0 baseOffset int64 | 8 batchLength int32 | 12 partitionLeaderEpoch int32 | 16 magic int8
    17 crc uint32 (CRC-32C over [21, end)) | 21 attributes int16 | 23 lastOffsetDelta int32
    27 baseTimestamp int64 | 35 maxTimestamp int64 | 43 producerId int64 | 51 producerEpoch int16
    53 baseSequence int32 | 57 recordsCount int32 | 61 records...
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import crc32c as _crc32c

from core.log.errors import CorruptRecordError, InvalidRecordError

__all__ = [
    "ATTRIBUTES_OFFSET",
    "BATCH_OVERHEAD",
    "COMPRESSION_CODES",
    "CRC_OFFSET",
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "MAGIC",
    "BatchHeader",
    "TimestampType",
    "batch_size_at",
    "crc32c",
    "frame_batch",
    "iter_batches",
    "parse_header",
    "set_base_offset",
    "set_log_append_time",
    "set_partition_leader_epoch",
    "validate_batch",
]

#: Bytes before batchLength's payload: baseOffset + batchLength.
LOG_OVERHEAD = 12
#: Size of the fixed v2 batch header, up to and including recordsCount.
HEADER_SIZE = 61
BATCH_OVERHEAD = HEADER_SIZE
MAGIC = 2
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21

_ATTR_COMPRESSION_MASK = 0x07
_ATTR_TIMESTAMP_TYPE = 0x08
_ATTR_TRANSACTIONAL = 0x10
_ATTR_CONTROL = 0x20
_ATTR_DELETE_HORIZON = 0x40

COMPRESSION_CODES = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

_HEADER = struct.Struct(">qiiBIhiqqqhii")
_OFFSET_AND_LENGTH = struct.Struct(">qi")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")


class TimestampType:
    """Kafka's timestamp types as they appear in batch attributes and on consumer records."""

    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C (Castagnoli) of ``data``, as Kafka computes it over a batch."""
    return _crc32c.crc32c(data)


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The fixed header of one stored batch."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Total bytes of the batch on disk and on the wire."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & _ATTR_COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return 1 if self.attributes & _ATTR_TIMESTAMP_TYPE else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _ATTR_CONTROL)

    @property
    def has_delete_horizon(self) -> bool:
        """Set by compaction: ``base_timestamp`` then holds the tombstone delete horizon."""
        return bool(self.attributes & _ATTR_DELETE_HORIZON)


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Parse the header of the batch starting at ``buf[pos]``.

    Raises ``InvalidRecordError`` when fewer than ``HEADER_SIZE`` bytes are available or the
    magic byte is not 2. The CRC is not checked here; see ``validate_batch``.
    """
    if len(buf) - pos < HEADER_SIZE:
        raise InvalidRecordError(
            f"truncated record batch: {len(buf) - pos} bytes, a v2 header needs {HEADER_SIZE}"
        )
    fields = _HEADER.unpack_from(buf, pos)
    if fields[3] != MAGIC:
        raise InvalidRecordError(f"unsupported record batch magic {fields[3]} (only v2 is stored)")
    return BatchHeader(*fields)


def batch_size_at(buf: bytes | bytearray | memoryview, pos: int = 0) -> int | None:
    """Total size of the batch at ``buf[pos]`` from its length field, or None if under 12 bytes."""
    if len(buf) - pos < LOG_OVERHEAD:
        return None
    return LOG_OVERHEAD + _INT32.unpack_from(buf, pos + 8)[0]


def validate_batch(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Parse and fully check the batch at ``buf[pos]``: length, magic, CRC-32C, record count.

    Raises ``InvalidRecordError`` for a malformed batch (truncated, bad magic, impossible
    length or count) and ``CorruptRecordError`` when the stored CRC does not match.
    """
    header = parse_header(buf, pos)
    end = pos + header.size
    if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or end > len(buf):
        raise InvalidRecordError(
            f"record batch length {header.batch_length} does not fit the {len(buf) - pos} "
            "bytes available"
        )
    if header.records_count < 0 or header.last_offset_delta < 0:
        raise InvalidRecordError(
            f"invalid record batch: records count {header.records_count}, "
            f"last offset delta {header.last_offset_delta}"
        )
    actual = _crc32c.crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET : end])
    if actual != header.crc:
        raise CorruptRecordError(
            f"record batch at base offset {header.base_offset} failed its CRC-32C check "
            f"(stored {header.crc:#010x}, computed {actual:#010x})"
        )
    return header


def iter_batches(
    buf: bytes | bytearray | memoryview, *, validate: bool = True
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for each whole batch in ``buf``.

    A trailing partial batch (as a size-limited read may return) is silently skipped, as
    Kafka clients do. With ``validate`` each batch's CRC is checked.
    """
    pos = 0
    n = len(buf)
    check = validate_batch if validate else parse_header
    while pos < n:
        size = batch_size_at(buf, pos)
        if size is None or pos + size > n:
            return
        header = check(buf, pos)
        yield pos, header
        pos += header.size


def set_base_offset(buf: bytearray | memoryview, base_offset: int, pos: int = 0) -> None:
    """Assign offsets in place; baseOffset is outside the CRC so no recomputation is needed."""
    _INT64.pack_into(buf, pos, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, epoch: int, pos: int = 0) -> None:
    """Stamp the leader epoch in place; like baseOffset it is outside the CRC."""
    _INT32.pack_into(buf, pos + 12, epoch)


def set_log_append_time(buf: bytearray | memoryview, timestamp_ms: int, pos: int = 0) -> None:
    """Mark the batch LogAppendTime with ``timestamp_ms`` and recompute its CRC.

    Both the attributes and maxTimestamp sit inside the CRC range, hence the recomputation.
    """
    size = LOG_OVERHEAD + _INT32.unpack_from(buf, pos + 8)[0]
    attributes = _INT16.unpack_from(buf, pos + ATTRIBUTES_OFFSET)[0]
    _INT16.pack_into(buf, pos + ATTRIBUTES_OFFSET, attributes | _ATTR_TIMESTAMP_TYPE)
    _INT64.pack_into(buf, pos + 35, timestamp_ms)
    crc = _crc32c.crc32c(memoryview(buf)[pos + ATTRIBUTES_OFFSET : pos + size])
    _UINT32.pack_into(buf, pos + CRC_OFFSET, crc)


def frame_batch(buf: bytearray, count: int, base_offset: int, first_ts: int, max_ts: int,
                producer_id: int, producer_epoch: int, base_sequence: int) -> None:
    """Fill the 61-byte header (with its CRC-32C) reserved in front of a records array."""
    # partitionLeaderEpoch -1 (no leader yet) and attributes 0, as clients write them.
    _HEADER.pack_into(buf, 0, base_offset, len(buf) - LOG_OVERHEAD, -1, MAGIC, 0, 0, count - 1,
                      first_ts, max_ts, producer_id, producer_epoch, base_sequence, count)
    _UINT32.pack_into(buf, CRC_OFFSET, _crc32c.crc32c(memoryview(buf)[ATTRIBUTES_OFFSET:]))
