"""The C writer of struct values (``_json_speedups.FieldsEncoder``) writes exactly what
the generated Python encoders write, and refuses what they refuse, with the same error.

Each case compiles one schema twice, with the C writer and with the Python version
(``accelerated=False`` all the way down, by hiding the C module), and compares.
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connect.api.data import Schema, SchemaBuilder, Struct
from connect.converters import json_struct
from connect.converters.json_encode import JsonEncoder
from tests.unit.connect.converters.test_conv_json_compiled import EVERYTHING, _everything
from tests.unit.connect.converters.test_conv_json_roundtrip import (
    _struct_schema,
    schemas,
    values,
)

FieldsEncoder = json_struct.FieldsEncoder
needs_c_writer = pytest.mark.skipif(FieldsEncoder is None, reason="the C writer is not built")


def _both(schema: Schema, replace: bool = True, numeric: bool = False):
    """(C writer, Python writer) for ``schema``."""
    accelerated = JsonEncoder(decimal_numeric=numeric, replace_null_with_default=replace)
    c_encode = accelerated.compile(schema)
    with mock.patch.object(json_struct, "FieldsEncoder", None):
        plain = JsonEncoder(decimal_numeric=numeric, replace_null_with_default=replace)
        py_encode = plain.compile(schema)
    assert "FAST" not in py_encode.__globals__
    return c_encode, py_encode


def _outcome(encode, value: Any) -> tuple[str, str]:
    try:
        return "ok", encode(value)
    except Exception as exc:  # the error's type and text must match too
        return type(exc).__name__, str(exc)


def test_the_c_writer_is_what_json_converter_uses_here() -> None:
    """tests/run installs Ferry with a compiler, which builds the extension: the fast path
    is the one tested, not silently the fallback."""
    assert FieldsEncoder is not None, (
        "connect.converters._json_speedups is not built: reinstall with gcc and the Python "
        "headers (pip install -e .)")
    encode = JsonEncoder(decimal_numeric=False, replace_null_with_default=True).compile(
        EVERYTHING)
    assert isinstance(encode.__globals__.get("FAST"), FieldsEncoder)


@needs_c_writer
@settings(max_examples=300)
@given(st.data(), _struct_schema(schemas()), st.booleans(), st.booleans())
def test_random_structs_are_written_alike(data, schema, replace, numeric) -> None:
    value = data.draw(values(schema))
    c_encode, py_encode = _both(schema, replace, numeric)
    assert _outcome(c_encode, value) == _outcome(py_encode, value)


class Text(str):
    pass


class Number(int):
    pass


EDGE_VALUES: list[dict[str, Any]] = [
    {},
    {"i8": 127}, {"i8": -129}, {"i8": 128}, {"i8": True}, {"i8": Number(3)}, {"i8": 3.0},
    {"i64": -(2**63)}, {"i64": 2**63}, {"i64": -(2**63) - 1}, {"i64": 10**30},
    {"i16": None}, {"i32": None}, {"i8": None},
    {"text": ""}, {"text": "plain ascii"}, {"text": 'a "quote"'}, {"text": "back\\slash"},
    {"text": "tab\tnewline\n"}, {"text": "\x00\x01\x1f"}, {"text": "\x7f del"},
    {"text": "é ü 中文"}, {"text": "😀 astral"}, {"text": "lone \ud800 surrogate"},
    {"text": Text("sub")}, {"text": 5}, {"text": b"bytes"},
    {"flag": True}, {"flag": False}, {"flag": 1}, {"flag": None}, {"flag": "true"},
    {"inner": None}, {"inner": "not a struct"},
    {"amount": decimal.Decimal("1E+3")}, {"day": dt.date(1, 1, 1)},
    {"tags": ["x", 'y"', "\x02"]}, {"counts": {"k": 2**40}},
]


@needs_c_writer
@pytest.mark.parametrize("replace", [True, False])
@pytest.mark.parametrize("changes", EDGE_VALUES, ids=lambda c: repr(c)[:40])
def test_edge_values_are_written_or_refused_alike(changes, replace) -> None:
    c_encode, py_encode = _both(EVERYTHING, replace)
    value = _everything(**changes)
    assert _outcome(c_encode, value) == _outcome(py_encode, value)


@needs_c_writer
def test_structs_of_an_equal_schema_none_and_wrong_types_take_the_same_paths() -> None:
    schema = (SchemaBuilder.struct().name("S").field("a", Schema.INT32_SCHEMA)
              .field("b", Schema.OPTIONAL_STRING_SCHEMA).optional().build())
    equal = (SchemaBuilder.struct().name("S").field("a", Schema.INT32_SCHEMA)
             .field("b", Schema.OPTIONAL_STRING_SCHEMA).optional().build())
    other = SchemaBuilder.struct().name("T").field("a", Schema.INT32_SCHEMA).build()
    c_encode, py_encode = _both(schema)
    for value in (Struct(schema).put("a", 1).put("b", "x"),
                  Struct(equal).put("a", 2).put("b", None),
                  Struct(other).put("a", 3), None, {"a": 1}, "text"):
        assert _outcome(c_encode, value) == _outcome(py_encode, value)


@needs_c_writer
def test_an_empty_struct_and_a_wide_one() -> None:
    empty = SchemaBuilder.struct().name("Empty").build()
    wide = SchemaBuilder.struct().name("Wide")
    for i in range(300):
        wide = wide.field(f"f{i}", Schema.OPTIONAL_INT64_SCHEMA if i % 2
                          else Schema.OPTIONAL_STRING_SCHEMA)
    wide_schema = wide.build()
    for schema, value in (
            (empty, Struct(empty)),
            (wide_schema, Struct.from_values(
                wide_schema, [i if i % 2 else f"v{i}" for i in range(300)], validate=False))):
        c_encode, py_encode = _both(schema)
        assert _outcome(c_encode, value) == _outcome(py_encode, value)


@needs_c_writer
def test_the_writer_checks_its_arguments() -> None:
    encode = FieldsEncoder([("{\"a\":", 1, False, 0, 10, str)], "}")
    assert encode([5]) == '{"a":5}'
    assert encode((11,)) == '{"a":11}'  # out of range: the field's encoder (str here)
    with pytest.raises(ValueError, match="expected 1 struct values, got 2"):
        encode([1, 2])
    with pytest.raises(TypeError):
        encode(5)
    with pytest.raises(TypeError):
        encode()
    with pytest.raises(ValueError, match="bad kind"):
        FieldsEncoder([("x", 9, False, 0, 0, str)], "}")
    with pytest.raises(TypeError):
        FieldsEncoder([("x", 1)], "}")
