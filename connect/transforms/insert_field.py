"""InsertField: add the record's topic, partition, offset, timestamp or a static value as
fields of the key or value (Kafka's ``InsertField$Key`` and ``InsertField$Value``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connect.api.config import ConfigDef, ConfigType, Importance
from connect.api.data import Schema, SchemaBuilder, Struct, Timestamp
from connect.api.errors import ConfigError
from connect.api.record import ConnectRecord
from connect.transforms.base import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    KeySide,
    R,
    SidedTransformation,
    ValueSide,
    define_replace_null_with_default,
)
from connect.transforms.requirements import require_map, require_sink_record, require_struct
from connect.transforms.schema_util import FieldCopy, SchemaCache, copy_fields, copy_schema_basics

__all__ = ["InsertField", "InsertFieldKey", "InsertFieldValue"]

TOPIC_FIELD = "topic.field"
PARTITION_FIELD = "partition.field"
OFFSET_FIELD = "offset.field"
TIMESTAMP_FIELD = "timestamp.field"
STATIC_FIELD = "static.field"
STATIC_VALUE = "static.value"

_PURPOSE = "field insertion"
_OPTIONALITY = "Suffix with ! to make this a required field, or ? to keep it optional (default)."
_OPTIONAL_TIMESTAMP = Timestamp.builder().optional().build()


def _define(definition: ConfigDef, name: str, documentation: str) -> ConfigDef:
    return definition.define(
        name,
        ConfigType.STRING,
        default=None,
        importance=Importance.MEDIUM,
        documentation=documentation,
    )


_CONFIG_DEF = ConfigDef()
_define(_CONFIG_DEF, TOPIC_FIELD, f"Field name for the Kafka topic. {_OPTIONALITY}")
_define(_CONFIG_DEF, PARTITION_FIELD, f"Field name for the Kafka partition. {_OPTIONALITY}")
_define(
    _CONFIG_DEF,
    OFFSET_FIELD,
    f"Field name for the Kafka offset; sink connectors only. {_OPTIONALITY}",
)
_define(_CONFIG_DEF, TIMESTAMP_FIELD, f"Field name for the record timestamp. {_OPTIONALITY}")
_define(_CONFIG_DEF, STATIC_FIELD, f"Field name for a static value. {_OPTIONALITY}")
_define(_CONFIG_DEF, STATIC_VALUE, "The static value, when static.field is set.")
define_replace_null_with_default(_CONFIG_DEF)


@dataclass(frozen=True, slots=True)
class _Insertion:
    """A field to insert: ``name!`` is required, ``name`` or ``name?`` optional."""

    name: str
    optional: bool

    @staticmethod
    def parse(key: str, spec: str | None) -> _Insertion | None:
        if spec is None:
            return None
        optional = not spec.endswith("!")
        name = spec[:-1] if spec.endswith(("!", "?")) else spec
        if not name:
            raise ConfigError(key, "The field name must not be empty", value=spec)
        return _Insertion(name, optional)

    def schema(self, required: Schema, optional: Schema) -> Schema:
        return optional if self.optional else required


class InsertField(SidedTransformation):
    """Insert record metadata and/or a static value as fields. Schemaless values must be
    maps; values with a schema must be structs, whose schema gains the new fields
    (optional unless suffixed ``!``). Null keys or values pass through unchanged. The
    timestamp is inserted as a Timestamp (a number of milliseconds when schemaless); the
    offset only exists on sink records."""

    CONFIG_DEF = _CONFIG_DEF

    def __init__(self) -> None:
        self._topic: _Insertion | None = None
        self._partition: _Insertion | None = None
        self._offset: _Insertion | None = None
        self._timestamp: _Insertion | None = None
        self._static: _Insertion | None = None
        self._static_value: str | None = None
        self._with_default = True
        self._plans: SchemaCache[tuple[Schema, tuple[FieldCopy, ...]]] = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        self._topic = _Insertion.parse(TOPIC_FIELD, parsed[TOPIC_FIELD])
        self._partition = _Insertion.parse(PARTITION_FIELD, parsed[PARTITION_FIELD])
        self._offset = _Insertion.parse(OFFSET_FIELD, parsed[OFFSET_FIELD])
        self._timestamp = _Insertion.parse(TIMESTAMP_FIELD, parsed[TIMESTAMP_FIELD])
        self._static = _Insertion.parse(STATIC_FIELD, parsed[STATIC_FIELD])
        self._static_value = parsed[STATIC_VALUE]
        self._with_default = parsed[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        insertions = (self._topic, self._partition, self._offset, self._timestamp, self._static)
        if all(insertion is None for insertion in insertions):
            raise ConfigError(None, "No field insertion configured")
        if self._static is not None and self._static_value is None:
            raise ConfigError(
                STATIC_VALUE,
                f"No value specified for static field: {self._static.name}",
                value=None,
            )
        self._plans = SchemaCache()

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        if value is None:
            return record
        if self.operating_schema(record) is None:
            return self._apply_schemaless(record, require_map(value, _PURPOSE))
        return self._apply_with_schema(record, require_struct(value, _PURPOSE))

    def _metadata(self, record: ConnectRecord, timestamp: Any) -> list[tuple[str, Any]]:
        """(field, value) pairs to set; absent partition or timestamp are left unset."""
        values: list[tuple[str, Any]] = []
        if self._topic is not None:
            values.append((self._topic.name, record.topic))
        if self._partition is not None and record.kafka_partition is not None:
            values.append((self._partition.name, record.kafka_partition))
        if self._offset is not None:
            values.append((self._offset.name, require_sink_record(record, _PURPOSE).kafka_offset))
        if self._timestamp is not None and record.timestamp is not None:
            values.append((self._timestamp.name, timestamp))
        if self._static is not None:
            values.append((self._static.name, self._static_value))
        return values

    def _apply_schemaless(self, record: R, value: Mapping[str, Any]) -> R:
        updated = dict(value)
        updated.update(self._metadata(record, record.timestamp))
        return self.updated_record(record, None, updated)

    def _apply_with_schema(self, record: R, value: Struct) -> R:
        schema, copies = self._plans.get_or_build(value.schema, self._plan)
        updated = copy_fields(schema, value, copies, self._with_default)
        timestamp = None
        if self._timestamp is not None and record.timestamp is not None:
            timestamp = Timestamp.to_logical(Timestamp.SCHEMA, record.timestamp)
        for name, inserted in self._metadata(record, timestamp):
            updated.put(name, inserted)
        return self.updated_record(record, schema, updated)

    def _plan(self, schema: Schema) -> tuple[Schema, tuple[FieldCopy, ...]]:
        updated = self._updated_schema(schema)
        return updated, tuple((field, updated.fields[field.index]) for field in schema.fields)

    def _updated_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            builder.field(field.name, field.schema)
        additions = (
            (self._topic, Schema.STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA),
            (self._partition, Schema.INT32_SCHEMA, Schema.OPTIONAL_INT32_SCHEMA),
            (self._offset, Schema.INT64_SCHEMA, Schema.OPTIONAL_INT64_SCHEMA),
            (self._timestamp, Timestamp.SCHEMA, _OPTIONAL_TIMESTAMP),
            (self._static, Schema.STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA),
        )
        for insertion, required, optional in additions:
            if insertion is not None:
                builder.field(insertion.name, insertion.schema(required, optional))
        return builder.build()


class InsertFieldKey(KeySide, InsertField):
    """InsertField on the record key (Kafka's ``InsertField$Key``)."""


class InsertFieldValue(ValueSide, InsertField):
    """InsertField on the record value (Kafka's ``InsertField$Value``)."""
