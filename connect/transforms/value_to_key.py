"""ValueToKey: replace the record key with fields copied from the value (Kafka's
``ValueToKey``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.config import ConfigDef, ConfigType, Importance
from connect.api.data import Schema, SchemaBuilder, Struct
from connect.api.errors import DataError
from connect.transforms.base import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    BuiltinTransformation,
    R,
    define_replace_null_with_default,
)
from connect.transforms.requirements import require_map, require_struct
from connect.transforms.schema_util import SchemaCache, field_value
from connect.transforms.validators import NON_EMPTY_LIST

__all__ = ["ValueToKey"]

FIELDS = "fields"
_PURPOSE = "copying fields from value to key"

_CONFIG_DEF = ConfigDef().define(
    FIELDS,
    ConfigType.LIST,
    validator=NON_EMPTY_LIST,
    importance=Importance.HIGH,
    documentation="Field names on the record value to extract as the record key.",
)
define_replace_null_with_default(_CONFIG_DEF)


class ValueToKey(BuiltinTransformation):
    """The new key is a map (schemaless) or a struct (with a schema: an unnamed struct of
    the value fields' schemas) of the listed value fields, in the listed order. A field
    missing from a value schema is a ``DataError``; schemaless values give it a null.
    As in Kafka, a null value (tombstone) is a ``DataError``: skip tombstones with the
    ``RecordIsTombstone`` predicate."""

    CONFIG_DEF = _CONFIG_DEF

    def __init__(self) -> None:
        self._fields: tuple[str, ...] = ()
        self._with_default = True
        self._schemas = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        self._fields = tuple(parsed[FIELDS])
        self._with_default = parsed[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R:
        if record.value_schema is None:
            value = require_map(record.value, _PURPOSE)
            return record.new_record(
                key_schema=None, key={name: value.get(name) for name in self._fields}
            )
        struct = require_struct(record.value, _PURPOSE)
        key_schema = self._schemas.get_or_build(struct.schema, self._key_schema)
        key = Struct(key_schema)
        for name in self._fields:
            key.put(name, field_value(struct, name, self._with_default))
        return record.new_record(key_schema=key_schema, key=key)

    def _key_schema(self, value_schema: Schema) -> Schema:
        builder = SchemaBuilder.struct()
        for name in self._fields:
            field = value_schema.field(name)
            if field is None:
                raise DataError(f"Field does not exist: {name}")
            builder.field(name, field.schema)
        return builder.build()
