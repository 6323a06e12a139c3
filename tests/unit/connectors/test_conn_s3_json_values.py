"""S3 JsonFormat's documents: the orjson path writes exactly what the standard encoder
writes, and whatever it cannot write the same way takes the standard encoder."""

from __future__ import annotations

import datetime as dt
import decimal
import enum

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connect.api import DataError, Schema, SchemaBuilder, Struct
from connectors.s3.json_values import _ENCODER, _FAST, _plain, to_json_bytes

_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text()
    | st.binary(max_size=8) | st.decimals(allow_nan=False, places=3)
    | st.tuples(st.integers()),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(), children, max_size=4)
        | st.dictionaries(st.integers() | st.booleans() | st.none(), children, max_size=3)
    ),
    max_leaves=16,
)


@settings(max_examples=300)
@given(_values)
def test_schemaless_documents_are_the_standard_encoders(value):
    try:
        expected = _FAST.encode(value).encode()
    except (DataError, UnicodeEncodeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            to_json_bytes(None, value)
        return
    assert to_json_bytes(None, value) == expected


@pytest.mark.parametrize("value", [
    {"f": 1e16}, {"f": 1e-5}, {"f": 9999999999999998.0}, {"f": 1e-4}, {"f": -0.0},
    {"f": float("nan")}, [float("inf")], {"i": 2**64}, {"i": 2**64 - 1}, {"i": -(2**63) - 1},
    {"s": "\ud800"}, {"s": "\x00\x1f\u2028\x7f\"\\é😀"}, {1: "int key"}, {None: 1, True: 2},
    {"t": (1, 2)}, {"b": b"\x00"}, {"d": decimal.Decimal("1.5")},
    {"at": dt.datetime(2024, 1, 1, tzinfo=dt.UTC)}, enum.IntEnum("E", "A").A, "x", 5, None,
])
def test_edge_values_are_written_as_the_standard_encoder_writes_them(value):
    try:
        expected = _FAST.encode(value).encode()
    except UnicodeEncodeError:
        with pytest.raises(UnicodeEncodeError):
            to_json_bytes(None, value)
        return
    assert to_json_bytes(None, value) == expected


def test_struct_documents_are_the_standard_encoders():
    schema = (SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA)
              .field("score", Schema.OPTIONAL_FLOAT64_SCHEMA)
              .field("name", Schema.OPTIONAL_STRING_SCHEMA).build())
    for row in ([1, 0.5, "a"], [2, 1e20, None], [3, None, "\ud800"], [4, float("nan"), "é"]):
        value = Struct.from_values(schema, row)
        try:
            expected = _ENCODER.encode(_plain(schema, value)).encode()
        except UnicodeEncodeError:
            with pytest.raises(UnicodeEncodeError):
                to_json_bytes(schema, value)
            continue
        assert to_json_bytes(schema, value) == expected
