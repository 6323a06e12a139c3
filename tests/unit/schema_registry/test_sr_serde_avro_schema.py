"""Connect schemas to Avro schema text and back, as Confluent's AvroData maps them.

The expected texts are what Confluent's AvroConverter registers for the same Connect
schemas (Java Avro's key order: type attributes, then connect.* properties in
AvroData's order, then logicalType).
"""

from __future__ import annotations

import json

import pytest

from connect.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from connect.api.errors import DataError
from schema_registry.serde import AvroData, AvroDataConfig

DEC = "org.apache.kafka.connect.data.Decimal"
NS = "io.confluent.connect.avro"


def avro(schema, **options):
    return AvroData(AvroDataConfig(**options)).writer(schema).text


def avro_json(schema, **options):
    return json.loads(avro(schema, **options))


def to_connect(value, version=None, **options):
    text = json.dumps(value)
    return AvroData(AvroDataConfig(**options)).to_connect_schema(text, version=version)


def record(fields, name="R", **extra):
    return {"type": "record", "name": name, "fields": fields, **extra}


# -- Connect to Avro: primitives and metadata ------------------------------------------------


@pytest.mark.parametrize("schema, expected", [
    (Schema.INT8_SCHEMA, '{"type":"int","connect.type":"int8"}'),
    (Schema.INT16_SCHEMA, '{"type":"int","connect.type":"int16"}'),
    (Schema.INT32_SCHEMA, '"int"'),
    (Schema.INT64_SCHEMA, '"long"'),
    (Schema.FLOAT32_SCHEMA, '"float"'),
    (Schema.FLOAT64_SCHEMA, '"double"'),
    (Schema.BOOLEAN_SCHEMA, '"boolean"'),
    (Schema.STRING_SCHEMA, '"string"'),
    (Schema.BYTES_SCHEMA, '"bytes"'),
    (Schema.OPTIONAL_STRING_SCHEMA, '["null","string"]'),
    (Schema.OPTIONAL_INT8_SCHEMA, '["null",{"type":"int","connect.type":"int8"}]'),
])
def test_primitive_schemas(schema, expected):
    assert avro(schema) == expected


def test_logical_types_carry_connect_metadata_then_logical_type():
    assert avro(Decimal.schema(2)) == (
        '{"type":"bytes","scale":2,"precision":64,"connect.version":1,'
        '"connect.parameters":{"scale":"2"},"connect.name":"' + DEC + '",'
        '"logicalType":"decimal"}')
    assert avro(Date.SCHEMA) == ('{"type":"int","connect.version":1,"connect.name":'
                                 '"org.apache.kafka.connect.data.Date","logicalType":"date"}')
    assert avro(Time.SCHEMA) == ('{"type":"int","connect.version":1,"connect.name":'
                                 '"org.apache.kafka.connect.data.Time",'
                                 '"logicalType":"time-millis"}')
    assert avro(Timestamp.SCHEMA) == ('{"type":"long","connect.version":1,"connect.name":'
                                      '"org.apache.kafka.connect.data.Timestamp",'
                                      '"logicalType":"timestamp-millis"}')


def test_decimal_precision_comes_from_its_connect_parameter():
    schema = Decimal.builder(3).parameter("connect.decimal.precision", "10").build()
    got = avro_json(schema)
    assert (got["precision"], got["scale"], got["logicalType"]) == (10, 3, "decimal")
    assert got["connect.parameters"] == {"scale": "3", "connect.decimal.precision": "10"}


def test_metadata_properties_in_confluents_order():
    schema = (SchemaBuilder.string().name("com.x.Code").version(3).doc("a code")
              .parameter("k", "v").default_value("AB").build())
    assert avro(schema) == ('{"type":"string","connect.doc":"a code","connect.version":3,'
                            '"connect.parameters":{"k":"v"},"connect.default":"AB",'
                            '"connect.name":"com.x.Code"}')


