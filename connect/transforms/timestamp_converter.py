"""TimestampConverter: convert a timestamp field, or the whole key or value, between
strings, Unix epoch numbers and Connect's Date, Time and Timestamp (Kafka's
``TimestampConverter$Key`` and ``TimestampConverter$Value``)."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Mapping
from typing import Any

from connect.api.config import ConfigDef, ConfigType, Importance, ValidString
from connect.api.data import Date, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from connect.api.data import logical_values as lv
from connect.api.errors import ConfigError, DataError
from connect.transforms.base import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    KeySide,
    R,
    SidedTransformation,
    ValueSide,
    define_replace_null_with_default,
)
from connect.transforms.java_date_format import SimpleDateFormat
from connect.transforms.requirements import require_map, require_struct_or_null, type_name
from connect.transforms.schema_util import SchemaCache, copy_schema_basics, field_value

__all__ = ["TimestampConverter", "TimestampConverterKey", "TimestampConverterValue"]

FIELD = "field"
TARGET_TYPE = "target.type"
FORMAT = "format"
UNIX_PRECISION = "unix.precision"

STRING, UNIX, DATE, TIME, TIMESTAMP = "string", "unix", "Date", "Time", "Timestamp"
_PURPOSE = "converting timestamp formats"
_MILLIS_PER_DAY = 86_400_000
# unix.precision as a ratio (a, b): one unit is a/b milliseconds.
_PRECISIONS = {
    "seconds": (1000, 1),
    "milliseconds": (1, 1),
    "microseconds": (1, 1000),
    "nanoseconds": (1, 1_000_000),
}

_CONFIG_DEF = (
    ConfigDef()
    .define(
        FIELD,
        ConfigType.STRING,
        default="",
        importance=Importance.HIGH,
        documentation="The field holding the timestamp, or empty if the whole value is one.",
    )
    .define(
        TARGET_TYPE,
        ConfigType.STRING,
        validator=ValidString.in_(STRING, UNIX, DATE, TIME, TIMESTAMP),
        importance=Importance.HIGH,
        documentation="The representation wanted: string, unix, Date, Time or Timestamp.",
    )
    .define(
        FORMAT,
        ConfigType.STRING,
        default="",
        importance=Importance.MEDIUM,
        documentation="A SimpleDateFormat pattern: writes the output when target.type is "
        "string, and reads string input.",
    )
    .define(
        UNIX_PRECISION,
        ConfigType.STRING,
        default="milliseconds",
        validator=ValidString.in_("nanoseconds", "microseconds", "milliseconds", "seconds"),
        importance=Importance.LOW,
        documentation="Unit of Unix timestamps, written for target.type=unix and read from "
        "integer input. Converting to or from units below a millisecond loses precision.",
    )
)
define_replace_null_with_default(_CONFIG_DEF)


@functools.cache
def _schema_for(target: str, optional: bool) -> Schema:
    builder = {
        STRING: SchemaBuilder.string,
        UNIX: SchemaBuilder.int64,
        DATE: Date.builder,
        TIME: Time.builder,
        TIMESTAMP: Timestamp.builder,
    }[target]()
    return (builder.optional() if optional else builder).build()


def _type_of_schema(schema: Schema) -> str:
    logical = {
        lv.TIMESTAMP_LOGICAL_NAME: TIMESTAMP,
        lv.DATE_LOGICAL_NAME: DATE,
        lv.TIME_LOGICAL_NAME: TIME,
    }.get(schema.name or "")
    if logical is not None:
        return logical
    if schema.type is Type.STRING:
        return STRING
    if schema.type is Type.INT64:
        return UNIX
    raise DataError(f"Schema {schema!r} does not correspond to a known timestamp type format")


def _type_of_value(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return TIMESTAMP
    if isinstance(value, dt.date):
        return DATE
    if isinstance(value, dt.time):
        return TIME
    if isinstance(value, int) and not isinstance(value, bool):
        return UNIX
    if isinstance(value, str):
        return STRING
    raise DataError(f"TimestampConverter does not support {type_name(value)} objects as timestamps")


class TimestampConverter(SidedTransformation):
    """Timestamps pass through epoch milliseconds (Java's ``java.util.Date``), so a Date
    becomes midnight UTC and a Time a time on 1970-01-01. The source type comes from the
    schema (STRING means ``format``, INT64 means ``unix.precision``) or, schemaless, from
    the Python type. Null values stay null; a field missing from a map becomes null."""

    CONFIG_DEF = _CONFIG_DEF

    def __init__(self) -> None:
        self._field = ""
        self._target = TIMESTAMP
        self._format: SimpleDateFormat | None = None
        self._unit = (1, 1)
        self._with_default = True
        self._schemas = SchemaCache()
        # How each source representation becomes epoch milliseconds.
        self._readers: dict[str, Callable[[Any], int]] = {
            STRING: self._parse,
            UNIX: self._unix_to_millis,
            DATE: _date_to_millis,
            TIME: _time_to_millis,
            TIMESTAMP: _timestamp_to_millis,
        }

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        self._field = parsed[FIELD]
        self._target = parsed[TARGET_TYPE]
        pattern: str = parsed[FORMAT]
        self._format = None
        if self._target == STRING and not pattern.strip():
            raise ConfigError(
                FORMAT,
                "TimestampConverter requires format option to be specified when using "
                "string timestamps",
            )
        if pattern.strip():
            try:
                self._format = SimpleDateFormat(pattern)
            except ValueError as exc:
                raise ConfigError(
                    FORMAT,
                    "TimestampConverter requires a SimpleDateFormat-compatible pattern for "
                    f"string timestamps: {pattern} ({exc})",
                    value=pattern,
                ) from None
        self._unit = _PRECISIONS[parsed[UNIX_PRECISION]]
        self._with_default = parsed[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R:
        schema = self.operating_schema(record)
        value = self.operating_value(record)
        if schema is None:
            if value is None or not self._field:
                return self.updated_record(record, None, self._convert(value, None))
            updated = dict(require_map(value, _PURPOSE))
            updated[self._field] = self._convert(updated.get(self._field), None)
            return self.updated_record(record, None, updated)
        if not self._field:
            converted = self._convert(value, _type_of_schema(schema))
            return self.updated_record(
                record, _schema_for(self._target, schema.optional), converted
            )
        struct = require_struct_or_null(value, _PURPOSE)
        updated_schema = self._schemas.get_or_build(schema, self._updated_schema)
        return self.updated_record(
            record, updated_schema, self._convert_struct(struct, updated_schema)
        )

    def _updated_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            if field.name == self._field:
                builder.field(field.name, _schema_for(self._target, field.schema.optional))
            else:
                builder.field(field.name, field.schema)
        if schema.optional:
            builder.optional()
        if schema.default_value is not None:
            # The default is a Struct of the new schema without its default.
            builder.default_value(self._convert_struct(schema.default_value, builder.build()))
        return builder.build()

    def _convert_struct(self, struct: Struct | None, schema: Schema) -> Struct | None:
        if struct is None:
            return None
        result = Struct(schema)
        for field in struct.schema.fields:
            item = field_value(struct, field, self._with_default)
            if field.name == self._field:
                item = self._convert(item, _type_of_schema(field.schema))
            result.put(field.name, item)
        return result

    def _convert(self, value: Any, source: str | None) -> Any:
        if value is None:
            return None
        millis = self._to_millis(value, source or _type_of_value(value))
        return self._from_millis(millis)

    def _to_millis(self, value: Any, source: str) -> int:
        return self._readers[source](value)

    def _from_millis(self, millis: int) -> Any:
        target = self._target
        if target == STRING:
            assert self._format is not None
            try:
                return self._format.format(millis)
            except ValueError as exc:
                raise DataError(f"Cannot format timestamp {millis}: {exc}") from None
        if target == UNIX:
            numerator, denominator = self._unit
            return _truncate(millis * denominator, numerator)
        if target == DATE:
            return lv.millis_to_timestamp(millis - millis % _MILLIS_PER_DAY).date()
        if target == TIME:
            return lv.millis_to_time(millis % _MILLIS_PER_DAY)
        return lv.millis_to_timestamp(millis)

    def _parse(self, value: Any) -> int:
        if not isinstance(value, str):
            raise DataError(
                f"Expected string timestamp to be a String, but found {type_name(value)}"
            )
        if self._format is None:
            raise DataError("TimestampConverter needs the format option to parse string timestamps")
        try:
            return self._format.parse(value)
        except ValueError:
            raise DataError(
                f"Could not parse timestamp: value ({value}) does not match pattern "
                f"({self._format.pattern})"
            ) from None

    def _unix_to_millis(self, value: Any) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise DataError(f"Expected Unix timestamp to be a Long, but found {type_name(value)}")
        numerator, denominator = self._unit
        return _truncate(value * numerator, denominator)


def _truncate(value: int, divisor: int) -> int:
    """``value / divisor`` rounded towards zero, as Java's TimeUnit conversions do."""
    quotient = abs(value) // divisor
    return -quotient if value < 0 else quotient


def _date_to_millis(value: Any) -> int:
    if isinstance(value, dt.datetime):
        return lv.timestamp_to_millis(value)
    if not isinstance(value, dt.date):
        raise DataError(f"Expected Date to be a datetime.date, but found {type_name(value)}")
    return lv.date_to_days(value) * _MILLIS_PER_DAY


def _time_to_millis(value: Any) -> int:
    if not isinstance(value, dt.time):
        raise DataError(f"Expected Time to be a datetime.time, but found {type_name(value)}")
    return lv.time_to_millis(value)


def _timestamp_to_millis(value: Any) -> int:
    if isinstance(value, dt.datetime):
        return lv.timestamp_to_millis(value)
    if isinstance(value, dt.date):
        return lv.date_to_days(value) * _MILLIS_PER_DAY
    raise DataError(f"Expected Timestamp to be a datetime, but found {type_name(value)}")


class TimestampConverterKey(KeySide, TimestampConverter):
    """TimestampConverter on the record key (Kafka's ``TimestampConverter$Key``)."""


class TimestampConverterValue(ValueSide, TimestampConverter):
    """TimestampConverter on the record value (Kafka's ``TimestampConverter$Value``)."""
