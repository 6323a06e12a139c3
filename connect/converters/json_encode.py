"""Connect values to JSON text exactly as Kafka's JsonConverter (Jackson) writes them.

``JsonEncoder.compile(schema)`` builds, once per schema, a function from a value to its
compact JSON text; the converter caches it with the schema's JSON. Values follow
Kafka's ``convertToJson``: BYTES as base64 with padding; maps with STRING keys as
objects and other maps as ``[[key,value],...]``; structs as objects in field order;
FLOAT64 and FLOAT32 as Java's ``Double.toString``/``Float.toString`` (non-finite values
as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``, Jackson's default); logical
types first encoded (Decimal as base64 bytes or, with ``decimal.format=NUMERIC``, a
number; Date, Time as int32; Timestamp as int64). A None value becomes the schema's
default (when ``replace.null.with.default``), else ``null`` if the schema is optional,
else a ``DataError``.
"""

from __future__ import annotations

import base64
import decimal
import math
from collections.abc import Callable
from typing import Any

from connect.api.data import Date, Decimal, Schema, Struct, Time, Timestamp, Type
from connect.api.data.logical_values import decimal_to_bytes, timestamp_to_millis
from connect.api.errors import DataError
from connect.converters.java_number import format_double, format_float
from connect.converters.json_schema import quote
from connect.converters.json_struct import compile_struct_encoder

__all__ = ["Encode", "JsonEncoder"]

#: Turns one value (or None) into its JSON text.
Encode = Callable[[Any], str]

_REQUIRED_NULL = "Conversion error: null value for field that is required and has no default value"
_INT_RANGES: dict[Type, tuple[int, int]] = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}
_BYTES_TYPES = (bytes, bytearray, memoryview)


def _wrong_type(schema_type: str, value: Any) -> DataError:
    return DataError(f"Invalid type for {schema_type}: {type(value).__name__} ({value!r:.80})")


def _json_double(value: float) -> str:
    text = format_double(value)
    return text if math.isfinite(value) else '"' + text + '"'


def _json_float(value: float) -> str:
    text = format_float(value)
    return '"' + text + '"' if text[-1] in "Ny" else text  # NaN, [-]Infinity


def _base64(value: bytes | bytearray | memoryview) -> str:
    return '"' + base64.b64encode(value).decode("ascii") + '"'


