"""Headers: an ordered, validated multi-map of typed header values."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from connect.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from connect.api.errors import DataError
from connect.api.header import Header, Headers

S = Schema


def test_typed_adders_pick_the_schema_and_none_makes_it_optional():
    headers = (
        Headers()
        .add_boolean("b", True)
        .add_int8("i8", 1)
        .add_int16("i16", 2)
        .add_int32("i32", 3)
        .add_int64("i64", 4)
        .add_float32("f32", 1.5)
        .add_float64("f64", 2.5)
        .add_string("s", "x")
        .add_bytes("y", b"\x00")
        .add_string("none", None)
    )
    assert [h.schema for h in headers] == [
        S.BOOLEAN_SCHEMA,
        S.INT8_SCHEMA,
        S.INT16_SCHEMA,
        S.INT32_SCHEMA,
        S.INT64_SCHEMA,
        S.FLOAT32_SCHEMA,
        S.FLOAT64_SCHEMA,
        S.STRING_SCHEMA,
        S.BYTES_SCHEMA,
        S.OPTIONAL_STRING_SCHEMA,
    ]
    assert headers.last_with_name("i64") == Header("i64", S.INT64_SCHEMA, 4)


def test_logical_and_complex_adders():
    point = SchemaBuilder.struct().field("x", S.INT32_SCHEMA).build()
    list_schema = SchemaBuilder.array(S.STRING_SCHEMA).build()
    map_schema = SchemaBuilder.map(S.STRING_SCHEMA, S.INT64_SCHEMA).build()
    headers = (
        Headers()
        .add_decimal("d", decimal.Decimal("12.345"))
        .add_date("date", dt.date(2024, 1, 2))
        .add_time("time", dt.time(3, 4))
        .add_timestamp("ts", dt.datetime(2024, 1, 2, 3, 4, tzinfo=dt.UTC))
        .add_struct("p", Struct(point).put("x", 1))
        .add_list("l", ["a"], list_schema)
        .add_map("m", {"k": 1}, map_schema)
    )
    schemas = {h.key: h.schema for h in headers}
    assert schemas["d"] == Decimal.schema(3)
    assert (schemas["date"], schemas["time"], schemas["ts"]) == (
        Date.SCHEMA,
        Time.SCHEMA,
        Timestamp.SCHEMA,
    )
    assert (schemas["p"], schemas["l"], schemas["m"]) == (point, list_schema, map_schema)


def test_adding_a_value_that_does_not_match_its_schema_fails_naming_the_header():
    with pytest.raises(DataError, match=r"Header 'count'.*out of range"):
        Headers().add_int8("count", 1000)
    with pytest.raises(DataError, match="Header 'x'"):
        Headers().add("x", "text", S.INT32_SCHEMA)
    with pytest.raises(DataError, match=r"Header 'p'.*required field"):
        Headers().add_struct("p", Struct(SchemaBuilder.struct().field("x", S.INT32_SCHEMA).build()))
    with pytest.raises(DataError, match="strings"):
        Headers().add(7, "v")  # type: ignore[arg-type]


def test_schemaless_headers_accept_any_value():
    headers = Headers().add("raw", {"any": object}, None)
    assert headers.last_with_name("raw").schema is None


def test_multi_map_reading_in_order():
    headers = Headers().add_string("a", "1").add_string("b", "2").add_string("a", "3")
    assert [h.value for h in headers.all_with_name("a")] == ["1", "3"]
    assert headers.last_with_name("a").value == "3"
    assert headers.last_with_name("missing") is None
    assert len(headers) == 3 and not headers.is_empty() and headers
    assert not Headers() and Headers().is_empty()


def test_remove_retain_latest_and_clear():
    def build() -> Headers:
        return (
            Headers()
            .add_string("a", "1")
            .add_string("b", "2")
            .add_string("a", "3")
            .add_string("b", "4")
            .add_string("c", "5")
        )

    assert [h.value for h in build().remove("a")] == ["2", "4", "5"]
    assert [h.value for h in build().retain_latest("a")] == ["2", "3", "4", "5"]
    assert [h.value for h in build().retain_latest()] == ["3", "4", "5"]
    assert len(build().clear()) == 0


def test_apply_replaces_drops_and_validates():
    headers = Headers().add_string("a", "x").add_string("b", "y").add_string("a", "z")
    headers.apply(lambda h: h.with_value(S.STRING_SCHEMA, h.value.upper()), key="a")
    assert [h.value for h in headers] == ["X", "y", "Z"]
    headers.apply(lambda h: None if h.key == "b" else h.rename("c"))
    assert [(h.key, h.value) for h in headers] == [("c", "X"), ("c", "Z")]
    with pytest.raises(DataError):
        headers.apply(lambda h: h.with_value(S.INT32_SCHEMA, h.value))


def test_duplicate_is_independent():
    original = Headers().add_string("a", "1")
    copy = original.duplicate().add_string("b", "2")
    assert len(original) == 1 and len(copy) == 2
    assert original == Headers().add_string("a", "1")
    assert original != copy


def test_constructor_validates_given_headers_and_iteration_is_safe_while_changing():
    with pytest.raises(DataError):
        Headers([Header("a", S.INT8_SCHEMA, 500)])
    headers = Headers([Header("a", None, 1), Header("b", None, 2)])
    for header in headers:
        headers.remove(header.key)
    assert headers.is_empty()
    with pytest.raises(TypeError):
        hash(headers)
