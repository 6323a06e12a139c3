"""SetSchemaMetadata: set the name and/or version of the key or value schema (Kafka's
``SetSchemaMetadata$Key`` and ``SetSchemaMetadata$Value``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.config import ConfigDef, ConfigType, Importance
from connect.api.data import Schema, Struct, Type
from connect.api.errors import ConfigError
from connect.transforms.base import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    KeySide,
    R,
    SidedTransformation,
    ValueSide,
    define_replace_null_with_default,
)
from connect.transforms.requirements import require_schema
from connect.transforms.schema_util import SchemaCache, field_value

__all__ = ["SetSchemaMetadata", "SetSchemaMetadataKey", "SetSchemaMetadataValue"]

SCHEMA_NAME = "schema.name"
SCHEMA_VERSION = "schema.version"

_CONFIG_DEF = (
    ConfigDef()
    .define(
        SCHEMA_NAME,
        ConfigType.STRING,
        default=None,
        importance=Importance.HIGH,
        documentation="Schema name to set.",
    )
    .define(
        SCHEMA_VERSION,
        ConfigType.INT,
        default=None,
        importance=Importance.HIGH,
        documentation="Schema version to set.",
    )
)
define_replace_null_with_default(_CONFIG_DEF)


class SetSchemaMetadata(SidedTransformation):
    """The schema keeps everything but its name and/or version. A struct value is rebuilt
    on the renamed schema, since a struct is bound to its schema. A null value without a
    schema passes through; any other schemaless value is a ``DataError``."""

    CONFIG_DEF = _CONFIG_DEF

    def __init__(self) -> None:
        self._name: str | None = None
        self._version: int | None = None
        self._with_default = True
        self._schemas = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        self._name = parsed[SCHEMA_NAME]
        self._version = parsed[SCHEMA_VERSION]
        self._with_default = parsed[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        if self._name is None and self._version is None:
            raise ConfigError(None, "Neither schema name nor version configured")
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        schema = self.operating_schema(record)
        if value is None and schema is None:
            return record
        schema = require_schema(schema, "updating schema metadata")
        updated = self._schemas.get_or_build(schema, self._updated_schema)
        if isinstance(value, Struct):
            value = self._rebound(value, updated)
        return self.updated_record(record, updated, value)

    def _updated_schema(self, schema: Schema) -> Schema:
        def renamed(default: Any) -> Schema:
            return Schema(
                schema.type,
                optional=schema.optional,
                default_value=default,
                name=self._name if self._name is not None else schema.name,
                version=self._version if self._version is not None else schema.version,
                doc=schema.doc,
                parameters=schema.parameters,
                fields=schema.fields if schema.type is Type.STRUCT else None,
                key_schema=schema.key_schema if schema.type is Type.MAP else None,
                value_schema=schema.value_schema if schema.type in (Type.MAP, Type.ARRAY) else None,
            )

        default = schema.default_value
        if isinstance(default, Struct):
            # A struct default is bound to a schema; rebind it to the renamed one.
            default = self._rebound(default, renamed(None))
        return renamed(default)

    def _rebound(self, struct: Struct, schema: Schema) -> Struct:
        result = Struct(schema)
        for field in schema.fields:
            result.put(field.name, field_value(struct, field.name, self._with_default))
        return result


class SetSchemaMetadataKey(KeySide, SetSchemaMetadata):
    """SetSchemaMetadata on the record key (Kafka's ``SetSchemaMetadata$Key``)."""


class SetSchemaMetadataValue(ValueSide, SetSchemaMetadata):
    """SetSchemaMetadata on the record value (Kafka's ``SetSchemaMetadata$Value``)."""
