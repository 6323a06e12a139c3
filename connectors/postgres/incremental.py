"""Debezium's incremental (ad hoc) snapshot: tables re-read in primary-key chunks while
streaming goes on, triggered through the signal table (``signal.data.collection``).

The algorithm is DBLog's watermarks, as Debezium runs it. For each chunk the connector
inserts ``<chunk id>-open`` into the signal table, reads up to
``incremental.snapshot.chunk.size`` rows after the last key read (up to the table's
maximum key, taken when the table's turn comes) into a buffer, and inserts
``<chunk id>-close``. Both inserts come back through the WAL in commit order: between
the open and the close marker, every streamed change of a buffered key removes the row
from the buffer (the stream's newer value wins); at the close marker the rows left are
emitted as ``op = r`` events with ``source.snapshot = incremental``, then the next chunk
is read. A change committed before the open marker is older than the chunk's read and
is simply followed by the chunk's row.

Signals are rows ``(id, type, data)`` inserted into the signal table: ``execute-snapshot``
(``{"data-collections": [...], "type": "incremental", "additional-conditions":
[{"data-collection": ..., "filter": ...}], "surrogate-key": ...}``) and
``stop-snapshot``. Progress (tables left, the last key emitted, the maximum key) rides in
the source offset of every record, so a restarted task resumes at the chunk after the
last row delivered.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.types.string import TextLoader

from connect.api import SourceRecord
from connectors.postgres.config import PostgresConfig, TableId
from connectors.postgres.events import EventFactory, TableSchema

__all__ = ["OFFSET_KEYS", "Collection", "IncrementalSnapshot"]

log = logging.getLogger(__name__)

# Offset fields, named as Debezium names them (their values are Ferry's JSON).
COLLECTIONS = "incremental_snapshot_collections"
PRIMARY_KEY = "incremental_snapshot_primary_key"
MAXIMUM_KEY = "incremental_snapshot_maximum_key"
CORRELATION_ID = "incremental_snapshot_correlation_id"
OFFSET_KEYS = (COLLECTIONS, PRIMARY_KEY, MAXIMUM_KEY, CORRELATION_ID)

OPEN, CLOSE = "snapshot-window-open", "snapshot-window-close"

SchemaForTable = Callable[[psycopg.Connection[Any], TableId], TableSchema]
Key = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Collection:
    """One table queued for the incremental snapshot."""

    table: TableId
    condition: str | None = None  # an SQL filter ANDed to the chunk queries
    surrogate_key: str | None = None  # a column to chunk by instead of the primary key

    def to_json(self) -> dict[str, Any]:
        return {"incremental_snapshot_collections_id": str(self.table),
                "incremental_snapshot_collections_additional_condition": self.condition,
                "incremental_snapshot_collections_surrogate_key": self.surrogate_key}

    @staticmethod
    def from_json(item: Mapping[str, Any]) -> Collection:
        schema, _, table = str(item["incremental_snapshot_collections_id"]).partition(".")
        return Collection(TableId(schema, table),
                          item.get("incremental_snapshot_collections_additional_condition"),
                          item.get("incremental_snapshot_collections_surrogate_key"))


class IncrementalSnapshot:
    """The incremental snapshot of one task: its queue, its open window and its
    progress. Driven by the change stream (``on_signal``, ``deduplicate``) on the task's
    thread; reads chunks and writes watermarks on its own autocommit connection."""

    def __init__(self, config: PostgresConfig, factory: EventFactory,
                 schema_for: SchemaForTable, offset: Mapping[str, Any] | None) -> None:
        assert config.signal_table is not None
        self.config = config
        self.factory = factory
        self.schema_for = schema_for
        self.signal_table: TableId = config.signal_table
        self.queue: list[Collection] = []
        self.last_key: list[str] | None = None  # of the last row emitted, as text
        self.max_key: list[str] | None = None
        self.correlation_id: str | None = None
        self._conn: psycopg.Connection[Any] | None = None
        self._schema: TableSchema | None = None
        self._key_columns: list[str] = []
        self._chunk_id: str | None = None
        self._window: dict[Key, list[Any]] = {}  # key texts -> row texts, in key order
        self._window_open = False
        self._chunk_end: list[str] | None = None
        self._key_positions: list[int] = []
        if offset and offset.get(COLLECTIONS):
            self.queue = [Collection.from_json(c) for c in json.loads(offset[COLLECTIONS])]
            self.last_key = _loads(offset.get(PRIMARY_KEY))
            self.max_key = _loads(offset.get(MAXIMUM_KEY))
            self.correlation_id = offset.get(CORRELATION_ID)

    @property
    def running(self) -> bool:
        return bool(self.queue)

    def offset_fields(self) -> dict[str, Any]:
        """What every record's offset carries while a snapshot runs (else nothing)."""
        if not self.queue:
            return {}
        return {COLLECTIONS: json.dumps([c.to_json() for c in self.queue]),
                PRIMARY_KEY: _dumps(self.last_key), MAXIMUM_KEY: _dumps(self.max_key),
                CORRELATION_ID: self.correlation_id}

    # -- signals ------------------------------------------------------------------------

    def is_signal_table(self, table: TableId | None) -> bool:
        return table == self.signal_table

    def on_signal(self, values: Sequence[Any], emit: Callable[[TableSchema, list[Any],
                                                                 dict[str, Any]], SourceRecord],
                  captured: Sequence[TableId]) -> list[SourceRecord]:
        """A row inserted into the signal table ``(id, type, data, ...)``; returns the
        window's records when it is the close marker of the current chunk. ``emit``
        builds one ``r`` record from a row and the offset fields it carries."""
        if len(values) < 3:
            log.warning("signal table %s needs the columns (id, type, data)",
                        self.signal_table)
            return []
        sid, kind, data = (v if isinstance(v, str) else None for v in values[:3])
        if kind == OPEN:
            if sid == f"{self._chunk_id}-open":
                self._window_open = True
            return []
        if kind == CLOSE:
            if self._chunk_id is None or sid != f"{self._chunk_id}-close":
                return []  # an old window (of a run before a restart): nothing buffered
            return self._close_window(emit)
        if kind in ("execute-snapshot", "stop-snapshot"):
            try:
                payload = json.loads(data or "{}")
                if not isinstance(payload, dict):
                    raise ValueError("not a JSON object")
            except ValueError as exc:
                log.warning("signal %s: data %r is not a JSON object (%s); ignored", sid,
                            data, exc)
                return []
            snapshot_type = str(payload.get("type") or "incremental").lower()
            if snapshot_type != "incremental":
                log.warning("signal %s: snapshot type %r is not supported (only "
                            "'incremental'); ignored", sid, snapshot_type)
                return []
            if kind == "execute-snapshot":
                self._execute(sid, payload, captured)
            else:
                self._stop(payload, captured)
            return []
        log.warning("signal %s of unknown type %r ignored", sid, kind)
        return []

    def _execute(self, sid: str | None, payload: Mapping[str, Any],
                 captured: Sequence[TableId]) -> None:
        names = payload.get("data-collections")
        if not isinstance(names, list) or not names or not all(
                isinstance(n, str) for n in names):
            log.warning("execute-snapshot signal %s without a list of data-collections; "
                        "ignored", sid)
            return
        conditions: list[tuple[re.Pattern[str], str]] = []
        for item in payload.get("additional-conditions") or ():
            if isinstance(item, dict) and item.get("data-collection") and item.get("filter"):
                conditions.append((re.compile(item["data-collection"], re.IGNORECASE),
                                   item["filter"]))
        legacy = payload.get("additional-condition")
        surrogate = payload.get("surrogate-key") or None
        added = []
        for table in _expand(names, captured):
            condition = next((f for p, f in conditions if p.fullmatch(str(table))), legacy)
            if all(c.table != table for c in self.queue):
                added.append(Collection(table, condition, surrogate))
        if not added:
            log.warning("execute-snapshot signal %s: no captured table matches %s", sid,
                        names)
            return
        log.info("incremental snapshot of %s requested (signal %s)",
                 ", ".join(str(c.table) for c in added), sid)
        starting = not self.queue
        self.queue.extend(added)
        if starting:
            self.correlation_id = sid
            self.last_key = self.max_key = None
            self.read_chunk()

    def _stop(self, payload: Mapping[str, Any], captured: Sequence[TableId]) -> None:
        names = payload.get("data-collections") or []
        if not names:
            log.info("incremental snapshot stopped")
            self.queue.clear()
        else:
            stopped = set(_expand(names, captured))
            current = self.queue[0].table if self.queue else None
            self.queue = [c for c in self.queue if c.table not in stopped]
            log.info("incremental snapshot of %s stopped", ", ".join(map(str, stopped)))
            if current not in stopped:
                return
            self.last_key = self.max_key = None
        self._window.clear()
        self._window_open = False
        self._chunk_id = None
        self._schema = None
        if self.queue:
            self.read_chunk()

    # -- the stream's side --------------------------------------------------------------

    def deduplicate(self, table: TableId, column_names: Sequence[str],
                    *tuples: Sequence[Any] | None) -> None:
        """A streamed change of ``table`` (its new and old tuples, in relation column
        order): inside an open window it supersedes the buffered row of its key."""
        if not self._window_open or not self._window or self._schema is None \
                or table != self._schema.table:
            return
        positions = [column_names.index(k) for k in self._key_columns if k in column_names]
        if len(positions) != len(self._key_columns):
            return
        for values in tuples:
            if values is not None:
                self._window.pop(tuple(values[i] for i in positions), None)

    # -- chunks -------------------------------------------------------------------------

    def read_chunk(self) -> None:
        """Open a window, read the next chunk of the current table into the buffer
        (moving on past finished or unusable tables), close the window."""
        conn = self._connection()
        retried: set[TableId] = set()
        while self.queue:
            current = self.queue[0]
            stale = self._schema is None or self._schema.table != current.table
            if stale and not self._prepare(conn, current):
                self._next_table()
                continue
            try:
                if self.max_key is None:
                    self.max_key = self._max_key(conn, current)
                    if self.max_key is None:
                        log.info("incremental snapshot of %s: nothing to read",
                                 current.table)
                        self._next_table()
                        continue
                self._chunk_id = str(uuid.uuid4())
                self._window.clear()
                self._window_open = False
                self._insert_signal(conn, f"{self._chunk_id}-open", OPEN)
                rows = self._chunk(conn, current)
                if rows:
                    for row in rows:
                        self._window[tuple(row[i] for i in self._key_positions)] = row
                    self._chunk_end = [rows[-1][i] for i in self._key_positions]
                self._insert_signal(conn, f"{self._chunk_id}-close", CLOSE)
            except psycopg.OperationalError:
                raise  # the connection: the task reconnects and resumes from its offset
            except psycopg.errors.InsufficientPrivilege as exc:
                log.error("incremental snapshot stopped: %s (the connector's user needs "
                          "SELECT on the tables and INSERT on %s)", exc, self.signal_table)
                self._stop({}, ())
                return
            except psycopg.Error as exc:
                # The table changed under us (a dropped column or table) or a filter in
                # additional-conditions is not valid SQL: read its columns again once,
                # then give the table up.
                if current.table in retried:
                    log.warning("incremental snapshot of %s skipped: %s", current.table,
                                str(exc).strip())
                    self._next_table()
                else:
                    retried.add(current.table)
                    self._schema = None
                continue
            if not rows:
                log.info("incremental snapshot of %s done", current.table)
                self._next_table()
                continue
            return
        self._chunk_id = None
        if self.correlation_id is not None:
            log.info("incremental snapshot %s complete", self.correlation_id)
        self.correlation_id = None
        self.last_key = self.max_key = None

    def _close_window(self, emit: Callable[[TableSchema, list[Any], dict[str, Any]],
                                           SourceRecord]) -> list[SourceRecord]:
        ts = self._schema
        out: list[SourceRecord] = []
        assert ts is not None
        for key, row in self._window.items():
            # Each row's offset says it was delivered: a restart reads on after it.
            self.last_key = list(key)
            out.append(emit(ts, row, self.offset_fields()))
        self.last_key = self._chunk_end
        self._window.clear()
        self._window_open = False
        self._chunk_id = None
        self.read_chunk()
        return out

    def _next_table(self) -> None:
        self.queue.pop(0)
        self._schema = None
        self.last_key = self.max_key = self._chunk_end = None

    def _prepare(self, conn: psycopg.Connection[Any], current: Collection) -> bool:
        try:
            ts = self.schema_for(conn, current.table)
        except psycopg.Error as exc:
            log.warning("incremental snapshot of %s skipped: %s", current.table, exc)
            return False
        keys = [current.surrogate_key] if current.surrogate_key else list(ts.key_names)
        names = [c.name for c in ts.source_columns]
        if not keys or any(k not in names for k in keys):
            log.warning("incremental snapshot of %s skipped: it has no primary key (set "
                        "message.key.columns or a surrogate-key in the signal)",
                        current.table)
            return False
        self._schema = ts
        self._key_columns = keys
        self._key_positions = [names.index(k) for k in keys]
        return True

    def _keys_sql(self) -> sql.Composable:
        return sql.SQL(", ").join(sql.Identifier(k) for k in self._key_columns)

    def _where(self, current: Collection, *parts: sql.Composable) -> sql.Composable:
        clauses = list(parts)
        if current.condition:
            clauses.append(sql.SQL("(") + sql.SQL(current.condition) + sql.SQL(")"))  # type: ignore[arg-type]
        if not clauses:
            return sql.SQL("")
        return sql.SQL(" WHERE ") + sql.SQL(" AND ").join(clauses)

    def _table_sql(self, table: TableId) -> sql.Composable:
        return sql.Identifier(table.schema, table.table)

    def _text_cursor(self, conn: psycopg.Connection[Any]) -> psycopg.Cursor[Any]:
        # Values as their type's text output, as pgoutput sends them and as the
        # snapshot reads them, so keys compare equal across the three.
        assert self._schema is not None
        cur = conn.cursor()
        for c in self._schema.source_columns:
            cur.adapters.register_loader(c.type_oid, TextLoader)
        return cur

    def _max_key(self, conn: psycopg.Connection[Any], current: Collection) -> list[str] | None:
        desc = sql.SQL(", ").join(sql.SQL("{} DESC").format(sql.Identifier(k))
                                  for k in self._key_columns)
        query = (sql.SQL("SELECT {} FROM {}").format(self._keys_sql(),
                                                    self._table_sql(current.table))
                 + self._where(current) + sql.SQL(" ORDER BY ") + desc + sql.SQL(" LIMIT 1"))
        with self._text_cursor(conn) as cur:
            row = cur.execute(query).fetchone()
        return None if row is None else list(row)

    def _chunk(self, conn: psycopg.Connection[Any], current: Collection) -> list[list[Any]]:
        assert self._schema is not None and self.max_key is not None
        keys = sql.SQL("(") + self._keys_sql() + sql.SQL(")")
        n = len(self._key_columns)
        holders = sql.SQL("(") + sql.SQL(", ").join(sql.Placeholder() * n) + sql.SQL(")")
        parts: list[sql.Composable] = [keys + sql.SQL(" <= ") + holders]
        params: list[Any] = list(self.max_key)
        if self.last_key is not None:
            parts.insert(0, keys + sql.SQL(" > ") + holders)
            params = list(self.last_key) + params
        columns = sql.SQL(", ").join(sql.Identifier(c.name)
                                     for c in self._schema.source_columns)
        query = (sql.SQL("SELECT {} FROM {}").format(columns, self._table_sql(current.table))
                 + self._where(current, *parts) + sql.SQL(" ORDER BY ") + self._keys_sql()
                 + sql.SQL(" LIMIT {}").format(self.config.incremental_chunk_size))
        with self._text_cursor(conn) as cur:
            return [list(r) for r in cur.execute(query, params).fetchall()]

    def _insert_signal(self, conn: psycopg.Connection[Any], sid: str, kind: str) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        field = "openWindowTimestamp" if kind == OPEN else "closeWindowTimestamp"
        data = json.dumps({field: stamp, "correlationId": self.correlation_id,
                           "dataCollectionId": str(self.queue[0].table)})
        conn.execute(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s)").format(
            self._table_sql(self.signal_table)), (sid, kind, data))

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.config.conninfo(), autocommit=True)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):  # already broken
                self._conn.close()
            self._conn = None


def _expand(names: Sequence[str], captured: Sequence[TableId]) -> list[TableId]:
    """Data collection names or regular expressions, matched whole (case-insensitive as
    in Debezium) against the captured tables."""
    out: list[TableId] = []
    for name in names:
        pattern = re.compile(name.strip(), re.IGNORECASE)
        for table in captured:
            if pattern.fullmatch(str(table)) and table not in out:
                out.append(table)
    return out


def _dumps(key: list[str] | None) -> str | None:
    return None if key is None else json.dumps(key)


def _loads(text: Any) -> list[str] | None:
    return None if not text else list(json.loads(text))
