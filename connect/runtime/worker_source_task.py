"""WorkerSourceTask: runs a SourceTask: poll → transforms → converters → produce, then
``commit_record`` and source offsets to the offsets topic (every
``offset.flush.interval.ms`` and on shutdown, followed by ``task.commit()``).

Delivery is at least once: an offset is stored only after its record's produce returned,
so after a crash the task resumes at the last flushed offset and repeats what followed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from connect.api.coordinates import RecordMetadata
from connect.api.errors import RetriableError
from connect.api.record import SourceRecord, headers_or_none
from connect.api.source import SourceTask, SourceTaskContext
from connect.api.storage import OffsetStorageReader
from connect.runtime.offset_store import OffsetStore, WorkerOffsetStorageReader, _canonical
from connect.runtime.retry_with_tolerance import SKIPPED, RetryWithToleranceOperator, Stage
from connect.runtime.topic_creation import TopicCreation
from connect.runtime.worker_task import TaskSetup, WorkerTask
from core.backends import ProducerRecord

__all__ = ["WorkerSourceTask", "WorkerSourceTaskContext"]

log = logging.getLogger(__name__)

#: About how many bytes of converted records one produce call takes. A poll's records
#: are converted and produced in runs of this size rather than all at once, so a run's
#: converted bytes are still in the CPU's caches when the log encodes them, and the next
#: run reuses their memory: for 2,048 CDC records of 2.8 kB (Debezium's JSON with
#: schemas), runs of 256 kB took about 30% less CPU per record than one call (conversion
#: and log append; ``bench/postgres_cdc_stages.py``). Small records still go in one call
#: per poll.
SEND_RUN_BYTES = 256 * 1024
_new_tuple = tuple.__new__


class WorkerSourceTaskContext(SourceTaskContext):
    def __init__(self, props: Mapping[str, str], reader: OffsetStorageReader) -> None:
        self._props = dict(props)
        self._reader = reader

    def configs(self) -> Mapping[str, str]:
        return dict(self._props)

    def offset_storage_reader(self) -> OffsetStorageReader:
        return self._reader


class WorkerSourceTask(WorkerTask):
    def __init__(self, setup: TaskSetup, offsets: OffsetStore,
                 topic_creation: TopicCreation) -> None:
        super().__init__(setup)
        self._offsets = offsets
        self._topic_creation = topic_creation
        self._task: SourceTask | None = None
        self._task_lock = threading.Lock()  # guards _task between the thread and stop()
        # Offsets of produced records not yet flushed, by canonical partition.
        self._pending: dict[str, tuple[Mapping[str, Any], Mapping[str, Any] | None]] = {}
        self._last_partition: Mapping[str, Any] | None = None
        self._last_key = ""

    def on_stop_requested(self) -> None:
        with self._task_lock:
            task = self._task
        if task is not None:
            try:
                task.stop()  # the contract: from another thread, while poll() may block
            except Exception as exc:  # stop failures are logged, the shutdown continues
                self.log_exception(logging.WARNING, f"stopping source task {self.id} failed",
                                   exc)

    def execute(self) -> None:
        s = self.setup
        task: SourceTask = s.task_class()
        key_conv, value_conv, header_conv, chain = s.build_pipeline()
        op = RetryWithToleranceOperator(s.errors, s.build_reporters(), self._stopping)
        reader = WorkerOffsetStorageReader(self._offsets, self.id.connector)
        task.initialize(WorkerSourceTaskContext(s.props, reader))
        with self._task_lock:
            self._task = task
        stopped_by_us = False
        try:
            if self.stopping:
                return
            task.start(s.props)
            self.report_running()
            next_flush = time.monotonic() + s.flush_interval_ms / 1000
            while not self.stopping:
                if self.paused:
                    self.wait_if_paused()
                    continue
                try:
                    records = task.poll()
                except RetriableError as exc:
                    log.info("poll of task %s asked for a retry: %s", self.id, exc)
                    self._stopping.wait(0.1)
                    continue
                if records:
                    s.metrics.source_record_poll_total += len(records)
                    self._send(task, records, op, (key_conv, value_conv, header_conv, chain))
                if time.monotonic() >= next_flush:
                    self._flush(task)
                    next_flush = time.monotonic() + s.flush_interval_ms / 1000
            self._flush(task)
        finally:
            with self._task_lock:
                self._task = None
            if not self.stopping:
                stopped_by_us = True
                try:
                    task.stop()
                except Exception as exc:  # already failing; keep the first error
                    self.log_exception(logging.WARNING,
                                       f"stopping failed task {self.id} failed", exc)
            log.debug("task %s attempt ended (stopped by runtime: %s)", self.id,
                      not stopped_by_us)
            for plugin in (key_conv, value_conv, header_conv, chain):
                try:
                    plugin.close()
                except Exception:  # close the rest
                    log.warning("closing %r failed", plugin, exc_info=True)

    def _send(self, task: SourceTask, records: Sequence[SourceRecord],
              op: RetryWithToleranceOperator, pipeline: tuple[Any, Any, Any, Any]) -> None:
        """Convert and produce ``records`` in runs of about ``SEND_RUN_BYTES`` of converted
        data, in order."""
        at, count = 0, len(records)
        while at < count:
            at = self._send_run(task, records, at, op, pipeline)

    def _send_run(self, task: SourceTask, records: Sequence[SourceRecord], at: int,
                  op: RetryWithToleranceOperator, pipeline: tuple[Any, Any, Any, Any]) -> int:
        """Convert records from ``records[at]`` on, as many as the first converted value's
        size says make ``SEND_RUN_BYTES``, produce them per topic, record their offsets;
        returns where the next run starts."""
        key_conv, value_conv, header_conv, chain = pipeline
        # Per topic, its records and what they were converted to, in the same order.
        by_topic: dict[str, tuple[list[SourceRecord], list[ProducerRecord]]] = {}
        # Tasks that keep SourceTask's no-op commit_record are not called per record.
        acknowledges = type(task).commit_record is not SourceTask.commit_record
        count = end = len(records)
        sized = False
        while at < end:
            record = records[at]
            at += 1
            produced = self._convert(record, op, key_conv, value_conv, header_conv, chain)
            if produced is None:
                self._record_offsets((record,))
                task.commit_record(record, None)
                continue
            if not sized and produced[1][1] is not None:  # sized by a record, not a tombstone
                sized = True
                size = len(produced[1][0] or b"") + len(produced[1][1]) + 1
                end = min(count, at - 1 + max(1, SEND_RUN_BYTES // size))
            batch = by_topic.get(produced[0])
            if batch is None:
                batch = by_topic[produced[0]] = ([], [])
            batch[0].append(record)
            batch[1].append(produced[1])
        for topic, (sent, batch) in by_topic.items():
            self._topic_creation.ensure(topic)
            metas = op.execute(Stage.KAFKA_PRODUCE, "LogBackend.produce",
                               lambda t=topic, b=batch: self.setup.backend.produce(t, b))
            if metas is SKIPPED:
                continue
            self.setup.metrics.source_record_write_total += len(batch)
            self._record_offsets(sent)
            if acknowledges:
                for record, meta in zip(sent, metas, strict=True):
                    task.commit_record(record, RecordMetadata(meta.topic, meta.partition,
                                                              meta.offset, meta.timestamp))
        return at

    @staticmethod
    def _convert(record: SourceRecord, op: RetryWithToleranceOperator, key_conv: Any,
                 value_conv: Any, header_conv: Any, chain: Any
                 ) -> tuple[str, ProducerRecord] | None:
        """Transform and convert one record; None when it is dropped or skipped.

        Each step is tried inline first (no closure on the path taken per record) and
        handed to ``op.failed`` only when it raises, which retries, reports and tolerates
        exactly as ``op.execute`` would.
        """
        try:
            out = chain.apply(record)
        except Exception as exc:
            out = op.failed(Stage.TRANSFORMATION, chain, exc, lambda: chain.apply(record),
                            source_record=record)
        if out is SKIPPED or out is None:
            return None
        topic = out.topic
        raw: list[tuple[str, bytes | None]] = []
        # Most records carry no headers (none made, or an empty Headers, which is
        # falsy): no loop set up, and no Headers made for a record built without.
        for h in headers_or_none(out) or ():
            try:
                value = header_conv.from_connect_header(topic, h.key, h.schema, h.value)
            except Exception as exc:
                value = op.failed(Stage.HEADER_CONVERTER, header_conv, exc,
                                  lambda h=h: header_conv.from_connect_header(
                                      topic, h.key, h.schema, h.value),
                                  source_record=record)
                if value is SKIPPED:
                    return None
            raw.append((h.key, value))
        try:
            key = key_conv.from_connect_data(topic, out.key_schema, out.key, raw)
        except Exception as exc:
            key = op.failed(Stage.KEY_CONVERTER, key_conv, exc,
                            lambda: key_conv.from_connect_data(
                                topic, out.key_schema, out.key, raw),
                            source_record=record)
            if key is SKIPPED:
                return None
        try:
            value = value_conv.from_connect_data(topic, out.value_schema, out.value, raw)
        except Exception as exc:
            value = op.failed(Stage.VALUE_CONVERTER, value_conv, exc,
                              lambda: value_conv.from_connect_data(
                                  topic, out.value_schema, out.value, raw),
                              source_record=record)
            if value is SKIPPED:
                return None
        # The tuple built in C: a NamedTuple's generated __new__ is a Python call per record.
        return topic, _new_tuple(ProducerRecord, (key, value, raw, out.timestamp,
                                                  out.kafka_partition))

    def _record_offsets(self, records: Sequence[SourceRecord]) -> None:
        """Note the offsets of ``records`` (written, or dropped), in order, as pending."""
        pending, last, key = self._pending, self._last_partition, self._last_key
        for record in records:
            partition = record.source_partition
            if partition is None or record.source_offset is None:
                continue
            # Runs of records usually share one source partition: reuse its lookup key.
            if partition is not last and partition != last:
                last, key = partition, _canonical(partition)
            pending[key] = (partition, record.source_offset)
        self._last_partition, self._last_key = last, key

    def _flush(self, task: SourceTask) -> None:
        """Store pending offsets, then let the task acknowledge them in the source."""
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        with self.setup.metrics.offset_commit():
            self._offsets.write(self.id.connector, pending)
        log.debug("task %s flushed %d source offsets", self.id, len(pending))
        task.commit()
