"""Kafka RecordBatch v2 (magic 2) records: encoding and decoding whole batches.

The log stores batches exactly as Kafka lays them out, so the broker can serve stored bytes
unchanged. Header work (layout, validation, offset assignment, LogAppendTime stamping) is in
core.log.batch_header, re-exported here. Per-record varint encoding and decoding is done by
the optional C extension or delegated to aiokafka's Cython codec, which also handles gzip,
snappy (both framings), lz4 and zstd. This module is the only importer of ``aiokafka.record``.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Sequence
from typing import Any, NamedTuple, TypeVar

from aiokafka import codec as _codec
from aiokafka.record.default_records import DefaultRecordBatch as _Reader
from aiokafka.record.default_records import DefaultRecordBatchBuilder as _Builder

from core.log.batch_header import (
    BATCH_OVERHEAD,
    COMPRESSION_CODES,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    BatchHeader,
    TimestampType,
    batch_size_at,
    crc32c,
    frame_batch,
    iter_batches,
    parse_header,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    validate_batch,
)
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
    "set_partition_leader_epoch",
    "validate_batch",
]

Header = tuple[str, bytes | None]


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
            frame_batch(buf, len(records), base_offset, first_ts, max_ts,
                        producer_id, producer_epoch, base_sequence)
            return buf
    return _encode_with_aiokafka(
        records, base_offset=base_offset, compression=compression, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence,
        offset_deltas=offset_deltas, default_timestamp=now)


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
        set_base_offset(buf, base_offset)
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
