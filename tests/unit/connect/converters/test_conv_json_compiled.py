"""JsonConverter's per-schema fast paths write and read exactly what the plain paths do.

The struct encoders are generated per schema with each field's common case inlined, the
envelope's schema part is encoded once per schema object, and envelopes with whitespace
are read without parsing the whole document. Each is compared here with the plain
per-field encoders and the general reading path, including schema changes mid-stream.
"""

from __future__ import annotations

import datetime as dt
import decimal
import enum
import json
from typing import Any

import pytest
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
from connect.api.errors import DataError
from connect.converters import json_struct
from connect.converters.json import JsonConverter
from connect.converters.json_encode import JsonEncoder
from connect.converters.json_schema import quote
from tests.unit.connect.converters.test_conv_json_roundtrip import (
    _struct_schema,
    schemas,
    values,
)

TOPIC = "t"


def _converter(**configs: str) -> JsonConverter:
    converter = JsonConverter()
    converter.configure(configs, is_key=False)
    return converter


def _plain(encoder: JsonEncoder, schema: Schema, value: Any, replace: bool = True) -> str:
    """The reference: a struct written field by field with each field's own compiled
    encoder (no inlining), nested structs likewise."""
    if schema.type is not Type.STRUCT:
        return encoder.compile(schema)(value)
    if value is None:
        if replace and schema.default_value is not None:
            return _plain(encoder, schema, schema.default_value, replace)
        return "null"
    parts = []
    for f in schema.fields:
        item = value.get_without_default(f.name)
        if f.schema.type is Type.STRUCT:
            text = _plain(encoder, f.schema, item, replace)
        else:
            text = encoder.compile(f.schema)(item)
        parts.append(quote(f.name) + ":" + text)
    return "{" + ",".join(parts) + "}"


def _struct_schemas() -> st.SearchStrategy[Schema]:
    return _struct_schema(schemas())  # nested: fields of any schema, structs included


@settings(max_examples=200)
@given(st.data(), _struct_schemas(), st.booleans(), st.sampled_from(["BASE64", "NUMERIC"]))
def test_generated_struct_encoders_write_what_the_field_encoders_write(
        data, schema, replace, decimal_format):
    value = data.draw(values(schema))
    numeric = decimal_format == "NUMERIC"
    encoder = JsonEncoder(decimal_numeric=numeric, replace_null_with_default=replace)
    expected = _plain(JsonEncoder(decimal_numeric=numeric, replace_null_with_default=replace),
                      schema, value, replace)
    assert encoder.compile(schema)(value) == expected
    converter = _converter(**{"decimal.format": decimal_format,
                              "replace.null.with.default": str(replace).lower()})
    envelope = converter.from_connect_data(TOPIC, schema, value)
    assert envelope == (
        '{"schema":' + converter.as_json_schema(schema) + ',"payload":' + expected + "}"
    ).encode()
    assert _converter(**{"schemas.enable": "false", "decimal.format": decimal_format,
                         "replace.null.with.default": str(replace).lower()}
                      ).from_connect_data(TOPIC, schema, value) == expected.encode()


EVERYTHING = (
    SchemaBuilder.struct().name("com.example.Everything")
    .field("i8", Schema.INT8_SCHEMA)
    .field("i16", Schema.OPTIONAL_INT16_SCHEMA)
    .field("i32", SchemaBuilder.int32().default_value(7).build())
    .field("i64", Schema.INT64_SCHEMA)
    .field("f32", Schema.OPTIONAL_FLOAT32_SCHEMA)
    .field("f64", Schema.FLOAT64_SCHEMA)
    .field("flag", SchemaBuilder.boolean().optional().default_value(True).build())
    .field("text", Schema.OPTIONAL_STRING_SCHEMA)
    .field("raw", Schema.OPTIONAL_BYTES_SCHEMA)
    .field("amount", Decimal.builder(2).optional().build())
    .field("day", Date.builder().optional().build())
    .field("time", Time.builder().optional().build())
    .field("at", Timestamp.builder().optional().build())
    .field("tags", SchemaBuilder.array(Schema.STRING_SCHEMA).optional().build())
    .field("counts", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build())
    .field("by_id", SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA)
           .optional().build())
    .field("inner", SchemaBuilder.struct().name("Inner").optional()
           .field("x", Schema.INT32_SCHEMA).field("y", Schema.OPTIONAL_STRING_SCHEMA).build())
    .build()
)


