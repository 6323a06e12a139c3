"""Turns the pgoutput stream into Debezium change records.

``ChangeStream.handle`` takes one WAL message at a time (in commit order) and returns
the records it yields: ``c``/``u``/``d`` events, tombstones, a delete + tombstone +
create for a key change, ``t`` events, and BEGIN/END transaction records. It keeps the
table schemas current from Relation messages and the ``Position`` of the last record,
skipping what a previous run emitted already.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from connect.api import Headers, Schema, SchemaBuilder, SourceRecord, Struct
from connectors.postgres import pgoutput as pg
from connectors.postgres.compiled import EventMaker
from connectors.postgres.config import PostgresConfig, TableId
from connectors.postgres.events import EventFactory, SourceInfo, TableSchema, source_at
from connectors.postgres.incremental import IncrementalSnapshot
from connectors.postgres.position import Position

__all__ = ["ChangeStream"]

log = logging.getLogger(__name__)

_ROW_CHANGES = frozenset({pg.Insert, pg.Update, pg.Delete})

#: The data collection Debezium's transaction metadata counts messages under.
MESSAGES_COLLECTION = "LOGICAL_DECODING_MESSAGE"

TX_KEY_SCHEMA = (SchemaBuilder.struct().name("io.debezium.connector.common."
                                             "TransactionMetadataKey").version(1)
                 .field("id", Schema.STRING_SCHEMA).build())
_EVENT_COUNT_SCHEMA = (SchemaBuilder.struct().optional().name("event.collection").version(1)
                       .field("data_collection", Schema.STRING_SCHEMA)
                       .field("event_count", Schema.INT64_SCHEMA).build())
TX_VALUE_SCHEMA = (SchemaBuilder.struct().name("io.debezium.connector.common."
                                               "TransactionMetadataValue").version(1)
                   .field("status", Schema.STRING_SCHEMA)
                   .field("id", Schema.STRING_SCHEMA)
                   .field("event_count", Schema.OPTIONAL_INT64_SCHEMA)
                   .field("data_collections",
                          SchemaBuilder.array(_EVENT_COUNT_SCHEMA).optional())
                   .field("ts_ms", Schema.INT64_SCHEMA).build())

SchemaLoader = Callable[[pg.Relation], TableSchema | None]


class ChangeStream:
    """Single-threaded: the task's poll thread drives it."""

    def __init__(self, config: PostgresConfig, factory: EventFactory,
                 load_schema: SchemaLoader, position: Position | None,
                 start_lsn: int = 0, incremental: IncrementalSnapshot | None = None,
                 captured: Sequence[TableId] = ()) -> None:
        self.config = config
        self.incremental = incremental  # with signal.data.collection
        self.captured = list(captured)
        self.factory = factory
        self.load_schema = load_schema
        self._position: Position | None = position or Position(None, None, None, 0)
        self._offset: dict[str, Any] | None = None  # of the last event, when built first
        self._resume = position
        self._tables: dict[int, TableSchema | None] = {}
        self._relations: dict[int, pg.Relation] = {}
        self._begin: pg.Begin | None = None
        self._skip_tx = False
        self._lsn = 0
        self._at_lsn = 0
        # Before the first commit, the stream's start stands for the last commit: no
        # transaction committed before it is ever sent.
        self._last_commit: int | None = self.position.lsn_commit or start_lsn or None
        self._tx_total = 0
        self._tx_counts: dict[str, int] = {}
        self.in_transaction = False
        self._tx_metadata = config.provide_transaction_metadata
        # The op of an insert, or of an update without an old image (REPLICA IDENTITY
        # DEFAULT, key unchanged), by message type, when that record is all the change
        # gives: no transaction block, no incremental snapshot, the op not skipped.
        self._plain_ops: dict[type, str] = {} if incremental is not None or \
            self._tx_metadata else {kind: op for kind, op in ((pg.Insert, "c"), (pg.Update, "u"))
                                    if op not in config.skipped_operations}
        # Per relation, for the open transaction: its record maker, its source block's
        # values without the change's LSN, and the head of their ``sequence``.
        self._made: dict[int, tuple[EventMaker, list[Any], str] | None] = {}

    def handle(self, data_start: int, payload: bytes) -> list[SourceRecord]:
        msg = pg.decode(payload)
        if type(msg) in _ROW_CHANGES:  # the common case first
            return self._on_change(data_start, msg)
        if isinstance(msg, pg.Begin):
            return self._on_begin(msg)
        if isinstance(msg, pg.Commit):
            return self._on_commit(msg)
        if isinstance(msg, pg.Relation):
            self._relations[msg.relid] = msg
            self._tables[msg.relid] = self.load_schema(msg)
            self._made.pop(msg.relid, None)
            return []
        if isinstance(msg, (pg.Insert, pg.Update, pg.Delete, pg.Truncate)):
            return self._on_change(data_start, msg)
        if isinstance(msg, pg.LogicalMessage):
            return self._on_message(msg)
        return []  # Type and Origin messages carry no event

    @property
    def position(self) -> Position:
        """The position of the last record (or of the stream's start)."""
        if self._position is None:
            self._position = Position.from_offset(self._offset)
            assert self._position is not None
        return self._position

    @position.setter
    def position(self, value: Position) -> None:
        self._position, self._offset = value, None

    def offset(self, position: Position | None = None) -> dict[str, Any]:
        """The source offset of ``position`` (default: the last record's), with the
        incremental snapshot's progress while one runs."""
        out = (position or self.position).to_offset()
        if self.incremental is not None and self.incremental.running:
            out.update(self.incremental.offset_fields())
        return out

    def idle_position(self, wal_end: int) -> Position | None:
        """The position a heartbeat may store while no transaction is open: every commit
        before ``wal_end`` has been received (the server sends in commit order)."""
        if self.in_transaction:
            return None
        lsn_commit = max(wal_end, self._last_commit or 0)
        self.position = Position(lsn_commit, None, lsn_commit, 0, self.position.ts_usec)
        self._resume = None
        return self.position

    def _on_begin(self, msg: pg.Begin) -> list[SourceRecord]:
        self._begin = msg
        self._made.clear()
        self.in_transaction = True
        self._lsn, self._at_lsn = 0, 0
        self._tx_total, self._tx_counts = 0, {}
        resume = self._resume
        self._skip_tx = resume is not None and resume.skips_transaction(msg.final_lsn)
        if self._skip_tx or not self.config.provide_transaction_metadata:
            return []
        if resume is not None and resume.tx_id == msg.xid:
            return []  # its BEGIN was emitted before the restart
        return [self._tx_record("BEGIN", msg, None)]

    def _on_commit(self, msg: pg.Commit) -> list[SourceRecord]:
        begin, self._begin = self._begin, None
        self.in_transaction = False
        skipped = self._skip_tx
        self._skip_tx = False
        self._last_commit = msg.commit_lsn
        self._made.clear()
        if skipped:
            return []  # emitted whole by a previous run
        self._resume = None  # past the resume point: the rest is new
        if begin is None or not self.config.provide_transaction_metadata:
            return []
        self.position = Position(msg.commit_lsn, None, msg.commit_lsn, 0, msg.commit_ts_us)
        return [self._tx_record("END", begin, self._tx_total)]

    def _tx_record(self, status: str, begin: pg.Begin, count: int | None) -> SourceRecord:
        tx_id = f"{begin.xid}:{begin.final_lsn}"
        key = Struct(TX_KEY_SCHEMA).put("id", tx_id)
        collections = None if count is None else [
            Struct(_EVENT_COUNT_SCHEMA).put("data_collection", name).put("event_count", n)
            for name, n in self._tx_counts.items()]
        value = Struct.from_values(TX_VALUE_SCHEMA, [
            status, tx_id, count, collections, begin.commit_ts_us // 1000], validate=False)
        offset = self.offset()
        return SourceRecord(topic=self.config.transaction_topic, key_schema=TX_KEY_SCHEMA,
                            key=key, value_schema=TX_VALUE_SCHEMA, value=value,
                            source_partition=self.factory.partition, source_offset=offset)

    def _counted_and_resumed(self, xid: int, lsn: int) -> bool:
        """Counts an event of transaction ``xid`` at ``lsn`` (the events at one LSN are
        numbered from 1); True when a resume already emitted it."""
        if lsn == self._lsn:
            self._at_lsn += 1
        else:
            self._lsn, self._at_lsn = lsn, 1
        resume = self._resume
        return resume is not None and resume.skips_event(xid, lsn, self._at_lsn)

    def _on_change(self, lsn: int, msg: Any) -> list[SourceRecord]:
        begin = self._begin
        if begin is None or self._skip_tx:
            return []
        # _counted_and_resumed, inline: this runs once per change.
        if lsn == self._lsn:
            self._at_lsn += 1
        else:
            self._lsn, self._at_lsn = lsn, 1
        resume = self._resume
        if resume is not None and resume.skips_event(begin.xid, lsn, self._at_lsn):
            return []
        # The event's position, as an offset dict at once (a Position is built only when
        # asked for): this runs once per change.
        offset = {"lsn_commit": self._last_commit, "lsn_proc": lsn, "lsn": lsn,
                  "txId": begin.xid, "ts_usec": begin.commit_ts_us,
                  "lsn_events_processed": self._at_lsn}
        self._position, self._offset = None, offset
        if self.incremental is not None and self.incremental.running:
            offset.update(self.incremental.offset_fields())
        kind = type(msg)
        op = self._plain_ops.get(kind)
        if op is not None and (kind is pg.Insert or msg.old is None):
            # The common case, inline: the record from the relation's maker, its source
            # block copied from the transaction's values with this change's LSN.
            made = self._made.get(msg.relid) or self._make(msg.relid, begin)
            if made is not None:
                event, template, sequence_head = made
                return [event(msg.new, op, source_at(template, sequence_head, lsn), offset)]
        info = SourceInfo(begin.commit_ts_us, "false", begin.xid, lsn, self._last_commit)
        if isinstance(msg, pg.Truncate):
            if "t" in self.config.skipped_operations:
                return []
            out = []
            for relid in msg.relids:
                ts = self._tables.get(relid)
                if ts is not None:
                    out.append(self.factory.truncate(ts, info, offset,
                                                     self._tx_block(ts, begin)))
            return out
        ts = self._tables.get(msg.relid)
        incremental = self.incremental
        if incremental is not None:
            out = self._incremental(incremental, ts, msg, info)
            if ts is None:
                return out
            return out + self._row_change(ts, msg, info, offset, begin)
        if ts is None:
            if msg.relid not in self._tables:
                log.warning("change for relation %d without a Relation message; skipped",
                            msg.relid)
            return []
        return self._row_change(ts, msg, info, offset, begin)

    def _make(self, relid: int, begin: pg.Begin
              ) -> tuple[EventMaker, list[Any], str] | None:
        """``_made[relid]``, built: None for a relation without a schema (not captured,
        or no Relation message seen)."""
        ts = self._tables.get(relid)
        if ts is None:
            return None
        values, head = self.factory.source_values(ts.table, begin.commit_ts_us, "false",
                                                  begin.xid, self._last_commit)
        made = self._made[relid] = (ts.makers(self.factory.partition)[0], values, head)
        return made

    def _on_message(self, msg: pg.LogicalMessage) -> list[SourceRecord]:
        """A logical decoding message: op ``m`` on ``<prefix>.message``. A transactional
        one is an event of its transaction; a non-transactional one arrives on its own,
        between transactions, and counts as committed at its LSN."""
        begin = self._begin
        included = self.config.captures_message(msg.prefix)
        if msg.transactional and begin is not None:
            if self._skip_tx:
                return []
            lsn = msg.lsn
            if self._counted_and_resumed(begin.xid, lsn):
                return []
            self.position = Position(self._last_commit, begin.xid, lsn, self._at_lsn,
                                     begin.commit_ts_us)
            if not included:
                return []
            info = SourceInfo(begin.commit_ts_us, "false", begin.xid, lsn, self._last_commit)
            return [self.factory.message(msg.prefix, msg.content, info, self.offset(),
                                         self._tx_block(MESSAGES_COLLECTION, begin))]
        resume = self._resume
        if resume is not None and resume.skips_transaction(msg.lsn):
            return []  # emitted before the restart
        # Decoded when the WAL reaches it, so every transaction sent before it committed
        # before it: its LSN is a commit position like any other.
        self._last_commit = max(self._last_commit or 0, msg.lsn)
        self._made.clear()
        now_us = time.time_ns() // 1000
        self.position = Position(self._last_commit, None, msg.lsn, 0, now_us)
        if not included:
            return []
        info = SourceInfo(now_us, "false", None, msg.lsn, self._last_commit)
        return [self.factory.message(msg.prefix, msg.content, info, self.offset())]

    def _incremental(self, incremental: IncrementalSnapshot, ts: TableSchema | None,
                     msg: Any, info: SourceInfo) -> list[SourceRecord]:
        """Signals (rows inserted into the signal table) and the window's de-duplication
        of streamed changes."""
        rel = self._relations.get(msg.relid)
        if rel is None:
            return []
        table = TableId(rel.namespace, rel.name)
        if incremental.is_signal_table(table):
            if not isinstance(msg, pg.Insert):
                return []
            snap = SourceInfo(info.ts_us, "incremental", info.tx_id, info.lsn,
                              info.last_commit_lsn)

            def emit(schema: TableSchema, row: list[Any], fields: dict[str, Any]
                     ) -> SourceRecord:
                after, key = schema.row_and_key(row)
                offset = self.position.to_offset()
                offset.update(fields)
                return self.factory.change(schema, "r", None, after, snap, offset, key=key)
            return incremental.on_signal(msg.new, emit, self.captured)
        if incremental.running:
            names = [c.name for c in rel.columns]
            new = getattr(msg, "new", None)
            incremental.deduplicate(table, names, new, getattr(msg, "old", None))
        return []

    def _tx_block(self, ts: TableSchema | str, begin: pg.Begin) -> Struct | None:
        if not self.config.provide_transaction_metadata:
            return None
        name = ts if isinstance(ts, str) else str(ts.table)
        self._tx_total += 1
        self._tx_counts[name] = self._tx_counts.get(name, 0) + 1
        from connectors.postgres.events import TRANSACTION_BLOCK_SCHEMA
        return Struct.from_values(TRANSACTION_BLOCK_SCHEMA, [
            f"{begin.xid}:{begin.final_lsn}", self._tx_total, self._tx_counts[name]],
            validate=False)

    def _row_change(self, ts: TableSchema, msg: Any, info: SourceInfo,
                    offset: dict[str, Any], begin: pg.Begin) -> list[SourceRecord]:
        skipped = self.config.skipped_operations
        f = self.factory
        if isinstance(msg, pg.Insert):
            if "c" in skipped:
                return []
            event = ts.makers(f.partition)[0]
            return [event(msg.new, "c", f.source(ts.table, info), offset,
                          self._tx_block(ts, begin) if self._tx_metadata else None)]
        if isinstance(msg, pg.Delete):
            if "d" in skipped:
                return []
            before, key = ts.row_and_key(msg.old)
            out = [f.change(ts, "d", before, None, info, offset, self._tx_block(ts, begin),
                            key=key)]
            if self.config.tombstones_on_delete:
                out.append(f.tombstone(ts, key, offset))
            return out
        # Update: 'O' carries the whole old row (REPLICA IDENTITY FULL), 'K' the old
        # replica identity when it changed; without either the before image is unknown.
        if msg.old is None:  # REPLICA IDENTITY DEFAULT, key unchanged: the common case
            if "u" in skipped:
                return []
            event = ts.makers(f.partition)[0]
            return [event(msg.new, "u", f.source(ts.table, info), offset,
                          self._tx_block(ts, begin) if self._tx_metadata else None)]
        old = msg.old if msg.old_kind == "O" else None
        after, new_key = ts.row_and_key(msg.new, old)
        before, old_key = ts.row_and_key(msg.old)
        if new_key is not None and old_key is not None and \
                old_key.values() != new_key.values():
            return self._key_change(ts, before, after, old_key, new_key, info, offset, begin)
        if "u" in skipped:
            return []
        return [f.change(ts, "u", before, after, info, offset, self._tx_block(ts, begin),
                         key=new_key)]

    def _key_change(self, ts: TableSchema, before: Struct, after: Struct, old_key: Struct,
                    new_key: Struct, info: SourceInfo, offset: dict[str, Any],
                    begin: pg.Begin) -> list[SourceRecord]:
        """Debezium's primary-key update: a delete of the old key (header
        ``__debezium.newkey``), its tombstone, a create of the new key (header
        ``__debezium.oldkey``)."""
        f = self.factory
        out = []
        if "d" not in self.config.skipped_operations:
            out.append(f.change(ts, "d", before, None, info, offset,
                                self._tx_block(ts, begin), key=old_key,
                                headers=Headers().add_struct("__debezium.newkey", new_key)))
            if self.config.tombstones_on_delete:
                out.append(f.tombstone(ts, old_key, offset))
        if "c" not in self.config.skipped_operations:
            out.append(f.change(ts, "c", None, after, info, offset,
                                self._tx_block(ts, begin), key=new_key,
                                headers=Headers().add_struct("__debezium.oldkey", old_key)))
        return out

    def table_id(self, relid: int) -> TableId | None:
        rel = self._relations.get(relid)
        return None if rel is None else TableId(rel.namespace, rel.name)
