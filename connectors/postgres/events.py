"""Debezium's change events: per-table key, value and envelope schemas, the
``io.debezium.connector.postgresql.Source`` block, and the records built from rows.

A ``TableSchema`` is built from a table's columns (from a pgoutput Relation message or
from the catalog for the snapshot) and turns a row's text values, in that column order,
into Connect structs. ``EventFactory`` wraps them in envelopes and ``SourceRecord``s
with the source partition ``{"server": <topic.prefix>}`` and the given offset.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from connect.api import Headers, Schema, SchemaBuilder, SourceRecord, Struct, Type
from connectors.postgres.compiled import BatchMaker, EventMaker, compile_events, compile_row
from connectors.postgres.config import PostgresConfig, TableId
from connectors.postgres.pgoutput import UNCHANGED_TOAST
from connectors.postgres.types import ColumnType, TypeMapper

__all__ = [
    "SOURCE_SCHEMA",
    "TRANSACTION_BLOCK_SCHEMA",
    "EventFactory",
    "SourceColumn",
    "SourceInfo",
    "TableSchema",
    "source_at",
]

SNAPSHOT_VALUES = ("true", "first", "first_in_data_collection", "last_in_data_collection",
                   "last", "false", "incremental")

SOURCE_SCHEMA = (
    SchemaBuilder.struct().name("io.debezium.connector.postgresql.Source").version(1)
    .field("version", Schema.STRING_SCHEMA)
    .field("connector", Schema.STRING_SCHEMA)
    .field("name", Schema.STRING_SCHEMA)
    .field("ts_ms", Schema.INT64_SCHEMA)
    .field("snapshot", SchemaBuilder.string().name("io.debezium.data.Enum").version(1)
           .parameter("allowed", ",".join(SNAPSHOT_VALUES)).default_value("false")
           .optional())
    .field("db", Schema.STRING_SCHEMA)
    .field("sequence", Schema.OPTIONAL_STRING_SCHEMA)
    .field("ts_us", Schema.OPTIONAL_INT64_SCHEMA)
    .field("ts_ns", Schema.OPTIONAL_INT64_SCHEMA)
    .field("schema", Schema.STRING_SCHEMA)
    .field("table", Schema.STRING_SCHEMA)
    .field("txId", Schema.OPTIONAL_INT64_SCHEMA)
    .field("lsn", Schema.OPTIONAL_INT64_SCHEMA)
    .field("xmin", Schema.OPTIONAL_INT64_SCHEMA)
    .field("origin", Schema.OPTIONAL_STRING_SCHEMA)
    .field("origin_lsn", Schema.OPTIONAL_INT64_SCHEMA)
    .build())

TRANSACTION_BLOCK_SCHEMA = (
    SchemaBuilder.struct().optional().name("event.block").version(1)
    .field("id", Schema.STRING_SCHEMA)
    .field("total_order", Schema.INT64_SCHEMA)
    .field("data_collection_order", Schema.INT64_SCHEMA)
    .build())

MESSAGE_KEY_SCHEMA = (
    SchemaBuilder.struct().name("io.debezium.connector.postgresql.MessageKey").version(1)
    .field("prefix", Schema.OPTIONAL_STRING_SCHEMA).build())

#: ``message.content`` follows ``binary.handling.mode``, as Debezium's does.
_CONTENT_SCHEMAS = {"bytes": Schema.OPTIONAL_BYTES_SCHEMA}
_CONTENT_ENCODERS = {
    "bytes": bytes,
    "base64": lambda b: base64.b64encode(b).decode(),
    "base64-url-safe": lambda b: base64.urlsafe_b64encode(b).decode(),
    "hex": lambda b: b.hex(),
}


def message_value_schema(binary_mode: str) -> Schema:
    """Debezium's ``io.debezium.connector.postgresql.MessageValue`` (op ``m``)."""
    block = (SchemaBuilder.struct().name("io.debezium.connector.postgresql.Message")
             .version(1).field("prefix", Schema.OPTIONAL_STRING_SCHEMA)
             .field("content", _CONTENT_SCHEMAS.get(binary_mode,
                                                    Schema.OPTIONAL_STRING_SCHEMA))
             .build())
    return (SchemaBuilder.struct().name("io.debezium.connector.postgresql.MessageValue")
            .version(1)
            .field("op", Schema.STRING_SCHEMA)
            .field("ts_ms", Schema.OPTIONAL_INT64_SCHEMA)
            .field("source", SOURCE_SCHEMA)
            .field("transaction", TRANSACTION_BLOCK_SCHEMA)
            .field("message", block)
            .build())