def _everything(**changes: Any) -> Struct:
    inner = EVERYTHING.field("inner").schema
    values = {
        "i8": -128, "i16": None, "i32": None, "i64": 2**63 - 1, "f32": 1.5, "f64": 1e7,
        "flag": None, "text": 'quote " backslash \\ tab \t control \x01 \x1f é 😀',
        "raw": b"\x00\xff", "amount": decimal.Decimal("-12.34"), "day": dt.date(2024, 2, 29),
        "time": dt.time(23, 59, 59, 999000),
        "at": dt.datetime(2024, 1, 1, 12, 0, tzinfo=dt.UTC), "tags": ["a", "b"],
        "counts": {"a": 1}, "by_id": {1: None, 2: "two"},
        "inner": Struct(inner).put("x", 1).put("y", None),
    }
    values.update(changes)
    return Struct.from_values(EVERYTHING, [values[f.name] for f in EVERYTHING.fields],
                              validate=False)


@pytest.mark.parametrize("replace", [True, False])
@pytest.mark.parametrize("numeric", [True, False])
def test_every_type_nulls_defaults_and_escapes_match_the_field_encoders(replace, numeric):
    encoder = JsonEncoder(decimal_numeric=numeric, replace_null_with_default=replace)
    # Without replacement a required field's null is an error (checked below).
    i32 = None if replace else 5
    for value in (_everything(i32=i32),
                  _everything(i32=i32, text=None, amount=None, day=None, time=None, at=None,
                              tags=None, by_id=None, inner=None, f32=None, raw=None,
                              flag=False)):
        expected = _plain(encoder, EVERYTHING, value, replace)
        assert encoder.compile(EVERYTHING)(value) == expected
    text = encoder.compile(EVERYTHING)(_everything(i32=i32))
    # Jackson's upper-case escapes of control characters, non-ASCII as is.
    assert '"text":"quote \\" backslash \\\\ tab \\t control \\u0001 \\u001F é 😀"' in text
    assert ('"i32":7,' if replace else '"i32":5,') in text
    assert ('"flag":true,' if replace else '"flag":null,') in text
    if not replace:
        with pytest.raises(DataError, match="required"):
            encoder.compile(EVERYTHING)(_everything())


def test_values_off_the_fast_path_are_written_or_refused_as_before():
    class Level(enum.IntEnum):
        HIGH = 3

    class Text(str):
        pass

    schema = (SchemaBuilder.struct().field("n", Schema.INT32_SCHEMA)
              .field("s", Schema.STRING_SCHEMA).field("b", Schema.BOOLEAN_SCHEMA).build())
    encode = JsonEncoder(decimal_numeric=False, replace_null_with_default=True).compile(schema)
    trusted = Struct.from_values(schema, [Level.HIGH, Text("x"), True], validate=False)
    assert encode(trusted) == '{"n":3,"s":"x","b":true}'
    for bad in ([True, "x", True], [2**31, "x", True], [1, 2, True], [1, "x", 1],
                [None, "x", True]):
        with pytest.raises(DataError):
            encode(Struct.from_values(schema, bad, validate=False))
    with pytest.raises(DataError, match="Invalid type for STRUCT"):
        encode({"n": 1})


