"""Message sets of the old formats (magic 0 and 1), as Produce v0-2 carries them, turned
into one RecordBatch v2, the only format Ferry stores.

Kafka does the same on append when a topic's format is v2 (LogValidator's conversion):
every record keeps its key and value, offsets are reassigned, and a compressed wrapper's
codec (gzip, snappy, lz4) becomes the batch's. Magic 1 records keep their CreateTime;
magic 0 records have no timestamp and get the broker's clock at conversion, so that time
retention and timestamp lookups treat them as just written (Kafka leaves them without a
timestamp). kafka-python reads the old formats (CRC-32 check, decompression).
"""

from __future__ import annotations

from kafka.errors import KafkaError
from kafka.record.legacy_records import LegacyRecordBatch
from kafka.record.memory_records import MemoryRecords

from core.log.errors import CorruptRecordError, InvalidRecordError
from core.log.records import encode_batch

__all__ = ["LEGACY_MAGICS", "to_record_batch"]

#: The message formats Produce v0-1 (magic 0) and v2 (magic 0 or 1) carry.
LEGACY_MAGICS = (0, 1)
_MAGIC_OFFSET = 16  # offset (8) + size (4) + crc (4)


def to_record_batch(message_set: bytes, now_ms: int) -> bytearray:
    """One v2 batch with every record of ``message_set``; CorruptRecordError if a message
    fails its CRC or is truncated, InvalidRecordError if it holds no message or one of
    format v2 (which Produce v3+ carries)."""
    if len(message_set) <= _MAGIC_OFFSET:
        raise CorruptRecordError(f"{len(message_set)} bytes cannot hold a message")
    stream = MemoryRecords(bytes(message_set))
    if stream.valid_bytes() != len(message_set):
        raise CorruptRecordError(
            f"the message set is truncated: {stream.valid_bytes()} of {len(message_set)} bytes "
            "hold whole messages")
    records: list[tuple[bytes | None, bytes | None, list, int | None]] = []
    codec = 0
    try:
        while (batch := stream.next_batch()) is not None:
            if not isinstance(batch, LegacyRecordBatch):
                raise InvalidRecordError(
                    "Produce v0-2 carries messages of format v0 or v1, not record batches v2 "
                    "(send them with Produce v3 or later)")
            if not batch.validate_crc():
                raise CorruptRecordError("a message fails its CRC-32 check")
            codec = codec or batch.compression_type
            for record in batch:
                timestamp = record.timestamp if batch.magic == 1 else None
                records.append((record.key, record.value, [],
                                timestamp if timestamp is not None and timestamp >= 0 else None))
    except (KafkaError, ValueError, IndexError, OSError) as exc:  # kafka-python's decoders
        raise CorruptRecordError(f"cannot read the message set: {exc}") from exc
    if not records:
        raise InvalidRecordError("the message set holds no message")
    return encode_batch(records, compression=codec, default_timestamp=now_ms)
