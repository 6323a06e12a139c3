"""Driver-side planning of a read: which partitions, which offset range of each, how split.

Everything here talks to the log through one ``LogBackend`` and raises
``FerryOptionError`` (naming the option) or ``DataLossError`` before any task runs.
"""

from __future__ import annotations

import itertools
import logging
import math
from dataclasses import dataclass

from connectors.spark.options import (
    EARLIEST,
    LATEST,
    FerryOptionError,
    OffsetBound,
    SourceOptions,
)
from core.backends import LogBackend, OffsetSpec, TopicPartition
from core.backends import errors as be

__all__ = ["DataLossError", "OffsetRange", "plan_ranges", "resolve_bound", "topic_partitions"]

log = logging.getLogger(__name__)


class DataLossError(RuntimeError):
    """Offsets a query needs are gone (retention, DeleteRecords, a deleted or re-created
    topic). Raised only with ``failOnDataLoss=true``."""


@dataclass(frozen=True)
class OffsetRange:
    """Records ``[start, end)`` of one topic-partition: one Spark input partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def topic_partitions(backend: LogBackend, opts: SourceOptions, *, strict: bool = True
                     ) -> list[TopicPartition]:
    """The partitions the options select, sorted. With ``strict`` a named topic that does
    not exist is an error naming the option."""
    out: list[TopicPartition] = []
    if opts.pattern is not None:
        for topic in backend.list_topics():
            if opts.pattern.fullmatch(topic):
                out.extend(TopicPartition(topic, p) for p in range(backend.partition_count(topic)))
        return sorted(out)
    wanted = opts.assign if opts.assign is not None else {t: None for t in opts.subscribe}
    name = "assign" if opts.assign is not None else "subscribe"
    for topic, parts in wanted.items():
        try:
            count = backend.partition_count(topic)
        except be.UnknownTopicError:
            if strict:
                raise FerryOptionError(
                    f"option {name!r}: topic {topic!r} does not exist on {backend.url}"
                ) from None
            continue
        if parts is None:
            out.extend(TopicPartition(topic, p) for p in range(count))
            continue
        for p in parts:
            if p >= count:
                if strict:
                    raise FerryOptionError(
                        f"option 'assign': topic {topic!r} has {count} partitions, "
                        f"so partition {p} does not exist")
                continue
            out.append(TopicPartition(topic, p))
    return sorted(out)


def resolve_bound(backend: LogBackend, tps: list[TopicPartition], bound: OffsetBound,
                  name: str, *, strategy: str = "error") -> dict[TopicPartition, int]:
    """Offsets of ``tps`` for one of startingOffsets/endingOffsets (and their timestamp
    forms). ``name`` is the option's prefix, ``starting`` or ``ending``."""
    if not tps:
        return {}
    if bound.kind in ("earliest", "latest"):
        spec = OffsetSpec.EARLIEST if bound.kind == "earliest" else OffsetSpec.LATEST
        return dict(backend.list_offsets(tps, spec))
    if bound.kind == "timestamp":
        return _by_timestamp(backend, {tp: bound.timestamp for tp in tps},
                             f"{name}Timestamp", name, strategy)
    option = f"{name}OffsetsByTimestamp" if bound.kind == "timestamps" else f"{name}Offsets"
    given = {TopicPartition(t, p): o for t, ps in bound.offsets.items() for p, o in ps.items()}
    missing = sorted(set(tps) - set(given))
    extra = sorted(set(given) - set(tps))
    if missing or extra:
        raise FerryOptionError(
            f"option {option!r} must give every selected partition and no other: "
            + (f"missing {', '.join(f'{t}-{p}' for t, p in missing)}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"not selected {', '.join(f'{t}-{p}' for t, p in extra)}" if extra else ""))
    if bound.kind == "timestamps":
        return _by_timestamp(backend, {tp: given[tp] for tp in tps}, option, name, strategy)
    out = {tp: given[tp] for tp in tps}
    for sentinel, spec in ((EARLIEST, OffsetSpec.EARLIEST), (LATEST, OffsetSpec.LATEST)):
        special = [tp for tp in tps if out[tp] == sentinel]
        if special:
            out.update(backend.list_offsets(special, spec))
    return out


def _by_timestamp(backend: LogBackend, stamps: dict[TopicPartition, int], option: str,
                  name: str, strategy: str) -> dict[TopicPartition, int]:
    out: dict[TopicPartition, int] = {}
    latest: dict[TopicPartition, int] | None = None
    for tp, stamp in stamps.items():
        offset = backend.list_offsets([tp], stamp)[tp]
        if offset < 0:
            # No record at or after the time: an ending bound (and the "latest" strategy
            # of a starting bound) means the end of the log, as in Spark's Kafka source.
            if name == "starting" and strategy == "error":
                raise FerryOptionError(
                    f"option {option!r}: {tp.topic}-{tp.partition} has no record at or after "
                    f"timestamp {stamp}; set startingOffsetsByTimestampStrategy=latest to "
                    "start at the end instead")
            if latest is None:
                latest = backend.list_offsets(list(stamps), OffsetSpec.LATEST)
            offset = latest[tp]
        out[tp] = offset
    return out


def plan_ranges(backend: LogBackend, opts: SourceOptions) -> list[OffsetRange]:
    """The offset ranges of a batch read, checked against the log and split."""
    tps = topic_partitions(backend, opts)
    starts = resolve_bound(backend, tps, opts.starting, "starting",
                           strategy=opts.timestamp_strategy)
    ends = resolve_bound(backend, tps, opts.ending, "ending")
    earliest = backend.list_offsets(tps, OffsetSpec.EARLIEST) if tps else {}
    latest = backend.list_offsets(tps, OffsetSpec.LATEST) if tps else {}
    ranges = []
    for tp in tps:
        start, end = starts[tp], ends[tp]
        if end > latest[tp]:
            raise FerryOptionError(
                f"option 'endingOffsets': {tp.topic}-{tp.partition} ends at {end}, past its "
                f"latest offset {latest[tp]}")
        if start > end:
            raise FerryOptionError(
                f"{tp.topic}-{tp.partition}: the starting offset {start} is after the ending "
                f"offset {end}")
        start = check_data_loss(tp, start, earliest[tp], opts.fail_on_data_loss)
        if start < end:
            ranges.append(OffsetRange(tp.topic, tp.partition, start, end))
    return split_ranges(ranges, opts.min_partitions, opts.max_records_per_partition)


def check_data_loss(tp: TopicPartition, start: int, log_start: int, fail: bool) -> int:
    """``start`` moved up to the log start offset, or ``DataLossError`` when asked to fail."""
    if start >= log_start:
        return start
    message = (f"{tp.topic}-{tp.partition}: offsets {start}..{log_start - 1} are no longer in "
               f"the log (its start offset is {log_start}); some data may have been lost")
    if fail:
        raise DataLossError(message + ". Set failOnDataLoss=false to skip them.")
    log.warning("%s; skipping them (failOnDataLoss=false)", message)
    return log_start


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None,
                 max_records: int | None) -> list[OffsetRange]:
    """Split big ranges: every piece at most ``max_records`` long, and, like Spark's
    ``KafkaOffsetRangeCalculator``, at least ``min_partitions`` pieces overall, cutting each
    range in proportion to its share of all records."""
    total = sum(r.size for r in ranges)
    pieces = []
    for r in ranges:
        n = 1
        if min_partitions and len(ranges) < min_partitions and total:
            n = max(1, round(r.size / total * min_partitions))
        if max_records:
            n = max(n, math.ceil(r.size / max_records))
        pieces.append(min(n, r.size))
    # Rounding may leave fewer than asked: cut the ranges with the biggest pieces further.
    while min_partitions and sum(pieces) < min_partitions:
        i = max(range(len(ranges)), key=lambda j: ranges[j].size / pieces[j], default=None)
        if i is None or pieces[i] >= ranges[i].size:
            break
        pieces[i] += 1
    out: list[OffsetRange] = []
    for r, n in zip(ranges, pieces, strict=True):
        step = r.size / n
        bounds = [r.start + round(i * step) for i in range(n)] + [r.end]
        out.extend(OffsetRange(r.topic, r.partition, a, b)
                   for a, b in itertools.pairwise(bounds) if b > a)
    return out