def test_field_names_are_data_not_code():
    names = ['{P0}', "'", '"', "\\", "}", "{", "v0", "def", "\n", "x'); import os; ('",
             "S", "OTHER", "é"]
    builder = SchemaBuilder.struct()
    for name in names:
        builder.field(name, Schema.OPTIONAL_STRING_SCHEMA)
    schema = builder.build()
    value = Struct.from_values(schema, [f"value of {n}" for n in names])
    text = JsonEncoder(decimal_numeric=False, replace_null_with_default=True).compile(schema)(
        value)
    assert json.loads(text) == {n: f"value of {n}" for n in names}
    assert list(json.loads(text)) == names


def test_empty_and_wide_structs():
    encoder = JsonEncoder(decimal_numeric=False, replace_null_with_default=True)
    empty = SchemaBuilder.struct().build()
    assert encoder.compile(empty)(Struct(empty)) == "{}"
    wide_builder = SchemaBuilder.struct()
    for i in range(600):
        wide_builder.field(f"c{i}", Schema.OPTIONAL_INT64_SCHEMA)
    wide = wide_builder.build()
    value = Struct.from_values(wide, [i if i % 3 else None for i in range(600)])
    assert encoder.compile(wide)(value) == _plain(encoder, wide, value)


def _rebuilt(doc: str | None = None) -> Schema:
    """A schema equal to a table's value schema but a new object, as a connector makes
    when it reads the table's columns again."""
    builder = (SchemaBuilder.struct().name("db.table.Value").optional()
               .field("id", Schema.INT32_SCHEMA).field("name", Schema.OPTIONAL_STRING_SCHEMA))
    if doc is not None:
        builder.doc(doc)
    return builder.build()


def test_schema_changes_mid_stream_write_each_schema_with_its_own_text():
    converter, reference = _converter(), _converter(**{"schemas.cache.size": "0"})
    first, same, changed = _rebuilt(), _rebuilt(), _rebuilt(doc="v2")
    assert first == same and first is not same and first != changed
    wider = (SchemaBuilder.struct().name("db.table.Value").optional()
             .field("id", Schema.INT32_SCHEMA).field("name", Schema.OPTIONAL_STRING_SCHEMA)
             .field("qty", Schema.OPTIONAL_INT32_SCHEMA).build())
    stream = [(first, [1, "a"]), (first, [2, None]), (same, [3, "c"]), (wider, [4, "d", 5]),
              (same, [5, "e"]), (changed, [6, "f"]), (first, [7, "g"]), (wider, [8, None, 1])]
    for schema, row in stream:
        value = Struct.from_values(schema, row)
        got = converter.from_connect_data(TOPIC, schema, value)
        assert got == reference.from_connect_data(TOPIC, schema, value)
        assert converter.to_connect_data(TOPIC, got) == SchemaAndValue(schema, value)
    # A struct of an equal schema object (not the record's) is accepted, repeatedly.
    for i in range(3):
        value = Struct.from_values(same, [i, "x"])
        assert (converter.from_connect_data(TOPIC, first, value)
                == reference.from_connect_data(TOPIC, first, value))
    with pytest.raises(DataError, match="Mismatching schema"):
        converter.from_connect_data(TOPIC, first, Struct.from_values(wider, [1, "a", 2]))


def test_a_new_equal_schema_per_record_is_not_compiled_per_record():
    converter, reference = _converter(), _converter(**{"schemas.cache.size": "0"})
    compiled = []
    compile_writer = converter._compile_writer
    converter._compile_writer = lambda schema: compiled.append(schema) or compile_writer(
        schema)
    for i in range(50):
        schema = _rebuilt()  # as code that builds its schema for every record
        value = Struct.from_values(schema, [i, f"row {i}"])
        assert (converter.from_connect_data(TOPIC, schema, value)
                == reference.from_connect_data(TOPIC, schema, value))
    assert 1 < len(compiled) <= 5


