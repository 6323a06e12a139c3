"""Cast$Key/$Value and Java's conversions (Kafka's CastTest cases)."""

from __future__ import annotations

import ctypes
import datetime as dt
import decimal
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from connect.api import Date, Decimal, Schema, SchemaBuilder, SourceRecord, Struct, Time, Timestamp
from connect.api.data import Type
from connect.api.errors import ConfigError, DataError
from connect.transforms import CastKey, CastValue
from connect.transforms.cast_values import cast_value, java_float_string, to_float32

D = decimal.Decimal


def configured(cls: type, spec: str, **extra: str) -> Any:
    transform = cls()
    transform.configure({"spec": spec, **extra})
    return transform


@pytest.mark.parametrize(
    ("target", "expected_schema", "expected"),
    [
        ("int8", Schema.INT8_SCHEMA, 42),
        ("int16", Schema.INT16_SCHEMA, 42),
        ("int64", Schema.INT64_SCHEMA, 42),
        ("float32", Schema.FLOAT32_SCHEMA, 42.0),
        ("float64", Schema.FLOAT64_SCHEMA, 42.0),
        ("boolean", Schema.BOOLEAN_SCHEMA, True),
        ("string", Schema.STRING_SCHEMA, "42"),
    ],
)
def test_whole_value_with_schema(target, expected_schema, expected):
    out = configured(CastValue, target).apply(
        SourceRecord(topic="t", value_schema=Schema.INT32_SCHEMA, value=42)
    )
    assert out.value_schema == expected_schema
    assert out.value == expected and type(out.value) is type(expected)


def test_whole_key_schemaless():
    out = configured(CastKey, "int8").apply(SourceRecord(topic="t", key=42, value="v"))
    assert (out.key_schema, out.key, out.value) == (None, 42, "v")


def test_whole_value_keeps_optional_and_casts_default():
    schema = SchemaBuilder.int32().name("n").optional().default_value(7).build()
    out = configured(CastValue, "string").apply(
        SourceRecord(topic="t", value_schema=schema, value=1)
    )
    assert (
        out.value_schema == SchemaBuilder.string().name("n").optional().default_value("7").build()
    )


def test_fields_with_schema():
    schema = (
        SchemaBuilder.struct()
        .field("int8", Schema.INT8_SCHEMA)
        .field("int16", Schema.OPTIONAL_INT16_SCHEMA)
        .field("int32", SchemaBuilder.int32().default_value(2))
        .field("float", Schema.FLOAT32_SCHEMA)
        .field("bool", Schema.BOOLEAN_SCHEMA)
        .field("string", Schema.STRING_SCHEMA)
        .field("bytes", Schema.BYTES_SCHEMA)
        .field("kept", Schema.STRING_SCHEMA)
        .build()
    )
    value = (
        Struct(schema)
        .put("int8", 8)
        .put("int32", 32)
        .put("float", 32.0)
        .put("bool", True)
        .put("string", "42")
        .put("bytes", b"\x01\x02")
        .put("kept", "as is")
    )
    spec = "int8:int16,int16:int32,int32:int64,float:float64,bool:int8,string:int32,bytes:string"
    out = configured(CastValue, spec).apply(
        SourceRecord(topic="t", value_schema=schema, value=value)
    )
    types = {f.name: f.schema for f in out.value_schema.fields}
    assert types["int8"] == Schema.INT16_SCHEMA
    assert types["int16"] == Schema.OPTIONAL_INT32_SCHEMA
    assert types["int32"] == SchemaBuilder.int64().default_value(2).build()
    assert types["bytes"] == Schema.STRING_SCHEMA
    assert types["kept"] == Schema.STRING_SCHEMA
    got = {f.name: out.value.get(f.name) for f in out.value_schema.fields}
    assert got == {
        "int8": 8,
        "int16": None,
        "int32": 32,
        "float": 32.0,
        "bool": 1,
        "string": 42,
        "bytes": "AQI=",
        "kept": "as is",
    }


