"""JsonConverter against bytes written by hand from Kafka's rules, in both directions."""

from __future__ import annotations

import datetime as dt
import decimal
import math

import pytest

from connect.api.data import (
    Date,
    Decimal,
    Schema,
    SchemaAndValue,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
)
from connect.converters.java_number import to_float32
from connect.converters.json import JsonConverter

TOPIC = "orders"


def converter(**configs: object) -> JsonConverter:
    c = JsonConverter()
    c.configure({k.replace("_", "."): v for k, v in configs.items()}, is_key=False)
    return c


EVERYTHING = (
    SchemaBuilder.struct()
    .name("com.example.Everything")
    .version(2)
    .doc("All the types")
    .field("i8", Schema.INT8_SCHEMA)
    .field("i16", Schema.INT16_SCHEMA)
    .field("i32", Schema.INT32_SCHEMA)
    .field("i64", Schema.INT64_SCHEMA)
    .field("f32", Schema.FLOAT32_SCHEMA)
    .field("f64", Schema.FLOAT64_SCHEMA)
    .field("flag", Schema.BOOLEAN_SCHEMA)
    .field("text", Schema.STRING_SCHEMA)
    .field("raw", Schema.BYTES_SCHEMA)
    .field("list", SchemaBuilder.array(Schema.INT32_SCHEMA))
    .field("smap", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT64_SCHEMA))
    .field("imap", SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA))
    .field("opt", Schema.OPTIONAL_STRING_SCHEMA)
    .field("dflt", SchemaBuilder.int32().default_value(42))
    .field("price", Decimal.schema(2))
    .field("day", Date.SCHEMA)
    .field("clock", Time.SCHEMA)
    .field("at", Timestamp.SCHEMA)
    .field(
        "tagged",
        SchemaBuilder.string()
        .name("com.example.Tag")
        .doc("tagged")
        .parameters({"a": "1", "b": "2"}),
    )
    .build()
)

EVERYTHING_SCHEMA_JSON = (
    '{"type":"struct","fields":['
    '{"type":"int8","optional":false,"field":"i8"},'
    '{"type":"int16","optional":false,"field":"i16"},'
    '{"type":"int32","optional":false,"field":"i32"},'
    '{"type":"int64","optional":false,"field":"i64"},'
    '{"type":"float","optional":false,"field":"f32"},'
    '{"type":"double","optional":false,"field":"f64"},'
    '{"type":"boolean","optional":false,"field":"flag"},'
    '{"type":"string","optional":false,"field":"text"},'
    '{"type":"bytes","optional":false,"field":"raw"},'
    '{"type":"array","items":{"type":"int32","optional":false},"optional":false,"field":"list"},'
    '{"type":"map","keys":{"type":"string","optional":false},'
    '"values":{"type":"int64","optional":false},"optional":false,"field":"smap"},'
    '{"type":"map","keys":{"type":"int32","optional":false},'
    '"values":{"type":"string","optional":false},"optional":false,"field":"imap"},'
    '{"type":"string","optional":true,"field":"opt"},'
    '{"type":"int32","optional":false,"default":42,"field":"dflt"},'
    '{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal",'
    '"version":1,"parameters":{"scale":"2"},"field":"price"},'
    '{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Date",'
    '"version":1,"field":"day"},'
    '{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Time",'
    '"version":1,"field":"clock"},'
    '{"type":"int64","optional":false,"name":"org.apache.kafka.connect.data.Timestamp",'
    '"version":1,"field":"at"},'
    '{"type":"string","optional":false,"name":"com.example.Tag","doc":"tagged",'
    '"parameters":{"a":"1","b":"2"},"field":"tagged"}'
    '],"optional":false,"name":"com.example.Everything","version":2,"doc":"All the types"}'
)
TEXT = 'quote " backslash \\ tab \t ctrl \x01\x1f del \x7f é ✓'
EVERYTHING_PAYLOAD_JSON = (
    '{"i8":-8,"i16":1600,"i32":-32000000,"i64":6400000000000,"f32":1.1,"f64":1.0E-4,'
    '"flag":true,'
    '"text":"quote \\" backslash \\\\ tab \\t ctrl \\u0001\\u001F del \x7f é ✓",'
    '"raw":"AAH+/w==","list":[1,2,3],"smap":{"a":1,"b":-2},"imap":[[1,"one"],[2,"two"]],'
    '"opt":null,"dflt":42,"price":"BNI=","day":19782,"clock":45296789,"at":1709210096789,'
    '"tagged":"x"}'
)


def everything(dflt: int | None = None) -> Struct:
    struct = Struct(EVERYTHING)
    if dflt is not None:
        struct.put("dflt", dflt)
    return (
        struct.put("i8", -8)
        .put("i16", 1600)
        .put("i32", -32_000_000)
        .put("i64", 6_400_000_000_000)
        .put("f32", to_float32(1.1))
        .put("f64", 1e-4)
        .put("flag", True)
        .put("text", TEXT)
        .put("raw", b"\x00\x01\xfe\xff")
        .put("list", [1, 2, 3])
        .put("smap", {"a": 1, "b": -2})
        .put("imap", {1: "one", 2: "two"})
        .put("price", decimal.Decimal("12.34"))
        .put("day", dt.date(2024, 2, 29))
        .put("clock", dt.time(12, 34, 56, 789_000))
        .put("at", dt.datetime(2024, 2, 29, 12, 34, 56, 789_000, tzinfo=dt.UTC))
        .put("tagged", "x")
    )


