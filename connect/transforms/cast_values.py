"""Java's value conversions, as the Cast transformation performs them.

Kafka's Cast narrows with Java semantics: ``(byte) 300`` is 44, a double is truncated
towards zero and saturates at the target range before narrowing, ``0.5`` is false, and
numbers print as ``Double.toString`` does (``1.0E20``). Python has one int and one float
type, so each Java conversion is spelled out here to give the same results.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
import re
import struct
from typing import Any

from connect.api.data import Schema, Struct, Type
from connect.api.data import logical_values as lv
from connect.api.errors import DataError

__all__ = [
    "SUPPORTED_INPUT_TYPES",
    "SUPPORTED_OUTPUT_TYPES",
    "cast_value",
    "java_float_string",
    "to_float32",
]

SUPPORTED_INPUT_TYPES = (
    Type.INT8,
    Type.INT16,
    Type.INT32,
    Type.INT64,
    Type.FLOAT32,
    Type.FLOAT64,
    Type.BOOLEAN,
    Type.STRING,
    Type.BYTES,
)
SUPPORTED_OUTPUT_TYPES = SUPPORTED_INPUT_TYPES[:-1]

_BITS = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
# Java's Double.parseDouble after trimming: decimal or special values, optional f/d suffix.
_JAVA_FLOAT = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)")
_MILLIS_PER_DAY = 86_400_000


def _type_names(types: tuple[Type, ...]) -> str:
    return "[" + ", ".join(t.name for t in types) + "]"


def _inferred_type(schema: Schema | None, value: Any) -> Type:
    if schema is not None:
        return schema.type
    if isinstance(value, bool):
        return Type.BOOLEAN
    if isinstance(value, int):
        return Type.INT64
    if isinstance(value, float):
        return Type.FLOAT64
    if isinstance(value, str):
        return Type.STRING
    # A schemaless decimal.Decimal is cast like the Decimal logical type it stands for.
    if isinstance(value, bytes | bytearray | memoryview | decimal.Decimal):
        return Type.BYTES
    if isinstance(value, list):
        return Type.ARRAY
    if isinstance(value, dict):
        return Type.MAP
    if isinstance(value, Struct):
        return Type.STRUCT
    raise DataError(
        f"Cast transformation was passed a value of type {type(value).__name__} "
        "which is not supported by Connect's data API"
    )


def cast_value(schema: Schema | None, value: Any, target: Type) -> Any:
    """``value`` (described by ``schema``, or schemaless) cast to ``target``; None stays
    None. ``DataError`` for input types Cast does not read and for values out of range."""
    if value is None:
        return None
    source = _inferred_type(schema, value)
    if source not in SUPPORTED_INPUT_TYPES:
        raise DataError(
            f"Cast transformation does not support casting from {source.name}; supported "
            f"types are {_type_names(SUPPORTED_INPUT_TYPES)}"
        )
    if schema is not None and schema.name is not None and target is not Type.STRING:
        value = _encode_logical(schema, value)
    if target in _BITS:
        return _to_integer(value, target)
    if target is Type.FLOAT32:
        return to_float32(_to_float(value))
    if target is Type.FLOAT64:
        return _to_float(value)
    if target is Type.BOOLEAN:
        return _to_boolean(value)
    if target is Type.STRING:
        float32 = schema is not None and schema.type is Type.FLOAT32
        return _to_string(value, float32)
    raise DataError(f"{target.name} is not supported in the Cast transformation.")


def _encode_logical(schema: Schema, value: Any) -> Any:
    # Dates, times and timestamps are cast from their Connect encodings; decimals stay
    # decimal.Decimal, which the numeric casts read like Java's BigDecimal.
    if schema.name == lv.DATE_LOGICAL_NAME:
        return lv.date_to_days(value)
    if schema.name == lv.TIME_LOGICAL_NAME:
        return lv.time_to_millis(value)
    if schema.name == lv.TIMESTAMP_LOGICAL_NAME:
        return lv.timestamp_to_millis(value)
    return value


def _unexpected(value: Any) -> DataError:
    return DataError(f"Unexpected type in Cast transformation: {type(value).__name__}")


def _out_of_range(value: Any) -> DataError:
    return DataError(f"Value ({value}) was out of range for requested data type")


def _wrap(number: int, bits: int) -> int:
    """Java's narrowing of an integer to ``bits`` bits (two's complement)."""
    half = 1 << (bits - 1)
    return (number + half) % (1 << bits) - half


def _saturating_truncation(number: float, bits: int) -> int:
    """Java's cast of a double to a ``bits``-bit integer: NaN is 0, beyond range saturates."""
    if math.isnan(number):
        return 0
    limit = 1 << (bits - 1)
    if number >= limit:
        return limit - 1
    if number <= -limit:
        return -limit
    return int(number)


