"""MaskField$Key/$Value: null-equivalents per type and typed replacements."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pytest

from connect.api import Date, Decimal, Schema, SchemaBuilder, SourceRecord, Struct, Time, Timestamp
from connect.api.errors import ConfigError, DataError
from connect.transforms import MaskFieldKey, MaskFieldValue

D = decimal.Decimal
MOMENT = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.UTC)
SCHEMALESS = {
    "int": 42,
    "float": 4.2,
    "bool": True,
    "string": "secret",
    "decimal": D("12.34"),
    "timestamp": MOMENT,
    "date": MOMENT.date(),
    "time": dt.time(7, 8, 9),
    "list": [1, 2],
    "map": {"a": 1},
    "untouched": "visible",
}
MASKED = {
    "int": 0,
    "float": 0.0,
    "bool": False,
    "string": "",
    "decimal": D(0),
    "timestamp": dt.datetime(1970, 1, 1, tzinfo=dt.UTC),
    "date": dt.date(1970, 1, 1),
    "time": dt.time(0),
    "list": [],
    "map": {},
    "untouched": "visible",
}
MASK_ALL = ",".join(name for name in SCHEMALESS if name != "untouched")


def configured(cls: type, props: dict[str, Any]) -> Any:
    transform = cls()
    transform.configure(props)
    return transform


def test_schemaless_null_equivalents():
    out = configured(MaskFieldValue, {"fields": MASK_ALL}).apply(
        SourceRecord(topic="t", value=SCHEMALESS)
    )
    assert out.value == MASKED
    assert SCHEMALESS["list"] == [1, 2]  # the input is not changed


def typed_schema() -> Schema:
    return (
        SchemaBuilder.struct()
        .field("int8", Schema.INT8_SCHEMA)
        .field("int64", Schema.INT64_SCHEMA)
        .field("float32", Schema.FLOAT32_SCHEMA)
        .field("bool", Schema.BOOLEAN_SCHEMA)
        .field("string", Schema.STRING_SCHEMA)
        .field("decimal", Decimal.schema(2))
        .field("date", Date.SCHEMA)
        .field("time", Time.SCHEMA)
        .field("timestamp", Timestamp.SCHEMA)
        .field("array", SchemaBuilder.array(Schema.STRING_SCHEMA))
        .field("map", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.STRING_SCHEMA))
        .field("optional", Schema.OPTIONAL_STRING_SCHEMA)
        .field("kept", Schema.STRING_SCHEMA)
        .build()
    )


def typed_value(schema: Schema) -> Struct:
    return (
        Struct(schema)
        .put("int8", 8)
        .put("int64", 64)
        .put("float32", 1.5)
        .put("bool", True)
        .put("string", "s")
        .put("decimal", D("1.25"))
        .put("date", MOMENT.date())
        .put("time", dt.time(1, 2))
        .put("timestamp", MOMENT)
        .put("array", ["x"])
        .put("map", {"k": "v"})
        .put("kept", "kept")
    )


def test_with_schema_null_equivalents_are_valid_for_the_field():
    schema = typed_schema()
    masked = ",".join(f.name for f in schema.fields if f.name != "kept")
    out = configured(MaskFieldValue, {"fields": masked}).apply(
        SourceRecord(topic="t", value_schema=schema, value=typed_value(schema))
    )
    value = out.value
    value.validate()
    assert out.value_schema is schema
    assert [value.get(f.name) for f in schema.fields] == [
        0, 0, 0.0, False, "", D(0), dt.date(1970, 1, 1), dt.time(0),
        dt.datetime(1970, 1, 1, tzinfo=dt.UTC), [], {}, None, "kept",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("value", "replacement", "expected"),
    [
        (42, "123", 123),
        (42, "12.9", 12),
        (4.2, "1.5", 1.5),
        ("secret", "***", "***"),
        (D("1.5"), "9.99", D("9.99")),
    ],
)
def test_replacement_is_parsed_to_the_field_type(value, replacement, expected):
    xform = configured(MaskFieldValue, {"fields": "f", "replacement": replacement})
    out = xform.apply(SourceRecord(topic="t", value={"f": value}))
    assert out.value["f"] == expected and type(out.value["f"]) is type(expected)


def test_replacement_with_schema_is_checked_against_the_field():
    schema = SchemaBuilder.struct().field("i", Schema.INT8_SCHEMA).build()
    xform = configured(MaskFieldValue, {"fields": "i", "replacement": "1000"})
    with pytest.raises(DataError, match="out of range for int8"):
        xform.apply(SourceRecord(topic="t", value_schema=schema, value=Struct(schema).put("i", 1)))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (True, "Cannot mask value of type bool with custom replacement"),
        ([1], "Cannot mask value of type list with custom replacement"),
        (42, r"Unable to convert \*\*\* \(str\) to int"),
        (D(1), r"Unable to convert \*\*\* \(str\) to Decimal"),
    ],
)
def test_unsupported_replacements_are_data_errors(value, message):
    xform = configured(MaskFieldValue, {"fields": "f", "replacement": "***"})
    with pytest.raises(DataError, match=message):
        xform.apply(SourceRecord(topic="t", value={"f": value}))


def test_types_without_null_equivalent_are_data_errors():
    xform = configured(MaskFieldValue, {"fields": "f"})
    with pytest.raises(DataError, match="Cannot mask value of type: bytes"):
        xform.apply(SourceRecord(topic="t", value={"f": b"\x00"}))


def test_key_variant_nulls_and_tombstones():
    xform = configured(MaskFieldKey, {"fields": "ssn,missing"})
    out = xform.apply(SourceRecord(topic="t", key={"ssn": "123", "id": 1}, value={"ssn": "123"}))
    assert out.key == {"ssn": "", "id": 1, "missing": None}
    assert out.value == {"ssn": "123"}
    tombstone = SourceRecord(topic="t", key=None)
    assert xform.apply(tombstone) is tombstone


@pytest.mark.parametrize(
    ("props", "key", "message"),
    [
        ({}, "fields", "Missing required configuration"),
        ({"fields": ""}, "fields", "Empty list"),
        ({"fields": "a", "replacement": ""}, "replacement", "String must be non-empty"),
    ],
)
def test_config_errors(props, key, message):
    with pytest.raises(ConfigError, match=message) as caught:
        MaskFieldValue().configure(props)
    assert caught.value.name == key