def test_a_struct_default_is_written_for_a_null_struct_field():
    inner = (SchemaBuilder.struct().name("Inner").field("x", Schema.INT32_SCHEMA).optional()
             .build())
    default = Struct(inner).put("x", 42)
    with_default = (SchemaBuilder.struct().name("Inner").field("x", Schema.INT32_SCHEMA)
                    .optional().default_value(default).build())
    outer = SchemaBuilder.struct().field("inner", with_default).build()
    value = Struct.from_values(outer, [None])
    assert _converter(**{"schemas.enable": "false"}).from_connect_data(
        TOPIC, outer, value) == b'{"inner":{"x":42}}'
    assert _converter(**{"schemas.enable": "false", "replace.null.with.default": "false"}
                      ).from_connect_data(TOPIC, outer, value) == b'{"inner":null}'


@settings(max_examples=100)
@given(st.data(), schemas())
def test_envelopes_with_whitespace_read_as_compact_ones(data, schema):
    value = data.draw(values(schema))
    writer = _converter()
    compact = writer.from_connect_data(TOPIC, schema, value)
    schema_text = writer.as_json_schema(schema)
    payload = _converter(**{"schemas.enable": "false"}).from_connect_data(
        TOPIC, schema, value) or b"null"
    node = json.loads(schema_text)
    if json.dumps(node, separators=(",", ":"), ensure_ascii=False) == schema_text:
        schema_text = json.dumps(node, ensure_ascii=False)  # with ", " and ": "
    spaced = b'{"schema": ' + schema_text.encode() + b', "payload": ' + payload + b"}"
    odd = b'\n { \t"schema"\r: ' + schema_text.encode() + b'\n,"payload" :' + payload + b" }\n"
    expected = _converter().to_connect_data(TOPIC, compact)
    reader = _converter()
    for encoded in (spaced, odd, compact, spaced):
        assert reader.to_connect_data(TOPIC, encoded) == expected


def test_envelopes_off_the_fast_path_are_read_or_refused_by_the_general_path():
    converter = _converter()
    payload_first = b'{"payload": 5, "schema": {"type": "int32", "optional": false}}'
    assert converter.to_connect_data(TOPIC, payload_first) == SchemaAndValue(
        Schema.INT32_SCHEMA, 5)
    for bad in (b'{"schema": {"type": "int32", "optional": false}, "payload": 5, "x": 1}',
                b'{"schema": {"type": "int32", "optional": false}, "payload": 5} x',
                b'{"schema": {"type": "int32", "optional": false}}'):
        with pytest.raises(DataError):
            converter.to_connect_data(TOPIC, bad)


_plain_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=12,
)


def _standard(data: bytes) -> SchemaAndValue:
    """What the standard parser makes of a schemaless document (the reference)."""
    from connect.converters.json import _parse, _text
    from connect.converters.json_decode import FAST_JSON
    text = _text(data)
    return SchemaAndValue.NULL if not text.strip() else SchemaAndValue(None,
                                                                       _parse(FAST_JSON, text))


@settings(max_examples=200)
@given(_plain_json, st.sampled_from([{}, {"indent": 1}, {"separators": (",", ":")}]))
def test_schemaless_documents_read_as_the_standard_parser_reads_them(value, layout):
    # The standard library writes "Infinity" for an infinite float, which Jackson and so
    # both readers refuse; those documents must be refused alike.
    data = json.dumps(value, ensure_ascii=False, **layout).encode("utf-8", "surrogatepass")
    converter = _converter(**{"schemas.enable": "false"})
    try:
        expected = _standard(data)
    except DataError:
        with pytest.raises(DataError):
            converter.to_connect_data(TOPIC, data)
        return
    got = converter.to_connect_data(TOPIC, data)
    assert got == expected
    assert json.dumps(got.value) == json.dumps(expected.value)  # -0.0 and int vs float


