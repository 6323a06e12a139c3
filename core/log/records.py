"""Kafka RecordBatch v2 (magic 2): header parsing, validation, in-place patching, encode/decode.

The log stores batches exactly as Kafka lays them out, so the broker can serve stored bytes
unchanged. Header work (validation, offset assignment, LogAppendTime stamping) is done here
with ``struct`` and the ``crc32c`` C extension; per-record varint encoding and decoding is
delegated to aiokafka's Cython codec, which also handles gzip, snappy (both framings), lz4
and zstd. This module is the only importer of ``aiokafka.record``.

Byte layout of the 61-byte header (big-endian)::

    0 baseOffset int64 | 8 batchLength int32 | 12 partitionLeaderEpoch int32 | 16 magic int8
    17 crc uint32 (CRC-32C over [21, end)) | 21 attributes int16 | 23 lastOffsetDelta int32
    27 baseTimestamp int64 | 35 maxTimestamp int64 | 43 producerId int64 | 51 producerEpoch int16
    53 baseSequence int32 | 57 recordsCount int32 | 61 records...
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import crc32c as _crc32c
from aiokafka import codec as _codec
from aiokafka.record.default_records import DefaultRecordBatch as _Reader
from aiokafka.record.default_records import DefaultRecordBatchBuilder as _Builder

from core.log.errors import CorruptRecordError, InvalidRecordError

try:  # the optional C codec; see _speedups.c for why it exists
    from core.log._speedups import decode_records as _c_decode_records
    from core.log._speedups import encode_records as _c_encode_records
except ImportError:  # pragma: no cover - exercised when the extension is not built
    _c_decode_records = None
    _c_encode_records = None

__all__ = [
    "BATCH_OVERHEAD",
    "COMPRESSION_CODES",
    "HAVE_C_DECODER",
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "BatchHeader",
    "Header",
    "Record",
    "TimestampType",
    "batch_size_at",
    "crc32c",
    "decode_batch",
    "decode_batch_as",
    "encode_batch",
    "iter_batches",
    "parse_header",
    "set_base_offset",
    "set_log_append_time",
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

Header = tuple[str, bytes | None]


class TimestampType:
    """Kafka's timestamp types as they appear in batch attributes and on consumer records."""

    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C (Castagnoli) of ``data``, as Kafka computes it over a batch."""
    return _crc32c.crc32c(data)


class Record(NamedTuple):
    """One decoded record.

    A NamedTuple rather than a dataclass: consumers decode a million of these a second and
    tuple construction is several times cheaper than a dataclass ``__init__``.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Sequence[Header] = ()
    timestamp_type: int = TimestampType.CREATE_TIME


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


def encode_batch(
    records: Sequence[Sequence[Any]],
    *,
    base_offset: int = 0,
    compression: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    offset_deltas: Sequence[int] | None = None,
    default_timestamp: int | None = None,
    use_c: bool = True,
) -> bytearray:
    """Encode records as one v2 batch.

    Each record is a sequence whose first four items are ``key, value, headers,
    timestamp_ms`` (a plain 4-tuple, or a ``ProducerRecord``). A ``None`` timestamp means
    ``default_timestamp``, else "now". ``offset_deltas`` (default 0, 1, 2, ...) lets
    compaction rebuild a batch whose records keep their original, no longer contiguous,
    offsets. The result is a fresh ``bytearray`` with a valid CRC and ``base_offset`` set.

    Uncompressed batches of tuples with dense offsets are encoded by the C extension (sizes
    first, one allocation, memcpy of keys and values: ~5x aiokafka's encoder on 1 KiB
    values); everything else, or ``use_c=False``, by aiokafka's encoder. Both produce the
    same bytes.
    """
    if not records:
        raise InvalidRecordError("a record batch needs at least one record")
    now = default_timestamp
    if now is None:
        now = int(time.time() * 1000)
    if use_c and _c_encode_records is not None and compression == 0 and offset_deltas is None:
        try:
            buf, first_ts, max_ts = _c_encode_records(records, now, HEADER_SIZE)
        except TypeError:
            pass  # e.g. memoryview values or list records: the general path handles them
        else:
            _frame_batch(buf, len(records), base_offset, first_ts, max_ts,
                         producer_id, producer_epoch, base_sequence)
            return buf
    return _encode_with_aiokafka(
        records, base_offset=base_offset, compression=compression, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence,
        offset_deltas=offset_deltas, default_timestamp=now)


def _frame_batch(buf: bytearray, count: int, base_offset: int, first_ts: int, max_ts: int,
                 producer_id: int, producer_epoch: int, base_sequence: int) -> None:
    """Fill the 61-byte header (with its CRC-32C) reserved in front of a records array."""
    # partitionLeaderEpoch -1 (no leader yet) and attributes 0, as clients write them.
    _HEADER.pack_into(buf, 0, base_offset, len(buf) - LOG_OVERHEAD, -1, MAGIC, 0, 0, count - 1,
                      first_ts, max_ts, producer_id, producer_epoch, base_sequence, count)
    _UINT32.pack_into(buf, CRC_OFFSET, _crc32c.crc32c(memoryview(buf)[ATTRIBUTES_OFFSET:]))


