"""ElasticsearchSinkTask: records → bulk actions → the server; offsets committed only up
to records whose items completed (at-least-once; key and offset ids with external
versions make replays harmless)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence

from connect.api import (
    ConnectError,
    DataError,
    ErrantRecordReporter,
    OffsetAndMetadata,
    SinkRecord,
    SinkTask,
    TopicPartition,
)
from connectors.elasticsearch.bulk import BulkWriter
from connectors.elasticsearch.client import EsClient
from connectors.elasticsearch.config import DROP_INVALID_MESSAGE, EsSinkConfig, plugin_version
from connectors.elasticsearch.documents import to_action
from connectors.elasticsearch.offsets import OffsetState, OffsetTracker

__all__ = ["ElasticsearchSinkTask"]

log = logging.getLogger(__name__)


class ElasticsearchSinkTask(SinkTask):
    """All methods run on the task's thread (see ``SinkTask``); bulk requests run on the
    writer's pool, which completes ``OffsetState``s that ``pre_commit`` reads."""

    def __init__(self) -> None:
        self._config: EsSinkConfig | None = None
        self._client: EsClient | None = None
        self._writer: BulkWriter | None = None
        self._tracker = OffsetTracker()
        self._reporter: ErrantRecordReporter | None = None
        self._stopping = threading.Event()

    def version(self) -> str:
        return plugin_version()

    def start(self, props: Mapping[str, str]) -> None:
        config = EsSinkConfig.from_props(props)
        self._config = config
        self._client = EsClient(config, self._stopping)
        self._client.connect()
        self._reporter = self.context.errant_record_reporter()
        self._writer = BulkWriter(self._client, config, self._reporter, self._stopping)

    def put(self, records: Sequence[SinkRecord]) -> None:
        config, client, writer = self._require()
        try:
            writer.drain_reports()  # the DLQ gets failed items even when the task fails
        finally:
            writer.check()  # the first fatal error wins over one from the reporter
        for record in records:
            state = self._tracker.add(
                TopicPartition(record.original_topic or record.topic,
                               record.original_kafka_partition
                               if record.original_kafka_partition is not None
                               else record.kafka_partition),
                record.original_kafka_offset if record.original_kafka_offset is not None
                else record.kafka_offset)
            try:
                action = to_action(config, record)
            except DataError as exc:
                self._invalid(record, exc, state)
                continue
            if action is None:
                state.done()
                continue
            client.ensure_resource(action.index, record.value_schema,
                                   config.ignore_schema(record.topic))
            writer.add(action, state)
        writer.send_partial()

    def pre_commit(self, current_offsets: Mapping[TopicPartition, OffsetAndMetadata]
                   ) -> Mapping[TopicPartition, OffsetAndMetadata]:
        config, _, writer = self._require()
        writer.drain_reports()
        if config.flush_synchronously:
            writer.flush(config.flush_timeout_ms / 1000)
        else:
            writer.send_partial()
        # Never past a record whose item has not completed, even after a fatal error.
        return self._tracker.offsets(current_offsets)

    def close(self, partitions: Sequence[TopicPartition]) -> None:
        if self._writer is not None and self._config is not None:
            try:
                self._writer.flush(self._config.flush_timeout_ms / 1000)
            except ConnectError as exc:
                log.warning("Could not flush before closing partitions: %s", exc)
        self._tracker.forget(partitions)

    def stop(self) -> None:
        self._stopping.set()
        if self._writer is not None:
            self._writer.close()
        if self._client is not None:
            self._client.close()

    def _invalid(self, record: SinkRecord, exc: DataError, state: OffsetState) -> None:
        where = f"{record.topic}-{record.kafka_partition}@{record.kafka_offset}"
        assert self._config is not None
        if self._config.drop_invalid:
            log.error("Can't convert record %s: %s; dropping it (%s)", where, exc,
                      DROP_INVALID_MESSAGE)
            state.done()
        elif self._reporter is not None:
            # Raises ConnectError when errors.tolerance=none, which fails the task.
            self._reporter.report(record, exc).add_done_callback(lambda _f: state.done())
        else:
            raise ConnectError(f"Can't convert record {where}: {exc} (set "
                               f"{DROP_INVALID_MESSAGE}=true to drop such records)") from exc

    def _require(self) -> tuple[EsSinkConfig, EsClient, BulkWriter]:
        if self._config is None or self._client is None or self._writer is None:
            raise ConnectError("ElasticsearchSinkTask is not started")
        return self._config, self._client, self._writer