log = logging.getLogger(__name__)

#: Debezium's envelope schema version (``io.debezium.data.Envelope.SCHEMA_VERSION``).
ENVELOPE_VERSION = 2


@dataclass(frozen=True, slots=True)
class SourceColumn:
    """A column as the table delivers it (Relation message or catalog)."""

    name: str
    type_oid: int
    typmod: int
    optional: bool
    default_expr: str | None = None


@dataclass(slots=True)
class SourceInfo:
    """Where an event comes from: filled per event by the snapshot or the stream."""

    ts_us: int  # commit time (stream) or read time (snapshot), Unix microseconds
    snapshot: str  # one of SNAPSHOT_VALUES
    tx_id: int | None
    lsn: int | None
    last_commit_lsn: int | None


class TableSchema:
    """One table's key/value/envelope schemas and its row converters."""

    def __init__(self, prefix: str, table: TableId, columns: Sequence[SourceColumn],
                 key_names: Sequence[str], mapper: TypeMapper, config: PostgresConfig
                 ) -> None:
        self.table = table
        self.source_columns = tuple(columns)
        base = f"{prefix}.{table.schema}.{table.table}"
        self.topic = base
        value = SchemaBuilder.struct().name(f"{base}.Value").optional()
        key = SchemaBuilder.struct().name(f"{base}.Key")
        # (position in the source row, column type) of each emitted column
        self._emitted: list[tuple[int, ColumnType, Any, Any]] = []
        key_set = set(key_names)
        key_types: dict[str, ColumnType] = {}
        for pos, col in enumerate(columns):
            in_key = col.name in key_set
            if not in_key and not config.captures_column(table, col.name):
                continue
            ctype = mapper.map(col.type_oid, col.typmod, col.optional and not in_key,
                               col.default_expr)
            if ctype is None:
                log.warning("column %s.%s has a type without a mapping (OID %d); it is left "
                            "out (include.unknown.datatypes=true sends it as bytes of its "
                            "text form)", table, col.name, col.type_oid)
                continue
            if in_key:
                key_types[col.name] = mapper.map(col.type_oid, col.typmod, False,  # type: ignore[assignment]
                                                 col.default_expr)
            fallback = None if ctype.schema.optional else _fallback(ctype.schema)
            self._emitted.append((pos, ctype, fallback, ctype.convert))
            value.field(col.name, ctype.schema)
        self.value_schema = value.build()
        names = [c.name for c in columns]
        self.key_names = tuple(k for k in key_names if k in key_types)
        self._key_positions = [self.value_schema.field(k).index  # type: ignore[union-attr]
                               for k in self.key_names]
        for k in self.key_names:
            key.field(k, key_types[k].schema)
        self.key_schema = key.build() if self.key_names else None
        self.envelope_schema = (
            SchemaBuilder.struct().name(f"{base}.Envelope").version(ENVELOPE_VERSION)
            .field("before", self.value_schema)
            .field("after", self.value_schema)
            .field("source", SOURCE_SCHEMA)
            .field("transaction", TRANSACTION_BLOCK_SCHEMA)
            .field("op", Schema.STRING_SCHEMA)
            .field("ts_ms", Schema.OPTIONAL_INT64_SCHEMA)
            .field("ts_us", Schema.OPTIONAL_INT64_SCHEMA)
            .field("ts_ns", Schema.OPTIONAL_INT64_SCHEMA)
            .build())
        self.column_names = tuple(names)
        self._row_values = compile_row(self._emitted, self._unchanged)
        self._makers: tuple[Mapping[str, Any], EventMaker, BatchMaker] | None = None

    def makers(self, partition: Mapping[str, Any]) -> tuple[EventMaker, BatchMaker]:
        """The generated record makers of this table for ``partition`` (see
        ``compiled``), built on first use."""
        made = self._makers
        if made is None or made[0] is not partition:
            event, batch = compile_events(
                self._emitted, self._unchanged, topic=self.topic,
                value_schema=self.value_schema, key_schema=self.key_schema,
                key_positions=self._key_positions, envelope_schema=self.envelope_schema,
                partition=partition)
            made = self._makers = (partition, event, batch)
        return made[1], made[2]

    def row_values(self, texts: Sequence[Any], old: Sequence[Any] | None = None
                   ) -> list[Any]:
        """The values of the value struct for a row of text values in source column
        order. An unchanged TOASTed value comes from ``old`` (REPLICA IDENTITY FULL) when
        it has it, else it is the ``unavailable.value.placeholder``; a None is NULL, or
        for a NOT NULL column missing from a key-only before image Debezium's fallback
        value for the type (0, "", false)."""
        return self._row_values(texts, old)

    def row(self, texts: Sequence[Any], old: Sequence[Any] | None = None) -> Struct:
        return Struct.from_values(self.value_schema, self._row_values(texts, old),
                                  validate=False)

    def row_and_key(self, texts: Sequence[Any], old: Sequence[Any] | None = None
                    ) -> tuple[Struct, Struct | None]:
        """``row(texts, old)`` and its key, from one list of values."""
        values = self._row_values(texts, old)
        value = Struct.from_values(self.value_schema, values, validate=False)
        if self.key_schema is None:
            return value, None
        return value, Struct.from_values(
            self.key_schema, [values[i] for i in self._key_positions], validate=False)

    def _unchanged(self, index: int, old: Sequence[Any] | None) -> Any:
        pos, ctype = self._emitted[index][0], self._emitted[index][1]
        prior = None if old is None else old[pos]
        if prior is not None and prior is not UNCHANGED_TOAST:
            return ctype.convert(prior)
        return ctype.placeholder

    def key(self, value: Struct | None) -> Struct | None:
        if self.key_schema is None or value is None:
            return None
        all_values = value.values()
        return Struct.from_values(self.key_schema,
                                  [all_values[i] for i in self._key_positions],
                                  validate=False)