def _encode_with_aiokafka(
    records: Sequence[Sequence[Any]],
    *,
    base_offset: int = 0,
    compression: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    offset_deltas: Sequence[int] | None = None,
    default_timestamp: int | None = None,
) -> bytearray:
    """The aiokafka encoder: any compression, sparse offset deltas, memoryview values."""
    if not records:
        raise InvalidRecordError("a record batch needs at least one record")
    builder = _Builder(MAGIC, compression, 0, producer_id, producer_epoch, base_sequence, 1 << 62)
    append = builder.append
    now = default_timestamp
    deltas = range(len(records)) if offset_deltas is None else offset_deltas
    for delta, record in zip(deltas, records, strict=True):
        key, value, headers, timestamp = record[0], record[1], record[2], record[3]
        if timestamp is None:
            if now is None:
                now = int(time.time() * 1000)
            timestamp = now
        append(delta, timestamp, key, value, headers if type(headers) is list else list(headers))
    buf = builder.build()
    if type(buf) is not bytearray:
        buf = bytearray(buf)
    if base_offset:
        _INT64.pack_into(buf, 0, base_offset)
    return buf


def decode_batch(
    buf: bytes | bytearray | memoryview, pos: int = 0, *, validate: bool = True
) -> tuple[BatchHeader, list[Record]]:
    """Decode the batch at ``buf[pos]`` into its header and records (decompressing as needed).

    Control batches (transaction markers) decode to an empty record list, as clients skip them.
    """
    header = validate_batch(buf, pos) if validate else parse_header(buf, pos)
    if header.is_control:
        return header, []
    view = memoryview(buf)[pos : pos + header.size]
    try:
        reader = _Reader(bytes(view))
        ts_type = header.timestamp_type
        if ts_type == TimestampType.LOG_APPEND_TIME:
            max_ts = header.max_timestamp
            records = [
                Record(r.offset, max_ts, r.key, r.value, r.headers, ts_type) for r in reader
            ]
        else:
            records = [Record(r.offset, r.timestamp, r.key, r.value, r.headers) for r in reader]
    except (ValueError, IndexError, struct.error, OSError, EOFError) as exc:
        raise CorruptRecordError(
            f"record batch at base offset {header.base_offset} could not be decoded: {exc}"
        ) from exc
    if len(records) != header.records_count:
        raise CorruptRecordError(
            f"record batch at base offset {header.base_offset} declares "
            f"{header.records_count} records but holds {len(records)}"
        )
    return header, records


T = TypeVar("T", bound=tuple)


_DECOMPRESS = {
    1: _codec.gzip_decode,
    2: _codec.snappy_decode,
    3: _codec.lz4_decode,
    4: _codec.zstd_decode,
}

#: Whether the C decoder is in use (False when the extension was not built).
HAVE_C_DECODER = _c_decode_records is not None


def decode_batch_as(
    buf: bytes | bytearray | memoryview,
    pos: int,
    cls: type[T],
    topic: str,
    partition: int,
    min_offset: int = 0,
    *,
    validate: bool = True,
    use_c: bool = True,
) -> tuple[BatchHeader, list[T]]:
    """Decode the batch at ``buf[pos]`` straight into ``cls`` tuples, skipping offsets below
    ``min_offset``.

    ``cls`` is a tuple subclass (a NamedTuple) with the fields ``(topic, partition, offset,
    timestamp, timestamp_type, key, value, headers)``, such as the backends'
    ``ConsumerRecord``. Headers come back as a tuple of ``(str, bytes | None)`` pairs.
    The C decoder is used when built (``use_c=False`` forces the aiokafka path, for tests).
    """
    header = validate_batch(buf, pos) if validate else parse_header(buf, pos)
    if header.is_control or header.next_offset <= min_offset:
        return header, []
    view = memoryview(buf)[pos : pos + header.size]
    try:
        if use_c and _c_decode_records is not None:
            records = view[HEADER_SIZE:]
            if header.compression:
                decompress = _DECOMPRESS.get(header.compression)
                if decompress is None:
                    raise CorruptRecordError(
                        f"record batch at base offset {header.base_offset} uses unknown "
                        f"compression codec {header.compression}")
                records = decompress(bytes(records))
            out = _c_decode_records(
                cls, topic, partition, records, header.records_count, header.base_offset,
                header.base_timestamp, header.timestamp_type, header.max_timestamp, min_offset)
        else:
            out = _decode_with_aiokafka(bytes(view), header, cls, topic, partition, min_offset)
    except (ValueError, IndexError, struct.error, OSError, EOFError, UnicodeDecodeError) as exc:
        raise CorruptRecordError(
            f"record batch at base offset {header.base_offset} could not be decoded: {exc}"
        ) from exc
    return header, out


def _decode_with_aiokafka(data: bytes, header: BatchHeader, cls: type[T], topic: str,
                          partition: int, min_offset: int) -> list[T]:
    new = tuple.__new__
    reader = _Reader(data)
    if header.timestamp_type == TimestampType.LOG_APPEND_TIME:
        ts = header.max_timestamp
        out = [new(cls, (topic, partition, r.offset, ts, 1, r.key, r.value,
                         tuple(r.headers))) for r in reader]
    else:
        out = [new(cls, (topic, partition, r.offset, r.timestamp, 0, r.key, r.value,
                         tuple(r.headers))) for r in reader]
    if len(out) != header.records_count:
        raise CorruptRecordError(
            f"record batch at base offset {header.base_offset} declares "
            f"{header.records_count} records but holds {len(out)}")
    if min_offset > header.base_offset:
        out = [r for r in out if r[2] >= min_offset]
    return out