def test_struct_of_every_type_is_written_as_kafka_writes_it():
    expected = (
        '{"schema":' + EVERYTHING_SCHEMA_JSON + ',"payload":' + EVERYTHING_PAYLOAD_JSON + "}"
    ).encode()
    assert converter().from_connect_data(TOPIC, EVERYTHING, everything()) == expected


def test_struct_of_every_type_is_read_back():
    data = '{"schema":' + EVERYTHING_SCHEMA_JSON + ',"payload":' + EVERYTHING_PAYLOAD_JSON + "}"
    read = converter().to_connect_data(TOPIC, data.encode())
    assert read.schema == EVERYTHING
    assert read.value == everything(dflt=42)
    # The same document with spaces and another key order takes the general path.
    spaced = '{ "payload" : ' + EVERYTHING_PAYLOAD_JSON + ', "schema" : ' + EVERYTHING_SCHEMA_JSON
    assert converter().to_connect_data(TOPIC, (spaced + " }").encode()) == read


def test_schema_text_is_exposed_and_cached():
    c = converter()
    assert c.as_json_schema(EVERYTHING) == EVERYTHING_SCHEMA_JSON
    assert c.as_json_schema(None) is None


@pytest.mark.parametrize(
    ("schema", "value", "payload"),
    [
        (
            Schema.BOOLEAN_SCHEMA,
            True,
            '{"schema":{"type":"boolean","optional":false},"payload":true}',
        ),
        (
            Schema.OPTIONAL_INT64_SCHEMA,
            None,
            '{"schema":{"type":"int64","optional":true},"payload":null}',
        ),
        (Decimal.schema(2), decimal.Decimal("1.56"), None),
        (
            SchemaBuilder.array(Schema.OPTIONAL_FLOAT64_SCHEMA).build(),
            [math.nan, math.inf, -math.inf, 1e10, None, 0.5],
            '{"schema":{"type":"array","items":{"type":"double","optional":true},'
            '"optional":false},"payload":["NaN","Infinity","-Infinity",1.0E10,null,0.5]}',
        ),
        (
            SchemaBuilder.int64().optional().default_value(5).build(),
            None,
            '{"schema":{"type":"int64","optional":true,"default":5},"payload":5}',
        ),
    ],
)
def test_single_values(schema, value, payload):
    if payload is None:  # Kafka's JsonConverterTest: 1.56 at scale 2 is bytes {0, -100}
        payload = (
            '{"schema":{"type":"bytes","optional":false,'
            '"name":"org.apache.kafka.connect.data.Decimal","version":1,'
            '"parameters":{"scale":"2"}},"payload":"AJw="}'
        )
    assert converter().from_connect_data(TOPIC, schema, value) == payload.encode()


def test_schemaless_values_with_and_without_envelope():
    value = {"a": [1, 2.5, "x", True, None], "b": {"c": b"\x01"}}
    assert converter().from_connect_data(TOPIC, None, value) == (
        b'{"schema":null,"payload":{"a":[1,2.5,"x",true,null],"b":{"c":"AQ=="}}}'
    )
    plain = converter(schemas_enable="false")
    assert plain.from_connect_data(TOPIC, None, {1: "x"}) == b'[[1,"x"]]'
    assert plain.to_connect_data(TOPIC, b'{"a":[1,2.5,null]}') == SchemaAndValue(
        None, {"a": [1, 2.5, None]}
    )
    assert converter().to_connect_data(TOPIC, b'{"schema":null,"payload":[1.5]}') == (
        SchemaAndValue(None, [1.5])
    )


def test_nulls_are_null_bytes_and_null_schema_and_value():
    c = converter()
    assert c.from_connect_data(TOPIC, None, None) is None
    assert c.to_connect_data(TOPIC, None) == SchemaAndValue.NULL
    assert converter(schemas_enable=False).to_connect_data(TOPIC, b"") == SchemaAndValue.NULL


@pytest.mark.parametrize(
    "data",
    [b'{"payload":1}', b'{"schema":null}', b'{"schema":null,"payload":1,"x":2}', b"[1]", b"1"],
)
def test_envelope_must_have_exactly_schema_and_payload(data):
    from connect.api.errors import DataError

    with pytest.raises(DataError) as error:
        converter().to_connect_data(TOPIC, data)
    assert str(error.value) == (
        'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not '
        "contain additional fields. If you are trying to deserialize plain JSON data, set "
        "schemas.enable=false in your converter configuration."
    )


