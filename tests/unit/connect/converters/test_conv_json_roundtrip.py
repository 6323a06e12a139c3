"""JsonConverter round trips for random schemas and values: value -> bytes -> value."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from connect.api.data import (
    Date,
    Decimal,
    Schema,
    SchemaAndValue,
    SchemaBuilder,
    Struct,
    Time,
    Timestamp,
    Type,
)
from connect.converters.json import JsonConverter

TOPIC = "t"
_INT_BITS = {Type.INT8: 8, Type.INT16: 16, Type.INT32: 32, Type.INT64: 64}

_names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
_primitive_types = st.sampled_from([*(t for t in Type if t.is_primitive)])
_logical = st.one_of(
    st.integers(-3, 8).map(Decimal.builder),
    st.sampled_from([Date.builder, Time.builder, Timestamp.builder]).map(lambda f: f()),
)


@st.composite
def _decorated(draw: st.DrawFn, builder: SchemaBuilder) -> Schema:
    if draw(st.booleans()):
        builder.optional()
    if builder.build().name is None and draw(st.integers(0, 3)) == 0:
        builder.name(draw(_names.filter(bool)))
        if draw(st.booleans()):
            builder.version(draw(st.integers(0, 2**31 - 1)))
    if draw(st.integers(0, 3)) == 0:
        builder.doc(draw(_names))
    if draw(st.integers(0, 4)) == 0:
        builder.parameters(draw(st.dictionaries(_names, _names, max_size=2)))
    return builder.build()


def _leaf_schemas() -> st.SearchStrategy[Schema]:
    plain = _primitive_types.map(SchemaBuilder)
    return st.one_of(plain, _logical).flatmap(_decorated)


def _map_key_schemas() -> st.SearchStrategy[Schema]:
    # Python dict keys must be hashable and not NaN-like, so keys are required primitives.
    return st.sampled_from(
        [Schema.STRING_SCHEMA, Schema.INT32_SCHEMA, Schema.INT64_SCHEMA, Schema.BOOLEAN_SCHEMA]
    )


@st.composite
def _struct_schema(draw: st.DrawFn, children: st.SearchStrategy[Schema]) -> Schema:
    builder = SchemaBuilder.struct()
    for name in draw(st.lists(_names.filter(bool), max_size=5, unique=True)):
        builder.field(name, draw(children))
    return draw(_decorated(builder))


def schemas() -> st.SearchStrategy[Schema]:
    return st.recursive(
        _leaf_schemas(),
        lambda children: st.one_of(
            children.map(SchemaBuilder.array).flatmap(_decorated),
            st.tuples(_map_key_schemas(), children)
            .map(lambda kv: SchemaBuilder.map(*kv))
            .flatmap(_decorated),
            _struct_schema(children),
        ),
        max_leaves=8,
    )


def values(schema: Schema) -> st.SearchStrategy[Any]:
    strategy = _non_null_values(schema)
    return st.one_of(st.none(), strategy) if schema.optional else strategy


def _non_null_values(schema: Schema) -> st.SearchStrategy[Any]:
    name, type_ = schema.name, schema.type
    if name == Decimal.LOGICAL_NAME:
        scale = Decimal.scale(schema)
        return st.integers(-(10**20), 10**20).map(
            lambda unscaled: decimal.Decimal(unscaled).scaleb(-scale, decimal.Context(prec=100))
        )
    if name == Date.LOGICAL_NAME:
        return st.dates()
    if name == Time.LOGICAL_NAME:
        return st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))
    if name == Timestamp.LOGICAL_NAME:
        return st.datetimes(timezones=st.just(dt.UTC)).map(
            lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000)
        )
    if type_ in _INT_BITS:
        bits = _INT_BITS[type_]
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if type_ is Type.FLOAT32:
        return st.floats(width=32, allow_nan=False)
    if type_ is Type.FLOAT64:
        return st.floats(allow_nan=False)
    if type_ is Type.BOOLEAN:
        return st.booleans()
    if type_ is Type.STRING:
        return st.text()
    if type_ is Type.BYTES:
        return st.binary(max_size=20)
    if type_ is Type.ARRAY:
        return st.lists(values(schema.value_schema), max_size=4)
    if type_ is Type.MAP:
        return st.dictionaries(
            _non_null_values(schema.key_schema), values(schema.value_schema), max_size=4
        )
    return st.tuples(*[values(f.schema) for f in schema.fields]).map(
        lambda field_values: _struct(schema, field_values)
    )


def _struct(schema: Schema, field_values: tuple[Any, ...]) -> Struct:
    struct = Struct(schema)
    for field, value in zip(schema.fields, field_values, strict=True):
        struct.put(field, value)
    return struct


def _converter(**configs: str) -> JsonConverter:
    converter = JsonConverter()
    converter.configure(configs, is_key=False)
    return converter


@settings(max_examples=300)
@given(st.data(), schemas(), st.sampled_from(["BASE64", "NUMERIC"]))
def test_value_survives_bytes_and_back(data, schema, decimal_format):
    value = data.draw(values(schema))
    converter = _converter(**{"decimal.format": decimal_format})
    encoded = converter.from_connect_data(TOPIC, schema, value)
    json.loads(encoded)  # valid JSON for any other reader too
    decoded = converter.to_connect_data(TOPIC, encoded)
    assert decoded == SchemaAndValue(schema, value)
    # A second converter (cold caches) reads the same, and writes the same bytes back.
    fresh = _converter(**{"decimal.format": decimal_format})
    assert fresh.to_connect_data(TOPIC, encoded) == decoded
    assert fresh.from_connect_data(TOPIC, decoded.schema, decoded.value) == encoded


_json_values = st.recursive(
    # Without a schema a non-finite double is written as Jackson's string "NaN" or
    # "Infinity" and so read back as a string, as in Kafka: only finite floats survive.
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=12,
)


@given(_json_values, st.booleans())
def test_schemaless_json_values_survive(value, envelope):
    converter = _converter(**{"schemas.enable": str(envelope).lower()})
    encoded = converter.from_connect_data(TOPIC, None, value)
    if value is None:
        assert encoded is None
        return
    expected = {"schema": None, "payload": value} if envelope else value
    assert json.loads(encoded) == expected
    assert converter.to_connect_data(TOPIC, encoded) == SchemaAndValue(None, value)


@given(schemas())
def test_schema_text_round_trips(schema):
    converter = _converter()
    text = converter.as_json_schema(schema)
    assert converter.as_connect_schema(json.loads(text, parse_float=decimal.Decimal)) == schema
