"""Connect schemas and values to JSON Schema and JSON and back, as Confluent's
JsonSchemaData maps them; JSON schemas written by other producers read as Connect."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json

import pytest

from connect.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from connect.api.errors import DataError
from schema_registry.serde import JsonSchemaData, JsonSchemaDataConfig

ONE_OF = "io.confluent.connect.json.OneOf"
ENUM = "io.confluent.connect.json.Enum"


def to_json_schema(schema, **options):
    return JsonSchemaData(JsonSchemaDataConfig(**options)).from_connect_schema(schema)


def to_connect(value, **options):
    return JsonSchemaData(JsonSchemaDataConfig(**options)).to_connect_schema(json.dumps(value))


def round_trip(schema, value, validate=True, **options):
    data = JsonSchemaData(JsonSchemaDataConfig(**options))
    written = data.writer(schema)
    read = data.reader(written.text)
    return read.read(written.write(value, validate=validate), validate=validate)


# -- Connect to JSON Schema ------------------------------------------------------------------


@pytest.mark.parametrize("schema, expected", [
    (Schema.INT8_SCHEMA, {"type": "integer", "connect.type": "int8"}),
    (Schema.INT16_SCHEMA, {"type": "integer", "connect.type": "int16"}),
    (Schema.INT32_SCHEMA, {"type": "integer", "connect.type": "int32"}),
    (Schema.INT64_SCHEMA, {"type": "integer", "connect.type": "int64"}),
    (Schema.FLOAT32_SCHEMA, {"type": "number", "connect.type": "float32"}),
    (Schema.FLOAT64_SCHEMA, {"type": "number", "connect.type": "float64"}),
    (Schema.BOOLEAN_SCHEMA, {"type": "boolean"}),
    (Schema.STRING_SCHEMA, {"type": "string"}),
    (Schema.BYTES_SCHEMA, {"type": "string", "connect.type": "bytes"}),
    (Schema.OPTIONAL_STRING_SCHEMA, {"oneOf": [{"type": "null"}, {"type": "string"}]}),
    (SchemaBuilder.array(Schema.INT64_SCHEMA).build(),
     {"type": "array", "items": {"type": "integer", "connect.type": "int64"}}),
    (SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.BOOLEAN_SCHEMA).build(),
     {"type": "object", "additionalProperties": {"type": "boolean"}, "connect.type": "map"}),
    (SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.BOOLEAN_SCHEMA).build(),
     {"type": "array", "items": {"type": "object", "properties": {
         "key": {"type": "integer", "connect.type": "int32", "connect.index": 0},
         "value": {"type": "boolean", "connect.index": 1}}}, "connect.type": "map"}),
])
def test_connect_types_to_json_schema(schema, expected):
    assert to_json_schema(schema) == expected


def test_logical_types_keep_their_name_version_and_parameters():
    assert to_json_schema(Decimal.schema(2)) == {
        "type": "number", "title": "org.apache.kafka.connect.data.Decimal",
        "connect.type": "bytes", "connect.version": 1, "connect.parameters": {"scale": "2"}}
    assert to_json_schema(Timestamp.SCHEMA) == {
        "type": "integer", "title": "org.apache.kafka.connect.data.Timestamp",
        "connect.type": "int64", "connect.version": 1}


def test_structs_become_objects_with_indexed_properties():
    schema = (SchemaBuilder.struct().name("Person").doc("a person").version(2)
              .field("name", Schema.STRING_SCHEMA)
              .field("age", Schema.OPTIONAL_INT32_SCHEMA)
              .field("nick", SchemaBuilder.string().default_value("x").build())
              .build())
    assert to_json_schema(schema) == {
        "type": "object", "title": "Person", "description": "a person",
        "properties": {
            "name": {"type": "string", "connect.index": 0},
            "age": {"oneOf": [{"type": "null"},
                              {"type": "integer", "connect.type": "int32"}],
                    "connect.index": 1},
            "nick": {"type": "string", "default": "x", "connect.index": 2},
        },
        "connect.version": 2,
    }
    closed = to_json_schema(schema, allow_additional_properties=False)
    assert closed["additionalProperties"] is False


def test_optional_structs_and_one_of_unions():
    point = SchemaBuilder.struct().name("P").field("x", Schema.INT32_SCHEMA).optional().build()
    got = to_json_schema(point)
    assert got["oneOf"][0] == {"type": "null"}
    assert got["oneOf"][1]["title"] == "P"
    union = (SchemaBuilder.struct().name(ONE_OF).optional()
             .field(f"{ONE_OF}.field.0", Schema.OPTIONAL_INT64_SCHEMA)
             .field(f"{ONE_OF}.field.1", Schema.OPTIONAL_STRING_SCHEMA).build())
    assert to_json_schema(union) == {"oneOf": [
        {"type": "null"}, {"type": "integer", "connect.type": "int64", "connect.index": 0},
        {"type": "string", "connect.index": 1}]}


def test_enum_parameters_become_a_json_enum_and_confluents_parameters_are_hidden():
    schema = (SchemaBuilder.string().parameter(ENUM, "").parameter(f"{ENUM}.A", "A")
              .parameter(f"{ENUM}.<NULL>", "<NULL>").parameter("other", "kept").build())
    assert to_json_schema(schema) == {"enum": ["A", None],
                                      "connect.parameters": {"other": "kept"}}


# -- JSON Schema to Connect ------------------------------------------------------------------


@pytest.mark.parametrize("value, expected", [
    ({"type": "integer"}, Schema.INT64_SCHEMA),
    ({"type": "number"}, Schema.FLOAT64_SCHEMA),
    ({"type": "integer", "connect.type": "int16"}, Schema.INT16_SCHEMA),
    ({"type": "number", "connect.type": "float32"}, Schema.FLOAT32_SCHEMA),
    ({"type": "string", "connect.type": "bytes"}, Schema.BYTES_SCHEMA),
    ({"type": "boolean"}, Schema.BOOLEAN_SCHEMA),
    ({"type": ["string", "null"]}, Schema.OPTIONAL_STRING_SCHEMA),
    ({"anyOf": [{"type": "null"}, {"type": "boolean"}]}, Schema.OPTIONAL_BOOLEAN_SCHEMA),
    ({"type": "array", "items": {"type": "string"}},
     SchemaBuilder.array(Schema.STRING_SCHEMA).build()),
    ({"type": "object", "connect.type": "map", "additionalProperties": {"type": "integer"}},
     SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT64_SCHEMA).build()),
])
def test_json_schema_types_to_connect(value, expected):
    assert to_connect(value) == expected


def test_objects_become_structs_ordered_by_connect_index():
    schema = to_connect({"type": "object", "title": "T", "description": "d", "properties": {
        "b": {"type": "string", "connect.index": 1},
        "a": {"type": "integer", "connect.index": 0, "default": 3}}})
    assert (schema.name, schema.doc) == ("T", "d")
    assert [f.name for f in schema.fields] == ["a", "b"]
    assert schema.field("a").schema.default_value == 3


def test_non_required_properties_are_optional_only_when_asked():
    value = {"type": "object", "properties": {"a": {"type": "string"},
                                              "b": {"type": "string"}}, "required": ["a"]}
    assert not to_connect(value).field("b").schema.optional
    optional = to_connect(value, use_optional_for_non_required=True)
    assert optional.field("b").schema.optional and not optional.field("a").schema.optional


def test_one_of_with_several_members_is_a_one_of_struct():
    schema = to_connect({"oneOf": [{"type": "integer"}, {"type": "string"},
                                   {"type": "null"}]})
    assert schema.name == ONE_OF and schema.optional
    assert [f.name for f in schema.fields] == [f"{ONE_OF}.field.0", f"{ONE_OF}.field.1"]


def test_enums_refs_and_all_of():
    schema = to_connect({
        "type": "object", "title": "Doc",
        "definitions": {"Color": {"type": "string", "enum": ["red", "blue"]}},
        "properties": {
            "color": {"$ref": "#/definitions/Color"},
            "both": {"allOf": [{"type": "object", "properties": {"x": {"type": "integer"}}},
                               {"properties": {"y": {"type": "string"}}}]},
        },
    })
    color = schema.field("color").schema
    assert dict(color.parameters) == {ENUM: "", f"{ENUM}.red": "red", f"{ENUM}.blue": "blue"}
    assert [f.name for f in schema.field("both").schema.fields] == ["x", "y"]


@pytest.mark.parametrize("value, message", [
    ({}, "empty or boolean"),
    ({"type": "null"}, "Unsupported JSON schema type"),
    ({"type": "array"}, "did not specify the items"),
    ({"type": "object", "title": "N", "properties": {"next": {"$ref": "#"}}}, "recursive"),
])
def test_json_schemas_without_a_connect_form_are_refused(value, message):
    with pytest.raises(DataError, match=message):
        to_connect(value)


# -- values ------------------------------------------------------------------------------------


ITEM = SchemaBuilder.struct().name("Item").field("sku", Schema.STRING_SCHEMA).build()
RECORD = (
    SchemaBuilder.struct().name("Rec")
    .field("i8", Schema.INT8_SCHEMA).field("i64", Schema.INT64_SCHEMA)
    .field("f32", Schema.FLOAT32_SCHEMA).field("f64", Schema.FLOAT64_SCHEMA)
    .field("flag", Schema.BOOLEAN_SCHEMA).field("text", Schema.STRING_SCHEMA)
    .field("raw", Schema.BYTES_SCHEMA).field("price", Decimal.schema(2))
    .field("day", Date.SCHEMA).field("at", Time.SCHEMA).field("ts", Timestamp.SCHEMA)
    .field("note", Schema.OPTIONAL_STRING_SCHEMA)
    .field("items", SchemaBuilder.array(ITEM).build())
    .field("by_id", SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA).build())
    .field("tags", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build())
    .field("qty", SchemaBuilder.int32().default_value(1).build())
    .build()
)


def record_value():
    return (Struct(RECORD).put("i8", -1).put("i64", 2**60).put("f32", 0.5).put("f64", 1e300)
            .put("flag", False).put("text", "\u00e9\U0001f600").put("raw", b"\x00\xfe")
            .put("price", decimal.Decimal("10.05")).put("day", dt.date(2020, 2, 2))
            .put("at", dt.time(0, 0, 1)).put("ts", dt.datetime(2020, 1, 1, tzinfo=dt.UTC))
            .put("items", [Struct(ITEM).put("sku", "x")]).put("by_id", {3: "c"})
            .put("tags", {"t": 1}))


def test_values_round_trip_and_defaults_are_filled_in():
    expected = record_value().put("qty", 1)
    assert round_trip(RECORD, record_value(), validate=False) == expected
    assert round_trip(RECORD, record_value(), decimal_numeric=True) == expected


def test_base64_decimals_do_not_match_confluents_number_schema():
    # Confluent declares decimals "type": "number" whatever decimal.format says, so with
    # the default BASE64 format json.fail.invalid.schema refuses them, as Confluent's does
    schema = SchemaBuilder.struct().field("d", Decimal.schema(1)).build()
    written = JsonSchemaData().writer(schema)
    with pytest.raises(DataError, match="not of type 'number'"):
        written.write(Struct(schema).put("d", decimal.Decimal("1.5")), validate=True)


def test_the_json_written():
    document = json.loads(JsonSchemaData().writer(RECORD).write(record_value()))
    assert document["raw"] == base64.b64encode(b"\x00\xfe").decode()
    assert document["price"] == base64.b64encode(b"\x03\xed").decode()  # 1005
    assert document["day"] == 18294 and document["at"] == 1000
    assert document["ts"] == 1577836800000
    assert document["by_id"] == [{"key": 3, "value": "c"}]
    assert document["note"] is None and document["qty"] == 1


def test_numeric_decimals_are_exact_json_numbers():
    schema = SchemaBuilder.struct().field("d", Decimal.schema(20)).build()
    value = Struct(schema).put("d", decimal.Decimal("0.12345678901234567890"))
    data = JsonSchemaData(JsonSchemaDataConfig(decimal_numeric=True))
    text = data.writer(schema).write(value, validate=True)
    assert text == b'{"d":0.12345678901234567890}'
    assert data.reader(data.writer(schema).text).read(text) == value


def test_required_fields_without_a_value_are_left_out_and_fail_validation():
    schema = SchemaBuilder.struct().name("S").field("a", Schema.STRING_SCHEMA).build()
    written = JsonSchemaData().writer(schema)
    assert written.write(Struct(schema)) == b"{}"
    closed = JsonSchemaData(JsonSchemaDataConfig(allow_additional_properties=False))
    reader = closed.reader(closed.writer(schema).text)
    with pytest.raises(DataError, match="does not match its schema"):
        reader.read(b'{"a":"x","extra":1}', validate=True)


def test_invalid_documents_fail_validation_naming_where():
    schema = SchemaBuilder.struct().field("n", Schema.INT32_SCHEMA).build()
    reader = JsonSchemaData().reader(JsonSchemaData().writer(schema).text)
    with pytest.raises(DataError, match="/n"):
        reader.read(b'{"n":"one"}', validate=True)
    with pytest.raises(DataError, match="Expected a JSON integer"):
        reader.read(b'{"n":"one"}')


def test_one_of_values_pick_the_member_that_matches():
    inner = SchemaBuilder.struct().field("x", Schema.INT64_SCHEMA).optional().build()
    union = (SchemaBuilder.struct().name(ONE_OF)
             .field(f"{ONE_OF}.field.0", Schema.OPTIONAL_STRING_SCHEMA)
             .field(f"{ONE_OF}.field.1", inner).build())
    for field, value in [(f"{ONE_OF}.field.0", "s"),
                         (f"{ONE_OF}.field.1", Struct(inner).put("x", 4))]:
        struct = Struct(union).put(field, value)
        assert round_trip(union, struct) == struct


def test_documents_of_a_plain_json_schema():
    text = json.dumps({"type": "object", "title": "Pet", "properties": {
        "name": {"type": "string"}, "legs": {"type": "integer"},
        "weight": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string"}},
        "owner": {"type": "object", "properties": {"id": {"type": "integer"}}}}})
    read = JsonSchemaData().reader(text)
    value = read.read(b'{"name":"rex","legs":4,"weight":12.5,"tags":["a"],"owner":{"id":1}}')
    assert (value.get("name"), value.get("legs"), value.get("weight")) == ("rex", 4, 12.5)
    assert value.get("tags") == ["a"] and value.get("owner").get("id") == 1
    assert read.read(b"null") is None


def test_bad_payloads_are_data_errors():
    reader = JsonSchemaData().reader(json.dumps({"type": "string"}))
    with pytest.raises(DataError, match="not valid UTF-8 JSON"):
        reader.read(b"\xff")
    with pytest.raises(DataError, match="not valid UTF-8 JSON"):
        reader.read(b"{")
