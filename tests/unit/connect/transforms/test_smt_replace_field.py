"""ReplaceField$Key/$Value: include, exclude and renames (Kafka's ReplaceFieldTest cases)."""

from __future__ import annotations

from typing import Any

import pytest

from connect.api import Schema, SchemaBuilder, SourceRecord, Struct
from connect.api.errors import ConfigError, DataError
from connect.transforms import ReplaceFieldKey, ReplaceFieldValue
from connect.transforms.replace_field import parse_renames

VALUE = {"dont": "whatever", "abc": 42, "foo": True, "etc": "etc"}
SCHEMA = (
    SchemaBuilder.struct()
    .name("orders")
    .field("dont", Schema.STRING_SCHEMA)
    .field("abc", Schema.INT32_SCHEMA)
    .field("foo", Schema.BOOLEAN_SCHEMA)
    .field("etc", Schema.STRING_SCHEMA)
    .build()
)


def configured(cls: type, props: dict[str, Any]) -> Any:
    transform = cls()
    transform.configure(props)
    return transform


def struct_value() -> Struct:
    struct = Struct(SCHEMA)
    for name, item in VALUE.items():
        struct.put(name, item)
    return struct


def test_schemaless_exclude_and_rename():
    xform = configured(ReplaceFieldValue, {"exclude": "dont", "renames": "abc:xyz,foo:bar"})
    out = xform.apply(SourceRecord(topic="t", value=VALUE))
    assert out.value == {"xyz": 42, "bar": True, "etc": "etc"}


def test_schemaless_include_and_rename():
    xform = configured(ReplaceFieldValue, {"include": "abc,foo", "renames": "abc:xyz,foo:bar"})
    assert xform.apply(SourceRecord(topic="t", value=VALUE)).value == {"xyz": 42, "bar": True}


def test_exclude_takes_precedence_over_include():
    xform = configured(ReplaceFieldValue, {"include": "abc,foo", "exclude": "foo"})
    assert xform.apply(SourceRecord(topic="t", value=VALUE)).value == {"abc": 42}


def test_with_schema_include_and_rename():
    xform = configured(ReplaceFieldValue, {"include": "abc,foo", "renames": "abc:xyz,foo:bar"})
    out = xform.apply(SourceRecord(topic="t", value_schema=SCHEMA, value=struct_value()))
    assert out.value_schema.name == "orders"
    assert [(f.name, f.schema) for f in out.value_schema.fields] == [
        ("xyz", Schema.INT32_SCHEMA),
        ("bar", Schema.BOOLEAN_SCHEMA),
    ]
    assert (out.value.get("xyz"), out.value.get("bar")) == (42, True)


def test_with_schema_exclude_keeps_field_order():
    xform = configured(ReplaceFieldValue, {"exclude": "dont"})
    out = xform.apply(SourceRecord(topic="t", value_schema=SCHEMA, value=struct_value()))
    assert [f.name for f in out.value_schema.fields] == ["abc", "foo", "etc"]


def test_key_variant():
    xform = configured(ReplaceFieldKey, {"renames": "id:key_id"})
    out = xform.apply(SourceRecord(topic="t", key={"id": 1}, value={"id": 2}))
    assert (out.key, out.value) == ({"key_id": 1}, {"id": 2})


def test_deprecated_blacklist_and_whitelist_still_work():
    blacklist = configured(ReplaceFieldValue, {"blacklist": "dont,etc"})
    assert blacklist.apply(SourceRecord(topic="t", value=VALUE)).value == {"abc": 42, "foo": True}
    whitelist = configured(ReplaceFieldValue, {"whitelist": "abc"})
    assert whitelist.apply(SourceRecord(topic="t", value=VALUE)).value == {"abc": 42}
    both = configured(ReplaceFieldValue, {"include": "foo", "whitelist": "abc"})
    assert both.apply(SourceRecord(topic="t", value=VALUE)).value == {"foo": True}


def test_null_values_pass_and_wrong_shapes_fail():
    xform = configured(ReplaceFieldValue, {"exclude": "dont"})
    tombstone = SourceRecord(topic="t", value=None)
    assert xform.apply(tombstone) is tombstone
    with pytest.raises(DataError, match=r"\[field replacement\], found: int"):
        xform.apply(SourceRecord(topic="t", value=42))


def test_replace_null_with_default_false_keeps_nulls():
    schema = (
        SchemaBuilder.struct()
        .field("n", SchemaBuilder.string().optional().default_value("d"))
        .build()
    )
    xform = configured(ReplaceFieldValue, {"renames": "n:m", "replace.null.with.default": "false"})
    out = xform.apply(SourceRecord(topic="t", value_schema=schema, value=Struct(schema)))
    assert out.value.get_without_default("m") is None
    kafka_default = configured(ReplaceFieldValue, {"renames": "n:m"})
    out = kafka_default.apply(SourceRecord(topic="t", value_schema=schema, value=Struct(schema)))
    assert out.value.get_without_default("m") == "d"


def test_rename_parsing_follows_java_split():
    assert parse_renames(["a:b", ":c"]) == {"a": "b", "": "c"}
    for bad in ("a", "a:", "a:b:c"):
        with pytest.raises(ConfigError, match=f"Invalid rename mapping: {bad}") as caught:
            parse_renames([bad])
        assert caught.value.name == "renames"


def test_bad_renames_fail_at_configure_naming_the_key():
    with pytest.raises(ConfigError) as caught:
        ReplaceFieldValue().configure({"renames": "abc:xyz,oops"})
    assert caught.value.name == "renames"
    assert "Invalid rename mapping: oops" in str(caught.value)
