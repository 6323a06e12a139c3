"""Batch and streaming writers of ``format("ferry")``, with the columns of Spark's Kafka
sink: ``value`` (binary or string, required), ``key``, ``topic``, ``partition``,
``headers`` (all optional); the ``topic`` option wins over the column.

Delivery is **at-least-once**, as with Spark's Kafka sink: a task that fails after some
``produce`` calls succeeded is retried from the start of its data, and a streaming batch
re-run after a crash is written again. Records without a ``partition`` go where Kafka's
producer would put them (murmur2 of the key; unkeyed records stick to a partition per call).
"""

from __future__ import annotations

import hashlib
import logging
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    StringType,
    StructType,
)

from connectors.spark.fetching import shared_backend
from connectors.spark.options import FerryOptionError, SinkOptions
from core.backends import OffsetAndMetadata, ProducerRecord, TopicPartition

__all__ = ["FerryBatchWriter", "FerryStreamWriter", "check_sink_schema"]

log = logging.getLogger(__name__)

#: Produce calls queued behind the one being sent: enough to overlap conversion with the
#: broker's round trip, few enough to bound memory (each call holds batchSize records).
_IN_FLIGHT = 2


@dataclass
class WriteReport(WriterCommitMessage):
    """What one task wrote."""

    records: int


def check_sink_schema(schema: StructType, opts: SinkOptions) -> None:
    """Refuse, on the driver, a DataFrame the sink cannot write, naming the column."""
    types = {f.name: f.dataType for f in schema.fields}
    if "value" not in types:
        raise FerryOptionError("the ferry sink needs a 'value' column (binary or string); "
                               f"the data has {', '.join(types) or 'no columns'}")
    binary_like = (BinaryType, StringType)
    for name in ("key", "value"):
        fmt = opts.key_format if name == "key" else opts.value_format
        if name in types and fmt == "raw" and not isinstance(types[name], binary_like):
            raise FerryOptionError(
                f"column {name!r} must be binary or string, not {types[name].simpleString()};"
                f" cast it, or set {name}Format to encode it")
    if opts.topic is None:
        if "topic" not in types:
            raise FerryOptionError(
                "no topic to write to: set the 'topic' option or give a 'topic' column")
        if not isinstance(types["topic"], StringType):
            raise FerryOptionError("column 'topic' must be a string")
    if "partition" in types and not isinstance(types["partition"], IntegerType):
        raise FerryOptionError("column 'partition' must be an int")
    if "headers" in types:
        h = types["headers"]
        if not (isinstance(h, ArrayType) and isinstance(h.elementType, StructType)
                and [f.name for f in h.elementType.fields] == ["key", "value"]):
            raise FerryOptionError(
                "column 'headers' must be array<struct<key: string, value: binary>>")


class _ArrowProducing:
    opts: SinkOptions
    encoding: object | None = None

    def _produce_all(self, batches: Iterator[pa.RecordBatch]) -> WriteReport:
        """Produce every row; one produce call is in flight on a helper thread while the
        next rows are converted, so the broker's round trip overlaps Python work. A single
        thread keeps the calls, and so each partition's records, in order."""
        backend = shared_backend(self.opts.url, self.opts.client_config)
        size = self.opts.batch_size
        written = 0
        pending: dict[str, list[ProducerRecord]] = {}
        in_flight: deque[Future[object]] = deque()

        def send(topic: str, records: list[ProducerRecord]) -> None:
            nonlocal written
            while len(in_flight) >= _IN_FLIGHT:
                in_flight.popleft().result()
            in_flight.append(pool.submit(backend.produce, topic, records))
            written += len(records)

        with ThreadPoolExecutor(1, thread_name_prefix="ferry-sink") as pool:
            try:
                for batch in batches:
                    for topic, records in self._records(batch).items():
                        bucket = pending.setdefault(topic, [])
                        bucket.extend(records)
                        while len(bucket) >= size:
                            send(topic, bucket[:size])
                            del bucket[:size]
                for topic, bucket in pending.items():
                    if bucket:
                        send(topic, bucket)
                while in_flight:
                    in_flight.popleft().result()
            finally:
                for future in in_flight:
                    future.cancel()
        return WriteReport(written)

    def _records(self, batch: pa.RecordBatch) -> dict[str, list[ProducerRecord]]:
        """The batch's rows as records, by topic."""
        names = batch.schema.names
        n = batch.num_rows

        def column(name: str) -> list:
            if name not in names:
                return [None] * n
            array = batch.column(names.index(name))
            if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
                array = array.cast(pa.binary())
            return array.to_pylist()

        keys, values = column("key"), column("value")
        if self.encoding is not None:
            keys, values = self.encoding.encode(batch, keys, values)
        if "headers" in names:
            headers = [[(h["key"], h["value"]) for h in hs] if hs else ()
                       for hs in column("headers")]
        else:
            headers = [()] * n
        records = list(map(ProducerRecord, keys, values, headers, [None] * n,
                           column("partition")))
        if self.opts.topic:
            return {self.opts.topic: records}
        by_topic: dict[str, list[ProducerRecord]] = {}
        for topic, record in zip(batch.column(names.index("topic")).to_pylist(), records,
                                 strict=True):
            if topic is None:
                raise ValueError("a row has a null topic and no 'topic' option is set")
            by_topic.setdefault(topic, []).append(record)
        return by_topic


