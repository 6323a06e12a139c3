"""S3SinkTask: one ``TopicPartitionWriter`` per assigned partition; offsets are offered
for commit only up to the last completely uploaded batch of objects."""

from __future__ import annotations

import itertools
import logging
import operator
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future

from connect.api import (
    ConnectError,
    OffsetAndMetadata,
    SinkRecord,
    SinkTask,
    TopicPartition,
)
from connectors.s3.config import S3SinkSettings, plugin_version
from connectors.s3.formats import Format, format_for
from connectors.s3.partitioners import Partitioner, load_partitioner
from connectors.s3.recovery import recover_offset
from connectors.s3.storage import S3RetriableError, S3Storage
from connectors.s3.topic_partition_writer import TopicPartitionWriter

__all__ = ["S3SinkTask"]

log = logging.getLogger(__name__)

#: Where a record was consumed (a SinkRecord always has both, see its doc).
_ORIGINAL_PARTITION = operator.attrgetter("original_topic", "original_kafka_partition")


class S3SinkTask(SinkTask):
    """All methods run on the task's thread (see ``SinkTask``); ``stop()`` sets an event
    that cuts retry waits short."""

    def __init__(self) -> None:
        self._writers: dict[TopicPartition, TopicPartitionWriter] = {}
        self._reports: list[Future[None]] = []
        self._stop = threading.Event()

    def version(self) -> str:
        return plugin_version()

    def start(self, props: Mapping[str, str]) -> None:
        self._settings: S3SinkSettings = S3SinkSettings.parse(props)
        self._format: Format = format_for(self._settings)
        self._partitioner: Partitioner = load_partitioner(self._settings)
        self._storage = S3Storage(self._settings, stop=self._stop)
        self._storage.check_bucket()
        self.open(sorted(self.context.assignment()))

    def open(self, partitions: Sequence[TopicPartition]) -> None:
        for tp in partitions:
            if tp in self._writers:
                continue
            self._writers[tp] = TopicPartitionWriter(
                tp, self._storage, self._settings, self._format, self._partitioner,
                self._report, self.context.timeout, self.context.request_commit)
            if self._settings.recovery_from_storage:
                offset = recover_offset(self._storage, self._settings, self._partitioner,
                                        self._format.extension, tp)
                if offset is not None:
                    self.context.offset(tp, offset)

    def put(self, records: Sequence[SinkRecord]) -> None:
        writers = self._writers
        # Runs of records of one partition (a whole batch, mostly) in C-level loops; the
        # plain (topic, partition) tuple finds the TopicPartition key (a NamedTuple).
        for tp, run in itertools.groupby(records, _ORIGINAL_PARTITION):
            writer = writers.get(tp)
            if writer is None:
                raise ConnectError(f"S3 sink got a record of {TopicPartition(*tp)}, which is "
                                   "not assigned")
            writer.buffer.extend(run)
        paused, resumed = [], []
        idle = not records
        for tp, writer in self._writers.items():
            writer.write(idle=idle)
            (paused if writer.buffer else resumed).append(tp)
        # A partition whose writer is stuck retrying S3 stops fetching, so the buffer stays
        # bounded; it resumes once the buffer drained.
        if paused:
            self.context.pause(*paused)
        if resumed:
            self.context.resume(*resumed)

    def pre_commit(self, current_offsets: Mapping[TopicPartition, OffsetAndMetadata]
                   ) -> Mapping[TopicPartition, OffsetAndMetadata]:
        # Records sent to the DLQ are behind the offsets committed here: wait for them.
        for future in self._reports:
            future.result()
        self._reports.clear()
        safe: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, writer in self._writers.items():
            # Without waiting: a batch still uploading is committed at the next commit,
            # which its completion requests (waiting here would stall the task on every
            # offset flush; a graceful stop may then leave the last batch uncommitted,
            # and the restart rewrites it with the same keys and bytes).
            try:
                writer.settle(block=False)
            except S3RetriableError as exc:  # the batch stays pending; put() retries it
                log.warning("%s: not committing the batch being uploaded: %s", tp, exc)
            offset = writer.take_offset_to_commit()
            if offset is not None:
                safe[tp] = OffsetAndMetadata(offset)
        return safe

    def close(self, partitions: Sequence[TopicPartition]) -> None:
        for tp in partitions:
            writer = self._writers.pop(tp, None)
            if writer is not None:
                writer.close()

    def stop(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
        storage = getattr(self, "_storage", None)
        if storage is not None:
            storage.close()
        self._stop.set()

    def _report(self, record: SinkRecord, error: Exception) -> Future[None] | None:
        reporter = self.context.errant_record_reporter()
        if reporter is None:
            return None
        future = reporter.report(record, error)
        self._reports.append(future)
        return future
