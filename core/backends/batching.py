"""How both backends turn one produce call into batches: Kafka's default partitioning and
batch splitting, shared so that ``embedded:`` and ``kafka://`` place and split records alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import repeat
from math import ceil
from operator import is_, itemgetter

from core.backends import errors as be
from core.backends.partitioner import partition_for_key
from core.backends.types import ProducerRecord
from core.log.records import encode_batch

__all__ = ["BATCH_SPLIT_BYTES", "BATCH_TARGET_BYTES", "assign_partitions", "encode_batches"]

#: Target size of one batch: a call larger than this is split so that no batch exceeds the
#: default max.message.bytes (1 MiB); a broker that still refuses one splits it further.
BATCH_TARGET_BYTES = 512 * 1024

#: An encoded batch larger than this is re-encoded in parts of about BATCH_TARGET_BYTES, so
#: that it stays under the default max.message.bytes (1048588).
BATCH_SPLIT_BYTES = 1_000_000
_KEY, _PARTITION = itemgetter(0), itemgetter(4)
#: Per-record framing in a v2 batch (length, attributes, deltas, key/value lengths).
_RECORD_OVERHEAD = 12


def assign_partitions(topic: str, records: Sequence[ProducerRecord], count: int,
                      sticky: Callable[[], int]) -> dict[int, list[int]]:
    """Record positions grouped by partition, as Kafka's default partitioner places them:
    the explicit partition, else murmur2 of the key, else one sticky partition per call."""
    no_partitions = all(map(is_, map(_PARTITION, records), repeat(None)))
    if no_partitions and (count == 1 or all(map(is_, map(_KEY, records), repeat(None)))):
        # One partition: every key hashes to it (no murmur2 per record; a CDC topic of
        # keyed records is often a single partition), and the sticky one is it too.
        return {0 if count == 1 else sticky(): list(range(len(records)))}
    groups: dict[int, list[int]] = {}
    sticky_partition = -1
    for i, record in enumerate(records):
        partition = record[4]
        if partition is None:
            key = record[0]
            if key is None:
                if sticky_partition < 0:
                    sticky_partition = sticky()
                partition = sticky_partition
            else:
                partition = partition_for_key(key, count)
        elif not 0 <= partition < count:
            raise be.UnknownTopicError(
                f"partition {partition} of topic {topic!r} does not exist "
                f"(the topic has {count} partitions)")
        group = groups.get(partition)
        if group is None:
            groups[partition] = [i]
        else:
            group.append(i)
    return groups


def encode_batches(records: Sequence[ProducerRecord], indexes: list[int], *, compression: int,
                   now: int, target_bytes: int = BATCH_TARGET_BYTES,
                   split_bytes: int = BATCH_SPLIT_BYTES) -> list[tuple[list[int], bytearray]]:
    """One partition's records encoded as v2 batches, each at most ``split_bytes`` unless it
    holds a single record.

    The size is first estimated from the first record, so that a call of uniformly sized
    records (the common case, e.g. 1,000 x 1 KiB) is split before it is encoded, once; the
    encoded size is then checked and a part that is still too large is split again.
    Estimating from every record would cost a Python loop per record on every call.
    """
    if len(indexes) > 1:
        first = records[indexes[0]]
        estimate = len(indexes) * (_RECORD_OVERHEAD + len(first[0] or b"")
                                   + len(first[1] or b""))
        if estimate > split_bytes:
            return _encode_in_parts(records, indexes, ceil(estimate / target_bytes),
                                    compression, now, target_bytes, split_bytes)
    data = encode_batch([records[i] for i in indexes], compression=compression,
                        default_timestamp=now)
    if len(data) <= split_bytes or len(indexes) == 1:
        return [(indexes, data)]
    return _encode_in_parts(records, indexes, ceil(len(data) / target_bytes), compression,
                            now, target_bytes, split_bytes)


def _encode_in_parts(records: Sequence[ProducerRecord], indexes: list[int], parts: int,
                     compression: int, now: int, target_bytes: int,
                     split_bytes: int) -> list[tuple[list[int], bytearray]]:
    parts = max(2, min(len(indexes), parts))
    size = ceil(len(indexes) / parts)
    out = []
    for start in range(0, len(indexes), size):
        out.extend(encode_batches(records, indexes[start:start + size], compression=compression,
                                  now=now, target_bytes=target_bytes, split_bytes=split_bytes))
    return out