def test_without_connect_meta_data_only_avro_remains():
    assert avro(Schema.INT8_SCHEMA, connect_meta_data=False) == '"int"'
    assert avro(Decimal.schema(2), connect_meta_data=False) == (
        '{"type":"bytes","scale":2,"precision":64,"logicalType":"decimal"}')
    named = SchemaBuilder.struct().name("a.B").doc("d").field("f", Schema.INT32_SCHEMA).build()
    assert avro(named, connect_meta_data=False) == (
        '{"type":"record","name":"B","namespace":"a","fields":[{"name":"f","type":"int"}]}')


def test_avro_parameters_become_avro_properties():
    schema = SchemaBuilder.string().parameter("avro.java.string", "String").build()
    assert avro_json(schema, connect_meta_data=False) == {"type": "string",
                                                          "avro.java.string": "String"}


# -- structs, optionals and defaults ---------------------------------------------------------


def test_struct_becomes_a_named_record_with_field_defaults():
    schema = (SchemaBuilder.struct().name("com.example.Order").version(2)
              .field("id", Schema.INT64_SCHEMA)
              .field("note", Schema.OPTIONAL_STRING_SCHEMA)
              .field("qty", SchemaBuilder.int16().default_value(1).build())
              .field("tag", SchemaBuilder.string().optional().default_value("x").build())
              .build())
    assert avro(schema) == (
        '{"type":"record","name":"Order","namespace":"com.example","fields":['
        '{"name":"id","type":"long"},'
        '{"name":"note","type":["null","string"],"default":null},'
        '{"name":"qty","type":{"type":"int","connect.default":1,"connect.type":"int16"},'
        '"default":1},'
        '{"name":"tag","type":[{"type":"string","connect.default":"x"},"null"],'
        '"default":"x"}],'
        '"connect.version":2,"connect.name":"com.example.Order"}')


def test_unnamed_structs_are_numbered_connect_defaults():
    inner = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).build()
    other = SchemaBuilder.struct().field("y", Schema.INT32_SCHEMA).build()
    outer = (SchemaBuilder.struct().field("a", inner).field("b", other).field("c", inner)
             .build())
    got = avro_json(outer)
    assert (got["name"], got["namespace"]) == ("ConnectDefault", NS)
    a, b, c = (f["type"] for f in got["fields"])
    assert a["name"] == "ConnectDefault2" and "namespace" not in a  # same namespace
    assert b["name"] == "ConnectDefault3"
    assert c == "ConnectDefault2"  # the same struct again: a reference


def test_a_reused_named_struct_is_referenced_by_name():
    item = SchemaBuilder.struct().name("shop.Item").field("sku", Schema.STRING_SCHEMA).build()
    order = (SchemaBuilder.struct().name("shop.Order").field("first", item)
             .field("rest", SchemaBuilder.array(item).build())
             .field("maybe", SchemaBuilder.struct().name("shop.Item")
                    .field("sku", Schema.STRING_SCHEMA).optional().build())
             .build())
    fields = avro_json(order)["fields"]
    assert fields[0]["type"]["name"] == "Item"
    assert fields[1]["type"] == {"type": "array", "items": "Item"}
    assert fields[2] == {"name": "maybe", "type": ["null", "Item"], "default": None}


def test_other_namespaces_are_written_and_referenced_in_full():
    item = SchemaBuilder.struct().name("other.Item").field("sku", Schema.STRING_SCHEMA).build()
    order = SchemaBuilder.struct().name("shop.Order").field("a", item).field("b", item).build()
    fields = avro_json(order)["fields"]
    assert fields[0]["type"]["namespace"] == "other"
    assert fields[1]["type"] == "other.Item"


def test_two_different_types_with_one_name_are_refused():
    one = SchemaBuilder.struct().name("x.Same").field("a", Schema.INT32_SCHEMA).build()
    two = SchemaBuilder.struct().name("x.Same").field("b", Schema.INT32_SCHEMA).build()
    outer = SchemaBuilder.struct().name("x.Outer").field("one", one).field("two", two).build()
    with pytest.raises(DataError, match=r"x\.Same"):
        avro(outer)


