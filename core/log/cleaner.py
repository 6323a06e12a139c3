"""Log compaction: keep only the latest record per key in a partition's cleanable segments.

One pass (``clean``, run through ``PartitionLog.compact`` by the maintenance thread):

1. **Choose.** Cleanable segments are the non-active ones before the first dirty segment
   whose newest record is younger than ``min.compaction.lag.ms``. A pass runs when the
   dirty share of their bytes (past the cleaner checkpoint) exceeds
   ``min.cleanable.dirty.ratio``, when kept tombstones are due for removal, or when a dirty
   segment is older than ``max.compaction.lag.ms``.
2. **Map** key -> latest offset over the log from the checkpoint to the log end, the active
   segment included: a newer record anywhere supersedes older copies.
3. **Rewrite** consecutive segments that fit ``segment.bytes`` together into one
   ``.cleaned`` segment, without the log's lock: dropped are superseded records, records
   without a key, and tombstones whose ``delete.retention.ms`` has passed since the pass
   that first cleaned them (see ``cleaner_checkpoint``). Offsets are preserved; a batch that
   lost records is re-encoded with its base offset, producer id/epoch, compression and
   timestamp type; an emptied batch disappears.
4. **Swap**, group by group in offset order: fsync the ``.cleaned`` files, rename them
   ``.swap`` (the commit point: the loader finishes a committed swap after a crash), then,
   under the log's lock, rename the old segments ``.deleted`` and give the swap the live
   name. The swap's offset range must cover every segment it replaces, so trailing
   segments left with no records are deleted after the swap. Committing groups in order
   means a crash leaves older groups cleaned and newer ones untouched, never a newer record
   removed while an older copy it superseded survives.
5. **Checkpoint** the cleaned offset and the tombstone passes.

Appends and reads continue throughout: readers hold the segments they read, and the old
segments' descriptors stay open until their last reader is done.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from core.log.cleaner_checkpoint import CleanerCheckpoint
from core.log.config import LONG_MAX, TopicConfig
from core.log.errors import LogClosedError
from core.log.loader import CLEANED_SUFFIX, SWAP_SUFFIX, fsync_directory
from core.log.records import (
    TimestampType,
    decode_batch,
    encode_batch,
    parse_header,
    set_log_append_time,
    set_partition_leader_epoch,
)
from core.log.retention import largest_timestamp
from core.log.scan import INT32_MAX, BatchInfo
from core.log.segment import LOG_SUFFIX, LogSegment

if TYPE_CHECKING:
    from core.log.log import PartitionLog

__all__ = ["clean"]

log = logging.getLogger(__name__)

_WRITE_CHUNK = 1 << 20


@dataclass
class _PassStats:
    records_read: int = 0
    records_removed: int = 0
    keyless_removed: int = 0
    bytes_before: int = 0
    bytes_after: int = 0


class _Tombstones:
    """Decides whether a tombstone that is the latest for its key survives this pass."""

    def __init__(self, checkpoint: CleanerCheckpoint, cleaned_offset: int, now_ms: int,
                 delete_retention_ms: int) -> None:
        self._checkpoint = checkpoint
        self._cleaned = cleaned_offset
        self._now = now_ms
        self._retention = delete_retention_ms
        self.first_cleaned_now = 0

    def keep(self, offset: int) -> bool:
        first = self._checkpoint.first_cleaned_ms(offset) if offset < self._cleaned else None
        if first is None:
            self.first_cleaned_now += 1  # cleaned for the first time: the clock starts now
            return True
        return self._now < first + self._retention


def clean(plog: PartitionLog, now_ms: int) -> bool:
    """Run one compaction pass over ``plog`` if it needs one; True if a pass ran."""
    config = plog.config
    segments, end_offset, end_position = plog._snapshot()
    checkpoint = CleanerCheckpoint.load(plog.directory)
    cleaned = min(max(checkpoint.cleaned_offset, segments[0].base_offset), end_offset)
    cleanable = _cleanable(segments, cleaned, config, now_ms)
    if not cleanable or not _needs_cleaning(cleanable, cleaned, checkpoint, config, now_ms):
        return False
    first_uncleanable = segments[len(cleanable)].base_offset
    offset_map = _build_offset_map(segments, cleaned, end_position)
    tombstones = _Tombstones(checkpoint, cleaned, now_ms, config.delete_retention_ms)
    stats = _PassStats()
    for group in _groups(cleanable, config):
        if not _clean_group(plog, group, group[0] is segments[0], offset_map, tombstones,
                            stats, now_ms):
            return False
    checkpoint.after_pass(now_ms, config.delete_retention_ms, first_uncleanable,
                          tombstones.first_cleaned_now).save(plog.directory)
    log.info("compacted %s-%d below offset %d: removed %d of %d records (%d without a key), "
             "%d -> %d bytes", plog.topic, plog.partition, first_uncleanable,
             stats.records_removed, stats.records_read, stats.keyless_removed,
             stats.bytes_before, stats.bytes_after)
    return True


def _cleanable(segments: Sequence[LogSegment], cleaned: int, config: TopicConfig,
               now_ms: int) -> Sequence[LogSegment]:
    count = len(segments) - 1  # never the active segment
    if config.min_compaction_lag_ms > 0:
        horizon = now_ms - config.min_compaction_lag_ms
        for i, segment in enumerate(segments[:count]):
            if segment.next_offset > cleaned and largest_timestamp(segment) > horizon:
                count = i
                break
    return segments[:count]


def _needs_cleaning(cleanable: Sequence[LogSegment], cleaned: int,
                    checkpoint: CleanerCheckpoint, config: TopicConfig, now_ms: int) -> bool:
    dirty = [s for s in cleanable if s.next_offset > cleaned]
    dirty_bytes = sum(s.size for s in dirty)
    total = sum(s.size for s in cleanable)
    if dirty_bytes and dirty_bytes / total > config.min_cleanable_dirty_ratio:
        return True
    if checkpoint.tombstones_due(now_ms, config.delete_retention_ms):
        return True
    if config.max_compaction_lag_ms < LONG_MAX:
        for segment in dirty:
            first = _first_timestamp(segment)
            if first is not None:
                return 0 <= first < now_ms - config.max_compaction_lag_ms
    return False


def _first_timestamp(segment: LogSegment) -> int | None:
    with _held(segment):
        for batch in segment.walk(0, segment.size):
            return batch.max_timestamp
    return None


class _held:
    """Pin a segment for reading (context manager); LogClosedError if it was closed."""

    def __init__(self, segment: LogSegment) -> None:
        self._segment = segment

    def __enter__(self) -> LogSegment:
        if not self._segment.acquire():
            raise LogClosedError(f"{self._segment.path(LOG_SUFFIX)} was closed during cleaning")
        return self._segment

    def __exit__(self, *exc: object) -> None:
        self._segment.release()


def _batches(segment: LogSegment, end: int) -> Iterator[tuple[BatchInfo, bytes]]:
    walk = segment.walk(0, end)
    for batch in walk:
        yield batch, segment.read_bytes(batch.position, batch.size)
    walk.raise_problem(segment.path(LOG_SUFFIX))


def _build_offset_map(segments: Sequence[LogSegment], cleaned: int,
                      end_position: int) -> dict[bytes, int]:
    offset_map: dict[bytes, int] = {}
    active = segments[-1]
    for segment in segments:
        if segment.next_offset <= cleaned and segment is not active:
            continue
        with _held(segment):
            end = end_position if segment is active else segment.size
            for _, raw in _batches(segment, end):
                for record in decode_batch(raw)[1]:
                    if record.key is not None and record.offset >= cleaned:
                        offset_map[record.key] = record.offset
    return offset_map


def _groups(cleanable: Sequence[LogSegment], config: TopicConfig) -> list[list[LogSegment]]:
    """Consecutive segments that fit one segment.bytes and one relative-offset range."""
    groups: list[list[LogSegment]] = []
    current: list[LogSegment] = []
    size = 0
    for segment in cleanable:
        if current and (size + segment.size > config.segment_bytes
                        or segment.next_offset - 1 - current[0].base_offset > INT32_MAX):
            groups.append(current)
            current, size = [], 0
        current.append(segment)
        size += segment.size
    if current:
        groups.append(current)
    return groups


def _clean_group(plog: PartitionLog, group: list[LogSegment], is_first: bool,
                 offset_map: dict[bytes, int], tombstones: _Tombstones, stats: _PassStats,
                 now_ms: int) -> bool:
    """Rewrite ``group`` and swap it in; False if the log was closed meanwhile."""
    output = _Output(plog.directory, group[0].base_offset, plog.config.index_interval_bytes)
    try:
        kept_any, changed = _rewrite(group, output, offset_map, tombstones, stats)
        out = output.finish() if changed else None
    except BaseException:
        output.discard()
        raise
    if out is None:
        return True  # a lone segment with nothing to remove stays as it is
    stats.bytes_after += out.size
    last = max((i for i, kept in enumerate(kept_any) if kept), default=None)
    if last is None and not is_first:
        # Nothing survives and the log start offset does not depend on this group.
        output.discard()
        return plog._replace_segments(group, None, now_ms)
    # An emptied first group still leaves an (empty) segment, so that compaction never
    # moves the log start offset.
    covered = group[: 1 if last is None else last + 1]
    out.rename(SWAP_SUFFIX)
    fsync_directory(plog.directory)
    if not plog._replace_segments(covered, out, now_ms):
        out.close()  # the log was closed; reopening finishes the committed swap
        return False
    fsync_directory(plog.directory)
    rest = group[len(covered):]
    return not rest or plog._replace_segments(rest, None, now_ms)


class _Output:
    """The ``.cleaned`` segment of a group, created when the first batch is written."""

    def __init__(self, directory: Path, base_offset: int, index_interval: int) -> None:
        self._directory = directory
        self._base_offset = base_offset
        self._index_interval = index_interval
        self._segment: LogSegment | None = None
        self._pending = bytearray()
        self._infos: list[BatchInfo] = []

    def add(self, raw: bytes | bytearray) -> None:
        header = parse_header(raw)
        self._infos.append(BatchInfo(len(self._pending), header.base_offset,
                                     header.last_offset, header.max_timestamp, header.size))
        self._pending += raw
        if len(self._pending) >= _WRITE_CHUNK:
            self._write()

    def _write(self) -> LogSegment:
        if self._segment is None:
            self._segment = LogSegment(self._directory, self._base_offset,
                                       suffix=CLEANED_SUFFIX, create=True)
        if self._infos:
            self._segment.append(self._pending, self._infos, self._index_interval)
            self._pending, self._infos = bytearray(), []
        return self._segment

    def finish(self) -> LogSegment:
        """Write what is pending, seal and fsync; the segment may be empty."""
        segment = self._write()
        segment.seal()
        segment.flush()
        return segment

    def discard(self) -> None:
        if self._segment is not None:
            self._segment.close()
            self._segment.unlink()


def _rewrite(group: list[LogSegment], output: _Output, offset_map: dict[bytes, int],
             tombstones: _Tombstones, stats: _PassStats) -> tuple[list[bool], bool]:
    """Write the surviving batches of ``group`` to ``output``. Returns which members kept
    anything and whether anything changed: a lone segment is only copied once a batch of
    it changes, so a clean segment is not rewritten on every pass."""
    kept_any = [False] * len(group)
    lazy = len(group) == 1
    unchanged_end = 0  # while lazy: the bytes of group[0] kept as they are, not yet copied
    for i, segment in enumerate(group):
        with _held(segment):
            stats.bytes_before += segment.size
            for batch, raw in _batches(segment, segment.size):
                kept = _filter_batch(raw, offset_map, tombstones, stats)
                kept_any[i] |= kept is not None
                if lazy:
                    if kept is raw:
                        unchanged_end = batch.position + batch.size
                        continue
                    lazy = False
                    for _, earlier in _batches(segment, unchanged_end):
                        output.add(earlier)
                if kept is not None:
                    output.add(kept)
            if lazy:
                stats.bytes_after += segment.size
    return kept_any, not lazy


def _filter_batch(raw: bytes, offset_map: dict[bytes, int], tombstones: _Tombstones,
                  stats: _PassStats) -> bytes | bytearray | None:
    """The batch with only its surviving records: ``raw`` itself if all survive, None if
    none do."""
    header, records = decode_batch(raw)
    if header.is_control:
        return raw  # transaction markers carry no keys; they are kept as they are
    stats.records_read += len(records)
    kept = []
    for record in records:
        if record.key is None:
            stats.keyless_removed += 1
            continue
        latest = offset_map.get(record.key)
        if latest is not None and latest > record.offset:
            continue
        if record.value is None and not tombstones.keep(record.offset):
            continue
        kept.append(record)
    stats.records_removed += len(records) - len(kept)
    if len(kept) == len(records):
        return raw
    if not kept:
        return None
    base = header.base_offset
    buf = encode_batch(
        [(r.key, r.value, r.headers, r.timestamp) for r in kept],
        base_offset=base,
        compression=header.compression,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        offset_deltas=[r.offset - base for r in kept],
    )
    if header.timestamp_type == TimestampType.LOG_APPEND_TIME:
        set_log_append_time(buf, header.max_timestamp)
    set_partition_leader_epoch(buf, header.partition_leader_epoch)
    return buf
