"""SetSchemaMetadata$Key/$Value: renaming schemas and rebinding struct values."""

from __future__ import annotations

from typing import Any

import pytest

from connect.api import Schema, SchemaBuilder, SourceRecord, Struct
from connect.api.errors import ConfigError, DataError
from connect.transforms import SetSchemaMetadataKey, SetSchemaMetadataValue


def configured(cls: type, props: dict[str, Any]) -> Any:
    transform = cls()
    transform.configure(props)
    return transform


def test_name_and_version_on_a_primitive_value():
    xform = configured(SetSchemaMetadataValue, {"schema.name": "foo", "schema.version": "42"})
    out = xform.apply(SourceRecord(topic="t", value_schema=Schema.INT32_SCHEMA, value=1))
    assert (out.value_schema.name, out.value_schema.version, out.value) == ("foo", 42, 1)


def test_key_variant_keeps_what_is_not_set():
    schema = SchemaBuilder.string().name("old").version(3).doc("d").optional().build()
    out = configured(SetSchemaMetadataKey, {"schema.version": "4"}).apply(
        SourceRecord(
            topic="t", key_schema=schema, key="k", value_schema=Schema.STRING_SCHEMA, value="v"
        )
    )
    assert (out.key_schema.name, out.key_schema.version, out.key_schema.doc) == ("old", 4, "d")
    assert out.key_schema.optional and out.value_schema is Schema.STRING_SCHEMA


def test_struct_values_and_defaults_are_rebound_to_the_new_schema():
    inner = SchemaBuilder.struct().field("a", SchemaBuilder.int32().optional().default_value(1))
    default = Struct(inner.build())
    schema = inner.default_value(default).build()
    xform = configured(SetSchemaMetadataValue, {"schema.name": "renamed"})
    out = xform.apply(SourceRecord(topic="t", value_schema=schema, value=Struct(schema)))
    assert out.value.schema is out.value_schema
    assert out.value_schema.name == "renamed"
    assert out.value_schema.default_value.schema.name == "renamed"
    assert out.value.get_without_default("a") == 1
    out.value.validate()
    without = configured(
        SetSchemaMetadataValue, {"schema.name": "r", "replace.null.with.default": "false"}
    )
    assert (
        without.apply(
            SourceRecord(topic="t", value_schema=schema, value=Struct(schema))
        ).value.get_without_default("a")
        is None
    )


def test_map_and_array_schemas_keep_their_element_schemas():
    schema = SchemaBuilder.map(
        Schema.STRING_SCHEMA, SchemaBuilder.array(Schema.INT8_SCHEMA)
    ).build()
    out = configured(SetSchemaMetadataValue, {"schema.name": "m"}).apply(
        SourceRecord(topic="t", value_schema=schema, value={"k": [1]})
    )
    assert out.value_schema.key_schema == Schema.STRING_SCHEMA
    assert out.value_schema.value_schema == schema.value_schema


def test_schemaless_values():
    xform = configured(SetSchemaMetadataValue, {"schema.name": "n"})
    tombstone = SourceRecord(topic="t", value=None)
    assert xform.apply(tombstone) is tombstone
    with pytest.raises(DataError, match=r"Schema required for \[updating schema metadata\]"):
        xform.apply(SourceRecord(topic="t", value={"a": 1}))


def test_one_of_name_or_version_is_required():
    with pytest.raises(ConfigError, match="Neither schema name nor version configured"):
        SetSchemaMetadataValue().configure({})
    with pytest.raises(ConfigError) as caught:
        SetSchemaMetadataValue().configure({"schema.version": "v1"})
    assert caught.value.name == "schema.version"