def test_record_and_field_docs_come_from_confluents_parameters():
    schema = (SchemaBuilder.struct().name("a.R")
              .parameter(f"{NS}.record.doc", "the record")
              .parameter(f"{NS}.field.doc.f", "the field")
              .field("f", Schema.INT32_SCHEMA).build())
    got = avro_json(schema, connect_meta_data=False)
    assert got["doc"] == "the record"
    assert got["fields"] == [{"name": "f", "type": "int", "doc": "the field"}]


def test_struct_default_becomes_a_json_object_default():
    point = SchemaBuilder.struct().name("a.P").field("x", Schema.INT32_SCHEMA).build()
    default = Struct(point).put("x", 3)
    outer = (SchemaBuilder.struct().name("a.O")
             .field("p", SchemaBuilder.struct().name("a.P").field("x", Schema.INT32_SCHEMA)
                    .default_value(default).build())
             .build())
    field = avro_json(outer)["fields"][0]
    assert field["default"] == {"x": 3}
    assert field["type"]["connect.default"] == {"x": 3}


def test_bytes_and_logical_defaults_use_avro_json_forms():
    schema = (SchemaBuilder.struct().name("a.D")
              .field("b", SchemaBuilder.bytes().default_value(b"\x00\xff").build())
              .field("d", Decimal.builder(1).default_value(__import__("decimal")
                                                           .Decimal("-0.1")).build())
              .build())
    b, d = avro_json(schema)["fields"]
    assert b["default"] == "\u0000\u00ff"
    assert d["default"] == "\u00ff"  # unscaled -1, one byte


def test_an_invalid_field_default_is_dropped():
    # Connect's map with int keys defaults to pairs, which Avro's MapEntry array refuses
    with_default = (SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA)
                    .default_value({1: "a"}).build())
    schema = SchemaBuilder.struct().name("a.M").field("m", with_default).build()
    field = avro_json(schema)["fields"][0]
    assert "default" not in field
    assert field["type"]["connect.default"] == [[1, "a"]]


# -- maps, arrays, unions, enums, fixed ------------------------------------------------------


def test_maps_with_string_keys_are_avro_maps_others_arrays_of_map_entries():
    assert avro_json(SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build()) \
        == {"type": "map", "values": "int"}
    assert avro_json(SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA).build()) \
        == {"type": "array", "items": {
            "type": "record", "name": "MapEntry", "namespace": NS,
            "fields": [{"name": "key", "type": "int"}, {"name": "value", "type": "string"}]}}
    named = SchemaBuilder.map(Schema.INT64_SCHEMA, Schema.INT64_SCHEMA).name("a.Counts").build()
    got = avro_json(named)
    assert got["items"]["name"] == "Counts" and got["items"]["namespace"] == "a"
    assert got["items"]["connect.internal.type"] == "MapEntry"
    assert got["connect.name"] == "a.Counts"


def test_optional_string_keys_make_map_entries_unless_allowed():
    schema = SchemaBuilder.map(Schema.OPTIONAL_STRING_SCHEMA, Schema.INT32_SCHEMA).build()
    assert avro_json(schema)["type"] == "array"
    assert avro_json(schema, allow_optional_map_keys=True) == {"type": "map",
                                                               "values": "int"}


def test_arrays():
    assert avro_json(SchemaBuilder.array(Schema.OPTIONAL_INT64_SCHEMA).build()) == {
        "type": "array", "items": ["null", "long"]}


