"""Connect values to JSON text, as Kafka's JsonConverter writes them with
``schemas.enable=false`` (Confluent's JsonFormat): bytes in base64, Decimal as base64 of
its unscaled value (``decimal.format=BASE64``), Date as days, Time and Timestamp as
milliseconds, maps with non-string keys as arrays of ``[key, value]`` pairs."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from typing import Any

from connect.api import DataError, Date, Decimal, Schema, Struct, Time, Timestamp, Type

__all__ = ["to_json_bytes"]

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=True)


def to_json_bytes(schema: Schema | None, value: Any) -> bytes:
    """One JSON document, UTF-8."""
    if schema is None:
        # Schemaless values are mostly what JsonConverter parsed (dicts, lists, strings,
        # numbers): the C encoder takes them as they are, and ``_default`` converts the
        # rest (bytes, structs, decimals, datetimes) where it meets them. Unlike Kafka's
        # JsonConverter, a schemaless map with int keys gets them as strings.
        return _FAST.encode(value).encode()
    return _ENCODER.encode(_plain(schema, value)).encode()


def _default(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview, Struct, decimal.Decimal,
                          dt.datetime, tuple)):
        return _schemaless(value)
    raise DataError(f"JSON cannot represent a schemaless {type(value).__name__} value")


def _plain(schema: Schema | None, value: Any) -> Any:
    if value is None:
        return None
    if schema is None:
        return _schemaless(value)
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        return base64.b64encode(Decimal.from_logical(schema, value)).decode()
    if name == Date.LOGICAL_NAME:
        return Date.from_logical(schema, value)
    if name == Time.LOGICAL_NAME:
        return Time.from_logical(schema, value)
    if name == Timestamp.LOGICAL_NAME:
        return Timestamp.from_logical(schema, value)
    t = schema.type
    if t is Type.STRUCT:
        if not isinstance(value, Struct):
            raise DataError(f"a struct value must be a Struct, not {type(value).__name__}")
        return {f.name: _plain(f.schema, value.get(f)) for f in schema.fields}
    if t is Type.ARRAY:
        return [_plain(schema.value_schema, v) for v in value]
    if t is Type.MAP:
        ks, vs = schema.key_schema, schema.value_schema
        if ks.type is Type.STRING:
            return {k: _plain(vs, v) for k, v in value.items()}
        return [[_plain(ks, k), _plain(vs, v)] for k, v in value.items()]
    if t is Type.BYTES:
        return base64.b64encode(bytes(value)).decode()
    return value


def _schemaless(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {k: _schemaless(v) for k, v in value.items()}
        return [[_schemaless(k), _schemaless(v)] for k, v in value.items()]
    if isinstance(value, (list, tuple)):
        return [_schemaless(v) for v in value]
    if isinstance(value, Struct):
        return _plain(value.schema, value)
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dt.datetime):
        return int(value.timestamp() * 1000)
    raise DataError(f"JSON cannot represent a schemaless {type(value).__name__} value")


_FAST = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=True,
                         default=_default)
