"""Kafka's ``Values`` text forms: Connect values rendered as text, and text parsed back.

``convert_to_string`` renders a value as Kafka's ``Values.convertToString`` does (what
SimpleHeaderConverter writes into a header, and what StringConverter writes for a
non-string): ``null``, ``true``, integers, Java's float/double text, BigDecimal text,
base64 for bytes, ``[a,b]`` for arrays, ``{k:v}`` for maps, ``{"field":v}`` for structs,
strings quoted (``\\`` and ``"`` escaped) only inside those brackets, and ISO-8601 UTC
for temporal values chosen by their epoch milliseconds: below one day
``HH:mm:ss.SSSZ``, a whole number of days ``yyyy-MM-dd``, else
``yyyy-MM-ddTHH:mm:ss.SSSZ``.

``parse_string`` infers a schema and value from such text; see ``values_parser``.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
from typing import Any

from connect.api.data import Schema, Struct, Type
from connect.api.errors import DataError
from connect.converters.java_number import format_double, format_float
from connect.converters.values_parser import parse_string

__all__ = ["convert_to_string", "parse_string"]

_MILLIS_PER_DAY = 86_400_000
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_DATE = dt.date(1970, 1, 1)


def convert_to_string(schema: Schema | None, value: Any) -> str | None:
    """Kafka's ``Values.convertToString``: None stays None. ``schema`` (may be None)
    tells FLOAT32 values, written as Java floats, from FLOAT64 ones."""
    if value is None:
        return None
    return _render(value, schema, embedded=False)


def _render(value: Any, schema: Schema | None, embedded: bool) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return '"' + _escape(value) + '"' if embedded else value
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return format_float(value) if _is(schema, Type.FLOAT32) else format_double(value)
    if isinstance(value, decimal.Decimal):
        # BigDecimal.toString and Python's to-scientific-string agree, but Java has no -0.
        return str(value.copy_abs() if value.is_zero() else value)
    if isinstance(value, bytes | bytearray | memoryview):
        text = base64.b64encode(value).decode("ascii")
        return '"' + text + '"' if embedded else text
    if isinstance(value, list | tuple):
        element = schema.value_schema if _is(schema, Type.ARRAY) else None
        return "[" + ",".join([_render(v, element, True) for v in value]) + "]"
    if isinstance(value, dict):
        is_map = _is(schema, Type.MAP)
        key_schema = schema.key_schema if is_map else None  # type: ignore[union-attr]
        value_schema = schema.value_schema if is_map else None  # type: ignore[union-attr]
        entries = [
            _render(k, key_schema, True) + ":" + _render(v, value_schema, True)
            for k, v in value.items()
        ]
        return "{" + ",".join(entries) + "}"
    if isinstance(value, Struct):
        fields = [
            '"' + _escape(f.name) + '":' + _render(value.get(f), f.schema, True)
            for f in value.schema.fields
        ]
        return "{" + ",".join(fields) + "}"
    if isinstance(value, dt.date | dt.time):
        return _render_temporal(value)
    raise DataError(f"Failed to serialize unexpected value type {type(value).__name__}: {value!r}")


def _is(schema: Schema | None, type_: Type) -> bool:
    return schema is not None and schema.type is type_


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _render_temporal(value: dt.date | dt.time) -> str:
    # Kafka formats a java.util.Date by its epoch milliseconds alone (the schema is not
    # consulted), in UTC here (Kafka uses the JVM's zone, UTC on Connect deployments).
    # Kafka would print an instant before 1970 as a time of day; Ferry prints it as a
    # date or timestamp, so it is not read back as another value.
    if isinstance(value, dt.datetime):
        aware = value if value.utcoffset() is not None else value.replace(tzinfo=dt.UTC)
        millis = (aware - _EPOCH) // dt.timedelta(milliseconds=1)
    elif isinstance(value, dt.date):
        millis = (value - _EPOCH_DATE).days * _MILLIS_PER_DAY
    else:
        if value.utcoffset():
            raise DataError(f"time {value} is not in UTC; Connect times are UTC times of day")
        millis = ((value.hour * 60 + value.minute) * 60 + value.second) * 1000
        millis += value.microsecond // 1000
    instant = _EPOCH + dt.timedelta(milliseconds=millis)
    clock = f"{instant:%H:%M:%S}.{instant.microsecond // 1000:03d}Z"
    if 0 <= millis < _MILLIS_PER_DAY:
        return clock
    day = f"{instant.year:04d}-{instant.month:02d}-{instant.day:02d}"
    return day if millis % _MILLIS_PER_DAY == 0 else day + "T" + clock