class FerryBatchWriter(_ArrowProducing, DataSourceArrowWriter):
    def __init__(self, opts: SinkOptions, encoding: object | None = None) -> None:
        self.opts, self.encoding = opts, encoding

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteReport:
        return self._produce_all(iterator)

    def commit(self, messages: list[WriteReport | None]) -> None:
        log.info("ferry sink wrote %d records",
                 sum(m.records for m in messages if m is not None))

    def abort(self, messages: list[WriteReport | None]) -> None:
        # Records of tasks that succeeded are already in the log: at-least-once.
        log.warning("ferry write aborted; %d records were written before the failure",
                    sum(m.records for m in messages if m is not None))


class FerryStreamWriter(_ArrowProducing, DataSourceStreamArrowWriter):
    """The streaming sink. With a ``topic`` option and a checkpoint it also skips
    **replayed batches**: ``commit`` records the batch id as a group commit of
    ``ferry-spark-sink-<hash of the checkpoint>``, and a batch that Spark runs again after a
    crash between that commit and its own checkpoint commit writes nothing."""

    def __init__(self, opts: SinkOptions, encoding: object | None = None) -> None:
        self.opts, self.encoding = opts, encoding

    def _marker(self) -> tuple[str, TopicPartition] | None:
        if not (self.opts.topic and self.opts.checkpoint):
            return None
        digest = hashlib.sha1(self.opts.checkpoint.encode()).hexdigest()[:16]
        return f"ferry-spark-sink-{digest}", TopicPartition(self.opts.topic, 0)

    def _committed_batch(self) -> int:
        marker = self._marker()
        if marker is None:
            return -1
        group, tp = marker
        backend = shared_backend(self.opts.url, self.opts.client_config)
        found = backend.fetch_offsets(group, [tp]).get(tp)
        return -1 if found is None else found.offset - 1

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteReport:
        from pyspark import TaskContext

        context = TaskContext.get()
        batch_id = context.getLocalProperty("streaming.sql.batchId") if context else None
        if batch_id is not None and int(batch_id) <= self._committed_batch():
            log.warning("ferry sink: batch %s was already written (a replay after a "
                        "restart); skipping it", batch_id)
            return WriteReport(0)
        return self._produce_all(iterator)

    def commit(self, messages: list[WriteReport | None], batchId: int) -> None:
        marker = self._marker()
        if marker is not None:
            group, tp = marker
            shared_backend(self.opts.url, self.opts.client_config).commit_offsets(
                group, {tp: OffsetAndMetadata(batchId + 1, "last written Spark batch")})
        log.info("ferry sink batch %d: %d records", batchId,
                 sum(m.records for m in messages if m is not None))

    def abort(self, messages: list[WriteReport | None], batchId: int) -> None:
        log.warning("ferry sink batch %d aborted after %d records", batchId,
                    sum(m.records for m in messages if m is not None))
