"""WorkerSinkTask: runs a SinkTask: a Consumer in group ``connect-<name>`` → converters →
transforms → ``put``; offsets committed only after ``pre_commit`` (every
``offset.flush.interval.ms``, on ``request_commit``, before partitions close and at
shutdown), so delivery is at least once.

``consumer.override.*`` keys honoured: ``auto.offset.reset`` (default ``earliest``, as
Kafka Connect), ``max.poll.records``, ``session.timeout.ms``, ``heartbeat.interval.ms``.
``topics.regex`` is matched against the topics existing when the task starts. A topic
named in ``topics`` that does not exist yet is looked for every second; once it exists the
task commits and joins its group again with a new consumer (a group consumer learns its
topics' partitions only when it joins).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from connect.api.coordinates import OffsetAndMetadata, TimestampType, TopicPartition
from connect.api.errors import ConnectError, RetriableError
from connect.api.header import Headers
from connect.api.record import SinkRecord
from connect.api.sink import ErrantRecordReporter, SinkTask, SinkTaskContext
from connect.runtime.retry_with_tolerance import (
    SKIPPED,
    ProcessingContext,
    RetryWithToleranceOperator,
    Stage,
)
from connect.runtime.worker_task import WorkerTask
from core.backends import OffsetAndMetadata as BackendOffset
from core.backends import TopicPartition as BackendTP
from core.backends.consumer import Consumer

__all__ = ["WorkerSinkTask", "WorkerSinkTaskContext"]

log = logging.getLogger(__name__)

#: How often a sink task subscribed to a topic that does not exist yet looks for it.
MISSING_TOPIC_CHECK_S = 1.0
#: Longest wait of one consumer poll (shorter when an offset commit is due sooner).
POLL_MS = 200


class _Reporter(ErrantRecordReporter):
    """KIP-610's reporter. The DLQ gets the record as it was consumed when it is one of
    the batch being put (matched by its original coordinates, whatever transforms did),
    as Kafka keeps the original consumer record; a record the task made itself is
    converted back to bytes with the task's converters."""

    def __init__(self, op: RetryWithToleranceOperator, owner: WorkerSinkTask,
                 pipeline: tuple[Any, Any, Any, Any]) -> None:
        self._op = op
        self._owner = owner
        self._pipeline = pipeline

    def report(self, record: SinkRecord, error: BaseException) -> Future[None]:
        # Reported first, as Kafka's executeFailed does, then refused if not tolerated.
        self._op.report(ProcessingContext(Stage.TASK_PUT, "SinkTask", error,
                                          source_record=None, consumed=self._consumed(record)))
        if not self._op.tolerates_all:
            raise ConnectError(f"errors.tolerance=none: record reported as errant: {error}")
        done: Future[None] = Future()
        done.set_result(None)
        return done

    def _consumed(self, r: SinkRecord) -> Any:
        for c in self._owner.in_flight:  # rare: a linear search beats a map per batch
            if (c.offset == r.original_kafka_offset and c.partition ==
                    r.original_kafka_partition and c.topic == r.original_topic):
                return c
        key_conv, value_conv, header_conv, _ = self._pipeline
        topic = r.topic
        headers = [(h.key, header_conv.from_connect_header(topic, h.key, h.schema, h.value))
                   for h in r.headers]
        return _Consumed(topic, r.kafka_partition, r.kafka_offset,
                         key_conv.from_connect_data(topic, r.key_schema, r.key, headers),
                         value_conv.from_connect_data(topic, r.value_schema, r.value, headers),
                         headers)


@dataclass
class _Consumed:
    """A record the task reported that was not consumed as such, in consumed form."""

    topic: str
    partition: int | None
    offset: int | None
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


