"""InsertField$Key/$Value: metadata and static fields, schemaless and with a schema."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from connect.api import Schema, SchemaBuilder, SinkRecord, SourceRecord, Struct, Timestamp
from connect.api.errors import ConfigError, DataError
from connect.transforms import InsertFieldKey, InsertFieldValue

ALL_FIELDS = {
    "topic.field": "topic_field!",
    "partition.field": "partition_field",
    "offset.field": "offset_field!",
    "timestamp.field": "timestamp_field?",
    "static.field": "instance_id",
    "static.value": "my-instance-id",
}
SIMPLE = (
    SchemaBuilder.struct()
    .name("name")
    .version(1)
    .doc("doc")
    .field("magic", Schema.OPTIONAL_INT64_SCHEMA)
    .build()
)


def configured(cls: type, props: dict[str, Any]) -> Any:
    transform = cls()
    transform.configure(props)
    return transform


def sink(**kw: Any) -> SinkRecord:
    return SinkRecord(
        topic="test", kafka_partition=0, kafka_offset=42, timestamp=1_483_425_001_864, **kw
    )


def test_schemaless_insert_all_fields():
    xform = configured(InsertFieldValue, ALL_FIELDS)
    out = xform.apply(sink(value={"magic": 42}))
    assert out.value_schema is None
    assert out.value == {
        "magic": 42,
        "topic_field": "test",
        "partition_field": 0,
        "offset_field": 42,
        "timestamp_field": 1_483_425_001_864,
        "instance_id": "my-instance-id",
    }


def test_with_schema_adds_fields_and_keeps_schema_metadata():
    xform = configured(InsertFieldValue, ALL_FIELDS)
    out = xform.apply(sink(value_schema=SIMPLE, value=Struct(SIMPLE).put("magic", 42)))
    schema = out.value_schema
    assert (schema.name, schema.version, schema.doc) == ("name", 1, "doc")
    fields = {f.name: f.schema for f in schema.fields}
    assert fields == {
        "magic": Schema.OPTIONAL_INT64_SCHEMA,
        "topic_field": Schema.STRING_SCHEMA,
        "partition_field": Schema.OPTIONAL_INT32_SCHEMA,
        "offset_field": Schema.INT64_SCHEMA,
        "timestamp_field": Timestamp.builder().optional().build(),
        "instance_id": Schema.OPTIONAL_STRING_SCHEMA,
    }
    value = out.value
    assert value.get("magic") == 42
    assert value.get("topic_field") == "test"
    assert value.get("partition_field") == 0
    assert value.get("offset_field") == 42
    assert value.get("timestamp_field") == dt.datetime(2017, 1, 3, 6, 30, 1, 864000, tzinfo=dt.UTC)
    assert value.get("instance_id") == "my-instance-id"
    value.validate()


def test_schema_is_derived_once_per_input_schema():
    xform = configured(InsertFieldValue, {"topic.field": "t"})
    first = xform.apply(sink(value_schema=SIMPLE, value=Struct(SIMPLE)))
    second = xform.apply(sink(value_schema=SIMPLE, value=Struct(SIMPLE).put("magic", 1)))
    assert first.value_schema is second.value_schema


def test_key_variant_changes_only_the_key():
    xform = configured(InsertFieldKey, {"topic.field": "topic_field"})
    record = sink(key={"k": 1}, value="untouched")
    out = xform.apply(record)
    assert out.key == {"k": 1, "topic_field": "test"}
    assert out.value == "untouched"
    assert out.kafka_offset == 42 and out.original_topic == "test"


def test_tombstones_pass_through():
    xform = configured(InsertFieldValue, {"topic.field": "t"})
    record = sink(value=None)
    assert xform.apply(record) is record


def test_offset_needs_a_sink_record():
    xform = configured(InsertFieldValue, {"offset.field": "offset"})
    with pytest.raises(
        DataError, match=r"Only SinkRecord supported for \[field insertion\], found: SourceRecord"
    ):
        xform.apply(SourceRecord(topic="t", value={}))


def test_absent_partition_and_timestamp_are_left_out():
    xform = configured(InsertFieldValue, {"partition.field": "p", "timestamp.field": "ts"})
    out = xform.apply(SourceRecord(topic="t", value={"a": 1}))
    assert out.value == {"a": 1}


def test_wrong_shapes_are_data_errors():
    xform = configured(InsertFieldValue, {"topic.field": "t"})
    with pytest.raises(
        DataError, match=r"Only Map objects supported in absence of schema .*found: str"
    ):
        xform.apply(sink(value="text"))
    with pytest.raises(DataError, match=r"Only Struct objects supported for \[field insertion\]"):
        xform.apply(sink(value_schema=Schema.STRING_SCHEMA, value="text"))


def test_replace_null_with_default():
    schema = (
        SchemaBuilder.struct().field("n", SchemaBuilder.int32().optional().default_value(7)).build()
    )
    value = Struct(schema)
    with_default = configured(InsertFieldValue, {"topic.field": "t"})
    without = configured(
        InsertFieldValue, {"topic.field": "t", "replace.null.with.default": "false"}
    )
    assert (
        with_default.apply(sink(value_schema=schema, value=value)).value.get_without_default("n")
        == 7
    )
    assert (
        without.apply(sink(value_schema=schema, value=value)).value.get_without_default("n") is None
    )


@pytest.mark.parametrize(
    ("props", "key", "message"),
    [
        ({}, None, "No field insertion configured"),
        ({"static.field": "s"}, "static.value", "No value specified for static field: s"),
        ({"topic.field": "!"}, "topic.field", "must not be empty"),
    ],
)
def test_config_errors_name_the_key(props, key, message):
    with pytest.raises(ConfigError, match=message) as caught:
        InsertFieldValue().configure(props)
    assert caught.value.name == key


def test_config_def_lists_kafka_keys():
    assert InsertFieldValue().config().names() == [
        "topic.field",
        "partition.field",
        "offset.field",
        "timestamp.field",
        "static.field",
        "static.value",
        "replace.null.with.default",
    ]
