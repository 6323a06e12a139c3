"""Pure conversions between logical-type Python values and their Connect encodings.

These functions know nothing of schemas; ``connect.api.data.logical`` wraps them with
schema checks and ``validate_value`` uses them to check values. Every failure is a
``DataError`` whose message says what to do.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping

from connect.api.errors import DataError

__all__ = [
    "DATE_LOGICAL_NAME",
    "DECIMAL_LOGICAL_NAME",
    "DECIMAL_SCALE_PARAMETER",
    "TIMESTAMP_LOGICAL_NAME",
    "TIME_LOGICAL_NAME",
    "bytes_to_decimal",
    "date_to_days",
    "days_to_date",
    "decimal_scale",
    "decimal_to_bytes",
    "millis_to_time",
    "millis_to_timestamp",
    "time_to_millis",
    "timestamp_to_millis",
    "unscaled_decimal",
]

DECIMAL_LOGICAL_NAME = "org.apache.kafka.connect.data.Decimal"
DATE_LOGICAL_NAME = "org.apache.kafka.connect.data.Date"
TIME_LOGICAL_NAME = "org.apache.kafka.connect.data.Time"
TIMESTAMP_LOGICAL_NAME = "org.apache.kafka.connect.data.Timestamp"
DECIMAL_SCALE_PARAMETER = "scale"

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MILLIS_PER_DAY = 86_400_000
_ONE_MS = dt.timedelta(milliseconds=1)
# A bound on the digits a decimal may be scaled by: 10**shift is computed exactly, and an
# exponent such as 1E999999999 would otherwise exhaust memory.
_MAX_SCALE_SHIFT = 10_000
# Scaling by a power of ten in this context is exact (decimal's default context rounds
# to 28 digits).
_EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX,
                         Emin=decimal.MIN_EMIN, traps=[])
_EPOCH_NAIVE = dt.datetime(1970, 1, 1)


def decimal_scale(parameters: Mapping[str, str] | None) -> int:
    """The ``scale`` parameter of a Decimal schema's parameters."""
    raw = (parameters or {}).get(DECIMAL_SCALE_PARAMETER)
    if raw is None:
        raise DataError(
            "Invalid Decimal schema: the 'scale' parameter is missing; "
            "build Decimal schemas with Decimal.builder(scale)."
        )
    try:
        return int(raw)
    except ValueError:
        raise DataError(f"Invalid Decimal schema: scale {raw!r} is not an integer.") from None


def unscaled_decimal(value: decimal.Decimal, scale: int) -> int:
    """The unscaled integer of ``value`` at ``scale`` (``1.5`` at scale 2 is 150).

    Exact whatever the decimal context: a value with more fractional digits than the scale
    raises ``DataError`` rather than being rounded.
    """
    if not isinstance(value, decimal.Decimal):
        raise DataError(f"expected decimal.Decimal, got {type(value).__name__}")
    if not value.is_finite():
        raise DataError(f"Decimal {value} is not finite; Connect decimals are finite numbers")
    if value.adjusted() + scale <= _MAX_SCALE_SHIFT:
        # The common case without taking the digits apart: scaleb only moves the
        # exponent, and _EXACT never rounds; a value with fractional digits left after
        # scaling takes the path below, which raises.
        scaled = value.scaleb(scale, _EXACT)
        unscaled = int(scaled)
        if unscaled == scaled:
            return unscaled
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)  # finite decimals have an integer exponent
    coefficient = int("".join(map(str, digits)))
    shift = exponent + scale
    if shift > _MAX_SCALE_SHIFT:
        raise DataError(f"Decimal {value} is too large to scale to {scale} fractional digits")
    if shift >= 0:
        unscaled = coefficient * 10**shift
    else:
        unscaled, remainder = divmod(coefficient, 10**-shift)
        if remainder:
            raise DataError(
                f"Decimal {value} has more fractional digits than the schema's scale "
                f"{scale}; round it first, e.g. value.quantize(Decimal(1).scaleb(-{scale}))"
            )
    return -unscaled if sign else unscaled


