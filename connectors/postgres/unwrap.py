"""Debezium's ``ExtractNewRecordState`` SMT (``io.debezium.transforms.
ExtractNewRecordState``): replaces a change event's envelope by its row state, as sinks
(JDBC, Elasticsearch, files) want it.

``delete.tombstone.handling.mode`` says what becomes of deletes and tombstones:
``tombstone`` (default; a delete becomes a record with a null value, the tombstone is
dropped), ``drop``, ``rewrite`` (the before state with ``__deleted=true``; others get
``__deleted=false``; tombstones dropped), ``rewrite-with-tombstone``,
``delete-to-tombstone``. Debezium's older ``drop.tombstones`` and
``delete.handling.mode`` are honoured when the new key is not given. ``add.fields`` and
``add.headers`` copy envelope, source or transaction fields (``op``, ``source.ts_ms``,
``table``...) under ``__`` names. Truncate events are dropped; non-envelope records pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api import (
    ConfigDef,
    ConfigError,
    ConfigType,
    ConnectRecord,
    Importance,
    Schema,
    SchemaBuilder,
    Struct,
    Type,
    ValidString,
)

__all__ = ["ExtractNewRecordState"]

MODES = ("drop", "tombstone", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone")
_ENVELOPE_FIELDS = ("op", "ts_ms", "ts_us", "ts_ns")
_TRANSACTION_FIELDS = ("id", "total_order", "data_collection_order")

CONFIG_DEF = (
    ConfigDef()
    .define("delete.tombstone.handling.mode", ConfigType.STRING, default=None,
            validator=None, importance=Importance.MEDIUM,
            documentation="drop, tombstone (default), rewrite, rewrite-with-tombstone or "
                          "delete-to-tombstone.")
    .define("drop.tombstones", ConfigType.BOOLEAN, default=True, importance=Importance.LOW,
            documentation="Deprecated by Debezium: drop tombstones (when "
                          "delete.tombstone.handling.mode is not set).")
    .define("delete.handling.mode", ConfigType.STRING, default="drop",
            validator=ValidString.in_("drop", "rewrite", "none"), importance=Importance.LOW,
            documentation="Deprecated by Debezium: drop, rewrite or none (when "
                          "delete.tombstone.handling.mode is not set).")
    .define("add.fields", ConfigType.LIST, default="", importance=Importance.LOW,
            documentation="Fields to add to the value: op, ts_ms, a source field "
                          "(table, lsn) or struct.field (source.ts_ms).")
    .define("add.fields.prefix", ConfigType.STRING, default="__", importance=Importance.LOW,
            documentation="Prefix of the added field names.")
    .define("add.headers", ConfigType.LIST, default="", importance=Importance.LOW,
            documentation="Fields to add as headers, named as add.fields names them.")
    .define("add.headers.prefix", ConfigType.STRING, default="__", importance=Importance.LOW,
            documentation="Prefix of the added header names.")
    .define("route.by.field", ConfigType.STRING, default="", importance=Importance.LOW,
            documentation="A field of the row whose value becomes the topic.")
)


class _FieldRef:
    """``op`` (envelope), ``table`` (source), ``source.ts_ms``: where and what name."""

    def __init__(self, spec: str, prefix: str) -> None:
        struct, _, name = spec.strip().rpartition(".")
        if not struct:
            struct = ("" if name in _ENVELOPE_FIELDS else "transaction"
                      if name in _TRANSACTION_FIELDS else "source")
            self.name = prefix + name
        else:
            self.name = f"{prefix}{struct}_{name}"
        self.struct, self.field = struct, name

    def schema(self, envelope: Schema) -> Schema | None:
        holder = envelope if not self.struct else _field_schema(envelope, self.struct)
        found = None if holder is None else holder.field(self.field)
        if found is None:
            return None
        return SchemaBuilder_optional(found.schema)

    def value(self, envelope: Struct) -> Any:
        holder: Any = envelope
        if self.struct:
            holder = envelope.get(self.struct) if envelope.schema.field(self.struct) else None
        if holder is None or holder.schema.field(self.field) is None:
            return None
        return holder.get(self.field)


def _field_schema(schema: Schema, name: str) -> Schema | None:
    found = schema.field(name)
    return None if found is None else found.schema


def SchemaBuilder_optional(schema: Schema) -> Schema:
    if schema.optional:
        return schema
    builder = _copy(schema)
    return builder.optional().build()


def _copy(schema: Schema) -> SchemaBuilder:
    t = schema.type
    if t is Type.STRUCT:
        b = SchemaBuilder.struct()
        for f in schema.fields:
            b.field(f.name, f.schema)
    elif t is Type.ARRAY:
        b = SchemaBuilder.array(schema.value_schema)
    elif t is Type.MAP:
        b = SchemaBuilder.map(schema.key_schema, schema.value_schema)
    else:
        b = SchemaBuilder(t)
    if schema.name:
        b.name(schema.name)
    if schema.version is not None:
        b.version(schema.version)
    if schema.doc:
        b.doc(schema.doc)
    if schema.parameters:
        b.parameters(schema.parameters)
    if schema.default_value is not None:
        b.default_value(schema.default_value)
    return b


def _is_envelope(record: ConnectRecord) -> bool:
    schema = record.value_schema
    return (schema is not None and schema.type is Type.STRUCT and bool(schema.name)
            and schema.name.endswith(".Envelope") and schema.field("op") is not None
            and schema.field("after") is not None and schema.field("before") is not None)


class ExtractNewRecordState:
    """Stateless apart from a cache of extended schemas; one instance per task."""

    def __init__(self) -> None:
        self._mode = "tombstone"
        self._fields: list[_FieldRef] = []
        self._headers: list[_FieldRef] = []
        self._route = ""
        # id(row schema), rewrite -> (that row schema, the extended schema)
        self._schemas: dict[tuple[int, bool], tuple[Schema, Schema]] = {}

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = CONFIG_DEF.parse(configs)
        mode = parsed["delete.tombstone.handling.mode"]
        if mode is None and not ({"delete.handling.mode", "drop.tombstones"} & set(configs)):
            mode = "tombstone"  # Debezium 3's default
        elif mode is None:
            legacy = parsed["delete.handling.mode"]
            drop = parsed["drop.tombstones"]
            mode = {"drop": "drop" if drop else "delete-to-tombstone",
                    "rewrite": "rewrite" if drop else "rewrite-with-tombstone",
                    "none": "tombstone" if drop else "rewrite-with-tombstone"}[legacy]
            if legacy == "none" and not drop:
                mode = "keep"  # delete events as null-valued records and tombstones kept
        elif mode not in MODES:
            raise ConfigError("delete.tombstone.handling.mode",
                              f"must be one of {', '.join(MODES)}", value=mode)
        self._mode = mode
        self._fields = [_FieldRef(f, parsed["add.fields.prefix"])
                        for f in parsed["add.fields"] or () if f.strip()]
        self._headers = [_FieldRef(f, parsed["add.headers.prefix"])
                         for f in parsed["add.headers"] or () if f.strip()]
        self._route = parsed["route.by.field"] or ""

    def apply(self, record: ConnectRecord) -> ConnectRecord | None:
        if record.value is None:
            return record if self._mode in ("rewrite-with-tombstone", "keep") else None
        if not _is_envelope(record):
            return record
        envelope: Struct = record.value
        schema: Schema = record.value_schema  # type: ignore[assignment]
        for ref in self._headers:
            field_schema = ref.schema(schema)
            if field_schema is not None:
                record.headers.add(ref.name, ref.value(envelope), field_schema)
        after = envelope.get("after")
        before = envelope.get("before")
        row_schema: Schema = schema.field("after").schema  # type: ignore[union-attr]
        if after is None and before is None:
            return None  # truncate (or an envelope without a row): Debezium drops it
        if after is None:  # delete
            if self._mode == "drop":
                return None
            if self._mode in ("tombstone", "keep"):
                return record.new_record(value_schema=row_schema, value=None)
            if self._mode == "delete-to-tombstone":
                return record.new_record(value_schema=None, value=None)
            row, deleted = before, "true"
        else:
            row, deleted = after, "false"
        rewrite = self._mode in ("rewrite", "rewrite-with-tombstone")
        new_schema, values = self._extended(row_schema, schema, rewrite)
        extra = [ref.value(envelope) for ref in self._fields
                 if ref.schema(schema) is not None]
        if rewrite:
            extra.append(deleted)
        value = Struct.from_values(new_schema, row.values() + extra, validate=False) \
            if values else row
        topic = record.topic
        if self._route:
            routed = row.get(self._route) if row.schema.field(self._route) else None
            topic = routed if isinstance(routed, str) else topic
        return record.new_record(topic=topic, value_schema=new_schema, value=value)

    def _extended(self, row_schema: Schema, envelope: Schema, rewrite: bool
                  ) -> tuple[Schema, bool]:
        refs = [r for r in self._fields if r.schema(envelope) is not None]
        if not refs and not rewrite:
            return row_schema, False
        key = (id(row_schema), rewrite)
        entry = self._schemas.get(key)
        cached = entry[1] if entry is not None and entry[0] is row_schema else None
        if cached is None:
            b = SchemaBuilder.struct()
            if row_schema.name:
                b.name(row_schema.name)
            if row_schema.version is not None:
                b.version(row_schema.version)
            b.optional()
            for f in row_schema.fields:
                b.field(f.name, f.schema)
            for ref in refs:
                b.field(ref.name, ref.schema(envelope))  # type: ignore[arg-type]
            if rewrite:
                b.field("__deleted", Schema.OPTIONAL_STRING_SCHEMA)
            cached = b.build()
            self._schemas[key] = (row_schema, cached)
        return cached, True

    def close(self) -> None:
        self._schemas.clear()
