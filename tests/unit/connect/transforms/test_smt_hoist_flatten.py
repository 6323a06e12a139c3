"""HoistField$Key/$Value and Flatten$Key/$Value."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from connect.api import Schema, SchemaBuilder, SourceRecord, Struct
from connect.api.errors import DataError
from connect.transforms import FlattenKey, FlattenValue, HoistFieldKey, HoistFieldValue


def configured(cls: type, props: dict[str, Any]) -> Any:
    transform = cls()
    transform.configure(props)
    return transform


def test_hoist_schemaless_key():
    out = configured(HoistFieldKey, {"field": "magic"}).apply(SourceRecord(topic="t", key=42))
    assert (out.key_schema, out.key) == (None, {"magic": 42})


def test_hoist_with_schema():
    xform = configured(HoistFieldValue, {"field": "line"})
    out = xform.apply(SourceRecord(topic="t", value_schema=Schema.STRING_SCHEMA, value="foo"))
    assert [(f.name, f.schema) for f in out.value_schema.fields] == [("line", Schema.STRING_SCHEMA)]
    assert out.value.get("line") == "foo"
    again = xform.apply(SourceRecord(topic="t", value_schema=Schema.STRING_SCHEMA, value="bar"))
    assert again.value_schema is out.value_schema


def test_hoist_null_into_a_required_schema_is_a_data_error():
    xform = configured(HoistFieldValue, {"field": "line"})
    with pytest.raises(DataError):
        xform.apply(SourceRecord(topic="t", value_schema=Schema.STRING_SCHEMA, value=None))


def test_flatten_schemaless_nested_maps():
    value = {"A": {"B": {"int8": 8, "string": "x", "list": [1, {"c": 1}]}, "n": None}, "top": True}
    out = configured(FlattenValue, {}).apply(SourceRecord(topic="t", value=value))
    assert out.value == {
        "A.B.int8": 8,
        "A.B.string": "x",
        "A.B.list": [1, {"c": 1}],
        "A.n": None,
        "top": True,
    }


def test_flatten_custom_delimiter_on_the_key():
    out = configured(FlattenKey, {"delimiter": "#"}).apply(
        SourceRecord(topic="t", key={"a": {"b": 1}})
    )
    assert out.key == {"a#b": 1}


def test_flatten_schemaless_rejects_types_without_a_connect_type():
    with pytest.raises(DataError, match=r"does not support datetime .*\(for field a\.b\)"):
        configured(FlattenValue, {}).apply(
            SourceRecord(topic="t", value={"a": {"b": dt.datetime.now()}})
        )


def nested_schema() -> tuple[Schema, Schema, Schema]:
    c = (
        SchemaBuilder.struct()
        .name("C")
        .field("int8", Schema.INT8_SCHEMA)
        .field("s", Schema.STRING_SCHEMA)
        .build()
    )
    b = (
        SchemaBuilder.struct()
        .field("C", c)
        .field("arr", SchemaBuilder.array(Schema.INT32_SCHEMA))
        .build()
    )
    a = (
        SchemaBuilder.struct()
        .name("A")
        .version(2)
        .field("B", b)
        .field("top", Schema.BOOLEAN_SCHEMA)
        .build()
    )
    return a, b, c


def test_flatten_with_schema_joins_names_and_keeps_leaves():
    a, b, c = nested_schema()
    value = (
        Struct(a)
        .put("B", Struct(b).put("C", Struct(c).put("int8", 8).put("s", "x")).put("arr", [1]))
        .put("top", True)
    )
    out = configured(FlattenValue, {}).apply(SourceRecord(topic="t", value_schema=a, value=value))
    schema = out.value_schema
    assert (schema.name, schema.version) == ("A", 2)
    assert [(f.name, f.schema) for f in schema.fields] == [
        ("B.C.int8", Schema.INT8_SCHEMA),
        ("B.C.s", Schema.STRING_SCHEMA),
        ("B.arr", SchemaBuilder.array(Schema.INT32_SCHEMA).build()),
        ("top", Schema.BOOLEAN_SCHEMA),
    ]
    assert [out.value.get(f.name) for f in schema.fields] == [8, "x", [1], True]


def test_flatten_optional_parents_make_children_optional_and_pass_defaults():
    inner = SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).build()
    default_inner = Struct(inner).put("x", 5)
    outer = (
        SchemaBuilder.struct()
        .field("opt", SchemaBuilder.struct().field("y", Schema.STRING_SCHEMA).optional())
        .field(
            "dflt",
            SchemaBuilder.struct().field("x", Schema.INT32_SCHEMA).default_value(default_inner),
        )
        .build()
    )
    out = configured(FlattenValue, {}).apply(
        SourceRecord(topic="t", value_schema=outer, value=Struct(outer))
    )
    fields = {f.name: f.schema for f in out.value_schema.fields}
    assert fields["opt.y"] == Schema.OPTIONAL_STRING_SCHEMA
    assert fields["dflt.x"].default_value == 5
    assert out.value.get("opt.y") is None
    out.value.validate()


def test_flatten_with_schema_rejects_maps_and_passes_tombstones():
    schema = (
        SchemaBuilder.struct()
        .field("m", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.STRING_SCHEMA))
        .build()
    )
    xform = configured(FlattenValue, {})
    with pytest.raises(
        DataError, match=r"does not support MAP for record with schemas \(for field m\)"
    ):
        xform.apply(SourceRecord(topic="t", value_schema=schema, value=Struct(schema).put("m", {})))
    tombstone = SourceRecord(topic="t", value_schema=schema, value=None)
    assert xform.apply(tombstone) is tombstone