def test_union_structs_become_avro_unions():
    union = (SchemaBuilder.struct().name(f"{NS}.Union")
             .field("int", Schema.OPTIONAL_INT32_SCHEMA)
             .field("string", Schema.OPTIONAL_STRING_SCHEMA).build())
    assert avro_json(union) == ["int", "string"]
    optional = (SchemaBuilder.struct().name(f"{NS}.Union").optional()
                .field("int", Schema.OPTIONAL_INT32_SCHEMA)
                .field("R", SchemaBuilder.struct().name("a.R").field("x", Schema.INT32_SCHEMA)
                       .optional().build()).build())
    got = avro_json(optional)
    assert got[:2] == ["null", "int"]
    assert got[2]["name"] == "R" and got[2]["namespace"] == "a"


def _enum_schema():
    return (SchemaBuilder.string().name("a.Suit")
            .parameter(f"{NS}.enum.doc.Suit", "card suits")
            .parameter(f"{NS}.Enum", "a.Suit")
            .parameter(f"{NS}.Enum.HEARTS", "HEARTS")
            .parameter(f"{NS}.Enum.SPADES", "SPADES").build())


def test_enums_stay_strings_unless_enhanced_support():
    plain = avro_json(_enum_schema())
    assert plain["type"] == "string"
    assert plain["connect.parameters"][f"{NS}.Enum.SPADES"] == "SPADES"
    enhanced = avro_json(_enum_schema(), enhanced_avro_schema_support=True)
    assert (enhanced["type"], enhanced["name"], enhanced["namespace"]) == ("enum", "Suit", "a")
    assert enhanced["symbols"] == ["HEARTS", "SPADES"]
    assert enhanced["doc"] == "card suits"
    assert enhanced["connect.name"] == "a.Suit"


def test_named_bytes_with_a_fixed_size_become_fixed():
    schema = SchemaBuilder.bytes().name("a.Hash").parameter("connect.fixed.size", "4").build()
    got = avro_json(schema)
    assert (got["type"], got["name"], got["namespace"], got["size"]) == ("fixed", "Hash",
                                                                        "a", 4)


def test_scrubbed_names():
    schema = (SchemaBuilder.struct().name("my-ns.1st Record").field("a-b", Schema.INT32_SCHEMA)
              .field("ok_name", Schema.INT32_SCHEMA).build())
    got = avro_json(schema, scrub_invalid_names=True)
    assert (got["namespace"], got["name"]) == ("my_ns", "x1st_Record")
    assert [f["name"] for f in got["fields"]] == ["a_b", "ok_name"]
    assert got["connect.name"] == "my-ns.1st Record"


def test_schemaless_data_uses_confluents_anything_record():
    got = avro_json(None)
    assert got["name"] == "Anything" and got["namespace"] == NS
    assert [f["name"] for f in got["fields"]] == ["boolean", "bytes", "double", "float", "int",
                                                  "long", "string", "array", "map"]


# -- Avro to Connect -------------------------------------------------------------------------


@pytest.mark.parametrize("value, expected", [
    ("int", Schema.INT32_SCHEMA),
    ("long", Schema.INT64_SCHEMA),
    ("float", Schema.FLOAT32_SCHEMA),
    ("double", Schema.FLOAT64_SCHEMA),
    ("boolean", Schema.BOOLEAN_SCHEMA),
    ("string", Schema.STRING_SCHEMA),
    ("bytes", Schema.BYTES_SCHEMA),
    ({"type": "int", "connect.type": "int8"}, Schema.INT8_SCHEMA),
    ({"type": "int", "connect.type": "int16"}, Schema.INT16_SCHEMA),
    ({"type": "int", "logicalType": "date"}, Date.SCHEMA),
    ({"type": "int", "logicalType": "time-millis"}, Time.SCHEMA),
    ({"type": "long", "logicalType": "timestamp-millis"}, Timestamp.SCHEMA),
    ({"type": "long", "logicalType": "timestamp-micros"}, Schema.INT64_SCHEMA),
    ({"type": "string", "logicalType": "uuid"}, Schema.STRING_SCHEMA),
    ({"type": "bytes", "logicalType": "decimal", "precision": 64, "scale": 4},
     Decimal.schema(4)),
    (["null", "string"], Schema.OPTIONAL_STRING_SCHEMA),
    (["string", "null"], Schema.OPTIONAL_STRING_SCHEMA),
    (["long"], Schema.INT64_SCHEMA),
    ({"type": "map", "values": "int"},
     SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build()),
    ({"type": "array", "items": "string"}, SchemaBuilder.array(Schema.STRING_SCHEMA).build()),
])
def test_avro_types_to_connect(value, expected):
    assert to_connect(value) == expected


