"""Connect schemas and values to JSON Schema and JSON, as Confluent's ``JsonSchemaData``.

=====================  =============================================================
Connect                JSON Schema
=====================  =============================================================
INT8 ... INT64         ``{"type": "integer", "connect.type": "int8"}`` ... ``"int64"``
FLOAT32, FLOAT64       ``{"type": "number", "connect.type": "float32"}`` / ``"float64"``
BOOLEAN, STRING        ``boolean``, ``string``; an enum (``"enum": [...]``) when the
                       schema carries Confluent's ``io.confluent.connect.json.Enum``
                       parameters
BYTES                  ``{"type": "string", "connect.type": "bytes"}`` (base64 text);
                       Decimal: ``{"type": "number", "connect.type": "bytes"}``
ARRAY                  ``{"type": "array", "items": ...}``
MAP                    string keys: ``{"type": "object", "additionalProperties": ...,
                       "connect.type": "map"}``; others: an array of ``{key, value}``
                       objects with ``"connect.type": "map"``
STRUCT                 ``{"type": "object", "properties": {...}}``, each property with
                       its ``connect.index``; ``"additionalProperties": false`` when
                       ``object.additional.properties`` is false; a struct named
                       ``io.confluent.connect.json.OneOf`` is a ``oneOf``
optional               ``{"oneOf": [{"type": "null"}, T]}``
=====================  =============================================================

Names become ``title``, docs ``description``, versions ``connect.version``, parameters
``connect.parameters`` (except Confluent's own ``io.confluent.connect.json.*``), defaults
``default``. Values: bytes and (``decimal.format=BASE64``) decimals as base64 text, Date
as days, Time and Timestamp as milliseconds, maps with non-string keys as arrays of
``{"key", "value"}`` objects; an unset struct field takes its default unless
``ignore.default.for.nullables``, and a required field without a value is left out.
"""

from __future__ import annotations

import base64
import decimal
from dataclasses import dataclass
from typing import Any

from connect.api.data import Decimal, Schema, Struct, Type
from connect.api.errors import DataError
from schema_registry.serde.connect_schema import non_optional, temporal_type

__all__ = [
    "JSON_TYPE_ENUM",
    "JSON_TYPE_ONE_OF",
    "JsonSchemaDataConfig",
    "from_connect_data",
    "from_connect_schema",
]

NAMESPACE = "io.confluent.connect.json"
JSON_TYPE_ENUM = f"{NAMESPACE}.Enum"
JSON_TYPE_ONE_OF = f"{NAMESPACE}.OneOf"
CONNECT_TYPE_PROP = "connect.type"
CONNECT_VERSION_PROP = "connect.version"
CONNECT_PARAMETERS_PROP = "connect.parameters"
CONNECT_INDEX_PROP = "connect.index"
KEY_FIELD = "key"
VALUE_FIELD = "value"
NULL_MARKER = "<NULL>"
_NULL_SCHEMA = {"type": "null"}
_INTEGERS = {Type.INT8: "int8", Type.INT16: "int16", Type.INT32: "int32", Type.INT64: "int64"}
_NUMBERS = {Type.FLOAT32: "float32", Type.FLOAT64: "float64"}


@dataclass(frozen=True, slots=True)
class JsonSchemaDataConfig:
    """Options named as Confluent's ``JsonSchemaDataConfig`` keys:
    ``object.additional.properties`` (true), ``use.optional.for.nonrequired`` (false:
    properties not in ``required`` still map to required fields), ``decimal.format``
    (``BASE64`` or ``NUMERIC``), ``ignore.default.for.nullables`` (false),
    ``schemas.cache.size`` (1000)."""

    allow_additional_properties: bool = True
    use_optional_for_non_required: bool = False
    decimal_numeric: bool = False
    ignore_default_for_nullables: bool = False
    schemas_cache_size: int = 1000


def is_one_of(schema: Schema) -> bool:
    return schema.type is Type.STRUCT and schema.name == JSON_TYPE_ONE_OF


