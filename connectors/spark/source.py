"""Batch and streaming readers of ``format("ferry")``.

Where each method runs (pyspark 4.x): ``partitions()`` of the batch reader and every
method of the stream reader except ``read()`` run on the driver; ``read()`` runs in
executor Python workers on an unpickled copy of the reader, so readers carry options and
plans only, never an open backend.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from connectors.spark.fetching import read_range
from connectors.spark.formats import Decoding
from connectors.spark.options import SourceOptions
from connectors.spark.planning import (
    DataLossError,
    OffsetRange,
    check_data_loss,
    plan_ranges,
    resolve_bound,
    split_ranges,
    topic_partitions,
)
from core.backends import (
    LogBackend,
    OffsetAndMetadata,
    OffsetSpec,
    TopicPartition,
    open_backend,
)

__all__ = ["FerryBatchReader", "FerryRangePartition", "FerryStreamReader"]

log = logging.getLogger(__name__)

Offsets = dict[str, dict[str, int]]


class FerryRangePartition(InputPartition):
    """One task's work: records ``[start, end)`` of one topic-partition."""

    def __init__(self, r: OffsetRange) -> None:
        super().__init__(r)
        self.range = r


class _RangeReading:
    """``read()`` shared by both readers: the range, fetched and decoded into Arrow."""

    opts: SourceOptions
    decoding: Decoding
    spark_schema: StructType

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        if not isinstance(partition, FerryRangePartition):
            return  # Spark plans one placeholder partition when partitions() has none
        schema = to_arrow_schema(self.spark_schema, timezone="UTC")
        yield from read_range(partition.range, self.opts.url, schema,
                              include_headers=self.opts.include_headers,
                              fail_on_data_loss=self.opts.fail_on_data_loss,
                              transform=self.decoding.transform,
                              client_config=self.opts.client_config)


class FerryBatchReader(_RangeReading, DataSourceReader):
    def __init__(self, opts: SourceOptions, decoding: Decoding, schema: StructType) -> None:
        self.opts, self.decoding, self.spark_schema = opts, decoding, schema

    def partitions(self) -> list[InputPartition]:
        with open_backend(self.opts.url, self.opts.client_config) as backend:
            ranges = plan_ranges(backend, self.opts)
        log.info("ferry batch read of %d ranges", len(ranges))
        return [FerryRangePartition(r) for r in ranges]


def canonical(offsets: dict[TopicPartition, int]) -> Offsets:
    """Spark's Kafka offset JSON shape, topics sorted and partitions in numeric order: the
    engine compares offsets as strings, so the order must never vary."""
    out: Offsets = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return out


def flatten(offsets: Offsets) -> dict[TopicPartition, int]:
    return {TopicPartition(t, int(p)): int(o) for t, ps in offsets.items() for p, o in ps.items()}