def test_null_for_required_field_without_default_is_a_data_error():
    from connect.api.errors import DataError

    schema = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).build()
    with pytest.raises(
        DataError,
        match="Conversion error: null value for field that is required and has no default value",
    ):
        converter().from_connect_data(TOPIC, Schema.INT32_SCHEMA, None)
    data = (
        b'{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],'
        b'"optional":false},"payload":{}}'
    )
    with pytest.raises(DataError, match="Invalid null value for required INT32 field"):
        converter().to_connect_data(TOPIC, data)
    assert schema  # the schema the bytes describe


def test_replace_null_with_default_can_be_turned_off():
    schema = (
        SchemaBuilder.struct().field("n", SchemaBuilder.int32().optional().default_value(7)).build()
    )
    value = Struct(schema)  # n unset: null
    kept = converter(replace_null_with_default="false")
    replaced = converter()
    schema_json = (
        '{"type":"struct","fields":[{"type":"int32","optional":true,"default":7,"field":"n"}],'
        '"optional":false}'
    )
    assert (
        replaced.from_connect_data(TOPIC, schema, value)
        == ('{"schema":' + schema_json + ',"payload":{"n":7}}').encode()
    )
    assert (
        kept.from_connect_data(TOPIC, schema, value)
        == ('{"schema":' + schema_json + ',"payload":{"n":null}}').encode()
    )
    data = ('{"schema":' + schema_json + ',"payload":{"n":null}}').encode()
    assert kept.to_connect_data(TOPIC, data).value.get_without_default("n") is None
    assert replaced.to_connect_data(TOPIC, data).value.get_without_default("n") == 7


def test_decimal_format_numeric_writes_numbers_at_the_schema_scale():
    c = converter(decimal_format="numeric")
    schema = (
        SchemaBuilder.struct()
        .field("a", Decimal.schema(2))
        .field("b", Decimal.schema(10))
        .field("c", Decimal.builder(2).optional())
        .build()
    )
    value = Struct(schema).put("a", decimal.Decimal("12.3")).put("b", decimal.Decimal("1E-10"))
    data = c.from_connect_data(TOPIC, schema, value)
    assert data.endswith(b',"payload":{"a":12.30,"b":1E-10,"c":null}}')
    read = c.to_connect_data(TOPIC, data).value
    assert read.get("a") == decimal.Decimal("12.30") and str(read.get("a")) == "12.30"
    assert read.get("b") == decimal.Decimal("1E-10")
    # A BASE64 converter reads numbers too, and every digit is kept.
    wide = (
        b'{"schema":{"type":"bytes","optional":false,'
        b'"name":"org.apache.kafka.connect.data.Decimal","version":1,'
        b'"parameters":{"scale":"20"}},"payload":0.12345678901234567890}'
    )
    assert converter().to_connect_data(TOPIC, wide).value == decimal.Decimal(
        "0.12345678901234567890"
    )


def test_struct_default_value_and_decimal_default_in_schema():
    inner = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).optional().build()
    schema = (
        SchemaBuilder.struct()
        .field("p", Decimal.builder(2).optional().default_value(decimal.Decimal("1.00")))
        .field("s", SchemaBuilder.from_schema(inner).default_value(Struct(inner).put("x", 3)))
        .build()
    )
    data = converter().from_connect_data(TOPIC, schema, Struct(schema))
    assert data == (
        b'{"schema":{"type":"struct","fields":['
        b'{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal",'
        b'"version":1,"parameters":{"scale":"2"},"default":"ZA==","field":"p"},'
        b'{"type":"struct","fields":[{"type":"int32","optional":false,"field":"x"}],'
        b'"optional":true,"default":{"x":3},"field":"s"}],"optional":false},'
        b'"payload":{"p":"ZA==","s":{"x":3}}}'
    )
    assert converter().to_connect_data(TOPIC, data).schema == schema


def test_json_converter_is_a_header_converter():
    c = JsonConverter()
    c.configure({"schemas.enable": "false"})
    assert c.from_connect_header(TOPIC, "h", Schema.STRING_SCHEMA, "v") == b'"v"'
    assert c.to_connect_header(TOPIC, "h", b"[1]") == SchemaAndValue(None, [1])


def test_utf16_input_is_detected():
    data = '{"schema":{"type":"string","optional":false},"payload":"é"}'.encode("utf-16-le")
    assert converter().to_connect_data(TOPIC, data) == SchemaAndValue(Schema.STRING_SCHEMA, "é")


@pytest.mark.parametrize("cache_size", ["0", "1", "1000"])
def test_schema_caches_of_any_size_give_the_same_bytes(cache_size):
    c = converter(schemas_cache_size=cache_size)
    other = SchemaBuilder.struct().field("x", Schema.OPTIONAL_STRING_SCHEMA).build()
    for _ in range(3):
        for schema, value in ((EVERYTHING, everything()), (other, Struct(other).put("x", "y"))):
            data = c.from_connect_data(TOPIC, schema, value)
            assert data == converter().from_connect_data(TOPIC, schema, value)
            assert c.to_connect_data(TOPIC, data).schema == schema
