"""Parsed JSON to Connect values for a schema: Kafka's JsonConverter ``convertToConnect``.

``JsonDecoder.compile(schema)`` builds, once per schema, a function from a parsed JSON
value (``json.loads`` output) to the Connect value. A JSON null becomes the schema's
default (with ``replace.null.with.default``), else None if the schema is optional, else
a ``DataError``. Where Kafka's Jackson reads silently (a string read as a boolean gives
false, 300 read as int8 wraps to 44, 1.7 read as an int truncates), Ferry raises
``DataError``: a wrong value is reported, never altered. Float fields also accept the
strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` that Jackson writes for them.

Numbers of schemas with FLOAT32 or Decimal parts are parsed as ``decimal.Decimal``
(``EXACT_JSON``), as Kafka parses floats with ``USE_BIG_DECIMAL_FOR_FLOATS``: a NUMERIC
decimal keeps every digit, and a float32 is rounded once, from the decimal text.
"""

from __future__ import annotations

import base64
import binascii
import decimal
import json
import math
from collections.abc import Callable
from typing import Any, NoReturn

import orjson

from connect.api.data import Date, Decimal, Schema, Struct, Time, Timestamp, Type
from connect.api.errors import DataError
from connect.converters.java_number import to_float32

__all__ = [
    "EXACT_JSON",
    "FAST_JSON",
    "NOT_PARSED",
    "Decode",
    "JsonDecoder",
    "needs_exact_numbers",
    "parse_schemaless",
]

#: Turns one parsed JSON value (or None) into a Connect value.
Decode = Callable[[Any], Any]


def _reject_constant(name: str) -> NoReturn:
    # Jackson rejects the non-standard NaN/Infinity literals Python's parser would accept.
    raise ValueError(f"non-standard JSON literal {name}")


#: Parses floats as Python floats: schemaless data and schemas without FLOAT32/Decimal.
FAST_JSON = json.JSONDecoder(parse_constant=_reject_constant)
#: Parses floats as ``decimal.Decimal``, exactly as written.
EXACT_JSON = json.JSONDecoder(parse_float=decimal.Decimal, parse_constant=_reject_constant)

#: What ``parse_schemaless`` returns when only ``FAST_JSON`` can answer.
NOT_PARSED: Any = object()
# orjson reads an integer beyond [-2**63, 2**64) as a float where FAST_JSON keeps the int:
# a float at least this large may be such an integer, and the document is parsed again.
_HUGE = float(2**63)


def parse_schemaless(data: bytes | bytearray | memoryview) -> Any:
    """A UTF-8 JSON document parsed as ``FAST_JSON`` parses its text, or ``NOT_PARSED``.

    orjson parses ~1 KiB in a fifth of the time of the standard parser, the main cost of
    reading schemaless records. It refuses all the standard parser refuses (and more:
    ``1e400``, escaped lone surrogates, other encodings, deep nesting), and where both
    accept a document they agree except for integers beyond 64 bits, which orjson
    rounds to floats; those, and whatever it refuses, return ``NOT_PARSED`` so the caller
    takes the standard parser with its errors and results.
    """
    try:
        node = orjson.loads(data)
    except orjson.JSONDecodeError:
        return NOT_PARSED
    return node if _no_huge_float(node) else NOT_PARSED


def _no_huge_float(node: Any) -> bool:
    t = type(node)
    if t is dict:
        items: Any = node.values()
    elif t is list:
        items = node
    else:
        return t is not float or -_HUGE < node < _HUGE
    for item in items:
        t = type(item)
        if t is float:
            if not -_HUGE < item < _HUGE:
                return False
        elif (t is dict or t is list) and not _no_huge_float(item):
            return False
    return True

_INT_RANGES = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def needs_exact_numbers(schema: Schema | None) -> bool:
    """Whether ``schema`` has a FLOAT32 or Decimal part, so its data must be parsed
    with ``EXACT_JSON``."""
    if schema is None:
        return False
    if schema.type is Type.FLOAT32 or schema.name == Decimal.LOGICAL_NAME:
        return True
    if schema.type is Type.STRUCT:
        return any(needs_exact_numbers(f.schema) for f in schema.fields)
    if schema.type is Type.MAP:
        return needs_exact_numbers(schema.key_schema) or needs_exact_numbers(schema.value_schema)
    if schema.type is Type.ARRAY:
        return needs_exact_numbers(schema.value_schema)
    return False


def floats_from_decimals(node: Any) -> Any:
    """A parsed JSON value with every ``decimal.Decimal`` made a float, as Kafka reads
    numbers without a schema (as doubles)."""
    if isinstance(node, decimal.Decimal):
        return float(node)
    if isinstance(node, list):
        return [floats_from_decimals(v) for v in node]
    if isinstance(node, dict):
        return {k: floats_from_decimals(v) for k, v in node.items()}
    return node