def _fallback(schema: Schema) -> Any:
    if schema.default_value is not None:
        return schema.default_value
    name = schema.name
    if name == "org.apache.kafka.connect.data.Decimal":
        return decimal.Decimal(0)
    if name == "org.apache.kafka.connect.data.Date":
        return dt.date(1970, 1, 1)
    if name == "org.apache.kafka.connect.data.Time":
        return dt.time(0)
    if name == "org.apache.kafka.connect.data.Timestamp":
        return dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    # Debezium's JdbcValueConverters fall back to the epoch (midnight) in UTC for the zoned
    # types, a value every consumer parses; "" would break them.
    if name == "io.debezium.time.ZonedTimestamp":
        return "1970-01-01T00:00:00Z"
    if name == "io.debezium.time.ZonedTime":
        return "00:00:00Z"
    t = schema.type
    if t is Type.STRUCT:
        return Struct.from_values(schema, [_fallback(f.schema) for f in schema.fields],
                                  validate=False)
    return {Type.INT8: 0, Type.INT16: 0, Type.INT32: 0, Type.INT64: 0, Type.FLOAT32: 0.0,
            Type.FLOAT64: 0.0, Type.BOOLEAN: False, Type.STRING: "", Type.BYTES: b"",
            Type.ARRAY: []}.get(t)


_NO_TABLE = TableId("", "")  # messages belong to no table: Debezium's source has ""


def source_at(values: list[Any], sequence_head: str, lsn: int) -> Struct:
    """The source block of ``EventFactory.source_values``' ``values`` (left unchanged) at
    ``lsn``: its ``sequence`` completed with the LSN, and its ``lsn``."""
    located = values.copy()
    located[6], located[12] = f'{sequence_head}"{lsn}"]', lsn
    return Struct.owning(SOURCE_SCHEMA, located)


