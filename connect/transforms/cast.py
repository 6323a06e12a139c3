"""Cast: change the type of fields, or of the whole key or value (Kafka's ``Cast$Key`` and
``Cast$Value``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.config import ConfigDef, ConfigType, Importance, LambdaValidator
from connect.api.data import Schema, SchemaBuilder, Struct, Type
from connect.api.data import logical_values as lv
from connect.api.errors import ConfigError
from connect.transforms.base import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    KeySide,
    R,
    SidedTransformation,
    ValueSide,
    define_replace_null_with_default,
)
from connect.transforms.cast_values import SUPPORTED_OUTPUT_TYPES, cast_value
from connect.transforms.requirements import require_map, require_struct
from connect.transforms.schema_util import SchemaCache, copy_schema_basics, field_value

__all__ = ["Cast", "CastKey", "CastValue", "parse_cast_spec"]

SPEC = "spec"
_PURPOSE = "cast types"
_LOGICAL_NAMES = frozenset(
    {lv.DECIMAL_LOGICAL_NAME, lv.DATE_LOGICAL_NAME, lv.TIME_LOGICAL_NAME, lv.TIMESTAMP_LOGICAL_NAME}
)


def parse_cast_spec(mappings: list[str]) -> tuple[Type | None, dict[str, Type]]:
    """(whole-value type, {field: type}) from ``spec``; exactly one of them is set.
    ``ConfigError`` on ``spec`` for an empty, malformed or unsupported spec."""
    if not mappings:
        raise ConfigError(SPEC, "Must specify at least one field to cast.")
    whole: Type | None = None
    casts: dict[str, Type] = {}
    for mapping in mappings:
        parts = mapping.split(":")
        if len(parts) > 2:
            raise ConfigError(SPEC, f"Invalid cast mapping: {mapping}", value=",".join(mappings))
        target = _output_type(parts[-1].strip())
        if len(parts) == 1:
            whole = target
        else:
            casts[parts[0].strip()] = target
    if whole is not None and len(mappings) > 1:
        raise ConfigError(
            SPEC,
            "Cast transformations that specify a type to cast the entire value to may only "
            "specify a single cast in their spec",
        )
    return whole, casts


def _output_type(name: str) -> Type:
    try:
        target = Type[name.upper()]
    except KeyError:
        raise ConfigError(SPEC, f"Invalid type found in casting spec: {name}") from None
    if target not in SUPPORTED_OUTPUT_TYPES:
        supported = ", ".join(t.name for t in SUPPORTED_OUTPUT_TYPES)
        raise ConfigError(
            SPEC,
            f"Cast transformation does not support casting to {target.name}; supported "
            f"types are [{supported}]",
        )
    return target


def _check_spec(name: str, value: Any) -> None:
    parse_cast_spec(value or [])


_CONFIG_DEF = ConfigDef().define(
    SPEC,
    ConfigType.LIST,
    validator=LambdaValidator.with_(
        _check_spec, "list of colon-delimited pairs, e.g. foo:bar,abc:xyz"
    ),
    importance=Importance.HIGH,
    documentation="Fields and the types to cast them to, as field1:type,field2:type, for "
    "fields of structs or maps; or a single type to cast the whole value. Types are int8, "
    "int16, int32, int64, float32, float64, boolean and string; bytes cast only to string "
    "(base64).",
)
define_replace_null_with_default(_CONFIG_DEF)


class Cast(SidedTransformation):
    """Cast top-level fields, or the whole key or value, with Java's conversions (see
    ``cast_values``). Logical types cast from their encodings (a Date to int32 is days
    since the epoch) except to string, which writes ISO-8601; Decimals cast as numbers.
    Null keys or values pass through."""

    CONFIG_DEF = _CONFIG_DEF

    def __init__(self) -> None:
        self._whole: Type | None = None
        self._casts: dict[str, Type] = {}
        self._with_default = True
        self._schemas = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        self._whole, self._casts = parse_cast_spec(parsed[SPEC])
        self._with_default = parsed[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        if value is None:
            return record
        schema = self.operating_schema(record)
        if schema is None:
            if self._whole is not None:
                return self.updated_record(record, None, cast_value(None, value, self._whole))
            original = require_map(value, _PURPOSE)
            updated = dict(original)
            for name, target in self._casts.items():
                updated[name] = cast_value(None, original.get(name), target)
            return self.updated_record(record, None, updated)
        updated_schema = self._schemas.get_or_build(schema, self._updated_schema)
        if self._whole is not None:
            cast = cast_value(schema, value, self._whole)
            return self.updated_record(record, updated_schema, cast)
        struct = require_struct(value, _PURPOSE)
        return self.updated_record(
            record, updated_schema, self._cast_struct(struct, updated_schema)
        )

    def _cast_struct(self, struct: Struct, schema: Schema) -> Struct:
        result = Struct(schema)
        for field in struct.schema.fields:
            item = field_value(struct, field, self._with_default)
            target = self._casts.get(field.name)
            if target is not None:
                item = cast_value(field.schema, item, target)
            result.put(field.name, item)
        return result

    def _updated_schema(self, schema: Schema) -> Schema:
        if self._whole is not None:
            builder = _cast_basics(schema, self._whole)
        else:
            builder = copy_schema_basics(schema, SchemaBuilder.struct())
            for field in schema.fields:
                target = self._casts.get(field.name)
                if target is None:
                    builder.field(field.name, field.schema)
                    continue
                field_builder = SchemaBuilder(target)
                if field.schema.optional:
                    field_builder.optional()
                if field.schema.default_value is not None:
                    default = cast_value(field.schema, field.schema.default_value, target)
                    field_builder.default_value(default)
                builder.field(field.name, field_builder)
        if schema.optional:
            builder.optional()
        if schema.default_value is None:
            return builder.build()
        if self._whole is not None:
            return builder.default_value(
                cast_value(schema, schema.default_value, self._whole)
            ).build()
        # A struct default is a Struct of the new schema without its default.
        default = self._cast_struct(schema.default_value, builder.build())
        return builder.default_value(default).build()


def _cast_basics(schema: Schema, target: Type) -> SchemaBuilder:
    builder = SchemaBuilder(target)
    # A logical type's name and parameters would describe the old encoding, and a
    # STRING named Timestamp is no valid schema; Kafka keeps them, Ferry drops them.
    if schema.name not in _LOGICAL_NAMES:
        copy_schema_basics(schema, builder)
    return builder


class CastKey(KeySide, Cast):
    """Cast on the record key (Kafka's ``Cast$Key``)."""


class CastValue(ValueSide, Cast):
    """Cast on the record value (Kafka's ``Cast$Value``)."""
