"""HeaderFrom$Key/$Value, InsertHeader and DropHeaders."""

from __future__ import annotations

from typing import Any

import pytest

from connect.api import Header, Headers, Schema, SchemaBuilder, SourceRecord, Struct
from connect.api.errors import ConfigError, DataError
from connect.transforms import DropHeaders, HeaderFromKey, HeaderFromValue, InsertHeader

SCHEMA = (
    SchemaBuilder.struct()
    .name("reading")
    .field("field1", Schema.STRING_SCHEMA)
    .field("field2", Schema.INT32_SCHEMA)
    .field("kept", Schema.BOOLEAN_SCHEMA)
    .build()
)
MOVE = {"fields": "field1,field2", "headers": "inserted1,inserted2", "operation": "move"}
COPY = {**MOVE, "operation": "copy"}


def configured(cls: type, props: dict[str, Any]) -> Any:
    transform = cls()
    transform.configure(props)
    return transform


def existing() -> Headers:
    return Headers().add_string("existing", "x")


def struct_value() -> Struct:
    return Struct(SCHEMA).put("field1", "a").put("field2", 2).put("kept", True)


def test_copy_schemaless_value():
    record = SourceRecord(topic="t", value={"field1": "a", "field2": 2}, headers=existing())
    out = configured(HeaderFromValue, COPY).apply(record)
    assert out.value == {"field1": "a", "field2": 2}
    assert list(out.headers) == [
        Header("existing", Schema.STRING_SCHEMA, "x"),
        Header("inserted1", None, "a"),
        Header("inserted2", None, 2),
    ]
    assert len(record.headers) == 1  # the input record keeps its headers


def test_move_schemaless_key():
    out = configured(HeaderFromKey, MOVE).apply(
        SourceRecord(topic="t", key={"field1": "a", "other": 1})
    )
    assert out.key == {"other": 1}
    assert [(h.key, h.value) for h in out.headers] == [("inserted1", "a"), ("inserted2", None)]


def test_copy_with_schema_keeps_the_value_and_uses_field_schemas():
    value = struct_value()
    out = configured(HeaderFromValue, COPY).apply(
        SourceRecord(topic="t", value_schema=SCHEMA, value=value)
    )
    assert out.value is value and out.value_schema is SCHEMA
    assert list(out.headers) == [
        Header("inserted1", Schema.STRING_SCHEMA, "a"),
        Header("inserted2", Schema.INT32_SCHEMA, 2),
    ]


def test_move_with_schema_drops_the_fields():
    out = configured(HeaderFromValue, MOVE).apply(
        SourceRecord(topic="t", value_schema=SCHEMA, value=struct_value())
    )
    assert out.value_schema.name == "reading"
    assert [f.name for f in out.value_schema.fields] == ["kept"]
    assert out.value.get("kept") is True
    assert [h.key for h in out.headers] == ["inserted1", "inserted2"]


def test_header_from_data_errors():
    with pytest.raises(DataError, match="Field field1 does not exist"):
        other = SchemaBuilder.struct().field("x", Schema.INT8_SCHEMA).build()
        configured(HeaderFromValue, COPY).apply(
            SourceRecord(topic="t", value_schema=other, value=Struct(other).put("x", 1))
        )
    with pytest.raises(DataError, match=r"\[header move\], found: null"):
        configured(HeaderFromValue, MOVE).apply(SourceRecord(topic="t", value=None))


@pytest.mark.parametrize(
    ("props", "key", "message"),
    [
        (
            {**MOVE, "headers": "only_one"},
            "headers",
            "'fields' config must have the same number of elements as 'headers'",
        ),
        ({**MOVE, "operation": "swap"}, "operation", "String must be one of: move, copy"),
        ({**MOVE, "fields": ""}, "fields", "Empty list"),
        ({"fields": "a", "headers": "b"}, "operation", "Missing required configuration"),
    ],
)
def test_header_from_config_errors(props, key, message):
    with pytest.raises(ConfigError, match=message) as caught:
        HeaderFromValue().configure(props)
    assert caught.value.name == key


def test_insert_header_appends_a_string_header():
    xform = configured(InsertHeader, {"header": "source", "value.literal": "ferry"})
    record = SourceRecord(topic="t", value=1, headers=Headers().add_string("source", "old"))
    out = xform.apply(record)
    assert [h.value for h in out.headers.all_with_name("source")] == ["old", "ferry"]
    assert out.headers.last_with_name("source").schema == Schema.STRING_SCHEMA
    assert len(record.headers) == 1


def test_insert_header_requires_both_keys():
    for props, key in (({"header": "h"}, "value.literal"), ({"value.literal": "v"}, "header")):
        with pytest.raises(ConfigError) as caught:
            InsertHeader().configure(props)
        assert caught.value.name == key


def test_drop_headers_removes_every_occurrence_and_keeps_order():
    headers = (
        Headers()
        .add_string("a", "1")
        .add_string("drop", "x")
        .add_string("b", "2")
        .add_string("drop", "y")
    )
    out = configured(DropHeaders, {"headers": "drop,absent"}).apply(
        SourceRecord(topic="t", value=1, headers=headers)
    )
    assert [h.key for h in out.headers] == ["a", "b"]
    assert len(headers) == 4
    with pytest.raises(ConfigError, match="Empty list"):
        DropHeaders().configure({"headers": ""})
