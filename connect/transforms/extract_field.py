"""ExtractField: replace the key or value with one of its fields (Kafka's
``ExtractField$Key`` and ``ExtractField$Value``), nested with ``field.syntax.version=V2``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.config import ConfigDef, ConfigType, Importance
from connect.api.errors import DataError
from connect.transforms.base import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    KeySide,
    R,
    SidedTransformation,
    ValueSide,
    define_replace_null_with_default,
)
from connect.transforms.field_path import FieldSyntaxVersion, SingleFieldPath
from connect.transforms.requirements import require_map_or_null, require_struct_or_null

__all__ = ["ExtractField", "ExtractFieldKey", "ExtractFieldValue"]

FIELD = "field"
_PURPOSE = "field extraction"

_CONFIG_DEF = ConfigDef().define(
    FIELD,
    ConfigType.STRING,
    importance=Importance.MEDIUM,
    documentation="Field name to extract (a dotted path with field.syntax.version=V2).",
)
FieldSyntaxVersion.define(_CONFIG_DEF)
define_replace_null_with_default(_CONFIG_DEF)


class ExtractField(SidedTransformation):
    """The key or value becomes the named field of its struct (with the field's schema)
    or map (schemaless). A field missing from a map, and a null key or value, give null;
    a field missing from the schema is a ``DataError``."""

    CONFIG_DEF = _CONFIG_DEF

    def __init__(self) -> None:
        self._path = SingleFieldPath("", FieldSyntaxVersion.V1, config_name=FIELD)
        self._with_default = True

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        version = FieldSyntaxVersion.from_config(parsed)
        self._path = SingleFieldPath(parsed[FIELD], version, config_name=FIELD)
        self._with_default = parsed[REPLACE_NULL_WITH_DEFAULT_CONFIG]

    def apply(self, record: R) -> R:
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        if schema is None:
            mapping = require_map_or_null(value, _PURPOSE)
            extracted = None if mapping is None else self._path.value_from_map(mapping)
            return self.updated_record(record, None, extracted)
        struct = require_struct_or_null(value, _PURPOSE)
        field = self._path.field_from(schema)
        if field is None:
            raise DataError(f"Unknown field: {self._path.path}")
        extracted = (
            None if struct is None else self._path.value_from_struct(struct, self._with_default)
        )
        return self.updated_record(record, field.schema, extracted)


class ExtractFieldKey(KeySide, ExtractField):
    """ExtractField on the record key (Kafka's ``ExtractField$Key``)."""


class ExtractFieldValue(ValueSide, ExtractField):
    """ExtractField on the record value (Kafka's ``ExtractField$Value``)."""