def test_decimal_precision_other_than_64_is_kept_as_a_parameter():
    schema = to_connect({"type": "bytes", "logicalType": "decimal", "precision": 10,
                         "scale": 2})
    assert schema.parameters == {"scale": "2", "connect.decimal.precision": "10"}
    fixed = to_connect({"type": "fixed", "name": "org.apache.kafka.connect.data.Decimal",
                        "size": 8, "logicalType": "decimal", "precision": 18, "scale": 2})
    assert fixed.name == DEC
    assert fixed.parameters == {"scale": "2", "connect.decimal.precision": "18",
                                "connect.fixed.size": "8"}


def test_records_become_structs_with_docs_and_field_defaults_as_parameters():
    schema = to_connect(record([
        {"name": "a", "type": "int", "default": 5, "doc": "field a"},
        {"name": "b", "type": ["null", "string"], "default": None},
        {"name": "c", "type": {"type": "int", "connect.default": 7}, "default": 7},
    ], name="Rec", namespace="com.x", doc="a record"))
    assert schema.name == "com.x.Rec"
    assert schema.parameters == {f"{NS}.record.doc": "a record", f"{NS}.field.doc.a": "field a"}
    a, b, c = (f.schema for f in schema.fields)
    assert (a.default_value, a.parameters) == (5, {f"{NS}.field.default": "true"})
    assert b == Schema.OPTIONAL_STRING_SCHEMA
    assert (c.default_value, c.parameters) == (7, None)


def test_nullable_field_defaults_do_not_reach_connect_as_in_confluent():
    schema = to_connect(record([{"name": "a", "type": ["string", "null"], "default": "x"}]))
    assert schema.field("a").schema == Schema.OPTIONAL_STRING_SCHEMA


def test_record_defaults_become_structs():
    schema = to_connect(record([
        {"name": "p", "type": record([{"name": "x", "type": "int"}], name="P"),
         "default": {"x": 4}}]))
    default = schema.field("p").schema.default_value
    assert isinstance(default, Struct) and default.get("x") == 4


def test_connect_properties_are_read_back():
    schema = to_connect({"type": "string", "connect.doc": "d", "connect.version": 4,
                         "connect.parameters": {"k": "v"}, "connect.default": "z",
                         "connect.name": "a.Code", "avro.java.string": "String"})
    assert (schema.doc, schema.version, schema.name, schema.default_value) == (
        "d", 4, "a.Code", "z")
    assert schema.parameters == {"k": "v", "avro.java.string": "String"}


def test_registry_version_applies_when_the_schema_has_no_connect_version():
    assert to_connect(record([{"name": "a", "type": "int"}]), version=3).version == 3
    assert to_connect({"type": "string", "connect.version": 2}, version=3).version == 2
    inner = to_connect(record([{"name": "a", "type": record([], name="In")}]), version=3)
    assert inner.field("a").schema.version is None


def test_unions_become_union_structs_named_by_member_type():
    schema = to_connect(["null", "int", "string", record([], name="a.Rec"),
                         {"type": "enum", "name": "a.E", "symbols": ["A"]}])
    assert schema.name == f"{NS}.Union" and schema.optional
    assert [f.name for f in schema.fields] == ["int", "string", "Rec", "E"]
    assert all(f.schema.optional for f in schema.fields)
    enhanced = to_connect(["int", record([], name="a.Rec")], enhanced_avro_schema_support=True)
    assert [f.name for f in enhanced.fields] == ["int", "a.Rec"]