class EventFactory:
    """Builds the records of one connector: data change events, tombstones, truncate
    events and heartbeats."""

    def __init__(self, config: PostgresConfig, version: str) -> None:
        self.config = config
        self.version = version
        self.partition: Mapping[str, Any] = {"server": config.topic_prefix}
        self.heartbeat_key_schema = (
            SchemaBuilder.struct().name("io.debezium.connector.common.ServerNameKey")
            .version(1).field("serverName", Schema.STRING_SCHEMA).build())
        self.heartbeat_value_schema = (
            SchemaBuilder.struct().name("io.debezium.connector.common.Heartbeat").version(1)
            .field("ts_ms", Schema.INT64_SCHEMA).build())
        self.message_topic = f"{config.topic_prefix}.message"
        self.message_value_schema = message_value_schema(config.binary_handling_mode)
        self._encode_content = _CONTENT_ENCODERS[config.binary_handling_mode]

    def source(self, table: TableId, info: SourceInfo) -> Struct:
        values, sequence_head = self.source_values(table, info.ts_us, info.snapshot,
                                                   info.tx_id, info.last_commit_lsn)
        if info.lsn is None:
            return Struct.owning(SOURCE_SCHEMA, values)
        return source_at(values, sequence_head, info.lsn)

    def source_values(self, table: TableId, ts_us: int, snapshot: str, tx_id: int | None,
                      last_commit_lsn: int | None) -> tuple[list[Any], str]:
        """The values of a source block without its change's LSN (``sequence`` and
        ``lsn`` None), and the head of its ``sequence``: ``source(table, info)`` is
        ``source_at(values, head, info.lsn)``. The stream builds them once per table and
        transaction and places each change at its LSN."""
        # Debezium's sequence ["<last commit LSN>","<LSN>"] is a JSON array as a string.
        head = "[null," if last_commit_lsn is None else f'["{last_commit_lsn}",'
        return [
            self.version, "postgresql", self.config.topic_prefix, ts_us // 1000,
            snapshot, self.config.dbname, None, ts_us, ts_us * 1000,
            table.schema, table.table, tx_id, None, None, None, None,
        ], head

    def change(self, ts: TableSchema, op: str, before: Struct | None, after: Struct | None,
               info: SourceInfo, offset: Mapping[str, Any],
               transaction: Struct | None = None, key: Struct | None = None,
               headers: Headers | None = None, source: Struct | None = None
               ) -> SourceRecord:
        """A change event; ``source`` may be a block shared by several events (the
        snapshot's rows), never changed after it is built."""
        now_ns = time.time_ns()
        value = Struct.from_values(ts.envelope_schema, [
            before, after, source or self.source(ts.table, info), transaction, op,
            now_ns // 1_000_000, now_ns // 1000, now_ns], validate=False)
        if key is None:
            key = ts.key(after if after is not None else before)
        if headers is None:
            return SourceRecord(
                topic=ts.topic, key_schema=ts.key_schema, key=key,
                value_schema=ts.envelope_schema, value=value,
                source_partition=self.partition, source_offset=offset)
        return SourceRecord(
            topic=ts.topic, key_schema=ts.key_schema, key=key,
            value_schema=ts.envelope_schema, value=value, headers=headers,
            source_partition=self.partition, source_offset=offset)

    def message(self, prefix: str, content: bytes, info: SourceInfo,
                offset: Mapping[str, Any], transaction: Struct | None = None
                ) -> SourceRecord:
        """A logical decoding message (``pg_logical_emit_message``) as Debezium emits it
        on ``<topic.prefix>.message``: op ``m``, keyed by its prefix."""
        schema = self.message_value_schema
        block = Struct.from_values(schema.field("message").schema, [  # type: ignore[union-attr]
            prefix, self._encode_content(content)], validate=False)
        value = Struct.from_values(schema, [
            "m", time.time_ns() // 1_000_000, self.source(_NO_TABLE, info), transaction,
            block], validate=False)
        key = Struct.from_values(MESSAGE_KEY_SCHEMA, [prefix], validate=False)
        return SourceRecord(topic=self.message_topic, key_schema=MESSAGE_KEY_SCHEMA, key=key,
                            value_schema=schema, value=value,
                            source_partition=self.partition, source_offset=offset)

    def tombstone(self, ts: TableSchema, key: Struct | None, offset: Mapping[str, Any]
                  ) -> SourceRecord:
        return SourceRecord(topic=ts.topic, key_schema=ts.key_schema, key=key,
                            source_partition=self.partition, source_offset=offset)

    def truncate(self, ts: TableSchema, info: SourceInfo, offset: Mapping[str, Any],
                 transaction: Struct | None = None) -> SourceRecord:
        now_ns = time.time_ns()
        value = Struct.from_values(ts.envelope_schema, [
            None, None, self.source(ts.table, info), transaction, "t",
            now_ns // 1_000_000, now_ns // 1000, now_ns], validate=False)
        return SourceRecord(topic=ts.topic, value_schema=ts.envelope_schema, value=value,
                            source_partition=self.partition, source_offset=offset)

    def heartbeat(self, offset: Mapping[str, Any]) -> SourceRecord:
        key = Struct(self.heartbeat_key_schema).put("serverName", self.config.topic_prefix)
        value = Struct(self.heartbeat_value_schema).put("ts_ms", time.time_ns() // 1_000_000)
        return SourceRecord(topic=self.config.heartbeat_topic,
                            key_schema=self.heartbeat_key_schema, key=key,
                            value_schema=self.heartbeat_value_schema, value=value,
                            source_partition=self.partition, source_offset=offset)