def test_fields_schemaless_and_missing_fields():
    out = configured(CastValue, "a:int8,b:string,c:boolean").apply(
        SourceRecord(topic="t", value={"a": 300, "b": 1.5, "d": "kept"})
    )
    assert out.value == {"a": 44, "b": "1.5", "c": None, "d": "kept"}


def test_logical_types_cast_from_their_encoding_or_to_iso_strings():
    moment = dt.datetime(2024, 1, 2, 3, 4, 5, 6000, tzinfo=dt.UTC)
    schema = (
        SchemaBuilder.struct()
        .field("date", Date.SCHEMA)
        .field("time", Time.SCHEMA)
        .field("ts", Timestamp.SCHEMA)
        .field("ts_string", Timestamp.SCHEMA)
        .field("midnight", Timestamp.SCHEMA)
        .field("dec", Decimal.schema(2))
        .field("dec_string", Decimal.schema(2))
        .build()
    )
    value = (
        Struct(schema)
        .put("date", moment.date())
        .put("time", dt.time(3, 4, 5, 6000))
        .put("ts", moment)
        .put("ts_string", moment)
        .put("midnight", dt.datetime(2024, 1, 2, tzinfo=dt.UTC))
        .put("dec", D("-12.75"))
        .put("dec_string", D("12.75"))
    )
    spec = (
        "date:int32,time:int32,ts:int64,ts_string:string,midnight:string,"
        "dec:int32,dec_string:string"
    )
    out = configured(CastValue, spec).apply(
        SourceRecord(topic="t", value_schema=schema, value=value)
    )
    got = {f.name: out.value.get(f.name) for f in out.value_schema.fields}
    assert got == {
        "date": 19724,
        "time": 11_045_006,
        "ts": 1_704_164_645_006,
        "ts_string": "2024-01-02T03:04:05.006Z",
        "midnight": "2024-01-02",  # Kafka's Values.dateFormatFor prints midnight as a date
        "dec": -12,
        "dec_string": "12.75",
    }


def test_whole_logical_value_drops_the_logical_name():
    out = configured(CastValue, "int64").apply(
        SourceRecord(
            topic="t",
            value_schema=Timestamp.SCHEMA,
            value=dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.UTC),
        )
    )
    assert (out.value_schema, out.value) == (Schema.INT64_SCHEMA, 1000)


@pytest.mark.parametrize(
    ("value", "target", "expected"),
    [
        (300, Type.INT8, 44),
        (-129, Type.INT8, 127),
        (70000, Type.INT16, 4464),
        (2**31, Type.INT32, -(2**31)),
        (2**63, Type.INT64, -(2**63)),
        (1e10, Type.INT32, 2**31 - 1),
        (1e10, Type.INT8, -1),
        (-3.9, Type.INT64, -3),
        (math.nan, Type.INT32, 0),
        (math.inf, Type.INT64, 2**63 - 1),
        (True, Type.INT16, 1),
        ("-12", Type.INT8, -12),
        ("+12", Type.INT64, 12),
        (0.5, Type.BOOLEAN, False),
        (2, Type.BOOLEAN, True),
        ("TRUE", Type.BOOLEAN, True),
        ("yes", Type.BOOLEAN, False),
        (" 1.5e2 ", Type.FLOAT64, 150.0),
        ("2.5f", Type.FLOAT32, 2.5),
        ("-Infinity", Type.FLOAT64, -math.inf),
        (1.1, Type.FLOAT32, to_float32(1.1)),
        (1e39, Type.FLOAT32, math.inf),
        (D("2.5"), Type.FLOAT64, 2.5),
        (1e20, Type.STRING, "1.0E20"),
        (100.0, Type.STRING, "100.0"),
        (0.0001, Type.STRING, "1.0E-4"),
        (False, Type.STRING, "false"),
        (b"hi", Type.STRING, "aGk="),
    ],
)
def test_java_conversions(value, target, expected):
    assert cast_value(None, value, target) == expected