@pytest.mark.parametrize("data", [
    b"18446744073709551616", b"-9223372036854775809", b"[1, 123456789012345678901234567890]",
    b'{"a": {"b": [-99999999999999999999]}}', b"9.3e18", b"18446744073709551615",
    b"-0", b"-0.0", b"1E2", b'"\\ud800"', b'"\\u0000"', b"1e400", b"  ", b"", b" 1 ",
    "[\"é\"]".encode("utf-16"), "{\"a\": 1}".encode("utf-32-le"),
])
def test_schemaless_edge_documents_read_as_the_standard_parser_reads_them(data):
    converter = _converter(**{"schemas.enable": "false"})
    try:
        expected = _standard(data)
    except DataError:
        with pytest.raises(DataError):
            converter.to_connect_data(TOPIC, data)
        return
    got = converter.to_connect_data(TOPIC, data)
    assert got == expected and repr(got.value) == repr(expected.value)


@pytest.mark.parametrize("data", [b"NaN", b"[Infinity]", b"-Infinity", b"[1,]", b"{'a': 1}",
                                  b"\xef\xbb\xbf1", b"1 2", b"\xff"])
def test_schemaless_documents_refused_by_the_standard_parser_stay_refused(data):
    with pytest.raises(DataError):
        _converter(**{"schemas.enable": "false"}).to_connect_data(TOPIC, data)


def test_string_fields_that_keep_one_value_are_specialised_without_changing_the_text(
        monkeypatch):
    """A struct encoder watches its first structs; string fields that held one object
    all along (a CDC source block's names) then get that object's text behind an
    identity test. Any other value, equal or not, afterwards still gets its own text,
    and errors are raised as before. (The Python writer's behaviour: the C writer has no
    watch.)"""
    monkeypatch.setattr(json_struct, "FieldsEncoder", None)
    class Text(str):
        pass

    inner = (SchemaBuilder.struct().name("Source").field("name", Schema.STRING_SCHEMA)
             .field("db", Schema.OPTIONAL_STRING_SCHEMA).field("seq", Schema.INT64_SCHEMA)
             .build())
    outer = (SchemaBuilder.struct().name("Envelope").field("op", Schema.STRING_SCHEMA)
             .field("source", inner).field("note", Schema.OPTIONAL_STRING_SCHEMA).build())
    encoder = JsonEncoder(decimal_numeric=False, replace_null_with_default=True)
    reference = JsonEncoder(decimal_numeric=False, replace_null_with_default=True)
    encode = encoder.compile(outer)
    name, db = "server \x1f é", "inventory"

    def value(op: Any, name: Any, db: Any, seq: int, note: Any) -> Struct:
        source = Struct.from_values(inner, [name, db, seq], validate=False)
        return Struct.from_values(outer, [op, source, note], validate=False)

    for seq in range(40):  # past the watch: op, name and db kept their objects
        struct = value("c", name, db, seq, f"note {seq}")
        assert encode(struct) == _plain(reference, outer, struct)
    assert "SEEN" not in encode.__code__.co_names
    assert {"C0", "K0"} <= set(encode.__code__.co_names)  # "c"; "note" changed
    assert "C2" not in encode.__code__.co_names
    inner_code = encode.__globals__["E1"].__code__  # the nested source block's encoder
    assert {"C0", "C1"} <= set(inner_code.co_names) and "SEEN" not in inner_code.co_names
    for op, source_name, source_db, note in [
            ("u", name, db, None), ("c", "server \x1f é"[:], "other", "x"),
            ("c", "".join(["server \x1f", " é"]), None, None),  # equal, not the same object
            (Text("c"), Text(name), Text(db), Text("n")), ("c", "\x1f\"\\", "", "")]:
        struct = value(op, source_name, source_db, 99, note)
        assert encode(struct) == _plain(reference, outer, struct)
    for bad in (value(None, name, db, 1, None), value("c", 5, db, 1, None),
                value("c", name, b"db", 1, None)):
        with pytest.raises(DataError):
            encode(bad)
    converter = _converter()
    for seq in range(20):
        struct = value("c", name, db, seq, None)
        assert json.loads(converter.from_connect_data(TOPIC, outer, struct))["payload"] == {
            "op": "c", "source": {"name": name, "db": db, "seq": seq}, "note": None}
