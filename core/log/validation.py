"""Checks on a batch before it is appended: structure, CRC, size, record count and keys."""

from __future__ import annotations

from core.log.config import TopicConfig
from core.log.errors import InvalidRecordError, RecordTooLargeError
from core.log.records import batch_size_at, decode_batch, validate_batch
from core.log.scan import BatchInfo

__all__ = ["require_keys", "validate_append", "validate_follower_append"]


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


def validate_follower_append(buf: bytearray) -> tuple[list[BatchInfo], int, int]:
    """Check a leader's batches for a follower's append (Kafka's ``appendAsFollower``):
    whole, v2, CRC-32C, and offsets going up. Returns each batch's info with its own
    offsets, the record count and the byte length to store: a trailing partial batch (a
    size-limited fetch may end with one) is left out, as Kafka trims it.

    Not checked, as in Kafka: producer rules (dense offset deltas, keys of a compacted
    topic, ``max.message.bytes``). The leader enforced them when it accepted the batch,
    and its cleaner leaves batches with holes in their offsets; refusing them here would
    stop replication. Raises CorruptRecordError for a failed CRC, InvalidRecordError for a
    malformed batch or one that does not start past the previous one."""
    infos: list[BatchInfo] = []
    records = 0
    pos, n = 0, len(buf)
    previous_last = -1
    while pos < n:
        size = batch_size_at(buf, pos)
        if size is None or pos + size > n:
            break
        header = validate_batch(buf, pos)
        if header.base_offset <= previous_last:
            raise InvalidRecordError(
                f"the leader's batches go back in offsets: offset {header.base_offset} "
                f"follows {previous_last}")
        infos.append(BatchInfo(pos, header.base_offset, header.last_offset,
                               header.max_timestamp, header.size))
        records += header.records_count
        previous_last = header.last_offset
        pos += header.size
    if not infos:
        raise InvalidRecordError("a follower's append needs at least one whole record batch")
    return infos, records, pos


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