@pytest.mark.parametrize(
    ("value", "float32", "text"),
    [
        (1.0, False, "1.0"),
        (-2.5, False, "-2.5"),
        (0.001, False, "0.001"),
        (1234567.0, False, "1234567.0"),
        (12345678.0, False, "1.2345678E7"),
        (1 / 3, False, "0.3333333333333333"),
        (-0.0, False, "-0.0"),
        (math.nan, False, "NaN"),
        (to_float32(1.1), True, "1.1"),
        (to_float32(3.4e38), True, "3.4E38"),
    ],
)
def test_java_float_strings(value, float32, text):
    assert java_float_string(value, float32) == text


def test_float32_fields_print_as_java_floats():
    schema = SchemaBuilder.struct().field("f", Schema.FLOAT32_SCHEMA).build()
    out = configured(CastValue, "f:string").apply(
        SourceRecord(topic="t", value_schema=schema, value=Struct(schema).put("f", to_float32(0.1)))
    )
    assert out.value.get("f") == "0.1"


@pytest.mark.parametrize(
    ("schema", "value", "spec", "message"),
    [
        (None, {"a": "x"}, "a:int8", r"Value \(x\) was out of range"),
        (None, {"a": "300"}, "a:int8", r"Value \(300\) was out of range"),
        (None, {"a": b"\x00"}, "a:int32", "Unexpected type in Cast transformation: bytes"),
        (None, {"a": [1]}, "a:string", "does not support casting from ARRAY"),
        (None, {"a": dt.date.today()}, "a:string", "not supported by Connect's data API"),
        (None, "text", "a:int8", r"Only Map objects supported .*\[cast types\]"),
    ],
)
def test_data_errors(schema, value, spec, message):
    with pytest.raises(DataError, match=message):
        configured(CastValue, spec).apply(SourceRecord(topic="t", value_schema=schema, value=value))


def test_whole_struct_cannot_be_cast():
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).build()
    with pytest.raises(DataError, match="does not support casting from STRUCT"):
        configured(CastValue, "string").apply(
            SourceRecord(topic="t", value_schema=schema, value=Struct(schema).put("a", 1))
        )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "Must specify at least one field to cast"),
        ("a:int8:int16", "Invalid cast mapping: a:int8:int16"),
        ("a:nope", "Invalid type found in casting spec: nope"),
        ("a:bytes", "does not support casting to BYTES"),
        ("array", "does not support casting to ARRAY"),
        ("int8,a:int16", "may only specify a single cast"),
    ],
)
def test_spec_errors_name_the_spec_key(spec, message):
    with pytest.raises(ConfigError, match=message) as caught:
        CastValue().configure({"spec": spec})
    assert caught.value.name == "spec"


def test_null_values_pass_and_replace_null_with_default():
    tombstone = SourceRecord(topic="t", value=None)
    assert configured(CastValue, "int8").apply(tombstone) is tombstone
    schema = (
        SchemaBuilder.struct().field("n", SchemaBuilder.int32().optional().default_value(4)).build()
    )
    record = SourceRecord(topic="t", value_schema=schema, value=Struct(schema))
    assert configured(CastValue, "n:string").apply(record).value.get_without_default("n") == "4"
    without = configured(CastValue, "n:string", **{"replace.null.with.default": "false"})
    assert without.apply(record).value.get_without_default("n") is None


@given(st.integers(min_value=-(2**70), max_value=2**70))
def test_integer_narrowing_matches_c_fixed_width_integers(number):
    for target, c_type in (
        (Type.INT8, ctypes.c_int8),
        (Type.INT16, ctypes.c_int16),
        (Type.INT32, ctypes.c_int32),
        (Type.INT64, ctypes.c_int64),
    ):
        assert cast_value(None, number, target) == c_type(number).value
