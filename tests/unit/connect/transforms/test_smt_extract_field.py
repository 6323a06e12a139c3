"""ExtractField$Key/$Value, including KIP-821 nested paths (field.syntax.version=V2)."""

from __future__ import annotations

from typing import Any

import pytest

from connect.api import Schema, SchemaBuilder, SourceRecord, Struct
from connect.api.errors import ConfigError, DataError
from connect.transforms import ExtractFieldKey, ExtractFieldValue
from connect.transforms.field_path import FieldSyntaxVersion, SingleFieldPath

V2 = FieldSyntaxVersion.V2
INNER = SchemaBuilder.struct().field("foo", Schema.INT32_SCHEMA).build()
OUTER = SchemaBuilder.struct().field("magic", INNER).field("plain", Schema.INT32_SCHEMA).build()


def configured(cls: type, props: dict[str, Any]) -> Any:
    transform = cls()
    transform.configure(props)
    return transform


def test_schemaless_key():
    out = configured(ExtractFieldKey, {"field": "magic"}).apply(
        SourceRecord(topic="t", key={"magic": 42})
    )
    assert (out.key_schema, out.key) == (None, 42)


def test_schemaless_missing_field_and_null_key_give_null():
    xform = configured(ExtractFieldKey, {"field": "magic"})
    assert xform.apply(SourceRecord(topic="t", key={"other": 1})).key is None
    assert xform.apply(SourceRecord(topic="t", key=None)).key is None


def test_with_schema_takes_the_field_schema():
    value = Struct(OUTER).put("magic", Struct(INNER).put("foo", 42)).put("plain", 7)
    out = configured(ExtractFieldValue, {"field": "plain"}).apply(
        SourceRecord(topic="t", value_schema=OUTER, value=value)
    )
    assert (out.value_schema, out.value) == (Schema.INT32_SCHEMA, 7)


def test_with_schema_unknown_field_is_a_data_error():
    with pytest.raises(DataError, match="Unknown field: nope"):
        configured(ExtractFieldValue, {"field": "nope"}).apply(
            SourceRecord(topic="t", value_schema=OUTER, value=Struct(OUTER))
        )


def test_nested_v2_with_and_without_schema():
    props = {"field": "magic.foo", "field.syntax.version": "v2"}
    xform = configured(ExtractFieldValue, props)
    assert xform.apply(SourceRecord(topic="t", value={"magic": {"foo": 42}})).value == 42
    assert xform.apply(SourceRecord(topic="t", value={"magic": None})).value is None
    value = Struct(OUTER).put("magic", Struct(INNER).put("foo", 42))
    out = xform.apply(SourceRecord(topic="t", value_schema=OUTER, value=value))
    assert (out.value_schema, out.value) == (Schema.INT32_SCHEMA, 42)


def test_v1_treats_dots_as_part_of_the_name():
    xform = configured(ExtractFieldValue, {"field": "magic.foo"})
    assert (
        xform.apply(SourceRecord(topic="t", value={"magic.foo": 1, "magic": {"foo": 2}})).value == 1
    )


def test_replace_null_with_default():
    schema = (
        SchemaBuilder.struct().field("n", SchemaBuilder.int32().optional().default_value(5)).build()
    )
    record = SourceRecord(topic="t", value_schema=schema, value=Struct(schema))
    assert configured(ExtractFieldValue, {"field": "n"}).apply(record).value == 5
    without = configured(ExtractFieldValue, {"field": "n", "replace.null.with.default": "false"})
    assert without.apply(record).value is None


@pytest.mark.parametrize(
    ("path", "steps"),
    [
        ("foo", ("foo",)),
        ("foo.bar", ("foo", "bar")),
        ("`foo.bar`.baz", ("foo.bar", "baz")),
        ("foo.`bar.baz`", ("foo", "bar.baz")),
        ("`foo`bar`.baz", ("foo`bar", "baz")),
        ("`foo\\`.bar`.baz", ("foo`.bar", "baz")),
        ("foo.", ("foo", "")),
        ("foo..bar", ("foo", "", "bar")),
        ("``", ("",)),
    ],
)
def test_v2_path_syntax(path, steps):
    assert SingleFieldPath(path, V2, config_name="field").steps == steps


@pytest.mark.parametrize("path", ["`foo", "`foo\\`", "foo.`bar"])
def test_v2_incomplete_backticks_are_config_errors(path):
    with pytest.raises(ConfigError, match="Incomplete backtick pair in path") as caught:
        SingleFieldPath(path, V2, config_name="field")
    assert caught.value.name == "field"


def test_config_errors():
    with pytest.raises(ConfigError) as caught:
        ExtractFieldValue().configure({"field": "a", "field.syntax.version": "V3"})
    assert caught.value.name == "field.syntax.version"
    with pytest.raises(ConfigError, match='Missing required configuration "field"'):
        ExtractFieldValue().configure({})
