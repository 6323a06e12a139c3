"""ValueToKey: the key built from value fields."""

from __future__ import annotations

import pytest

from connect.api import Schema, SchemaBuilder, SourceRecord, Struct
from connect.api.errors import ConfigError, DataError
from connect.transforms import ValueToKey

SCHEMA = (
    SchemaBuilder.struct()
    .field("a", Schema.INT32_SCHEMA)
    .field("b", Schema.INT32_SCHEMA)
    .field("c", SchemaBuilder.int32().optional().default_value(3))
    .build()
)


def configured(props: dict[str, str]) -> ValueToKey:
    transform = ValueToKey()
    transform.configure(props)
    return transform


def test_schemaless():
    out = configured({"fields": "a,b"}).apply(
        SourceRecord(topic="t", value={"a": 1, "b": 2, "c": 3})
    )
    assert out.key_schema is None
    assert out.key == {"a": 1, "b": 2}
    assert out.value == {"a": 1, "b": 2, "c": 3}


def test_schemaless_missing_field_becomes_null():
    out = configured({"fields": "a,z"}).apply(SourceRecord(topic="t", value={"a": 1}))
    assert out.key == {"a": 1, "z": None}


def test_with_schema_builds_a_key_struct_in_listed_order():
    value = Struct(SCHEMA).put("a", 1).put("b", 2)
    out = configured({"fields": "b,a,c"}).apply(
        SourceRecord(topic="t", value_schema=SCHEMA, value=value)
    )
    assert [(f.name, f.schema) for f in out.key_schema.fields] == [
        ("b", Schema.INT32_SCHEMA),
        ("a", Schema.INT32_SCHEMA),
        ("c", SCHEMA.field("c").schema),
    ]
    assert (out.key.get("b"), out.key.get("a"), out.key.get_without_default("c")) == (2, 1, 3)
    assert out.value is value


def test_replace_null_with_default_false():
    value = Struct(SCHEMA).put("a", 1).put("b", 2)
    xform = configured({"fields": "c", "replace.null.with.default": "false"})
    out = xform.apply(SourceRecord(topic="t", value_schema=SCHEMA, value=value))
    assert out.key.get_without_default("c") is None


def test_missing_field_with_schema_and_tombstones_are_data_errors():
    value = Struct(SCHEMA).put("a", 1).put("b", 2)
    with pytest.raises(DataError, match="Field does not exist: nope"):
        configured({"fields": "nope"}).apply(
            SourceRecord(topic="t", value_schema=SCHEMA, value=value)
        )
    with pytest.raises(DataError, match=r"\[copying fields from value to key\], found: null"):
        configured({"fields": "a"}).apply(SourceRecord(topic="t", value=None))


def test_fields_are_required():
    with pytest.raises(ConfigError) as caught:
        ValueToKey().configure({"fields": ""})
    assert caught.value.name == "fields"