def from_connect_schema(schema: Schema, config: JsonSchemaDataConfig,
                        index: int | None = None, *, ignore_optional: bool = False
                        ) -> dict[str, Any]:
    """The JSON schema (a dict) of a Connect schema; ``index`` is a struct field's
    position, written as ``connect.index``."""
    props: dict[str, Any] = {}
    kind = schema.type
    params = schema.parameters or {}
    combined = False
    out: dict[str, Any]
    if kind in _INTEGERS:
        out = {"type": "integer"}
        props[CONNECT_TYPE_PROP] = _INTEGERS[kind]
    elif kind in _NUMBERS:
        out = {"type": "number"}
        props[CONNECT_TYPE_PROP] = _NUMBERS[kind]
    elif kind is Type.BOOLEAN:
        out = {"type": "boolean"}
    elif kind is Type.STRING:
        if JSON_TYPE_ENUM in params:
            prefix = JSON_TYPE_ENUM + "."
            out = {"enum": [None if k[len(prefix):] == NULL_MARKER else k[len(prefix):]
                            for k in params if k.startswith(prefix)]}
        else:
            out = {"type": "string"}
    elif kind is Type.BYTES:
        out = {"type": "number" if schema.name == Decimal.LOGICAL_NAME else "string"}
        props[CONNECT_TYPE_PROP] = "bytes"
    elif kind is Type.ARRAY:
        out = {"type": "array", "items": from_connect_schema(schema.value_schema, config)}
    elif kind is Type.MAP:
        key_schema = schema.key_schema
        if key_schema.type is Type.STRING and not key_schema.optional:
            out = {"type": "object",
                   "additionalProperties": from_connect_schema(schema.value_schema, config)}
        else:
            out = {"type": "array", "items": {"type": "object", "properties": {
                KEY_FIELD: from_connect_schema(key_schema, config, 0),
                VALUE_FIELD: from_connect_schema(schema.value_schema, config, 1)}}}
        props[CONNECT_TYPE_PROP] = "map"
    elif is_one_of(schema):
        members = [_NULL_SCHEMA] if schema.optional else []
        members += [from_connect_schema(non_optional(f.schema), config, f.index,
                                        ignore_optional=True) for f in schema.fields]
        out, combined = {"oneOf": members}, True
    elif schema.optional:
        out = {"oneOf": [_NULL_SCHEMA, from_connect_schema(non_optional(schema), config)]}
        combined = True
    else:
        out = {"type": "object", "properties": {
            f.name: from_connect_schema(f.schema, config, f.index) for f in schema.fields}}
        if not config.allow_additional_properties:
            out["additionalProperties"] = False
    if not combined:
        if schema.name is not None:
            out["title"] = schema.name
        if schema.doc is not None:
            out["description"] = schema.doc
        if schema.default_value is not None:
            out["default"] = from_connect_data(schema, schema.default_value, config)
        if schema.version is not None:
            props[CONNECT_VERSION_PROP] = schema.version
        shown = {k: v for k, v in params.items() if not k.startswith(NAMESPACE)}
        if shown:
            props[CONNECT_PARAMETERS_PROP] = shown
        if schema.optional and not ignore_optional:
            out = {"oneOf": [_NULL_SCHEMA, {**out, **props}]}
            props = {}
    if index is not None:
        props[CONNECT_INDEX_PROP] = index
    out.update(props)
    return out


_ABSENT = object()


def from_connect_data(schema: Schema | None, value: Any, config: JsonSchemaDataConfig) -> Any:
    """The JSON value (Python's json types; ``decimal.Decimal`` for NUMERIC decimals) of a
    Connect value. A required schema with no value and no default gives None."""
    result = _value(schema, value, config)
    return None if result is _ABSENT else result


def _value(schema: Schema | None, value: Any, config: JsonSchemaDataConfig) -> Any:
    if value is None:
        if schema is None:
            return _ABSENT
        if schema.default_value is not None and not config.ignore_default_for_nullables:
            return _value(schema, schema.default_value, config)
        return None if schema.optional else _ABSENT
    if schema is None:
        return _schemaless(value, config)
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        if not isinstance(value, decimal.Decimal):
            raise DataError(f"Invalid type for Decimal, expected decimal.Decimal but was "
                            f"{type(value).__name__}")
        if config.decimal_numeric:
            Decimal.from_logical(schema, value)  # checks the scale
            return value
        return base64.b64encode(Decimal.from_logical(schema, value)).decode("ascii")
    temporal = temporal_type(schema)
    if temporal is not None:
        return temporal.from_logical(schema, value)
    kind = schema.type
    if kind is Type.BYTES:
        if not isinstance(value, bytes | bytearray | memoryview):
            raise DataError(f"Invalid type for bytes type: {type(value).__name__}")
        return base64.b64encode(value).decode("ascii")
    if kind is Type.ARRAY:
        return [_element(schema.value_schema, e, config) for e in value]
    if kind is Type.MAP:
        key_schema, value_schema = schema.key_schema, schema.value_schema
        if key_schema.type is Type.STRING and not key_schema.optional:
            return {str(k): _element(value_schema, v, config) for k, v in value.items()}
        return [{KEY_FIELD: _element(key_schema, k, config),
                 VALUE_FIELD: _element(value_schema, v, config)} for k, v in value.items()]
    if kind is Type.STRUCT:
        if not isinstance(value, Struct) or not value.schema.equals_ignoring_default(schema):
            raise DataError(f"Mismatching schema: expected a Struct of {schema!r}, got "
                            f"{value!r}")
        with_defaults = not config.ignore_default_for_nullables
        values = value.values(with_defaults=with_defaults)
        if is_one_of(schema):
            for field, field_value in zip(schema.fields, values, strict=True):
                if field_value is not None:
                    return _value(field.schema, field_value, config)
            return _value(schema, None, config)
        out = {}
        for field, field_value in zip(schema.fields, values, strict=True):
            converted = _value(field.schema, field_value, config)
            if converted is not _ABSENT:
                out[field.name] = converted
        return out
    return value


def _element(schema: Schema, value: Any, config: JsonSchemaDataConfig) -> Any:
    converted = _value(schema, value, config)
    return None if converted is _ABSENT else converted


def _schemaless(value: Any, config: JsonSchemaDataConfig) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, list):
        return [_element_schemaless(e, config) for e in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {k: _element_schemaless(v, config) for k, v in value.items()}
        return [{KEY_FIELD: _element_schemaless(k, config),
                 VALUE_FIELD: _element_schemaless(v, config)} for k, v in value.items()]
    if isinstance(value, bool | int | float | str):
        return value
    raise DataError(f"Python type {type(value).__name__} does not have a corresponding "
                    "schema type")


def _element_schemaless(value: Any, config: JsonSchemaDataConfig) -> Any:
    return None if value is None else _schemaless(value, config)