class JsonEncoder:
    """Compiles per-schema encoders for one converter configuration. Immutable; the
    compiled functions hold no state, so they may be cached and shared.

    Each encoder tests the common exact Python type first and handles None, subclasses
    and wrong types after it, so a valid non-null value costs one type test.
    """

    __slots__ = ("_decimal_numeric", "_replace_null_with_default")

    def __init__(self, *, decimal_numeric: bool, replace_null_with_default: bool) -> None:
        self._decimal_numeric = decimal_numeric
        self._replace_null_with_default = replace_null_with_default

    def compile(self, schema: Schema) -> Encode:
        """The encoder of values of ``schema``, None included."""
        return self._compile(schema, self._on_null(schema))

    def default_to_json(self, schema: Schema, value: Any) -> str:
        """A schema's default value as JSON text (for the schema's ``"default"``)."""
        return self._compile(schema, _null_is_an_error)(value)

    def _on_null(self, schema: Schema) -> _OnNull:
        if self._replace_null_with_default and schema.default_value is not None:
            default_text = self.default_to_json(schema, schema.default_value)
            return lambda: default_text
        return _null_literal if schema.optional else _null_is_an_error

    def _compile(self, schema: Schema, on_null: _OnNull) -> Encode:
        logical = _LOGICAL.get(schema.name) if schema.name is not None else None
        if logical is not None:
            return logical(self, schema, on_null)
        type_ = schema.type
        if type_ in _INT_RANGES:
            return _int_encoder(type_, on_null)
        if type_ is Type.FLOAT64:
            return _float_encoder("FLOAT64", _json_double, on_null)
        if type_ is Type.FLOAT32:
            return _float_encoder("FLOAT32", _json_float, on_null)
        if type_ is Type.STRING:
            return _string_encoder(on_null)
        if type_ is Type.BOOLEAN:
            return _boolean_encoder(on_null)
        if type_ is Type.BYTES:
            return _bytes_encoder(on_null)
        if type_ is Type.ARRAY:
            return _array_encoder(self.compile(schema.value_schema), on_null)
        if type_ is Type.MAP:
            return self._map_encoder(schema, on_null)
        return self._struct_encoder(schema, on_null)

    def _map_encoder(self, schema: Schema, on_null: _OnNull) -> Encode:
        key = self.compile(schema.key_schema)
        item = self.compile(schema.value_schema)
        as_object = schema.key_schema.type is Type.STRING

        def encode(value: Any) -> str:
            if not isinstance(value, dict):
                if value is None:
                    return on_null()
                raise _wrong_type("MAP", value)
            if as_object:
                entries = [_key_text(key, k) + ":" + item(v) for k, v in value.items()]
                return "{" + ",".join(entries) + "}"
            pairs = ["[" + key(k) + "," + item(v) + "]" for k, v in value.items()]
            return "[" + ",".join(pairs) + "]"

        return encode

    def _struct_encoder(self, schema: Schema, on_null: _OnNull) -> Encode:
        # Values as put, without defaults: each field's encoder applies its default only
        # when replace.null.with.default says so (KAFKA-8713).
        fields = schema.fields
        return compile_struct_encoder(
            schema, [self.compile(f.schema) for f in fields], on_null,
            null_is_null=[f.schema.optional and not (
                self._replace_null_with_default and f.schema.default_value is not None)
                for f in fields])

    def encode_schemaless(self, value: Any) -> str:
        """A value without a schema, typed by its Python class as Kafka types Java
        objects: int as an integer, float as a double, dict as an object when every key
        is a str and as ``[[key,value],...]`` otherwise."""
        if value is None:
            return "null"
        if value is True:
            return "true"
        if value is False:
            return "false"
        if isinstance(value, str):
            return quote(value)
        if isinstance(value, int):
            return int.__repr__(value)
        if isinstance(value, float):
            return _json_double(value)
        if isinstance(value, _BYTES_TYPES):
            return _base64(value)
        if isinstance(value, list | tuple):
            return "[" + ",".join([self.encode_schemaless(v) for v in value]) + "]"
        if isinstance(value, dict):
            if all(isinstance(k, str) for k in value):
                pairs = [quote(k) + ":" + self.encode_schemaless(v) for k, v in value.items()]
                return "{" + ",".join(pairs) + "}"
            entries = [
                "[" + self.encode_schemaless(k) + "," + self.encode_schemaless(v) + "]"
                for k, v in value.items()
            ]
            return "[" + ",".join(entries) + "]"
        if isinstance(value, Struct):
            raise DataError(
                "Mismatching schema: a Struct needs its schema; pass value.schema as the "
                "schema to convert it"
            )
        raise DataError(
            f"Python type {type(value).__name__} has no corresponding schema type; "
            "pass a schema to convert logical values (Decimal, Date, Time, Timestamp)"
        )

    # -- logical types ------------------------------------------------------------------

    def _decimal_encoder(self, schema: Schema, on_null: _OnNull) -> Encode:
        numeric = self._decimal_numeric
        try:
            scale: int | None = Decimal.scale(schema)
        except DataError:
            scale = None  # raised per value, by from_logical

        def encode(value: Any) -> str:
            if not isinstance(value, decimal.Decimal):
                if value is None:
                    return on_null()
                raise DataError(
                    f"Invalid type for Decimal, expected decimal.Decimal but was "
                    f"{type(value).__name__}"
                )
            encoded = (Decimal.from_logical(schema, value) if scale is None
                       else decimal_to_bytes(value, scale))
            if not numeric:
                return _base64(encoded)
            # Written at the schema's scale, as BigDecimal.toString writes Kafka's value
            # (both use scientific notation for very small or negative scales).
            return str(Decimal.to_logical(schema, encoded))

        return encode

    def _temporal_encoder(self, schema: Schema, on_null: _OnNull) -> Encode:
        to_int = _TEMPORAL[schema.name]  # type: ignore[index]
        if schema.name == Timestamp.LOGICAL_NAME:
            # The schema is known to be a Timestamp: no logical-name check per value.
            def encode_timestamp(value: Any) -> str:
                if value is None:
                    return on_null()
                return str(timestamp_to_millis(value))

            return encode_timestamp

        def encode(value: Any) -> str:
            if value is None:
                return on_null()
            return str(to_int(schema, value))

        return encode


