"""Checks on a batch before it is appended: structure, CRC, size, record count and keys."""

from __future__ import annotations

from core.log.config import TopicConfig
from core.log.errors import InvalidRecordError, RecordTooLargeError
from core.log.records import batch_size_at, decode_batch, validate_batch
from core.log.scan import BatchInfo

__all__ = ["require_keys", "validate_append"]


def validate_append(buf: bytearray, config: TopicConfig) -> tuple[list[BatchInfo], int]:
    """Check every batch in ``buf``: whole, v2, CRC-32C, within ``max.message.bytes``, and
    holding 1 or more records with consecutive offset deltas (as producers write them).

    Returns each batch's info (offsets relative to 0: ``last_offset`` is the last offset
    delta) and the total record count. Header fields only: no per-record work.
    """
    infos: list[BatchInfo] = []
    records = 0
    pos, n = 0, len(buf)
    limit = config.max_message_bytes
    while pos < n:
        size = batch_size_at(buf, pos)
        if size is not None and size > limit:
            raise RecordTooLargeError(
                f"record batch of {size} bytes exceeds max.message.bytes={limit} of this "
                "topic; send smaller batches or raise max.message.bytes"
            )
        header = validate_batch(buf, pos)
        count = header.records_count
        if count <= 0 or header.last_offset_delta != count - 1:
            raise InvalidRecordError(
                f"record batch declares {count} records but offset deltas up to "
                f"{header.last_offset_delta}; a producer batch holds 1 or more records with "
                "consecutive offset deltas"
            )
        infos.append(BatchInfo(pos, 0, header.last_offset_delta, header.max_timestamp,
                               header.size))
        records += count
        pos += header.size
    if not infos:
        raise InvalidRecordError("an append needs at least one record batch")
    return infos, records


def require_keys(buf: bytearray, infos: list[BatchInfo]) -> None:
    """Compacted topics keep the latest record per key, so every record needs one (the only
    append check that decodes records, hence only for compacted topics). Each keyless
    record is named in the error's ``record_errors``, with Kafka's LogValidator summary as
    the message, so that a producer learns which records of the batch were refused."""
    errors: list[tuple[int, str]] = []
    for b in infos:
        _, records = decode_batch(buf, b.position, validate=False)
        errors.extend((index, _NO_KEY) for index, r in enumerate(records) if r.key is None)
    if errors:
        shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
        raise InvalidRecordError(
            f"One or more records have been rejected due to {len(errors)} record errors in "
            f"total, and only showing the first three errors at most: [{shown}]",
            record_errors=tuple(errors))


_NO_KEY = ("Compacted topic cannot accept message without key: give every record of a "
           "topic with cleanup.policy=compact a key")