def decimal_to_bytes(value: decimal.Decimal, scale: int) -> bytes:
    """Kafka's encoding: the unscaled value in big-endian two's complement, minimal length
    (Java's ``BigInteger.toByteArray``)."""
    unscaled = unscaled_decimal(value, scale)
    magnitude = unscaled if unscaled >= 0 else ~unscaled
    return unscaled.to_bytes(magnitude.bit_length() // 8 + 1, "big", signed=True)


def bytes_to_decimal(data: bytes | bytearray | memoryview, scale: int) -> decimal.Decimal:
    """The decimal encoded by ``decimal_to_bytes``; exact, whatever the decimal context."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise DataError(f"expected bytes for an encoded Decimal, got {type(data).__name__}")
    if len(data) == 0:
        raise DataError("an encoded Decimal needs at least one byte")
    unscaled = int.from_bytes(data, "big", signed=True)
    sign, digits, _ = decimal.Decimal(unscaled).as_tuple()
    return decimal.Decimal((sign, digits, -scale))


def date_to_days(value: dt.date) -> int:
    """Days since 1970-01-01."""
    if isinstance(value, dt.datetime) or not isinstance(value, dt.date):
        raise DataError(
            f"expected datetime.date, got {type(value).__name__}; Connect dates have no time "
            "of day (use value.date() for a datetime)"
        )
    return (value - _EPOCH_DATE).days


def days_to_date(days: int) -> dt.date:
    """The date ``days`` days after 1970-01-01."""
    _require_int(days, "an encoded Date")
    try:
        return _EPOCH_DATE + dt.timedelta(days=days)
    except OverflowError:
        raise DataError(
            f"{days} days from 1970-01-01 is outside the years 1-9999 Python dates support"
        ) from None


def time_to_millis(value: dt.time) -> int:
    """Milliseconds since midnight (UTC); sub-millisecond digits are truncated."""
    if not isinstance(value, dt.time):
        raise DataError(f"expected datetime.time, got {type(value).__name__}")
    offset = value.utcoffset()
    if offset:
        raise DataError(
            f"time {value} has UTC offset {offset}; Connect times are times of day in UTC "
            "(convert the full datetime to UTC first)"
        )
    seconds = (value.hour * 60 + value.minute) * 60 + value.second
    return seconds * 1000 + value.microsecond // 1000


def millis_to_time(millis: int) -> dt.time:
    """The (naive) UTC time of day ``millis`` milliseconds after midnight."""
    _require_int(millis, "an encoded Time")
    if not 0 <= millis < _MILLIS_PER_DAY:
        raise DataError(
            f"{millis} is not a time of day; encoded Times are 0 <= millis < {_MILLIS_PER_DAY}"
        )
    seconds, ms = divmod(millis, 1000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return dt.time(hour, minute, second, ms * 1000)


def timestamp_to_millis(value: dt.datetime) -> int:
    """Milliseconds since the epoch. A naive datetime is read as UTC (Connect timestamps
    carry no zone); sub-millisecond digits are truncated towards the past."""
    if type(value) is dt.datetime and value.tzinfo is None:
        return (value - _EPOCH_NAIVE) // _ONE_MS  # as below, one step fewer
    if not isinstance(value, dt.datetime):
        raise DataError(f"expected datetime.datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        value = value.replace(tzinfo=dt.UTC)
    return (value - _EPOCH) // _ONE_MS


def millis_to_timestamp(millis: int) -> dt.datetime:
    """The UTC datetime (timezone-aware) ``millis`` milliseconds after the epoch."""
    _require_int(millis, "an encoded Timestamp")
    try:
        return _EPOCH + dt.timedelta(milliseconds=millis)
    except OverflowError:
        raise DataError(
            f"timestamp {millis} ms is outside the years 1-9999 Python datetimes support"
        ) from None


def _require_int(value: object, what: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise DataError(f"expected int for {what}, got {type(value).__name__}")
