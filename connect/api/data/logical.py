"""Connect's logical types: Decimal, Date, Time and Timestamp.

A logical type is a primitive schema with a well-known name (and, for Decimal, a
``scale`` parameter). Plugins hold logical values as Python objects (``decimal.Decimal``,
``datetime.date``, ``datetime.time``, ``datetime.datetime``); converters call
``from_logical`` to encode them and ``to_logical`` to decode them:

=========  =======  ================================================================
Decimal    BYTES    unscaled value, big-endian two's complement; parameter ``scale``
Date       INT32    days since 1970-01-01
Time       INT32    milliseconds since midnight, UTC
Timestamp  INT64    milliseconds since 1970-01-01T00:00:00Z
=========  =======  ================================================================

The names are Kafka's, so data round-trips with Java Connect workers and converters.
These classes are namespaces and are not instantiated (``Decimal`` here is not
``decimal.Decimal``).
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import ClassVar

from connect.api.data import logical_values as lv
from connect.api.data.builder import SchemaBuilder
from connect.api.data.schema import Schema
from connect.api.errors import DataError

__all__ = ["Date", "Decimal", "Time", "Timestamp"]


def _check(schema: Schema, logical_name: str, kind: str) -> None:
    if schema.name != logical_name:
        raise DataError(
            f"Requested conversion of {kind} object but the schema does not match: "
            f"expected the logical name {logical_name!r}, got {schema.name!r}"
        )


class Decimal:
    """Arbitrary-precision decimals with a fixed scale, encoded as BYTES."""

    LOGICAL_NAME: ClassVar[str] = lv.DECIMAL_LOGICAL_NAME
    SCALE_FIELD: ClassVar[str] = lv.DECIMAL_SCALE_PARAMETER

    @staticmethod
    def builder(scale: int) -> SchemaBuilder:
        """A builder for a Decimal schema of ``scale`` fractional digits (add optional(),
        doc(), a default ...)."""
        if not isinstance(scale, int) or isinstance(scale, bool):
            raise DataError(f"Decimal scale must be an int, not {scale!r}")
        return (
            SchemaBuilder.bytes()
            .name(lv.DECIMAL_LOGICAL_NAME)
            .parameter(lv.DECIMAL_SCALE_PARAMETER, str(scale))
            .version(1)
        )

    @staticmethod
    def schema(scale: int) -> Schema:
        """A required Decimal schema of ``scale`` fractional digits."""
        return Decimal.builder(scale).build()

    @staticmethod
    def scale(schema: Schema) -> int:
        """The scale of a Decimal schema."""
        _check(schema, lv.DECIMAL_LOGICAL_NAME, "Decimal")
        return lv.decimal_scale(schema.parameters)

    @staticmethod
    def from_logical(schema: Schema, value: decimal.Decimal) -> bytes:
        """Encode ``value``; raises ``DataError`` if it has more fractional digits than
        the schema's scale (it is never rounded)."""
        return lv.decimal_to_bytes(value, Decimal.scale(schema))

    @staticmethod
    def to_logical(schema: Schema, value: bytes | bytearray | memoryview) -> decimal.Decimal:
        """Decode bytes written by ``from_logical``; the result has the schema's scale."""
        return lv.bytes_to_decimal(value, Decimal.scale(schema))


class Date:
    """Calendar dates without a time of day, encoded as INT32 days since the epoch."""

    LOGICAL_NAME: ClassVar[str] = lv.DATE_LOGICAL_NAME
    SCHEMA: ClassVar[Schema]

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int32().name(lv.DATE_LOGICAL_NAME).version(1)

    @staticmethod
    def from_logical(schema: Schema, value: dt.date) -> int:
        """Days since 1970-01-01 (negative before)."""
        _check(schema, lv.DATE_LOGICAL_NAME, "Date")
        return lv.date_to_days(value)

    @staticmethod
    def to_logical(schema: Schema, value: int) -> dt.date:
        _check(schema, lv.DATE_LOGICAL_NAME, "Date")
        return lv.days_to_date(value)


class Time:
    """Times of day in UTC, encoded as INT32 milliseconds since midnight."""

    LOGICAL_NAME: ClassVar[str] = lv.TIME_LOGICAL_NAME
    SCHEMA: ClassVar[Schema]

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int32().name(lv.TIME_LOGICAL_NAME).version(1)

    @staticmethod
    def from_logical(schema: Schema, value: dt.time) -> int:
        """Milliseconds since midnight; the time must be naive (read as UTC) or UTC, and
        microseconds below a millisecond are truncated."""
        _check(schema, lv.TIME_LOGICAL_NAME, "Time")
        return lv.time_to_millis(value)

    @staticmethod
    def to_logical(schema: Schema, value: int) -> dt.time:
        """A naive ``datetime.time`` (a UTC time of day); ``DataError`` outside one day."""
        _check(schema, lv.TIME_LOGICAL_NAME, "Time")
        return lv.millis_to_time(value)


class Timestamp:
    """Instants, encoded as INT64 milliseconds since the epoch."""

    LOGICAL_NAME: ClassVar[str] = lv.TIMESTAMP_LOGICAL_NAME
    SCHEMA: ClassVar[Schema]

    @staticmethod
    def builder() -> SchemaBuilder:
        return SchemaBuilder.int64().name(lv.TIMESTAMP_LOGICAL_NAME).version(1)

    @staticmethod
    def from_logical(schema: Schema, value: dt.datetime) -> int:
        """Milliseconds since the epoch; a naive datetime is read as UTC, an aware one is
        converted, and microseconds below a millisecond are truncated towards the past."""
        _check(schema, lv.TIMESTAMP_LOGICAL_NAME, "Timestamp")
        return lv.timestamp_to_millis(value)

    @staticmethod
    def to_logical(schema: Schema, value: int) -> dt.datetime:
        """A timezone-aware datetime in UTC."""
        _check(schema, lv.TIMESTAMP_LOGICAL_NAME, "Timestamp")
        return lv.millis_to_timestamp(value)


Date.SCHEMA = Date.builder().build()
Time.SCHEMA = Time.builder().build()
Timestamp.SCHEMA = Timestamp.builder().build()