#: What an encoder writes for None: a default's text, ``null``, or a raised DataError.
_OnNull = Callable[[], str]


def _null_literal() -> str:
    return "null"


def _null_is_an_error() -> str:
    raise DataError(_REQUIRED_NULL)


def _key_text(key: Encode, k: Any) -> str:
    # Jackson keys objects by the key node's asText(): a string key as itself, a null
    # key (optional key schema) as "null".
    if type(k) is str:
        return quote(k)
    text = key(k)
    return '"null"' if text == "null" else text


def _int_encoder(type_: Type, on_null: _OnNull) -> Encode:
    name = type_.name
    low, high = _INT_RANGES[type_]

    def encode(value: Any) -> str:
        if type(value) is int and low <= value <= high:
            return str(value)
        if value is None:
            return on_null()
        if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
            return int.__repr__(value)
        raise _wrong_type(name, value)

    return encode


def _float_encoder(name: str, to_text: Callable[[float], str], on_null: _OnNull) -> Encode:
    def encode(value: Any) -> str:
        if isinstance(value, float):
            return to_text(value)
        if value is None:
            return on_null()
        raise _wrong_type(name, value)

    return encode


def _string_encoder(on_null: _OnNull) -> Encode:
    def encode(value: Any) -> str:
        if type(value) is str:
            return quote(value)
        if value is None:
            return on_null()
        if isinstance(value, str):
            return quote(str.__str__(value))
        raise _wrong_type("STRING", value)

    return encode


def _boolean_encoder(on_null: _OnNull) -> Encode:
    def encode(value: Any) -> str:
        if value is True:
            return "true"
        if value is False:
            return "false"
        if value is None:
            return on_null()
        raise _wrong_type("BOOLEAN", value)

    return encode


def _bytes_encoder(on_null: _OnNull) -> Encode:
    def encode(value: Any) -> str:
        if isinstance(value, _BYTES_TYPES):
            return _base64(value)
        if value is None:
            return on_null()
        raise _wrong_type("BYTES", value)

    return encode


def _array_encoder(element: Encode, on_null: _OnNull) -> Encode:
    def encode(value: Any) -> str:
        if isinstance(value, list | tuple):
            return "[" + ",".join(map(element, value)) + "]"
        if value is None:
            return on_null()
        raise _wrong_type("ARRAY", value)

    return encode


_TEMPORAL: dict[str, Callable[[Schema, Any], int]] = {
    Date.LOGICAL_NAME: Date.from_logical,
    Time.LOGICAL_NAME: Time.from_logical,
    Timestamp.LOGICAL_NAME: Timestamp.from_logical,
}
_LOGICAL: dict[str, Callable[[JsonEncoder, Schema, _OnNull], Encode]] = {
    Decimal.LOGICAL_NAME: JsonEncoder._decimal_encoder,
    Date.LOGICAL_NAME: JsonEncoder._temporal_encoder,
    Time.LOGICAL_NAME: JsonEncoder._temporal_encoder,
    Timestamp.LOGICAL_NAME: JsonEncoder._temporal_encoder,
}