def test_singleton_unions_flatten_unless_disabled():
    assert to_connect(["string"]) == Schema.STRING_SCHEMA
    kept = to_connect(["string"], flatten_singleton_union=False)
    assert kept.name == f"{NS}.Union" and [f.name for f in kept.fields] == ["string"]


def test_enums_become_strings_with_confluents_parameters():
    schema = to_connect({"type": "enum", "name": "Suit", "namespace": "a", "doc": "suits",
                         "symbols": ["H", "S"], "default": "H"})
    assert schema.name == "a.Suit"
    assert dict(schema.parameters) == {
        f"{NS}.enum.doc.Suit": "suits", f"{NS}.enum.default.Suit": "H",
        f"{NS}.Enum": "a.Suit", f"{NS}.Enum.H": "H", f"{NS}.Enum.S": "S"}


def test_arrays_of_map_entries_become_maps():
    schema = to_connect({"type": "array", "items": record(
        [{"name": "key", "type": "int"}, {"name": "value", "type": "string"}],
        name="MapEntry", namespace=NS)})
    assert schema == SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.STRING_SCHEMA).build()


def test_references_resolve_against_the_referenced_schemas():
    data = AvroData()
    ref = json.dumps(record([{"name": "x", "type": "int"}], name="Point", namespace="geo"))
    main = json.dumps(record([{"name": "p", "type": "geo.Point"}], name="Shape",
                             namespace="geo"))
    schema = data.reader(main, [ref]).schema
    assert schema.field("p").schema.name == "geo.Point"


@pytest.mark.parametrize("value, message", [
    (record([{"name": "next", "type": ["null", "Node"]}], name="Node"), "recursive"),
    ("null", "Standalone null"),
    ({"type": "int", "connect.type": "int32"}, "connect.type"),
    ({"type": "fixed", "name": "a.Money", "size": 8, "logicalType": "decimal",
      "precision": 10, "scale": 2}, "Mismatched names"),
    ("a.Unknown", "Unknown Avro type name"),
])
def test_avro_schemas_without_a_connect_form_are_refused(value, message):
    with pytest.raises(DataError, match=message):
        to_connect(value)


# -- round trips -----------------------------------------------------------------------------


def _round_trip_schemas():
    item = SchemaBuilder.struct().name("shop.Item").field("sku", Schema.STRING_SCHEMA).build()
    return [
        Schema.INT8_SCHEMA, Schema.OPTIONAL_INT16_SCHEMA, Schema.FLOAT32_SCHEMA,
        Decimal.schema(5), Date.SCHEMA, Time.SCHEMA, Timestamp.SCHEMA,
        SchemaBuilder.string().name("a.S").version(2).doc("d").parameter("k", "v").build(),
        SchemaBuilder.int64().default_value(9).build(),
        SchemaBuilder.array(SchemaBuilder.map(Schema.INT32_SCHEMA, item).build()).build(),
        (SchemaBuilder.struct().name("shop.Order").version(1)
         .field("id", Schema.INT64_SCHEMA).field("item", item)
         .field("items", SchemaBuilder.array(item).optional().build())
         .field("price", Decimal.builder(2).optional().build())
         .field("qty", SchemaBuilder.int16().default_value(1).build())
         .field("tags", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.STRING_SCHEMA).build())
         .build()),
        (SchemaBuilder.struct().name(f"{NS}.Union")
         .field("int", Schema.OPTIONAL_INT32_SCHEMA)
         .field("string", Schema.OPTIONAL_STRING_SCHEMA).build()),
    ]


@pytest.mark.parametrize("schema", _round_trip_schemas(), ids=repr)
def test_connect_schemas_survive_a_round_trip(schema):
    data = AvroData()
    assert data.to_connect_schema(data.writer(schema).text) == schema


def test_enhanced_enums_round_trip():
    data = AvroData(AvroDataConfig(enhanced_avro_schema_support=True))
    assert data.to_connect_schema(data.writer(_enum_schema()).text) == _enum_schema()
