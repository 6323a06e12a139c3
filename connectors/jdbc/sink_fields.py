"""Which columns a sink record fills: primary key columns by ``pk.mode``, then the value's
fields (``fields.include.list``), each with its Connect schema and a value extractor.

Computed once per (topic, key schema, value schema) and cached by the task; records with
the same schemas share one ``RowLayout``.
"""

from __future__ import annotations

import dataclasses
import zoneinfo
from collections.abc import Callable
from typing import Any

from connect.api import ConnectError, DataError, Schema, SinkRecord, Struct, Type
from connectors.jdbc.config import SinkConfig
from connectors.jdbc.types import to_db_value

__all__ = ["KAFKA_PK_NAMES", "ColumnSpec", "RowLayout", "row_layout"]

#: Confluent's ``DEFAULT_KAFKA_PK_NAMES`` and the column of a primitive record key.
KAFKA_PK_NAMES = ("__connect_topic", "__connect_partition", "__connect_offset")
PRIMITIVE_KEY_NAME = "__connect_key"

_FLATTEN_HINT = ("flatten it with the Flatten transformation first (transforms=flatten, "
                 "transforms.flatten.type=org.apache.kafka.connect.transforms.Flatten$Value"
                 "); a CDC envelope needs ExtractNewRecordState")


@dataclasses.dataclass(frozen=True)
class ColumnSpec:
    """One column: its name, the Connect schema of its values, and how to read its bind
    value from a record."""

    name: str
    schema: Schema
    extract: Callable[[SinkRecord], Any]


@dataclasses.dataclass(frozen=True)
class RowLayout:
    """The key columns and the other columns records of one shape write."""

    keys: tuple[ColumnSpec, ...]
    values: tuple[ColumnSpec, ...]

    @property
    def columns(self) -> tuple[ColumnSpec, ...]:
        return self.keys + self.values

    def row(self, record: SinkRecord) -> dict[str, Any]:
        return {c.name: c.extract(record) for c in self.keys + self.values}

    def key_row(self, record: SinkRecord) -> dict[str, Any]:
        return {c.name: c.extract(record) for c in self.keys}


def _check_flat(schema: Schema, what: str) -> None:
    for field in schema.fields:
        if field.schema.type in (Type.STRUCT, Type.ARRAY, Type.MAP):
            raise DataError(f"{what} field {field.name!r} is a {field.schema.type.value}; "
                            f"the JDBC sink writes flat rows only: {_FLATTEN_HINT}")


def _struct_field(side: str, name: str, schema: Schema,
                  tz: zoneinfo.ZoneInfo) -> ColumnSpec:
    convert = to_db_value(schema, tz)
    if side == "key":
        def extract(r: SinkRecord) -> Any:
            return convert(r.key.get(name))
    else:
        def extract(r: SinkRecord) -> Any:
            return None if r.value is None else convert(r.value.get(name))
    return ColumnSpec(name, schema, extract)


def _require_struct(schema: Schema | None, value: Any, side: str,
                    record: SinkRecord) -> Schema:
    if schema is None:
        raise DataError(
            f"The JDBC sink needs records with schemas, but the {side} of {record.topic}-"
            f"{record.kafka_partition}@{record.kafka_offset} has none; use a converter that "
            "carries schemas (JsonConverter with schemas.enable=true, Avro, Protobuf)")
    if schema.type is not Type.STRUCT:
        raise DataError(f"The record {side} must be a struct to take columns from it, "
                        f"not {schema.type.value}")
    if value is not None and not isinstance(value, Struct):
        raise DataError(f"The record {side} is not a Struct")
    return schema


def row_layout(record: SinkRecord, config: SinkConfig, tz: zoneinfo.ZoneInfo) -> RowLayout:
    """The columns records shaped like ``record`` write. ``DataError`` for records the
    sink cannot write (no schema, nested fields), ``ConnectError`` for pk settings that
    do not fit the record."""
    keys: list[ColumnSpec] = []
    pk_fields = config.pk_fields
    mode = config.pk_mode
    value_schema = record.value_schema
    if mode == "kafka":
        names = pk_fields or KAFKA_PK_NAMES
        keys = [ColumnSpec(names[0], Schema.STRING_SCHEMA, lambda r: r.topic),
                ColumnSpec(names[1], Schema.INT32_SCHEMA, lambda r: r.kafka_partition),
                ColumnSpec(names[2], Schema.INT64_SCHEMA, lambda r: r.kafka_offset)]
    elif mode == "record_key":
        key_schema = record.key_schema
        if key_schema is None:
            raise DataError(f"pk.mode=record_key but {record.topic}-{record.kafka_partition}"
                            f"@{record.kafka_offset} has a key without a schema")
        if key_schema.type.is_primitive:
            if len(pk_fields) > 1:
                raise ConnectError("pk.mode=record_key with a primitive key takes at most "
                                   "one pk.fields name")
            convert = to_db_value(key_schema, tz)
            keys = [ColumnSpec(pk_fields[0] if pk_fields else PRIMITIVE_KEY_NAME,
                               key_schema, lambda r: convert(r.key))]
        else:
            _require_struct(key_schema, record.key, "key", record)
            _check_flat(key_schema, "Key")
            names = pk_fields or tuple(f.name for f in key_schema.fields)
            for name in names:
                field = key_schema.field(name)
                if field is None:
                    raise ConnectError(f"pk.fields names {name!r}, which the record key "
                                       f"schema lacks (it has "
                                       f"{', '.join(f.name for f in key_schema.fields)})")
                keys.append(_struct_field("key", name, field.schema, tz))
    if value_schema is None and record.value is None:
        # A tombstone: only its key matters.
        return RowLayout(tuple(keys), ())
    schema = _require_struct(value_schema, record.value, "value", record)
    _check_flat(schema, "Value")
    if mode == "record_value":
        names = pk_fields or tuple(f.name for f in schema.fields)
        for name in names:
            field = schema.field(name)
            if field is None:
                raise ConnectError(f"pk.fields names {name!r}, which the record value "
                                   "schema lacks")
            keys.append(_struct_field("value", name, field.schema, tz))
    key_names = {k.name for k in keys}
    include = set(config.fields_include)
    values = tuple(_struct_field("value", f.name, f.schema, tz) for f in schema.fields
                   if f.name not in key_names and (not include or f.name in include))
    return RowLayout(tuple(keys), values)
