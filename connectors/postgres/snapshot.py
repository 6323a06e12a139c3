"""The initial snapshot: every captured table read inside one transaction, as ``r``
events marked the way Debezium marks them.

With a freshly created slot the transaction imports the slot's exported snapshot, so
the snapshot sees exactly the data before the slot's consistent point and streaming
from that point neither loses nor repeats a change. Rows come from a server-side
cursor ``snapshot.fetch.size`` at a time, never a whole table in memory.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.string import TextLoader

from connect.api import SourceRecord
from connectors.postgres.config import PostgresConfig, TableId
from connectors.postgres.events import EventFactory, SourceInfo, TableSchema
from connectors.postgres.position import Position, SnapshotState

__all__ = ["Snapshot"]

log = logging.getLogger(__name__)

_ISOLATION = {
    "serializable": psycopg.IsolationLevel.SERIALIZABLE,
    "repeatable_read": psycopg.IsolationLevel.REPEATABLE_READ,
    "read_committed": psycopg.IsolationLevel.READ_COMMITTED,
    "read_uncommitted": psycopg.IsolationLevel.READ_UNCOMMITTED,
}

SchemaForTable = Callable[[psycopg.Connection[Any], TableId], TableSchema]


class Snapshot:
    """Reads the tables on its own connection; ``next_batch`` returns up to n records
    and None once every table is read (the transaction is then closed)."""

    def __init__(self, config: PostgresConfig, factory: EventFactory,
                 tables: list[TableId], schema_for: SchemaForTable,
                 lsn: int, exported_snapshot: str | None) -> None:
        self.config = config
        self.factory = factory
        self.lsn = lsn
        self.conn: psycopg.Connection[Any] = psycopg.connect(config.conninfo())
        if exported_snapshot is not None:
            # Importing a snapshot needs REPEATABLE READ or stricter.
            self.conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            self.conn.read_only = True
            self.conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(
                sql.Literal(exported_snapshot)))
        else:
            self.conn.isolation_level = _ISOLATION[config.snapshot_isolation_mode]
            self.conn.read_only = True
            self.conn.execute("SELECT 1")
        row = self.conn.execute("SELECT txid_current()").fetchone()
        self.tx_id: int | None = None if row is None else int(row[0])
        self.rows = 0
        self._schemas = [schema_for(self.conn, t) for t in tables]
        self._items = self._marked()
        self._chunk: tuple[TableSchema, list[Any], list[str] | None] | None = None
        self._at = 0  # the next row of the current chunk
        self.started = time.monotonic()
        log.info("snapshot of %d tables at LSN %X started", len(tables), lsn)

    def _table_batches(self, ts: TableSchema) -> Iterator[tuple[list[Any], bool]]:
        """A table's rows as text, ``snapshot.fetch.size`` at a time, each batch with
        whether it is the table's last (never empty)."""
        # Every column as its type's text output, exactly as pgoutput sends it (a cast
        # to text would differ: char(n) loses its padding, booleans read 'true').
        for c in ts.source_columns:
            self.conn.adapters.register_loader(c.type_oid, TextLoader)
        columns = sql.SQL(", ").join(sql.Identifier(c.name) for c in ts.source_columns)
        query = sql.SQL("SELECT {} FROM {}").format(
            columns, sql.Identifier(ts.table.schema, ts.table.table))
        with self.conn.cursor(name=f"ferry_snapshot_{id(ts)}") as cur:
            cur.itersize = self.config.snapshot_fetch_size
            cur.execute(query)
            batch = cur.fetchmany(self.config.snapshot_fetch_size)
            while batch:
                following = cur.fetchmany(self.config.snapshot_fetch_size)
                yield batch, not following
                batch = following

    def _marked(self) -> Iterator[tuple[TableSchema, list[Any], list[str] | None]]:
        """Every batch of rows with Debezium's markers: ``first``,
        ``first_in_data_collection``, ``true``, ``last_in_data_collection``, ``last``
        (None when all are ``true``, the common case). One batch of look-ahead finds the
        snapshot's last row even when the last tables are empty."""
        pending: tuple[TableSchema, list[Any], bool, bool] | None = None
        for ts in self._schemas:
            first_in_table = True
            for rows, last_in_table in self._table_batches(ts):
                if pending is not None:
                    yield self._mark(pending, False)
                pending = (ts, rows, first_in_table, last_in_table)
                first_in_table = False
        if pending is not None:
            yield self._mark(pending, True)

    _first_emitted = False

    def _mark(self, item: tuple[TableSchema, list[Any], bool, bool], last_overall: bool
              ) -> tuple[TableSchema, list[Any], list[str] | None]:
        ts, rows, first_in_table, last_in_table = item
        marks: list[tuple[int, str]] = []
        # In rising precedence, as Debezium marks a row that is several of these.
        if first_in_table:
            marks.append((0, "first_in_data_collection"))
        if last_in_table:
            marks.append((len(rows) - 1, "last_in_data_collection"))
        if not self._first_emitted:
            marks.append((0, "first"))
        if last_overall:
            marks.append((len(rows) - 1, "last"))
        self._first_emitted = True
        if not marks:
            return ts, rows, None
        markers = ["true"] * len(rows)
        for i, marker in marks:
            markers[i] = marker
        return ts, rows, markers

    def next_batch(self, n: int) -> list[SourceRecord] | None:
        out: list[SourceRecord] = []
        append = out.append
        now_us = time.time_ns() // 1000
        f = self.factory
        partition = f.partition
        # The rows of one batch share their offset and source block (per table and
        # marker): neither is ever changed once built.
        offsets: dict[bool, dict[str, Any]] = {}
        sources: dict[tuple[int, str], Any] = {}

        def offset_for(last: bool) -> dict[str, Any]:
            offset = offsets.get(last)
            if offset is None:
                offset = offsets[last] = Position(
                    None, None, None, 0, now_us,
                    SnapshotState(self.lsn, self.tx_id, last)).to_offset()
            return offset

        def source_for(ts: TableSchema, marker: str) -> Any:
            source = sources.get((id(ts), marker))
            if source is None:
                info = SourceInfo(now_us, marker, self.tx_id, self.lsn, None)
                source = sources[(id(ts), marker)] = f.source(ts.table, info)
            return source

        while len(out) < n:
            if self._chunk is None:
                self._chunk, self._at = next(self._items, None), 0
                if self._chunk is None:
                    break
            ts, rows, markers = self._chunk
            at, end = self._at, min(len(rows), self._at + n - len(out))
            event, batch = ts.makers(partition)
            if markers is None:  # every row 'true': one generated list comprehension
                out += batch(rows[at:end], "r", source_for(ts, "true"), offset_for(False))
            else:
                for i in range(at, end):
                    marker = markers[i]
                    last = marker == "last"
                    append(event(rows[i], "r", source_for(ts, marker), offset_for(last)))
                    if last:
                        # End the transaction now: its locks would hold up DDL until
                        # the next poll.
                        self.rows += i + 1 - at
                        self._chunk = None
                        self._finish()
                        return out
            self.rows += end - at
            self._at = end
            if end == len(rows):
                self._chunk = None
        if out:
            return out
        self._finish()
        return None

    def _finish(self) -> None:
        if self.conn.closed:
            return
        self.close()
        elapsed = time.monotonic() - self.started
        log.info("snapshot done: %d rows in %.1f s", self.rows, elapsed)

    def close(self) -> None:
        with contextlib.suppress(Exception):  # already broken
            self.conn.close()
