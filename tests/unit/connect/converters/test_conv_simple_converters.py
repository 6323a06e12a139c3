"""StringConverter, ByteArrayConverter, the number converters and BooleanConverter."""

from __future__ import annotations

import datetime as dt
import math
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from connect.api.data import Schema, SchemaAndValue, SchemaBuilder, Struct
from connect.api.errors import ConfigError, DataError
from connect.converters import (
    BooleanConverter,
    ByteArrayConverter,
    DoubleConverter,
    FloatConverter,
    IntegerConverter,
    LongConverter,
    ShortConverter,
    StringConverter,
)

TOPIC = "t"


def string_converter(**configs: str) -> StringConverter:
    converter = StringConverter()
    converter.configure(configs, is_key=True)
    return converter


# -- StringConverter ----------------------------------------------------------------------


def test_string_converter_writes_text_and_reads_an_optional_string():
    converter = string_converter()
    assert converter.from_connect_data(TOPIC, Schema.STRING_SCHEMA, "héllo") == "héllo".encode()
    assert converter.to_connect_data(TOPIC, "héllo".encode()) == SchemaAndValue(
        Schema.OPTIONAL_STRING_SCHEMA, "héllo"
    )
    assert converter.from_connect_data(TOPIC, None, None) is None
    assert converter.to_connect_data(TOPIC, None) == SchemaAndValue(
        Schema.OPTIONAL_STRING_SCHEMA, None
    )


@pytest.mark.parametrize(
    ("schema", "value", "text"),
    [
        (None, 42, "42"),
        (None, True, "true"),
        (Schema.FLOAT64_SCHEMA, 1e10, "1.0E10"),  # Java's Double.toString
        (Schema.FLOAT32_SCHEMA, 0.1, "0.1"),  # Java's Float.toString
        (None, [1, "a"], '[1,"a"]'),
        (None, {"k": None}, '{"k":null}'),
        (None, b"\x01\x02", "AQI="),
        (None, dt.date(2024, 1, 2), "2024-01-02"),
    ],
)
def test_string_converter_renders_other_values_as_kafka_values_text(schema, value, text):
    assert string_converter().from_connect_data(TOPIC, schema, value) == text.encode()


def test_string_converter_renders_structs():
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).build()
    value = Struct(schema).put("a", 1)
    assert string_converter().from_connect_data(TOPIC, schema, value) == b'{"a":1}'


@pytest.mark.parametrize(
    ("encoding", "text", "data"),
    [
        ("UTF-8", "é", b"\xc3\xa9"),
        ("ISO-8859-1", "é", b"\xe9"),
        ("US-ASCII", "é", b"?"),  # unmappable: '?' as Java writes it
        ("UTF-16", "é", b"\xfe\xff\x00\xe9"),  # Java: big-endian with a BOM
        ("UTF-16LE", "é", b"\xe9\x00"),
        ("UTF-32", "é", b"\x00\x00\x00\xe9"),
    ],
)
def test_string_converter_encodings_match_java_charsets(encoding, text, data):
    converter = string_converter(**{"converter.encoding": encoding})
    assert converter.from_connect_data(TOPIC, None, text) == data
    if encoding != "US-ASCII":  # a '?' reads back as itself
        assert converter.to_connect_data(TOPIC, data).value == text


def test_string_converter_reads_undecodable_bytes_as_replacement_characters():
    assert string_converter().to_connect_data(TOPIC, b"a\xffb").value == "a\ufffdb"
    utf16 = string_converter(**{"converter.encoding": "UTF-16"})
    assert utf16.to_connect_data(TOPIC, b"\xff\xfe\xe9\x00").value == "é"  # little-endian BOM
    assert utf16.to_connect_data(TOPIC, b"\x00\xe9").value == "é"  # no BOM: big-endian


def test_string_converter_rejects_an_unknown_encoding():
    with pytest.raises(ConfigError, match=r"converter\.encoding"):
        string_converter(**{"converter.encoding": "no-such-charset"})


def test_string_converter_declares_kafka_keys():
    keys = StringConverter().config().config_keys
    assert keys["converter.encoding"].default == "UTF-8"
    assert not keys["converter.type"].has_default


# -- ByteArrayConverter -------------------------------------------------------------------


def test_byte_array_converter_passes_bytes_through():
    converter = ByteArrayConverter()
    converter.configure({}, is_key=False)
    assert converter.from_connect_data(TOPIC, Schema.BYTES_SCHEMA, b"\x00\xff") == b"\x00\xff"
    assert converter.from_connect_data(TOPIC, None, bytearray(b"ab")) == b"ab"
    assert converter.from_connect_data(TOPIC, None, memoryview(b"cd")) == b"cd"
    assert converter.from_connect_data(TOPIC, None, None) is None
    assert converter.to_connect_data(TOPIC, b"x") == SchemaAndValue(
        Schema.OPTIONAL_BYTES_SCHEMA, b"x"
    )
    assert converter.to_connect_data(TOPIC, None) == SchemaAndValue(
        Schema.OPTIONAL_BYTES_SCHEMA, None
    )