def _to_integer(value: Any, target: Type) -> int:
    bits = _BITS[target]
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return _wrap(value, bits)
    if isinstance(value, float):
        # (long) d for INT64; (int) d, then narrowed, for the others.
        return _wrap(_saturating_truncation(value, 64 if bits == 64 else 32), bits)
    if isinstance(value, decimal.Decimal):
        # BigDecimal.byteValue() is (byte) intValue(): low 32 bits, then narrowed.
        return _wrap(_wrap(int(value), 64 if bits == 64 else 32), bits)
    if isinstance(value, str):
        if not _JAVA_INTEGER.fullmatch(value):
            raise _out_of_range(value)
        number = int(value)
        if number != _wrap(number, bits):
            raise _out_of_range(value)
        return number
    raise _unexpected(value)


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float | decimal.Decimal):
        try:
            return float(value)
        except OverflowError:
            return math.copysign(math.inf, value)
    if isinstance(value, str):
        text = value.strip()
        if not _JAVA_FLOAT.fullmatch(text):
            raise _out_of_range(value)
        return float(text.rstrip("fFdD").replace("Infinity", "inf"))
    raise _unexpected(value)


def to_float32(number: float) -> float:
    """``number`` rounded to the nearest float32, as Java's ``(float)`` does."""
    try:
        return float(struct.unpack("f", struct.pack("f", number))[0])
    except OverflowError:
        return math.copysign(math.inf, number)


def _to_boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float | decimal.Decimal):
        return _to_integer(value, Type.INT64) != 0
    if isinstance(value, str):
        return value.lower() == "true"
    raise _unexpected(value)


def _to_string(value: Any, float32: bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_float_string(value, float32)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dt.datetime):
        return _timestamp_string(lv.timestamp_to_millis(value))
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.time):
        return value.strftime("%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    return str(value)


def _timestamp_string(millis: int) -> str:
    # Kafka's Values.dateFormatFor picks the format from the instant itself: midnight UTC
    # prints as a date, an instant on 1970-01-01 as a time of day.
    moment = lv.millis_to_timestamp(millis)
    if 0 <= millis < _MILLIS_PER_DAY:
        return _to_string(moment.time(), False)
    if millis % _MILLIS_PER_DAY == 0:
        return moment.date().isoformat()
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def java_float_string(number: float, float32: bool = False) -> str:
    """``Double.toString`` (or ``Float.toString`` with ``float32``): the shortest digits
    that read back as the same value, plain between 10^-3 and 10^7, else ``d.dddE±n``."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "-0.0" if math.copysign(1.0, number) < 0 else "0.0"
    shortest = _shortest_float32(number) if float32 else repr(abs(number))
    _, digit_tuple, exponent = decimal.Decimal(shortest).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    adjusted = exponent + len(digits) - 1
    sign = "-" if number < 0 else ""
    if -3 <= adjusted < 7:
        if adjusted >= 0:
            whole = digits[: adjusted + 1].ljust(adjusted + 1, "0")
            fraction = digits[adjusted + 1 :] or "0"
            return f"{sign}{whole}.{fraction}"
        return f"{sign}0.{'0' * (-adjusted - 1)}{digits}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{adjusted}"


def _shortest_float32(number: float) -> str:
    magnitude = abs(number)
    for precision in range(1, 10):
        text = f"{magnitude:.{precision}e}"
        if to_float32(float(text)) == magnitude:
            return text
    return repr(magnitude)
