"""Connect values to Avro binary and back, and Avro written by others read as Connect data.

fastavro (the Avro library of Confluent's Python client) is the reference for the bytes:
data written by the mapping must read with fastavro as the plain Avro value, and data
fastavro writes for any Avro schema must read as the right Connect value.
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json

import fastavro
import pytest

from connect.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from connect.api.errors import DataError
from schema_registry.serde import AvroData, AvroDataConfig

NS = "io.confluent.connect.avro"
UTC = dt.UTC


def fastavro_read(text, payload):
    return fastavro.schemaless_reader(io.BytesIO(payload),
                                      fastavro.parse_schema(json.loads(text)), None)


def fastavro_write(schema, datum):
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema), datum)
    return buffer.getvalue()


def round_trip(schema, value, **options):
    data = AvroData(AvroDataConfig(**options))
    written = data.writer(schema)
    read = data.reader(written.text)
    return read.read(written.write(value))


ITEM = SchemaBuilder.struct().name("shop.Item").field("sku", Schema.STRING_SCHEMA).build()
ORDER = (
    SchemaBuilder.struct().name("shop.Order")
    .field("i8", Schema.INT8_SCHEMA).field("i16", Schema.INT16_SCHEMA)
    .field("i32", Schema.INT32_SCHEMA).field("i64", Schema.INT64_SCHEMA)
    .field("f32", Schema.FLOAT32_SCHEMA).field("f64", Schema.FLOAT64_SCHEMA)
    .field("flag", Schema.BOOLEAN_SCHEMA).field("text", Schema.STRING_SCHEMA)
    .field("raw", Schema.BYTES_SCHEMA)
    .field("price", Decimal.schema(2)).field("day", Date.SCHEMA)
    .field("at", Time.SCHEMA).field("ts", Timestamp.SCHEMA)
    .field("note", Schema.OPTIONAL_STRING_SCHEMA)
    .field("item", ITEM)
    .field("items", SchemaBuilder.array(ITEM).build())
    .field("maybe", SchemaBuilder.struct().name("shop.Item").field("sku", Schema.STRING_SCHEMA)
           .optional().build())
    .field("tags", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.OPTIONAL_INT32_SCHEMA)
           .build())
    .field("by_id", SchemaBuilder.map(Schema.INT64_SCHEMA, ITEM).build())
    .field("qty", SchemaBuilder.int32().default_value(1).build())
    .build()
)


def order_value():
    item = Struct(ITEM).put("sku", "A-1")
    return (Struct(ORDER).put("i8", -128).put("i16", 32767).put("i32", -(2**31))
            .put("i64", 2**63 - 1).put("f32", 1.5).put("f64", -2.25).put("flag", True)
            .put("text", "h\u00e9llo \U0001f600").put("raw", b"\x00\xff")
            .put("price", decimal.Decimal("-12.34")).put("day", dt.date(1969, 12, 31))
            .put("at", dt.time(23, 59, 59, 999000))
            .put("ts", dt.datetime(2024, 2, 29, 12, 0, 0, 123000, tzinfo=UTC))
            .put("item", item).put("items", [item, Struct(ITEM).put("sku", "B")])
            .put("tags", {"a": 1, "b": None}).put("by_id", {7: item}))


def test_every_type_round_trips_and_unset_fields_take_their_defaults():
    value = order_value()
    got = round_trip(ORDER, value)
    expected = order_value().put("qty", 1)
    assert got == expected


def test_bytes_are_plain_avro_that_fastavro_reads():
    data = AvroData()
    written = data.writer(ORDER)
    plain = fastavro_read(written.text, written.write(order_value()))
    assert plain["i8"] == -128 and plain["price"] == decimal.Decimal("-12.34")
    assert plain["day"] == dt.date(1969, 12, 31)
    assert plain["ts"] == dt.datetime(2024, 2, 29, 12, 0, 0, 123000, tzinfo=UTC)
    assert plain["at"] == dt.time(23, 59, 59, 999000)
    assert plain["by_id"] == [{"key": 7, "value": {"sku": "A-1"}}]
    assert plain["maybe"] is None and plain["qty"] == 1


def test_the_encoding_matches_fastavros_for_the_same_avro_value():
    data = AvroData()
    written = data.writer(ORDER)
    plain = fastavro_read(written.text, written.write(order_value()))
    assert fastavro_write(json.loads(written.text), plain) == written.write(order_value())


def test_top_level_primitives_and_logical_values():
    assert round_trip(Schema.STRING_SCHEMA, "x") == "x"
    assert round_trip(Schema.OPTIONAL_INT64_SCHEMA, None) is None
    assert round_trip(Schema.INT8_SCHEMA, 5) == 5
    assert round_trip(Decimal.schema(0), decimal.Decimal("12345678901234567890")) == \
        decimal.Decimal("12345678901234567890")
    assert round_trip(Timestamp.SCHEMA, dt.datetime(1900, 1, 1, tzinfo=UTC)) == \
        dt.datetime(1900, 1, 1, tzinfo=UTC)
    assert round_trip(SchemaBuilder.array(Date.SCHEMA).build(), [dt.date(2000, 1, 1)]) == \
        [dt.date(2000, 1, 1)]


def test_union_structs_write_the_member_that_is_set():
    rec = SchemaBuilder.struct().name("a.R").field("x", Schema.INT32_SCHEMA).optional().build()
    union = (SchemaBuilder.struct().name(f"{NS}.Union").optional()
             .field("int", Schema.OPTIONAL_INT32_SCHEMA)
             .field("long", Schema.OPTIONAL_INT64_SCHEMA)
             .field("string", Schema.OPTIONAL_STRING_SCHEMA)
             .field("R", rec).build())
    data = AvroData()
    written = data.writer(union)
    read = data.reader(written.text)
    for field, value in [("int", 3), ("string", "s"), ("R", Struct(rec).put("x", 1))]:
        struct = Struct(union).put(field, value)
        assert read.read(written.write(struct)) == struct
    assert read.read(written.write(None)) is None
    # fastavro does not say which numeric member was written: an integer reads as the
    # first integer member whose range holds it
    assert read.read(written.write(Struct(union).put("long", 2**40))) == \
        Struct(union).put("long", 2**40)
    assert read.read(written.write(Struct(union).put("long", 5))) == Struct(union).put("int", 5)


def test_a_required_union_with_nothing_set_is_refused():
    union = (SchemaBuilder.struct().name(f"{NS}.Union")
             .field("int", Schema.OPTIONAL_INT32_SCHEMA)
             .field("string", Schema.OPTIONAL_STRING_SCHEMA).build())
    with pytest.raises(DataError, match="No field of the union"):
        AvroData().writer(union).write(Struct(union))


def test_fixed_decimals_are_sign_extended_to_the_fixed_size():
    schema = (Decimal.builder(2).parameter("connect.fixed.size", "4").build())
    written = AvroData().writer(schema)
    assert json.loads(written.text)["type"] == "fixed"
    assert written.write(decimal.Decimal("-0.01")) == b"\xff\xff\xff\xff"
    assert round_trip(schema, decimal.Decimal("-1.28")) == decimal.Decimal("-1.28")
    with pytest.raises(DataError, match="holds 4"):
        written.write(decimal.Decimal("99999999.99"))


def test_enhanced_enums_write_avro_enums():
    enum = (SchemaBuilder.string().name("a.Suit").parameter(f"{NS}.Enum", "a.Suit")
            .parameter(f"{NS}.Enum.H", "H").parameter(f"{NS}.Enum.S", "S").build())
    data = AvroData(AvroDataConfig(enhanced_avro_schema_support=True))
    written = data.writer(enum)
    assert written.write("S") == b"\x02"
    assert data.reader(written.text).read(b"\x02") == "S"
    with pytest.raises(DataError):
        written.write("X")


def test_ignore_default_for_nullables_writes_null():
    schema = (SchemaBuilder.struct().name("a.D")
              .field("o", SchemaBuilder.string().optional().default_value("d").build()).build())
    assert round_trip(schema, Struct(schema)).get_without_default("o") == "d"
    got = round_trip(schema, Struct(schema), ignore_default_for_nullables=True)
    assert got.get_without_default("o") is None


def test_scrubbed_field_names_are_read_back_scrubbed_as_in_confluent():
    schema = SchemaBuilder.struct().name("a.S").field("a-b", Schema.INT32_SCHEMA).build()
    got = round_trip(schema, Struct(schema).put("a-b", 3), scrub_invalid_names=True)
    assert [f.name for f in got.schema.fields] == ["a_b"]
    assert got.get("a_b") == 3


@pytest.mark.parametrize("value", [None, True, 7, -2**62, 1.5, "s", b"\x01",
                                   [1, "a", None, [2]], {"k": [1.5], 3: None, "n": {"x": b""}}])
def test_schemaless_values_round_trip_through_the_anything_record(value):
    assert round_trip(None, value) == value


def test_schemaless_logical_values_are_refused():
    with pytest.raises(DataError, match="need a schema"):
        AvroData().writer(None).write(decimal.Decimal("1"))


# -- Avro written by other producers -----------------------------------------------------------


def test_values_written_by_fastavro_with_a_non_connect_schema():
    schema = {
        "type": "record", "name": "Event", "namespace": "ev",
        "fields": [
            {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
            {"name": "hash", "type": {"type": "fixed", "name": "Hash", "size": 2}},
            {"name": "when", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
            {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal",
                                        "precision": 6, "scale": 3}},
            {"name": "child", "type": ["null", "Event"], "default": None},
            {"name": "choice", "type": ["int", "string", "Kind"]},
            {"name": "attrs", "type": {"type": "map", "values": ["null", "double"]}},
            {"name": "since", "type": {"type": "int", "logicalType": "date"}, "default": 0},
        ],
    }
    non_recursive = json.loads(json.dumps(schema))
    non_recursive["fields"][5] = {"name": "child", "type": ["null", "long"], "default": None}
    datum = {"kind": "B", "hash": b"\x01\x02", "when": 1_700_000_000_000_001,
             "id": "6f1c0b1e-8a7f-4c43-9b0d-6a3c2c9f1e11",
             "amount": decimal.Decimal("-1.5"), "child": 9, "choice": "Kind" and ("ev.Kind", "A"),
             "attrs": {"x": 0.5, "y": None}, "since": dt.date(1970, 1, 3)}
    payload = fastavro_write(non_recursive, datum)
    read = AvroData().reader(json.dumps(non_recursive))
    value = read.read(payload)
    assert value.get("kind") == "B"
    assert value.get("hash") == b"\x01\x02"
    assert value.get("when") == 1_700_000_000_000_001
    assert value.get("id") == "6f1c0b1e-8a7f-4c43-9b0d-6a3c2c9f1e11"
    assert value.get("amount") == decimal.Decimal("-1.500")
    assert value.get("child") == 9
    choice = value.get("choice")
    assert choice.schema.name == f"{NS}.Union" and choice.get("Kind") == "A"
    assert choice.get("int") is None and choice.get("string") is None
    assert value.get("attrs") == {"x": 0.5, "y": None}
    assert value.get("since") == dt.date(1970, 1, 3)
    assert read.schema.field("since").schema.default_value == dt.date(1970, 1, 1)


def test_union_members_are_matched_by_python_type():
    schema = ["null", "boolean", "long", "double", "string", "bytes",
              {"type": "array", "items": "int"}, {"type": "map", "values": "int"}]
    read = AvroData().reader(json.dumps(schema))
    for member, datum in [("boolean", True), ("long", 5), ("double", 0.5), ("string", "s"),
                          ("bytes", b"b"), ("array", [1]), ("map", {"a": 1})]:
        value = read.read(fastavro_write(schema, datum))
        assert value.get(member) == datum
        assert [f.name for f in value.schema.fields if value.get(f) is not None] == [member]
    assert read.read(fastavro_write(schema, None)) is None


@pytest.mark.parametrize("payload", [b"", b"\x02\x06ab"])
def test_truncated_payloads_are_data_errors(payload):
    read = AvroData().reader(json.dumps({"type": "record", "name": "R", "fields": [
        {"name": "a", "type": "int"}, {"name": "s", "type": "string"}]}))
    with pytest.raises(DataError, match="Cannot read Avro data"):
        read.read(payload)


def test_values_that_do_not_fit_are_data_errors_naming_the_field():
    written = AvroData().writer(ORDER)
    bad = order_value()
    bad._values[ORDER.field("i32").index] = "not a number"
    with pytest.raises(DataError, match='field "i32"'):
        written.write(bad)
    other = SchemaBuilder.struct().name("x.Other").field("a", Schema.INT32_SCHEMA).build()
    with pytest.raises(DataError, match="Mismatching struct schema"):
        written.write(Struct(other).put("a", 1))
    with pytest.raises(DataError):
        AvroData().writer(Decimal.schema(1)).write(decimal.Decimal("1.25"))
