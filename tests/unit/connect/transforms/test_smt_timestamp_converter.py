"""TimestampConverter$Key/$Value (Kafka's TimestampConverterTest values)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from connect.api import Date, Schema, SchemaBuilder, SourceRecord, Struct, Time, Timestamp
from connect.api.errors import ConfigError, DataError
from connect.transforms import TimestampConverterKey, TimestampConverterValue

# 1970-01-02T00:00:01Z, as in Kafka's tests.
DATE_PLUS_TIME = dt.datetime(1970, 1, 2, 0, 0, 1, tzinfo=dt.UTC)
DATE_PLUS_TIME_UNIX = 86_401_000
DATE = dt.date(1970, 1, 2)
TIME = dt.time(0, 0, 1)
STRING_FORMAT = "yyyy MM dd HH mm ss SSS z"
DATE_PLUS_TIME_STRING = "1970 01 02 00 00 01 000 UTC"


def configured(cls: type, props: dict[str, Any]) -> Any:
    transform = cls()
    transform.configure(props)
    return transform


def value_of(target: str, source: Any, schema: Schema | None = None, **extra: str) -> Any:
    xform = configured(
        TimestampConverterValue, {"target.type": target, "format": STRING_FORMAT, **extra}
    )
    return xform.apply(SourceRecord(topic="t", value_schema=schema, value=source))


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("Timestamp", DATE_PLUS_TIME),
        ("Date", DATE),
        ("Time", TIME),
        ("unix", DATE_PLUS_TIME_UNIX),
        ("string", DATE_PLUS_TIME_STRING),
    ],
)
@pytest.mark.parametrize(
    "source",
    [DATE_PLUS_TIME, DATE_PLUS_TIME_UNIX, DATE_PLUS_TIME_STRING],
)
def test_schemaless_conversions(source, target, expected):
    assert value_of(target, source).value == expected


@pytest.mark.parametrize(
    ("source_schema", "source"),
    [
        (Timestamp.SCHEMA, DATE_PLUS_TIME),
        (Schema.INT64_SCHEMA, DATE_PLUS_TIME_UNIX),
        (Schema.STRING_SCHEMA, DATE_PLUS_TIME_STRING),
    ],
)
@pytest.mark.parametrize(
    ("target", "expected_schema", "expected"),
    [
        ("Timestamp", Timestamp.SCHEMA, DATE_PLUS_TIME),
        ("Date", Date.SCHEMA, DATE),
        ("Time", Time.SCHEMA, TIME),
        ("unix", Schema.INT64_SCHEMA, DATE_PLUS_TIME_UNIX),
        ("string", Schema.STRING_SCHEMA, DATE_PLUS_TIME_STRING),
    ],
)
def test_with_schema_conversions(source_schema, source, target, expected_schema, expected):
    out = value_of(target, source, source_schema)
    assert (out.value_schema, out.value) == (expected_schema, expected)


def test_date_and_time_sources():
    assert value_of("Timestamp", DATE, Date.SCHEMA).value == dt.datetime(1970, 1, 2, tzinfo=dt.UTC)
    assert value_of("unix", TIME, Time.SCHEMA).value == 1000
    assert value_of("string", DATE).value == "1970 01 02 00 00 00 000 UTC"


@pytest.mark.parametrize(
    ("precision", "unix"),
    [
        ("seconds", 86_401),
        ("milliseconds", 86_401_000),
        ("microseconds", 86_401_000_000),
        ("nanoseconds", 86_401_000_000_000),
    ],
)
def test_unix_precision_both_ways(precision, unix):
    assert value_of("unix", DATE_PLUS_TIME, **{"unix.precision": precision}).value == unix
    assert value_of("Timestamp", unix, **{"unix.precision": precision}).value == DATE_PLUS_TIME


def test_sub_millisecond_units_truncate_towards_zero():
    assert value_of("unix", -1_500, **{"unix.precision": "microseconds"}).value == -1000
    assert value_of("unix", -1, **{"unix.precision": "nanoseconds"}).value == 0


def test_field_with_schema_and_optional_struct_default():
    schema = (
        SchemaBuilder.struct()
        .field("ts", Schema.INT64_SCHEMA)
        .field("other", Schema.STRING_SCHEMA)
        .optional()
        .build()
    )
    xform = configured(TimestampConverterKey, {"field": "ts", "target.type": "Timestamp"})
    out = xform.apply(
        SourceRecord(
            topic="t",
            key_schema=schema,
            key=Struct(schema).put("ts", DATE_PLUS_TIME_UNIX).put("other", "o"),
        )
    )
    assert out.key_schema.optional
    assert [(f.name, f.schema) for f in out.key_schema.fields] == [
        ("ts", Timestamp.SCHEMA),
        ("other", Schema.STRING_SCHEMA),
    ]
    assert (out.key.get("ts"), out.key.get("other")) == (DATE_PLUS_TIME, "o")
    assert xform.apply(SourceRecord(topic="t", key_schema=schema, key=None)).key is None


def test_struct_default_is_converted_too():
    base = SchemaBuilder.struct().field("ts", Schema.INT64_SCHEMA)
    default = Struct(base.build()).put("ts", 0)
    schema = base.default_value(default).build()
    xform = configured(TimestampConverterValue, {"field": "ts", "target.type": "Date"})
    out = xform.apply(
        SourceRecord(
            topic="t", value_schema=schema, value=Struct(schema).put("ts", DATE_PLUS_TIME_UNIX)
        )
    )
    assert out.value_schema.default_value.get("ts") == dt.date(1970, 1, 1)
    assert out.value.get("ts") == DATE


def test_schemaless_field_and_null_handling():
    xform = configured(TimestampConverterValue, {"field": "ts", "target.type": "unix"})
    out = xform.apply(SourceRecord(topic="t", value={"ts": DATE_PLUS_TIME, "x": 1}))
    assert out.value == {"ts": DATE_PLUS_TIME_UNIX, "x": 1}
    assert xform.apply(SourceRecord(topic="t", value={"x": 1})).value == {"x": 1, "ts": None}
    assert xform.apply(SourceRecord(topic="t", value=None)).value is None


@pytest.mark.parametrize(
    ("source", "schema", "message"),
    [
        ("1970-01-02", None, r"does not match pattern \(yyyy MM dd HH mm ss SSS z\)"),
        (1.5, None, "does not support float objects as timestamps"),
        (True, Schema.INT64_SCHEMA, "Expected Unix timestamp to be a Long, but found bool"),
        (1, Schema.INT32_SCHEMA, "does not correspond to a known timestamp type format"),
    ],
)
def test_data_errors(source, schema, message):
    with pytest.raises(DataError, match=message):
        value_of("Timestamp", source, schema)


def test_string_input_needs_a_format():
    xform = configured(TimestampConverterValue, {"target.type": "unix"})
    with pytest.raises(DataError, match="needs the format option"):
        xform.apply(SourceRecord(topic="t", value="1970"))


@pytest.mark.parametrize(
    ("props", "key", "message"),
    [
        ({}, "target.type", "Missing required configuration"),
        ({"target.type": "epoch"}, "target.type", "String must be one of"),
        ({"target.type": "string"}, "format", "requires format option"),
        (
            {"target.type": "string", "format": "bad pattern"},
            "format",
            "SimpleDateFormat-compatible",
        ),
        (
            {"target.type": "unix", "unix.precision": "days"},
            "unix.precision",
            "String must be one of",
        ),
    ],
)
def test_config_errors(props, key, message):
    with pytest.raises(ConfigError, match=message) as caught:
        TimestampConverterValue().configure(props)
    assert caught.value.name == key