class WorkerSinkTaskContext(SinkTaskContext):
    def __init__(self, owner: WorkerSinkTask, props: Mapping[str, str]) -> None:
        self._owner = owner
        self._props = dict(props)
        self.timeout_ms = 0
        self.commit_requested = False
        self.seeks: dict[TopicPartition, int] = {}
        self.paused: set[TopicPartition] = set()
        self.reporter: ErrantRecordReporter | None = None

    def configs(self) -> Mapping[str, str]:
        return dict(self._props)

    def offsets(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.seeks.update(offsets)

    def timeout(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms

    def assignment(self) -> frozenset[TopicPartition]:
        return frozenset(self._owner.assignment)

    def pause(self, *partitions: TopicPartition) -> None:
        self.paused.update(partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        self.paused.difference_update(partitions)

    def request_commit(self) -> None:
        self.commit_requested = True

    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        return self.reporter


#: Kafka's timestamp type codes (-1 and anything unknown: no timestamp type).
_TIMESTAMP_TYPES = {0: TimestampType.CREATE_TIME, 1: TimestampType.LOG_APPEND_TIME}


class WorkerSinkTask(WorkerTask):
    assignment: set[TopicPartition] = set()
    #: The consumed records of the batch being put (for the errant record reporter).
    in_flight: list[Any] = []

    def on_stop_requested(self) -> None:
        """Nothing: a sink task is stopped on its own thread after the last put()."""

    def _consumer(self) -> Consumer:
        s = self.setup
        o = {k[len("consumer.override."):]: v for k, v in s.props.items()
             if k.startswith("consumer.override.")}
        topics = [t.strip() for t in s.props.get("topics", "").split(",") if t.strip()]
        if s.props.get("topics.regex"):
            pattern = re.compile(s.props["topics.regex"])
            topics += [t for t in s.backend.list_topics() if pattern.fullmatch(t)]
        return Consumer(s.backend, topics, group_id=f"connect-{self.id.connector}",
                        auto_offset_reset=o.get("auto.offset.reset", "earliest"),
                        enable_auto_commit=False,
                        max_poll_records=int(o.get("max.poll.records", "500")),
                        session_timeout_ms=int(o.get("session.timeout.ms", "45000")),
                        heartbeat_interval_ms=int(o.get("heartbeat.interval.ms", "3000")),
                        client_id=f"connector-consumer-{self.id.connector}-{self.id.task}")

    def _missing_topics(self) -> set[str]:
        named = {t.strip() for t in self.setup.props.get("topics", "").split(",") if t.strip()}
        return named - set(self.setup.backend.list_topics()) if named else set()

    def execute(self) -> None:
        s = self.setup
        task: SinkTask = s.task_class()
        pipeline = s.build_pipeline()
        op = RetryWithToleranceOperator(s.errors, s.build_reporters(), self._stopping)
        ctx = WorkerSinkTaskContext(self, s.props)
        if s.errors.tolerance_all or s.errors.dlq_topic:
            ctx.reporter = _Reporter(op, self, pipeline)
        self.assignment = set()
        self._current: dict[TopicPartition, int] = {}
        missing = self._missing_topics()
        consumer = self._consumer()
        task.initialize(ctx)
        try:
            task.start(s.props)
            self.report_running()
            next_commit = time.monotonic() + s.flush_interval_ms / 1000
            next_topic_check = time.monotonic() + MISSING_TOPIC_CHECK_S
            while not self.stopping:
                if self.paused:
                    self.wait_if_paused()
                    continue
                # As Kafka's WorkerSinkTask: no longer than until the next offset commit
                # is due, so an idle task commits on time rather than a poll's wait late.
                due_ms = int((next_commit - time.monotonic()) * 1000)
                records = consumer.poll(min(POLL_MS, max(due_ms, 0)))
                s.metrics.sink_record_read_total += len(records)
                if missing and time.monotonic() >= next_topic_check:
                    next_topic_check = time.monotonic() + MISSING_TOPIC_CHECK_S
                    if self._missing_topics() != missing:
                        # Not yet put: the new consumer fetches them again from the commit.
                        records = []
                        self._commit(task, consumer)
                        consumer.close()
                        missing = self._missing_topics()
                        consumer = self._consumer()
                        log.info("task %s rejoins its group: subscribed topics appeared",
                                 self.id)
                self._on_assignment(task, consumer, ctx)
                for tp, offset in ctx.seeks.items():
                    consumer.seek(BackendTP(*tp), offset)
                    records = [r for r in records if (r.topic, r.partition) != tp]
                    self._current[tp] = offset
                ctx.seeks.clear()
                records = self._drop_paused(consumer, ctx, records)
                batch = self._convert_all(records, op, pipeline)
                self.in_flight = records
                if not self._deliver(task, ctx, batch):
                    break  # stopping mid-retry: the batch's offsets must not be committed
                ends = {(c.topic, c.partition): c.offset for c in records}
                for (topic, partition), offset in ends.items():
                    self._current[TopicPartition(topic, partition)] = offset + 1
                if ctx.commit_requested or time.monotonic() >= next_commit:
                    ctx.commit_requested = False
                    self._commit(task, consumer)
                    next_commit = time.monotonic() + s.flush_interval_ms / 1000
            self._commit(task, consumer)
        finally:
            try:
                task.close(sorted(self.assignment))
                task.stop()
            finally:
                consumer.close()
                for plugin in pipeline:
                    plugin.close()

    def _on_assignment(self, task: SinkTask, consumer: Consumer,
                       ctx: WorkerSinkTaskContext) -> None:
        now = {TopicPartition(tp.topic, tp.partition) for tp in consumer.assignment}
        if now == self.assignment:
            return
        revoked, added = self.assignment - now, now - self.assignment
        if revoked:
            task.close(sorted(revoked))
            for tp in revoked:
                self._current.pop(tp, None)
        self.assignment = now
        if added:
            for topic in {tp.topic for tp in added}:
                self.setup.on_topic(topic)
            task.open(sorted(added))

    def _drop_paused(self, consumer: Consumer, ctx: WorkerSinkTaskContext,
                     records: list[Any]) -> list[Any]:
        """Consumer has no pause: drop paused partitions' records and seek back, so they
        are fetched again after resume."""
        if not ctx.paused:
            return records
        kept, first = [], {}
        for r in records:
            tp = TopicPartition(r.topic, r.partition)
            if tp in ctx.paused:
                first.setdefault(tp, r.offset)
            else:
                kept.append(r)
        for tp, offset in first.items():
            consumer.seek(BackendTP(*tp), offset)
        if first:
            self._stopping.wait(0.05)  # do not spin on a fully paused assignment
        return kept

    def _convert_all(self, records: list[Any], op: RetryWithToleranceOperator,
                     pipeline: tuple[Any, Any, Any, Any]) -> list[SinkRecord]:
        """Each consumed record converted and transformed; dropped ones left out."""
        out: list[SinkRecord] = []
        for c in records:
            record = self._convert(c, op, pipeline)
            if record is not None:
                out.append(record)
        return out

    @staticmethod
    def _convert(c: Any, op: RetryWithToleranceOperator,
                 pipeline: tuple[Any, Any, Any, Any]) -> SinkRecord | None:
        """Convert and transform one consumed record; None when dropped or skipped.

        Each step is tried inline first (no closure on the path taken per record) and
        handed to ``op.failed`` only when it raises, which retries, reports and tolerates
        exactly as ``op.execute`` would.
        """
        key_conv, value_conv, header_conv, chain = pipeline
        topic, raw = c.topic, c.headers
        try:
            key = key_conv.to_connect_data(topic, c.key, raw)
        except Exception as exc:
            key = op.failed(Stage.KEY_CONVERTER, key_conv, exc,
                            lambda: key_conv.to_connect_data(topic, c.key, raw), consumed=c)
            if key is SKIPPED:
                return None
        try:
            value = value_conv.to_connect_data(topic, c.value, raw)
        except Exception as exc:
            value = op.failed(Stage.VALUE_CONVERTER, value_conv, exc,
                              lambda: value_conv.to_connect_data(topic, c.value, raw),
                              consumed=c)
            if value is SKIPPED:
                return None
        headers = Headers()
        for hk, hv in raw:
            try:
                sv = header_conv.to_connect_header(topic, hk, hv)
            except Exception as exc:
                sv = op.failed(Stage.HEADER_CONVERTER, header_conv, exc,
                               lambda hk=hk, hv=hv: header_conv.to_connect_header(
                                   topic, hk, hv), consumed=c)
                if sv is SKIPPED:
                    return None
            headers.add(hk, sv.value, sv.schema)
        record = SinkRecord(topic=topic, kafka_partition=c.partition, kafka_offset=c.offset,
                            key_schema=key.schema, key=key.value, value_schema=value.schema,
                            value=value.value, timestamp=c.timestamp,
                            timestamp_type=_TIMESTAMP_TYPES.get(
                                c.timestamp_type, TimestampType.NO_TIMESTAMP_TYPE),
                            headers=headers)
        try:
            out = chain.apply(record)
        except Exception as exc:
            out = op.failed(Stage.TRANSFORMATION, chain, exc, lambda: chain.apply(record),
                            consumed=c)
        return None if out is SKIPPED else out

    def _deliver(self, task: SinkTask, ctx: WorkerSinkTaskContext,
                 batch: list[SinkRecord]) -> bool:
        """put() until it succeeds; RetriableError redelivers after ``context.timeout``."""
        while not self.stopping:
            try:
                task.put(batch)
                self.setup.metrics.sink_record_send_total += len(batch)
                return True
            except RetriableError as exc:
                log.info("put of task %s asked for a retry in %d ms: %s", self.id,
                         ctx.timeout_ms, exc)
                self._stopping.wait(max(ctx.timeout_ms, 10) / 1000)
        return False

    def _commit(self, task: SinkTask, consumer: Consumer) -> None:
        if not self._current:
            return
        current = {tp: OffsetAndMetadata(o) for tp, o in self._current.items()}
        try:
            safe = task.pre_commit(current)
        except Exception as exc:  # per the API: a failing pre_commit skips this commit
            self.log_exception(logging.WARNING,
                               f"pre_commit of task {self.id} failed; not committing", exc)
            return
        if not safe:
            return
        # The task decides what is safe to commit, not the consumer's positions.
        with self.setup.metrics.offset_commit():
            consumer.commit({BackendTP(*tp): BackendOffset(om.offset, om.metadata)
                             for tp, om in safe.items()})