def _invalid(what: str, node: Any) -> DataError:
    shown = json.dumps(node, default=str)
    return DataError(f"Invalid JSON for {what}: {shown:.80}")


class JsonDecoder:
    """Compiles per-schema decoders for one converter configuration. Immutable; the
    compiled functions hold no state, so they may be cached and shared.

    Each decoder tests the JSON type it expects first and handles null and errors after
    it, so a valid non-null value costs one type test.
    """

    __slots__ = ("_replace_null_with_default",)

    def __init__(self, *, replace_null_with_default: bool) -> None:
        self._replace_null_with_default = replace_null_with_default

    def compile(self, schema: Schema) -> Decode:
        """The decoder of JSON values of ``schema``, null included."""
        return self._compile(schema, self._on_null(schema))

    def default_from_json(self, schema: Schema, node: Any) -> Any:
        """A schema's ``"default"`` as a Connect value (None for JSON null)."""
        on_null = _null_value if schema.optional else _required(schema)
        return self._compile(schema, on_null)(node)

    def _on_null(self, schema: Schema) -> _OnNull:
        default = schema.default_value
        if self._replace_null_with_default and default is not None:
            return lambda: default
        return _null_value if schema.optional else _required(schema)

    def _compile(self, schema: Schema, on_null: _OnNull) -> Decode:
        logical = _LOGICAL.get(schema.name) if schema.name is not None else None
        if logical is not None:
            return logical(schema, on_null)
        type_ = schema.type
        if type_ in _INT_RANGES:
            return _int_decoder(type_, on_null)
        if type_ is Type.FLOAT64:
            return _with_null(_float64, on_null)
        if type_ is Type.FLOAT32:
            return _with_null(_float32, on_null)
        if type_ is Type.STRING:
            return _string_decoder(on_null)
        if type_ is Type.BOOLEAN:
            return _boolean_decoder(on_null)
        if type_ is Type.BYTES:
            return _with_null(_bytes, on_null)
        if type_ is Type.ARRAY:
            return _array_decoder(self.compile(schema.value_schema), on_null)
        if type_ is Type.MAP:
            return self._map_decoder(schema, on_null)
        return self._struct_decoder(schema, on_null)

    def _map_decoder(self, schema: Schema, on_null: _OnNull) -> Decode:
        item = self.compile(schema.value_schema)
        if schema.key_schema.type is Type.STRING:
            # Kafka keeps the JSON object's keys as they are, whatever the key schema's
            # name or default.
            def from_object(node: Any) -> Any:
                if type(node) is dict:
                    return {k: item(v) for k, v in node.items()}
                if node is None:
                    return on_null()
                raise DataError(
                    "Maps with string fields should be encoded as JSON objects, "
                    f"but found {_json_type(node)}"
                )

            return from_object
        if not schema.key_schema.type.is_primitive:
            raise DataError(
                f"Map keys of type {schema.key_schema.type.value} cannot be Python dict "
                "keys; Ferry supports maps with primitive or logical keys"
            )
        key = self.compile(schema.key_schema)

        def from_pairs(node: Any) -> Any:
            if type(node) is not list:
                if node is None:
                    return on_null()
                raise DataError(
                    "Maps with non-string fields should be encoded as JSON array of tuples, "
                    f"but found {_json_type(node)}"
                )
            result = {}
            for entry in node:
                if type(entry) is not list or len(entry) != 2:
                    raise DataError(f"Found invalid map entry instead of [key, value]: {entry!r}")
                result[key(entry[0])] = item(entry[1])
            return result

        return from_pairs

    def _struct_decoder(self, schema: Schema, on_null: _OnNull) -> Decode:
        fields = [(f.name, self.compile(f.schema)) for f in schema.fields]

        def decode(node: Any) -> Any:
            if type(node) is not dict:
                if node is None:
                    return on_null()
                raise DataError(
                    f"Structs should be encoded as JSON objects, but found {_json_type(node)}"
                )
            # Each field decoder returns only values valid for its field's schema (or
            # raises), so the struct is filled without validating them a second time.
            get = node.get
            return Struct.from_values(schema, [dec(get(name)) for name, dec in fields],
                                      validate=False)

        return decode


#: What a decoder returns for JSON null: a default, None, or a raised DataError.
_OnNull = Callable[[], Any]


def _null_value() -> None:
    return None


def _required(schema: Schema) -> _OnNull:
    message = f"Invalid null value for required {schema.type.name} field"

    def on_null() -> NoReturn:
        raise DataError(message)

    return on_null


def _with_null(convert: Decode, on_null: _OnNull) -> Decode:
    return lambda node: on_null() if node is None else convert(node)


def _json_type(node: Any) -> str:
    if node is None:
        return "NULL"
    if isinstance(node, bool):
        return "BOOLEAN"
    if isinstance(node, int | float | decimal.Decimal):
        return "NUMBER"
    if isinstance(node, str):
        return "STRING"
    return "ARRAY" if isinstance(node, list) else "OBJECT"


