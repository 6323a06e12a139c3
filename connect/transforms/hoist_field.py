"""HoistField: wrap the key or value in a single-field struct or map (Kafka's
``HoistField$Key`` and ``HoistField$Value``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.config import ConfigDef, ConfigType, Importance
from connect.api.data import Schema, SchemaBuilder, Struct
from connect.transforms.base import KeySide, R, SidedTransformation, ValueSide
from connect.transforms.schema_util import SchemaCache

__all__ = ["HoistField", "HoistFieldKey", "HoistFieldValue"]

FIELD = "field"

_CONFIG_DEF = ConfigDef().define(
    FIELD,
    ConfigType.STRING,
    importance=Importance.MEDIUM,
    documentation="Name of the single field of the resulting struct or map.",
)


class HoistField(SidedTransformation):
    """With a schema, the key or value becomes a struct with one field of the original
    schema; without, a one-entry map. Null values are wrapped too."""

    CONFIG_DEF = _CONFIG_DEF

    def __init__(self) -> None:
        self._field = ""
        self._schemas = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        self._field = self.CONFIG_DEF.parse(configs)[FIELD]
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R:
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        if schema is None:
            return self.updated_record(record, None, {self._field: value})
        wrapped = self._schemas.get_or_build(schema, self._wrapped_schema)
        return self.updated_record(record, wrapped, Struct(wrapped).put(self._field, value))

    def _wrapped_schema(self, schema: Schema) -> Schema:
        return SchemaBuilder.struct().field(self._field, schema).build()


class HoistFieldKey(KeySide, HoistField):
    """HoistField on the record key (Kafka's ``HoistField$Key``)."""


class HoistFieldValue(ValueSide, HoistField):
    """HoistField on the record value (Kafka's ``HoistField$Value``)."""
