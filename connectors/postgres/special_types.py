"""Column types beyond numbers, text and time, mapped as Debezium 3.2's
``PostgresValueConverter`` maps them: ``interval`` (``interval.handling.mode``),
``point``, ``money``, ``bit``/``varbit`` and the built-in range types.

Each ``*_builder`` returns ``(SchemaBuilder, converter of the PostgreSQL text form,
TOAST placeholder)`` like ``TypeMapper._builder``. The text forms are those of the
session ``PostgresConfig.conninfo`` sets up (``IntervalStyle=iso_8601``, UTC, ISO dates).
"""

from __future__ import annotations

import decimal
import re
import struct
from collections.abc import Callable
from typing import Any

from connect.api import Decimal, Schema, SchemaBuilder, Struct

__all__ = ["RANGES", "bits_builder", "interval_builder", "money_builder", "point_builder"]

Built = tuple[SchemaBuilder, Callable[[str], Any], Any]

INTERVAL, POINT, MONEY, BIT, VARBIT = 1186, 600, 790, 1560, 1562
#: int4range, numrange, tsrange, tstzrange, daterange, int8range: their text, as Debezium.
RANGES = frozenset({3904, 3906, 3908, 3910, 3912, 3926})

#: Debezium's MicroDuration.DAYS_PER_MONTH_AVG: a month of an interval is 365.25/12 days.
DAYS_PER_MONTH_AVG = 365.25 / 12.0

_ISO_INTERVAL = re.compile(
    r"P(?:(-?\d+)Y)?(?:(-?\d+)M)?(?:(-?\d+)D)?"
    r"(?:T(?:(-?\d+)H)?(?:(-?\d+)M)?(?:(-?\d+(?:\.\d+)?)S)?)?")


def _interval_parts(text: str) -> tuple[int, int, int, int, int, float]:
    """``P1Y2M3DT4H5M6.5S`` (IntervalStyle iso_8601) into years, months, days, hours,
    minutes, seconds, each with its own sign, as PostgreSQL keeps them."""
    m = _ISO_INTERVAL.fullmatch(text)
    if m is None:
        raise ValueError(f"not an ISO 8601 interval: {text!r}")
    y, mo, d, h, mi, s = m.groups()
    return (int(y or 0), int(mo or 0), int(d or 0), int(h or 0), int(mi or 0),
            float(s or 0))


def micro_duration(text: str) -> int:
    """Debezium's ``MicroDuration.durationMicros``: in floating point, months as
    365.25/12 days, truncated to whole microseconds."""
    y, mo, d, h, mi, s = _interval_parts(text)
    days = (y * 12 + mo) * DAYS_PER_MONTH_AVG + d
    seconds = ((days * 24 + h) * 60 + mi) * 60 + s
    return int(seconds * 1e6)


def iso_interval(text: str) -> str:
    """Debezium's ``Interval.toIsoString``: every field spelled out, seconds without
    trailing zeros (at most 9 fraction digits): ``P1Y2M3DT4H5M6.5S``."""
    y, mo, d, h, mi, s = _interval_parts(text)
    seconds = decimal.Decimal(repr(s))
    if -seconds.as_tuple().exponent > 9:  # type: ignore[operator]
        seconds = seconds.quantize(decimal.Decimal("1E-9"), rounding=decimal.ROUND_DOWN)
    plain = format(seconds.normalize(), "f")
    return f"P{y}Y{mo}M{d}DT{h}H{mi}M{plain}S"


def interval_builder(mode: str, placeholder: str) -> Built:
    if mode == "string":
        return (SchemaBuilder.string().name("io.debezium.time.Interval").version(1),
                iso_interval, placeholder)
    return (SchemaBuilder.int64().name("io.debezium.time.MicroDuration").version(1),
            micro_duration, None)


_WKB_POINT = struct.Struct("<BIdd")


def point_builder() -> Built:
    """``(x,y)`` as Debezium's ``io.debezium.data.geometry.Point``: the coordinates and
    their little-endian WKB, no SRID."""
    builder = (SchemaBuilder.struct().name("io.debezium.data.geometry.Point").version(1)
               .doc("Geometry (POINT)")
               .field("x", Schema.FLOAT64_SCHEMA).field("y", Schema.FLOAT64_SCHEMA)
               .field("wkb", Schema.OPTIONAL_BYTES_SCHEMA)
               .field("srid", Schema.OPTIONAL_INT32_SCHEMA))
    schema = builder.build()

    def convert(text: str) -> Struct:
        x_text, _, y_text = text.strip("()").partition(",")
        x, y = float(x_text), float(y_text)
        return Struct.from_values(schema, [x, y, _WKB_POINT.pack(1, 1, x, y), None],
                                  validate=False)
    return builder, convert, None


_NOT_AMOUNT = re.compile(r"[^0-9.\-]")


def money_builder(decimal_mode: str, fraction_digits: int, placeholder: str) -> Built:
    """``money`` per ``decimal.handling.mode`` with ``money.fraction.digits`` as the
    scale. The text form is the server's ``lc_monetary`` format; currency symbols and
    group separators are dropped (a locale with ',' as the decimal mark is not read)."""
    quantum = decimal.Decimal(1).scaleb(-fraction_digits)

    def amount(text: str) -> decimal.Decimal:
        negative = text.startswith("(") or "-" in text
        value = decimal.Decimal(_NOT_AMOUNT.sub("", text).replace("-", ""))
        value = -value if negative else value
        return value.quantize(quantum, rounding=decimal.ROUND_HALF_UP)
    if decimal_mode == "double":
        return SchemaBuilder.float64(), lambda t: float(amount(t)), None
    if decimal_mode == "string":
        return SchemaBuilder.string(), lambda t: format(amount(t), "f"), placeholder
    return Decimal.builder(fraction_digits), amount, None


def _bits(text: str) -> bytes:
    """A bit string as Debezium's ``Bits``: the bits as an integer (the last bit is bit
    0), little-endian, in as few bytes as it takes."""
    n = int(text, 2) if text else 0
    return n.to_bytes((n.bit_length() + 7) // 8, "little")


def bits_builder(typmod: int) -> Built:
    """``bit(1)`` is a boolean; longer bit strings are ``io.debezium.data.Bits`` with
    their declared length (an unbounded ``varbit`` gets PostgreSQL's maximum)."""
    length = typmod if typmod > 0 else 2**31 - 1
    if length == 1:
        return SchemaBuilder.boolean(), lambda t: t == "1", None
    return (SchemaBuilder.bytes().name("io.debezium.data.Bits").version(1)
            .parameter("length", str(length)), _bits, None)