def _int_decoder(type_: Type, on_null: _OnNull) -> Decode:
    what = f"an {type_.name} value"
    low, high = _INT_RANGES[type_]

    def decode(node: Any) -> Any:
        if type(node) is int and low <= node <= high:
            return node
        if node is None:
            return on_null()
        raise _invalid(what, node)

    return decode


def _float64(node: Any) -> float:
    kind = type(node)
    if kind is float:
        return node
    if kind is int or kind is decimal.Decimal:
        try:
            return float(node)
        except OverflowError:  # an integer beyond double range, as Java's doubleValue()
            return math.copysign(math.inf, node)
    if kind is str and node in _NON_FINITE:
        return _NON_FINITE[node]
    raise _invalid("a FLOAT64 value", node)


def _float32(node: Any) -> float:
    kind = type(node)
    if kind is decimal.Decimal:
        return _decimal_to_float32(node)
    if kind is int:
        return _decimal_to_float32(decimal.Decimal(node))
    if kind is float:
        return to_float32(node)
    if kind is str and node in _NON_FINITE:
        return _NON_FINITE[node]
    raise _invalid("a FLOAT32 value", node)


def _decimal_to_float32(exact: decimal.Decimal) -> float:
    # Rounding the decimal to a double and then to float32 rounds twice. That differs
    # from rounding once only when the double lands exactly halfway between two float32s
    # (the second rounding then sees a tie the decimal did not have); the decimal itself
    # then says which way to go.
    try:
        double = float(exact)
    except OverflowError:
        return math.copysign(math.inf, exact)
    single = to_float32(double)
    if single == double or math.isinf(single):
        return single
    other = to_float32(2 * double - single)
    if other == single or single + other != 2 * double:
        return single  # not a midpoint
    exact_double = decimal.Decimal(double)
    if exact == exact_double:
        return single  # a true tie, already rounded half to even
    return other if (exact > exact_double) == (other > single) else single


def _string_decoder(on_null: _OnNull) -> Decode:
    def decode(node: Any) -> Any:
        if type(node) is str:
            return node
        if node is None:
            return on_null()
        raise _invalid("a STRING value", node)

    return decode


def _boolean_decoder(on_null: _OnNull) -> Decode:
    def decode(node: Any) -> Any:
        if node is True or node is False:
            return node
        if node is None:
            return on_null()
        raise _invalid("a BOOLEAN value", node)

    return decode


def _bytes(node: Any) -> bytes:
    if type(node) is str:
        try:
            return base64.b64decode(node, validate=True)
        except (binascii.Error, ValueError):
            raise DataError("Invalid bytes field: not standard base64 with padding") from None
    raise _invalid("a BYTES value (base64 text)", node)


def _array_decoder(element: Decode, on_null: _OnNull) -> Decode:
    def decode(node: Any) -> Any:
        if type(node) is list:
            return [element(v) for v in node]
        if node is None:
            return on_null()
        raise _invalid("an ARRAY value", node)

    return decode


def _decimal_decoder(schema: Schema, on_null: _OnNull) -> Decode:
    def decode(node: Any) -> Any:
        kind = type(node)
        if kind is str:
            return Decimal.to_logical(schema, _bytes(node))
        if kind is int or kind is decimal.Decimal or kind is float:
            exact = decimal.Decimal(repr(node)) if kind is float else decimal.Decimal(node)
            # Rescaled exactly to the schema's scale; a value that would need rounding
            # is a DataError (Kafka would keep the number's own scale).
            return Decimal.to_logical(schema, Decimal.from_logical(schema, exact))
        if node is None:
            return on_null()
        raise DataError(
            "Invalid type for Decimal, underlying representation should be numeric or "
            f"bytes but was {_json_type(node)}"
        )

    return decode


def _temporal_decoder(schema: Schema, on_null: _OnNull) -> Decode:
    name = schema.name
    to_logical = _TEMPORAL[name]  # type: ignore[index]
    low, high = _INT_RANGES[schema.type]

    def decode(node: Any) -> Any:
        if type(node) is int and low <= node <= high:
            return to_logical(schema, node)
        if node is None:
            return on_null()
        raise _invalid(f"a {name} value (an integer)", node)

    return decode


_TEMPORAL: dict[str, Callable[[Schema, int], Any]] = {
    Date.LOGICAL_NAME: Date.to_logical,
    Time.LOGICAL_NAME: Time.to_logical,
    Timestamp.LOGICAL_NAME: Timestamp.to_logical,
}
_LOGICAL: dict[str, Callable[[Schema, _OnNull], Decode]] = {
    Decimal.LOGICAL_NAME: _decimal_decoder,
    Date.LOGICAL_NAME: _temporal_decoder,
    Time.LOGICAL_NAME: _temporal_decoder,
    Timestamp.LOGICAL_NAME: _temporal_decoder,
}
