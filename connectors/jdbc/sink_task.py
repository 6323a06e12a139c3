"""JdbcSinkTask: writes records as rows, one transaction per ``batch.size`` records."""

from __future__ import annotations

import dataclasses
import logging
import zoneinfo
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Any

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection, Engine

from connect.api import (
    ConnectError,
    DataError,
    OffsetAndMetadata,
    RetriableError,
    Schema,
    SinkRecord,
    SinkTask,
    TopicPartition,
)
from connectors.jdbc.config import SinkConfig, plugin_version
from connectors.jdbc.database import describe, is_transient, open_engine
from connectors.jdbc.sink_fields import RowLayout, row_layout
from connectors.jdbc.sink_statements import (
    delete_statement,
    insert_statement,
    key_params,
    update_statement,
    upsert_statement,
)
from connectors.jdbc.sink_tables import TableManager

__all__ = ["JdbcSinkTask"]

log = logging.getLogger(__name__)


@dataclasses.dataclass(slots=True)
class _Op:
    record: SinkRecord
    table: str
    layout: RowLayout
    kind: str  # insert, upsert, update or delete


class _RecordError(ConnectError):
    """A record that cannot be written (bad data); reported or fails the task."""


class JdbcSinkTask(SinkTask):
    """Writes each ``put()`` at once, in chunks of ``batch.size`` records, each chunk in
    one transaction; so the default ``pre_commit()`` commits only written offsets.

    A chunk failing on a lost connection is retried ``max.retries`` times (``put()``
    raises ``RetriableError`` and the runtime redelivers the same records after
    ``retry.backoff.ms``). A chunk failing on its data (constraint violation, bad
    value) is written again record by record to find the culprits, which go to the dead
    letter queue under ``errors.tolerance=all`` or fail the task, named by topic,
    partition and offset. All methods run on the task thread.
    """

    def __init__(self) -> None:
        self._config: SinkConfig | None = None
        self._engine: Engine | None = None
        self._tables: TableManager | None = None
        self._tz = zoneinfo.ZoneInfo("UTC")
        self._layouts: dict[tuple[str, Schema | None, Schema | None], RowLayout] = {}
        self._retries_left = 0
        self._reported: list[Future[None]] = []

    def version(self) -> str:
        return plugin_version()

    def start(self, props: Mapping[str, str]) -> None:
        config = SinkConfig.parse(props)
        self._config = config
        self._tz = zoneinfo.ZoneInfo(config.connection.timezone)
        self._engine = open_engine(config.connection)
        self._tables = TableManager(self._engine, config)
        self._retries_left = config.max_retries
        log.info("JDBC sink task writes to %s (insert.mode=%s, pk.mode=%s)",
                 describe(self._engine), config.insert_mode, config.pk_mode)

    # ------------------------------------------------------------------ put
    def put(self, records: Sequence[SinkRecord]) -> None:
        config = self._require_started()
        size = config.batch_size
        for start in range(0, len(records), size):
            self._write_chunk(records[start:start + size])

    def _write_chunk(self, chunk: Sequence[SinkRecord]) -> None:
        config = self._require_started()
        ops: list[_Op] = []
        for record in chunk:
            try:
                op = self._prepare(record)
            except (DataError, _RecordError) as exc:
                self._fail_record(record, exc)
                continue
            if op is not None:
                ops.append(op)
        if not ops:
            return
        try:
            self._run(ops)
        except sa_exc.SQLAlchemyError as exc:
            if is_transient(exc):
                self._retry_later(exc)
            log.warning("A batch of %d record(s) failed (%s); writing them one by one to "
                        "find the failing record(s)", len(ops), _reason(exc))
            self._run_one_by_one(ops)
        self._retries_left = config.max_retries

    def _prepare(self, record: SinkRecord) -> _Op | None:
        config = self._require_started()
        cache_key = (record.topic, record.key_schema, record.value_schema)
        layout = self._layouts.get(cache_key)
        if layout is None:
            layout = row_layout(record, config, self._tz)
            self._layouts[cache_key] = layout
        table = config.table_name_format.replace("${topic}", record.topic)
        if record.value is None:
            if not config.delete_enabled:
                raise _RecordError(
                    f"Record {_where(record)} has a null value, but delete.enabled=false; "
                    "set delete.enabled=true (with pk.mode=record_key) to delete on "
                    "tombstones, or drop them with a transformation")
            return _Op(record, table, layout, "delete")
        return _Op(record, table, layout, config.insert_mode)

    def _run(self, ops: Sequence[_Op]) -> None:
        engine, tables = self._engine, self._tables
        assert engine is not None and tables is not None
        # DDL first, in its own transaction (some databases do not roll DDL back).
        resolved = []
        for op in ops:
            if op.kind == "delete":
                # A tombstone for a table not created yet: no row to delete, and its
                # key alone must not shape a new table.
                target = tables.existing(op.table)
                if target is not None:
                    resolved.append((op, target))
            else:
                resolved.append((op, tables.table_for(op.table, op.layout)))
        with engine.begin() as conn:
            at = 0
            while at < len(resolved):
                op, table = resolved[at]
                end = at + 1
                while end < len(resolved) and resolved[end][1] is table and \
                        resolved[end][0].kind == op.kind and \
                        resolved[end][0].layout is op.layout:
                    end += 1
                self._execute(conn, table, op.kind, op.layout,
                              [o.record for o, _ in resolved[at:end]])
                at = end

    def _execute(self, conn: Connection, table: Any, kind: str, layout: RowLayout,
                 records: list[SinkRecord]) -> None:
        keys = [c.name for c in layout.keys]
        if kind == "delete":
            rows = [key_params(layout.key_row(r), keys) for r in records]
            conn.execute(delete_statement(table, keys), rows)
            return
        rows = [layout.row(r) for r in records]
        if kind == "insert":
            conn.execute(insert_statement(table), rows)
        elif kind == "upsert":
            # One statement must not touch a row twice (PostgreSQL refuses): the last
            # record per key wins, as it would have one after the other.
            latest = {tuple(row[k] for k in keys): row for row in rows}
            conn.execute(upsert_statement(table, keys, conn.dialect), list(latest.values()))
        else:
            columns = [c.name for c in layout.columns]
            conn.execute(update_statement(table, keys, columns),
                         [key_params(row, keys) for row in rows])

    def _run_one_by_one(self, ops: Sequence[_Op]) -> None:
        for op in ops:
            try:
                self._run([op])
            except sa_exc.SQLAlchemyError as exc:
                if is_transient(exc):
                    self._retry_later(exc)
                self._fail_record(op.record, exc)

    def _retry_later(self, exc: BaseException) -> None:
        config = self._require_started()
        assert self._engine is not None and self._tables is not None
        self._engine.dispose()
        self._tables.forget()
        if self._retries_left <= 0:
            raise ConnectError(f"Writing to {describe(self._engine)} failed after "
                               f"{config.max_retries} retries: {_reason(exc)}") from exc
        self._retries_left -= 1
        log.warning("Writing to %s failed (%s); %d retries left, next in %d ms",
                    describe(self._engine), _reason(exc), self._retries_left,
                    config.retry_backoff_ms)
        self.context.timeout(config.retry_backoff_ms)
        raise RetriableError(f"database unavailable: {_reason(exc)}") from exc

    def _fail_record(self, record: SinkRecord, exc: BaseException) -> None:
        config = self._require_started()
        table = config.table_name_format.replace("${topic}", record.topic)
        message = f"Writing record {_where(record)} to table {table!r} failed: {_reason(exc)}"
        reporter = self.context.errant_record_reporter()
        if reporter is not None:
            try:
                self._reported.append(reporter.report(record, exc))
                log.warning("%s; sent to the dead letter queue", message)
                return
            except ConnectError as refused:
                raise ConnectError(message) from refused
        raise ConnectError(message) from exc

    # ------------------------------------------------------------------ commit, stop
    def flush(self, current_offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        # Rows are committed in put(); only reports to the DLQ may still be in flight.
        reported, self._reported = self._reported, []
        for future in reported:
            future.result()

    def stop(self) -> None:
        if self._engine is not None:
            self._engine.dispose()

    def _require_started(self) -> SinkConfig:
        if self._config is None:
            raise ConnectError("JdbcSinkTask used before start()")
        return self._config


def _where(record: SinkRecord) -> str:
    return f"{record.topic}-{record.kafka_partition}@{record.kafka_offset}"


def _reason(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
