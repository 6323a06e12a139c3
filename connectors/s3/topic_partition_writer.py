"""The records of one Kafka partition, into objects: rotation, object keys, commits.

The rules that make the objects exactly-once (see docs/s3-sink.md):

* An object's key is fixed by its first record:
  ``<topics.dir>/<partitioned path>/<topic>+<partition>+<start offset, zero-padded><ext>``.
* Rotation depends on the records only (``flush.size``, ``rotate.interval.ms`` on the
  extractor's record time, a schema change), so replaying from the same offset rebuilds
  the same objects. Wall-clock rotation (``rotate.schedule.interval.ms``, the Wallclock
  extractor) is accepted and is not exactly-once, as in Confluent.
* A rotation commits every open object of the partition; only when all are uploaded does
  the offset after the last record become committable (``offset_to_commit``), so the
  consumer group's offset always sits on a batch boundary and a restart rewrites at most
  the objects of one batch, under the same keys and with the same content.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from connect.api import ConnectError, DataError, Schema, SinkRecord, TopicPartition
from connectors.s3.config import S3SinkSettings
from connectors.s3.formats import Format, RecordWriter
from connectors.s3.output_stream import S3OutputStream
from connectors.s3.partitioners import Partitioner, timezone
from connectors.s3.schema_compat import SchemaCompatibility
from connectors.s3.storage import S3RetriableError, S3Storage

__all__ = ["BATCH_START_METADATA", "TopicPartitionWriter"]

log = logging.getLogger(__name__)

#: User metadata on every object: the first offset of the batch of objects it was
#: committed with, from which ``offsets.recovery.from.storage`` replays.
BATCH_START_METADATA = "ferry-batch-start"
#: Most records ``_write_run`` writes between two checks for full parts to upload.
RUN_RECORDS = 1024
_UNSET = object()
TOMBSTONE_PARTITION = "tombstone"

ReportBad = Callable[[SinkRecord, Exception], "Future[None] | None"]


class TopicPartitionWriter:
    """Single-threaded (the task's thread)."""

    def __init__(self, tp: TopicPartition, storage: S3Storage, settings: S3SinkSettings,
                 fmt: Format, partitioner: Partitioner, report_bad: ReportBad,
                 set_timeout: Callable[[int], None],
                 request_commit: Callable[[], None] = lambda: None) -> None:
        self.tp = tp
        self.storage = storage
        self.s = settings
        self.format = fmt
        self.partitioner = partitioner
        self.compat = SchemaCompatibility(settings.schema_compatibility)
        self.report_bad = report_bad
        self.set_timeout = set_timeout
        self.request_commit = request_commit
        self.buffer: deque[SinkRecord] = deque()
        self.writers: dict[str, RecordWriter] = {}
        self.schemas: dict[str, Schema | None] = {}
        self.extractor = partitioner.timestamp_extractor
        if settings.rotate_interval_ms > 0 and self.extractor is None:
            log.warning("rotate.interval.ms is ignored for %s: it needs a time-based "
                        "partitioner (as in Confluent's S3 sink)", type(partitioner).__name__)
        self.rotate_interval_ms = settings.rotate_interval_ms if self.extractor else -1
        self.zone = timezone(settings.timezone) if settings.rotate_schedule_interval_ms > 0 \
            else None
        self._compat_none = settings.schema_compatibility == "NONE"
        self._time_rotation = (self.rotate_interval_ms > 0
                               or settings.rotate_schedule_interval_ms > 0)
        #: No per-record time or schema rules beyond "same schema object": ``_write_run``.
        self._plain = self._compat_none and not self._time_rotation and self.extractor is None
        self.record_count = 0
        self.current_offset = -1
        self.batch_from: int | None = None
        self.base_ts: int | None = None
        self.current_ts: int | None = None
        self.current_encoded: str | None = None
        self.offset_to_commit: int | None = None
        self.committing = False
        self.pending: deque[tuple[list[RecordWriter], int, Future[Any]]] = deque()
        self.failure_ms: int | None = None
        self.next_scheduled = self._next_scheduled(storage.now_ms())

    # -- the write loop -----------------------------------------------------------------

    def write(self, *, idle: bool = False) -> None:
        """Write buffered records, rotating as the rules say. Transient S3 failures leave
        the state as it is (the buffer keeps the records not yet written) and are retried
        on a later call after ``retry.backoff.ms``.

        ``idle``: ``put()`` got no records, the topic has nothing new for now. With its
        buffer empty the writer then waits for the batches being uploaded, so that their
        offsets go into this commit rather than one ``offset.flush.interval.ms`` later
        (no record waits meanwhile; a busy writer never waits here)."""
        now = self.storage.now_ms()
        if self.failure_ms is not None and now - self.failure_ms < self.s.retry_backoff_ms:
            return
        self.failure_ms = None
        try:
            self.settle(block=False)
            self._write_buffered(now)
            if not self.buffer:
                self._commit_on_time_if_no_data(now)
                if idle:
                    self.settle(block=True)
        except S3RetriableError as exc:
            log.warning("%s: %s; retrying in %d ms", self.tp, exc, self.s.retry_backoff_ms)
            self.failure_ms = now
            self.set_timeout(self.s.retry_backoff_ms)

    def _write_buffered(self, now: int) -> None:
        while True:
            if self.committing:
                self._commit_files()
            if not self.buffer:
                return
            if self._plain and self.writers and self._write_run():
                continue
            record = self.buffer[0]
            if self.batch_from is None:
                self.batch_from = record.kafka_offset
            try:
                if record.value is None and self.s.null_values != "write":
                    self.buffer.popleft()
                    if self.s.null_values == "fail":
                        raise DataError("null value (tombstone) with "
                                        "behavior.on.null.values=fail")
                    continue  # ignore
                ts = self.extractor(record) if self.extractor else None
                encoded = (TOMBSTONE_PARTITION if record.value is None
                           else self.partitioner.encode_partition(record))
                # The object's schema is recorded once its first record is written, so a
                # record that fails (DLQ) does not become the schema of the next ones.
                schema = record.value_schema
                current = self.schemas.get(encoded, schema)
                # NONE and the very same schema object: no change (the common case).
                change = (False if current is schema and self._compat_none
                          else self.compat.should_change(schema, current))
            except DataError as exc:
                if self.buffer and self.buffer[0] is record:
                    self.buffer.popleft()
                self._bad(record, exc)
                continue
            if ts is not None:
                self.current_ts = ts
                if self.base_ts is None:
                    self.base_ts = ts
            if change and self.record_count > 0:
                self.committing = True
                continue
            if self._time_rotation and self._rotate_on_time(encoded, ts, now):
                self.next_scheduled = self._next_scheduled(now)
                self.committing = True
                continue
            self.current_encoded = encoded
            try:
                projected = record if self._compat_none else self.compat.project(record,
                                                                                   current)
                writer = self._write_record(encoded, projected)
                self.schemas.setdefault(encoded, current)
            except DataError as exc:
                self.buffer.popleft()
                self._bad(record, exc)
                continue
            self.buffer.popleft()
            if self.record_count >= self.s.flush_size:
                self.committing = True
            else:
                writer.upload_full_parts()

    def _write_run(self) -> bool:
        """The common case in a tight loop: records that go to an object already open,
        with its very schema, under neither time rotation nor schema projection. Stops
        (returning whether it wrote any) at the first record that needs more: a null
        value, a new object, another schema, a partitioner or format ``DataError`` (the
        general loop then handles that record, writing it exactly once), or
        ``flush.size``. Full parts start uploading every ``RUN_RECORDS`` records."""
        buffer, writers, schemas = self.buffer, self.writers, self.schemas
        encode_partition = self.partitioner.encode_partition
        room = min(self.s.flush_size - self.record_count, RUN_RECORDS)
        written = 0
        last = last_encoded = None
        try:
            while written < room and buffer:
                record = buffer[0]
                if record.value is None:
                    break
                encoded = encode_partition(record)
                writer = writers.get(encoded)
                if writer is None or schemas.get(encoded, _UNSET) is not record.value_schema:
                    break
                writer.write(record)
                buffer.popleft()
                written += 1
                last, last_encoded = record, encoded
        except DataError:
            pass  # the general loop meets the same error and reports the record
        finally:  # the records written so far are accounted for, whatever happened
            if last is not None:
                self.current_offset = last.kafka_offset
                self.current_encoded = last_encoded
                self.record_count += written
        if last is None:
            return False
        if self.record_count >= self.s.flush_size:
            self.committing = True
        else:
            for open_writer in writers.values():
                open_writer.upload_full_parts()
        return True

    def _write_record(self, encoded: str, record: SinkRecord) -> RecordWriter:
        writer = self.writers.get(encoded)
        if writer is None:
            key = self._key(encoded, record.kafka_offset)
            meta = {BATCH_START_METADATA: str(self.batch_from)}
            writer = self.format.writer(S3OutputStream(self.storage, key, self.s.part_size,
                                                       meta), record)
            self.writers[encoded] = writer
        writer.write(record)
        self.current_offset = record.kafka_offset
        self.record_count += 1
        return writer

    def _key(self, encoded: str, start_offset: int) -> str:
        s = self.s
        name = (f"{self.tp.topic}{s.file_delim}{self.tp.partition}{s.file_delim}"
                f"{start_offset:0{s.zero_pad_width}d}{self.format.extension}")
        path = self.partitioner.generate_partitioned_path(self.tp.topic, encoded)
        return f"{s.topics_dir}{s.directory_delim}{path}{s.directory_delim}{name}"

    def _commit_files(self) -> None:
        """Close the batch: its objects are completed on the upload thread while the next
        batch is written (at most one batch in flight, so memory stays bounded); its end
        offset becomes committable once every one of its objects is uploaded."""
        if self.writers:
            self.settle(block=True)
            writers = list(self.writers.values())
            end = self.current_offset + 1
            self.pending.append((writers, end, self.storage.submit(
                lambda: [w.commit() for w in writers])))
        self.writers.clear()
        self.schemas.clear()
        self.record_count = 0
        self.base_ts = None
        self.current_encoded = None
        self.batch_from = None
        self.committing = False

    def _rotate_on_time(self, encoded: str | None, ts: int | None, now: int) -> bool:
        if self.record_count <= 0:
            return False
        periodic = (self.rotate_interval_ms > 0 and ts is not None and self.base_ts is not None
                    and (ts - self.base_ts >= self.rotate_interval_ms
                         or encoded != self.current_encoded))
        scheduled = self.s.rotate_schedule_interval_ms > 0 and now >= self.next_scheduled
        return periodic or scheduled

    def _commit_on_time_if_no_data(self, now: int) -> None:
        if self.record_count > 0 and self._rotate_on_time(self.current_encoded,
                                                           self.current_ts, now):
            self.next_scheduled = self._next_scheduled(now)
            self._commit_files()

    def _next_scheduled(self, now: int) -> int:
        """The next multiple of ``rotate.schedule.interval.ms`` after ``now``, counted
        from midnight in ``timezone`` (Confluent's ``getNextTimeAdjustedByDay``)."""
        interval = self.s.rotate_schedule_interval_ms
        if interval <= 0 or self.zone is None:
            return 2**63 - 1
        local = dt.datetime.fromtimestamp(now / 1000, self.zone)
        midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
        start = int(midnight.timestamp() * 1000)
        return start + ((now - start) // interval + 1) * interval

    def _bad(self, record: SinkRecord, exc: Exception) -> None:
        where = f"{record.topic}-{record.kafka_partition}@{record.kafka_offset}"
        if self.report_bad(record, exc) is None:
            raise ConnectError(f"S3 sink cannot write record {where}: {exc}") from exc
        log.warning("record %s sent to the error reporter: %s", where, exc)

    # -- task hooks ---------------------------------------------------------------------

    def settle(self, *, block: bool) -> None:
        """Account for completed batches, oldest first (waiting for them when ``block``).
        A batch whose upload failed is committed again here, on the task's thread; it
        raises ``S3RetriableError`` while S3 keeps failing, and stays pending."""
        while self.pending:
            writers, end, future = self.pending[0]
            if not block and not future.done():
                return
            try:
                future.result()
            except S3RetriableError:
                for writer in writers:
                    writer.commit()  # idempotent: skips the objects already completed
            self.pending.popleft()
            self.offset_to_commit = end
            self.request_commit()
            log.info("%s: objects committed up to offset %d (%s ...)", self.tp, end,
                     writers[0].stream.key)

    def take_offset_to_commit(self) -> int | None:
        offset, self.offset_to_commit = self.offset_to_commit, None
        return offset

    def close(self) -> None:
        """Drop open objects (aborting their uploads) and buffered records; they are
        consumed again from the committed offset. Batches being completed are waited
        for (they may finish or not: either way a replay rewrites them identically)."""
        for _writers, _end, future in self.pending:
            future.exception()
        self.pending.clear()
        for writer in self.writers.values():
            writer.abort()
        self.writers.clear()
        self.buffer.clear()