class FerryStreamReader(_RangeReading, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets are ``{"topic": {"partition": next_offset}}``, kept only in the query's
    checkpoint. One backend connection on the driver for the query's lifetime."""

    def __init__(self, opts: SourceOptions, decoding: Decoding, schema: StructType) -> None:
        self.opts, self.decoding, self.spark_schema = opts, decoding, schema
        self._backend: LogBackend | None = None
        self._latest: Offsets | None = None
        self._available_now: dict[TopicPartition, int] | None = None
        self._last_batch = time.monotonic()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_backend"] = None
        return state

    @property
    def backend(self) -> LogBackend:
        if self._backend is None:
            self._backend = open_backend(self.opts.url, self.opts.client_config)
        return self._backend

    def initialOffset(self) -> Offsets:
        tps = topic_partitions(self.backend, self.opts)
        return canonical(resolve_bound(self.backend, tps, self.opts.starting, "starting",
                                       strategy=self.opts.timestamp_strategy))

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.opts.max_offsets_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = self._current_latest()

    def _current_latest(self) -> dict[TopicPartition, int]:
        tps = topic_partitions(self.backend, self.opts, strict=False)
        return dict(self.backend.list_offsets(tps, OffsetSpec.LATEST)) if tps else {}

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        begin = flatten(start)
        latest = self._available_now or self._current_latest()
        self._latest = canonical(latest)
        for tp in begin:
            if tp not in latest:
                self._on_loss(f"{tp.topic}-{tp.partition} no longer exists (topic deleted?)")
        new = [tp for tp in latest if tp not in begin]
        earliest = self.backend.list_offsets(new, OffsetSpec.EARLIEST) if new else {}
        begin.update(earliest)  # partitions found later start at earliest, as in Kafka
        end: dict[TopicPartition, int] = {}
        for tp, hw in latest.items():
            if hw < begin[tp]:
                self._on_loss(f"{tp.topic}-{tp.partition}: the latest offset {hw} is below "
                              f"the offset {begin[tp]} already read (topic re-created?)")
                end[tp] = hw
            else:
                end[tp] = hw
        if isinstance(limit, ReadMaxRows):
            end = _limit(begin, end, limit.max_rows)
        if self._held_back(begin, end, limit):
            return start
        for tp, offset in flatten(start).items():
            end.setdefault(tp, offset)  # keep vanished partitions so offsets never go away
        return canonical(end)

    def _held_back(self, begin: dict[TopicPartition, int], end: dict[TopicPartition, int],
                   limit: ReadLimit) -> bool:
        """Kafka's ``minOffsetsPerTrigger``: no batch until that many records wait or
        ``maxTriggerDelay`` has passed since the last batch (never under availableNow)."""
        waiting = sum(max(0, end[tp] - begin.get(tp, end[tp])) for tp in end)
        minimum = self.opts.min_offsets_per_trigger
        now = time.monotonic()
        if (minimum and self._available_now is None and waiting < minimum
                and now - self._last_batch < self.opts.max_trigger_delay_s):
            return True
        if waiting:
            self._last_batch = now
        return False

    def reportLatestOffset(self) -> Offsets | None:
        return self._latest

    def _on_loss(self, message: str) -> None:
        if self.opts.fail_on_data_loss:
            raise DataLossError(message + "; set failOnDataLoss=false to go on")
        log.warning("%s; going on (failOnDataLoss=false)", message)

    def partitions(self, start: Offsets, end: Offsets) -> list[InputPartition]:
        begin, stop = flatten(start), flatten(end)
        # Offsets of partitions that vanished (a deleted topic) stay in the offsets JSON but
        # are not read; latestOffset has already applied failOnDataLoss to them.
        present = set(topic_partitions(self.backend, self.opts, strict=False))
        stop = {tp: o for tp, o in stop.items() if tp in present}
        earliest = self.backend.list_offsets(list(stop), OffsetSpec.EARLIEST) if stop else {}
        ranges = []
        for tp, to in sorted(stop.items()):
            # Partitions found after the query started begin at earliest, as in Kafka.
            frm = check_data_loss(tp, begin.get(tp, earliest[tp]), earliest[tp],
                                  self.opts.fail_on_data_loss)
            if frm < to:
                ranges.append(OffsetRange(tp.topic, tp.partition, frm, to))
        ranges = split_ranges(ranges, self.opts.min_partitions,
                              self.opts.max_records_per_partition)
        return [FerryRangePartition(r) for r in ranges]

    def commit(self, end: Offsets) -> None:
        """Recovery uses the checkpoint only, as Spark's Kafka source does. With
        ``commitToGroup`` the offsets also go to that consumer group so that lag tools
        (``ferry groups``, Burrow) see progress; Spark calls this one batch late."""
        group = self.opts.commit_to_group
        if group:
            self.backend.commit_offsets(group, {
                tp: OffsetAndMetadata(offset, "spark") for tp, offset in flatten(end).items()})

    def stop(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None


def _limit(begin: dict[TopicPartition, int], end: dict[TopicPartition, int], max_rows: int
           ) -> dict[TopicPartition, int]:
    """At most ``max_rows`` records in all, shared among partitions in proportion to their
    lag (Spark's Kafka rule), each share rounded up so small lags still move."""
    lags = {tp: max(0, end[tp] - begin[tp]) for tp in end}
    total = sum(lags.values())
    if total <= max_rows:
        return end
    out = {}
    for tp, lag in lags.items():
        share = -(-lag * max_rows // total)
        out[tp] = begin[tp] + min(lag, share) if lag else end[tp]
    return out