def test_byte_array_converter_rejects_other_schemas_and_values():
    converter = ByteArrayConverter()
    with pytest.raises(DataError, match="Invalid schema type for ByteArrayConverter: STRING"):
        converter.from_connect_data(TOPIC, Schema.STRING_SCHEMA, b"x")
    with pytest.raises(DataError, match="not compatible with objects of type str"):
        converter.from_connect_data(TOPIC, None, "x")


# -- number converters --------------------------------------------------------------------

NUMBERS = [
    (ShortConverter, Schema.OPTIONAL_INT16_SCHEMA, -2, b"\xff\xfe"),
    (IntegerConverter, Schema.OPTIONAL_INT32_SCHEMA, 258, b"\x00\x00\x01\x02"),
    (LongConverter, Schema.OPTIONAL_INT64_SCHEMA, 2**40, b"\x00\x00\x01\x00\x00\x00\x00\x00"),
    (FloatConverter, Schema.OPTIONAL_FLOAT32_SCHEMA, 1.5, b"\x3f\xc0\x00\x00"),
    (DoubleConverter, Schema.OPTIONAL_FLOAT64_SCHEMA, -2.0, b"\xc0\x00\x00\x00\x00\x00\x00\x00"),
]


@pytest.mark.parametrize(("cls", "schema", "value", "data"), NUMBERS)
def test_number_converters_write_big_endian_as_kafka_serializers(cls, schema, value, data):
    converter = cls()
    converter.configure({}, is_key=True)
    assert converter.from_connect_data(TOPIC, schema, value) == data
    assert converter.to_connect_data(TOPIC, data) == SchemaAndValue(schema, value)
    assert converter.from_connect_data(TOPIC, schema, None) is None
    assert converter.to_connect_data(TOPIC, None) == SchemaAndValue(schema, None)
    assert converter.from_connect_header(TOPIC, "h", schema, value) == data


@pytest.mark.parametrize(("cls", "schema", "value", "data"), NUMBERS)
def test_number_converters_reject_wrong_sizes_and_types(cls, schema, value, data):
    converter = cls()
    with pytest.raises(DataError, match=f"size of data received is {len(data) + 1} bytes"):
        converter.to_connect_data(TOPIC, data + b"\x00")
    with pytest.raises(DataError, match="Failed to serialize"):
        converter.from_connect_data(TOPIC, schema, "1")
    with pytest.raises(DataError, match="Failed to serialize"):
        converter.from_connect_data(TOPIC, schema, True)


def test_integer_converters_reject_out_of_range_values():
    with pytest.raises(DataError, match="Failed to serialize to short"):
        ShortConverter().from_connect_data(TOPIC, None, 2**15)
    with pytest.raises(DataError, match="Failed to serialize to float"):
        FloatConverter().from_connect_data(TOPIC, None, 1e39)


@given(st.floats(width=32) | st.floats())
def test_double_and_float_round_trip_bit_for_bit(value):
    double = DoubleConverter()
    data = double.from_connect_data(TOPIC, None, value)
    assert data == struct.pack(">d", value)
    read = double.to_connect_data(TOPIC, data).value
    assert read == value or (math.isnan(read) and math.isnan(value))


def test_number_converter_checks_converter_type():
    with pytest.raises(ConfigError, match=r"converter\.type"):
        LongConverter().configure({"converter.type": "sideways"})


# -- BooleanConverter ---------------------------------------------------------------------


def test_boolean_converter():
    converter = BooleanConverter()
    converter.configure({}, is_key=False)
    assert converter.from_connect_data(TOPIC, Schema.BOOLEAN_SCHEMA, True) == b"\x01"
    assert converter.from_connect_data(TOPIC, None, False) == b"\x00"
    assert converter.to_connect_data(TOPIC, b"\x01") == SchemaAndValue(
        Schema.OPTIONAL_BOOLEAN_SCHEMA, True
    )
    assert converter.to_connect_data(TOPIC, None).value is None
    with pytest.raises(DataError, match="Invalid schema type for BooleanConverter: INT8"):
        converter.from_connect_data(TOPIC, Schema.INT8_SCHEMA, True)
    with pytest.raises(DataError, match="not compatible"):
        converter.from_connect_data(TOPIC, None, 1)
    with pytest.raises(DataError, match="unexpected byte 0x02"):
        converter.to_connect_data(TOPIC, b"\x02")
    with pytest.raises(DataError, match="size of data received is 2 bytes"):
        converter.to_connect_data(TOPIC, b"\x00\x00")
