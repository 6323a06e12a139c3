"""HeaderFrom: move or copy key or value fields into headers (Kafka's ``HeaderFrom$Key``
and ``HeaderFrom$Value``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.config import ConfigDef, ConfigType, Importance, ValidString
from connect.api.data import Schema, SchemaBuilder, Struct
from connect.api.errors import ConfigError, DataError
from connect.transforms.base import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    KeySide,
    R,
    SidedTransformation,
    ValueSide,
    define_replace_null_with_default,
)
from connect.transforms.requirements import require_map, require_struct
from connect.transforms.schema_util import SchemaCache, copy_schema_basics, field_value
from connect.transforms.validators import NON_EMPTY_LIST

__all__ = ["HeaderFrom", "HeaderFromKey", "HeaderFromValue"]

FIELDS = "fields"
HEADERS = "headers"
OPERATION = "operation"
MOVE = "move"
COPY = "copy"

_CONFIG_DEF = (
    ConfigDef()
    .define(
        FIELDS,
        ConfigType.LIST,
        validator=NON_EMPTY_LIST,
        importance=Importance.HIGH,
        documentation="Field names whose values are copied or moved to headers.",
    )
    .define(
        HEADERS,
        ConfigType.LIST,
        validator=NON_EMPTY_LIST,
        importance=Importance.HIGH,
        documentation="Header names, in the same order as the field names in fields.",
    )
    .define(
        OPERATION,
        ConfigType.STRING,
        validator=ValidString.in_(MOVE, COPY),
        importance=Importance.HIGH,
        documentation="move to remove the fields from the key or value, copy to keep them.",
    )
)
define_replace_null_with_default(_CONFIG_DEF)


class HeaderFrom(SidedTransformation):
    """The i-th field becomes header i, with the field's schema (schemaless: no schema);
    with ``move`` the fields also leave the key or value and its schema. A field missing
    from a struct's schema is a ``DataError``; missing from a map, its header is null. As
    in Kafka, a null key or value is a ``DataError``."""

    CONFIG_DEF = _CONFIG_DEF

    def __init__(self) -> None:
        self._pairs: tuple[tuple[str, str], ...] = ()
        self._move = False
        self._with_default = True
        self._schemas = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        fields, headers = parsed[FIELDS], parsed[HEADERS]
        if len(fields) != len(headers):
            raise ConfigError(
                HEADERS,
                f"'{FIELDS}' config must have the same number of elements as '{HEADERS}' config.",
                value=",".join(headers),
            )
        self._pairs = tuple(zip(fields, headers, strict=True))
        self._move = parsed[OPERATION] == MOVE
        self._with_default = parsed[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R:
        purpose = f"header {MOVE if self._move else COPY}"
        value = self.operating_value(record)
        schema = self.operating_schema(record)
        headers = record.headers.duplicate()
        if schema is None:
            original = require_map(value, purpose)
            updated = dict(original)
            for field, header in self._pairs:
                if self._move:
                    updated.pop(field, None)
                headers.add(header, original.get(field))
            return self.updated_record(record, None, updated, headers)
        struct = require_struct(value, purpose)
        for field, header in self._pairs:
            found = schema.field(field)
            if found is None:
                raise DataError(f"Field {field} does not exist in the schema of the {purpose}")
            headers.add(header, field_value(struct, field, self._with_default), found.schema)
        if not self._move:
            return self.updated_record(record, schema, struct, headers)
        moved_schema = self._schemas.get_or_build(struct.schema, self._moved_schema)
        moved = Struct(moved_schema)
        for kept in moved_schema.fields:
            moved.put(kept.name, field_value(struct, kept.name, self._with_default))
        return self.updated_record(record, moved_schema, moved, headers)

    def _moved_schema(self, schema: Schema) -> Schema:
        moved = {field for field, _ in self._pairs}
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            if field.name not in moved:
                builder.field(field.name, field.schema)
        return builder.build()


class HeaderFromKey(KeySide, HeaderFrom):
    """HeaderFrom on the record key (Kafka's ``HeaderFrom$Key``)."""


class HeaderFromValue(ValueSide, HeaderFrom):
    """HeaderFrom on the record value (Kafka's ``HeaderFrom$Value``)."""
