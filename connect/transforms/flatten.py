"""Flatten: turn nested structs or maps into one level, joining names with a delimiter
(Kafka's ``Flatten$Key`` and ``Flatten$Value``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.config import ConfigDef, ConfigType, Importance
from connect.api.data import Schema, SchemaBuilder, Struct, Type
from connect.api.errors import DataError
from connect.transforms.base import KeySide, R, SidedTransformation, ValueSide
from connect.transforms.requirements import require_map, require_struct
from connect.transforms.schema_util import SchemaCache, copy_schema_basics

__all__ = ["Flatten", "FlattenKey", "FlattenValue"]

DELIMITER = "delimiter"
_PURPOSE = "flattening"
# Copied as they are; STRUCT is recursed into, MAP (with a schema) is unsupported.
_LEAF_TYPES = frozenset(
    {
        Type.INT8,
        Type.INT16,
        Type.INT32,
        Type.INT64,
        Type.FLOAT32,
        Type.FLOAT64,
        Type.BOOLEAN,
        Type.STRING,
        Type.BYTES,
        Type.ARRAY,
    }
)
_SCHEMALESS_LEAVES = (int, float, str, bytes, bytearray, memoryview, list)

_CONFIG_DEF = ConfigDef().define(
    DELIMITER,
    ConfigType.STRING,
    default=".",
    importance=Importance.MEDIUM,
    documentation="Delimiter inserted between the field names of each level when naming "
    "the fields of the output record.",
)


class Flatten(SidedTransformation):
    """Nested structs (with a schema) or maps (schemaless) become top-level fields named
    ``outer.inner``; arrays and primitives are copied as they are. A flattened field is
    optional if it or any enclosing struct is, and takes its default from the nearest
    default found. Maps inside a schema'd value are a ``DataError``, as in Kafka. Null
    keys or values pass through."""

    CONFIG_DEF = _CONFIG_DEF

    def __init__(self) -> None:
        self._delimiter = "."
        self._schemas = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._delimiter = self.CONFIG_DEF.parse(configs)[DELIMITER]
        self._schemas = SchemaCache()

    def _name(self, prefix: str, name: str) -> str:
        return f"{prefix}{self._delimiter}{name}" if prefix else name

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        if value is None:
            return record
        if self.operating_schema(record) is None:
            flat: dict[str, Any] = {}
            self._flatten_map(require_map(value, _PURPOSE), "", flat)
            return self.updated_record(record, None, flat)
        struct = require_struct(value, _PURPOSE)
        schema = self._schemas.get_or_build(struct.schema, self._flat_schema)
        result = Struct(schema)
        self._flatten_struct(struct, "", result)
        return self.updated_record(record, schema, result)

    def _flatten_map(self, value: Mapping[str, Any], prefix: str, out: dict[str, Any]) -> None:
        for key, item in value.items():
            if not isinstance(key, str):
                raise DataError(f"Flatten needs string map keys, found {type(key).__name__}")
            name = self._name(prefix, key)
            if isinstance(item, Mapping):
                self._flatten_map(item, name, out)
            elif item is None or isinstance(item, _SCHEMALESS_LEAVES):
                out[name] = item
            else:
                raise DataError(
                    f"Flatten transformation does not support {type(item).__name__} for "
                    f"record without schemas (for field {name})."
                )

    def _flat_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        self._add_fields(schema, "", builder, schema.optional, schema.default_value)
        return builder.build()

    def _add_fields(
        self,
        schema: Schema,
        prefix: str,
        builder: SchemaBuilder,
        optional: bool,
        parent_default: Struct | None,
    ) -> None:
        for field in schema.fields:
            name = self._name(prefix, field.name)
            field_optional = optional or field.schema.optional
            default = field.schema.default_value
            if default is None and parent_default is not None:
                default = parent_default.get(field.name)
            if field.schema.type is Type.STRUCT:
                self._add_fields(field.schema, name, builder, field_optional, default)
            elif field.schema.type in _LEAF_TYPES:
                builder.field(name, _leaf_schema(field.schema, field_optional, default))
            else:
                raise DataError(
                    f"Flatten transformation does not support {field.schema.type.name} for "
                    f"record with schemas (for field {name})."
                )

    def _flatten_struct(self, struct: Struct, prefix: str, out: Struct) -> None:
        for field in struct.schema.fields:
            name = self._name(prefix, field.name)
            item = struct.get(field)
            if field.schema.type is Type.STRUCT:
                if item is not None:
                    self._flatten_struct(item, name, out)
            else:
                out.put(name, item)


def _leaf_schema(original: Schema, optional: bool, default: Any) -> Schema:
    # from_schema keeps the type, name, version, doc, parameters and element schemas.
    builder = SchemaBuilder.from_schema(original)
    if optional:
        builder.optional()
    if default is not None:
        builder.default_value(default)
    return builder.build()


class FlattenKey(KeySide, Flatten):
    """Flatten on the record key (Kafka's ``Flatten$Key``)."""


class FlattenValue(ValueSide, Flatten):
    """Flatten on the record value (Kafka's ``Flatten$Value``)."""
