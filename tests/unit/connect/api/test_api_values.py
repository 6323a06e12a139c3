"""validate_value and Struct: Python types per schema type, ranges, paths in messages."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from connect.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from connect.api.data import validate_value as validate
from connect.api.errors import DataError

S = Schema

VALID = [
    (S.INT8_SCHEMA, -128),
    (S.INT8_SCHEMA, 127),
    (S.INT16_SCHEMA, 32767),
    (S.INT32_SCHEMA, -(2**31)),
    (S.INT64_SCHEMA, 2**63 - 1),
    (S.FLOAT32_SCHEMA, 1.5),
    (S.FLOAT32_SCHEMA, float("inf")),
    (S.FLOAT32_SCHEMA, float("nan")),
    (S.FLOAT64_SCHEMA, 1e300),
    (S.BOOLEAN_SCHEMA, False),
    (S.STRING_SCHEMA, ""),
    (S.BYTES_SCHEMA, b"\x00"),
    (S.BYTES_SCHEMA, bytearray(b"ab")),
    (S.BYTES_SCHEMA, memoryview(b"ab")),
    (SchemaBuilder.array(S.STRING_SCHEMA).build(), ["a", "b"]),
    (SchemaBuilder.map(S.STRING_SCHEMA, S.INT32_SCHEMA).build(), {"a": 1}),
    (Decimal.schema(2), decimal.Decimal("1.25")),
    (Date.SCHEMA, dt.date(2024, 2, 29)),
    (Time.SCHEMA, dt.time(12, 30)),
    (Timestamp.SCHEMA, dt.datetime(2024, 1, 1, tzinfo=dt.UTC)),
]

INVALID = [
    (S.INT8_SCHEMA, 128, "out of range"),
    (S.INT8_SCHEMA, -129, "out of range"),
    (S.INT16_SCHEMA, 2**15, "out of range"),
    (S.INT32_SCHEMA, 2**31, "out of range"),
    (S.INT64_SCHEMA, 2**63, "out of range"),
    (S.INT32_SCHEMA, True, "expects int, got bool"),
    (S.INT32_SCHEMA, 1.0, "expects int, got float"),
    (S.FLOAT64_SCHEMA, 1, "expects float, got int"),
    (S.FLOAT32_SCHEMA, 1e39, "overflows float32"),
    (S.BOOLEAN_SCHEMA, 1, "expects bool"),
    (S.STRING_SCHEMA, b"x", "expects str"),
    (S.BYTES_SCHEMA, "x", "expects bytes or bytearray or memoryview"),
    (SchemaBuilder.array(S.STRING_SCHEMA).build(), ("a",), "expects list"),
    (SchemaBuilder.map(S.STRING_SCHEMA, S.STRING_SCHEMA).build(), [("a", "b")], "expects dict"),
    (SchemaBuilder.struct().build(), {"a": 1}, "expects Struct"),
    (Decimal.schema(2), 1.25, "expected decimal.Decimal"),
    (Decimal.schema(2), decimal.Decimal("1.255"), "more fractional digits"),
    (Decimal.schema(2), decimal.Decimal("NaN"), "not finite"),
    (Date.SCHEMA, dt.datetime(2024, 1, 1), "not datetime|got datetime"),
    (Date.SCHEMA, 19000, "expected datetime.date"),
    (Time.SCHEMA, dt.time(1, tzinfo=dt.timezone(dt.timedelta(hours=2))), "UTC offset"),
    (Timestamp.SCHEMA, dt.date(2024, 1, 1), "expected datetime.datetime"),
]


@pytest.mark.parametrize("schema, value", VALID)
def test_valid_values_pass(schema, value):
    validate(schema, value)


@pytest.mark.parametrize("schema, value, message", INVALID)
def test_invalid_values_raise_data_error(schema, value, message):
    with pytest.raises(DataError, match=message):
        validate(schema, value)


def test_none_needs_an_optional_schema_even_with_a_default():
    validate(S.OPTIONAL_STRING_SCHEMA, None)
    with pytest.raises(DataError, match='None used for required field "name"'):
        validate(S.STRING_SCHEMA, None, field="name")
    with pytest.raises(DataError, match="required value"):
        validate(SchemaBuilder.string().default_value("x").build(), None)


@pytest.mark.parametrize(
    "schema, low, high",
    [
        (S.INT8_SCHEMA, -(2**7), 2**7 - 1),
        (S.INT16_SCHEMA, -(2**15), 2**15 - 1),
        (S.INT32_SCHEMA, -(2**31), 2**31 - 1),
        (S.INT64_SCHEMA, -(2**63), 2**63 - 1),
    ],
)
@given(number=st.integers(min_value=-(2**70), max_value=2**70))
def test_integer_ranges(schema, low, high, number):
    if low <= number <= high:
        validate(schema, number)
    else:
        with pytest.raises(DataError):
            validate(schema, number)


ITEM = SchemaBuilder.struct().name("Item").field("price", Decimal.schema(2)).build()
ORDER = (
    SchemaBuilder.struct()
    .name("Order")
    .field("items", SchemaBuilder.array(ITEM))
    .field("tags", SchemaBuilder.map(S.STRING_SCHEMA, S.OPTIONAL_INT32_SCHEMA).optional())
    .build()
)


def _item(price: str) -> Struct:
    return Struct(ITEM).put("price", decimal.Decimal(price))


def test_nested_error_names_the_path():
    with pytest.raises(DataError, match=r'field "items\[1\]\.price"'):
        Struct(ORDER).put("items", [_item("1"), Struct(ITEM)])
    with pytest.raises(DataError, match=r"field \"tags\['b'\]\""):
        Struct(ORDER).put("tags", {"a": 1, "b": "2"})
    with pytest.raises(DataError, match=r"field \"tags\{key 7\}\""):
        Struct(ORDER).put("tags", {7: 1})


def test_struct_values_must_match_the_schema():
    other = SchemaBuilder.struct().name("Other").field("price", Decimal.schema(2)).build()
    wrong = Struct(other).put("price", decimal.Decimal(1))
    with pytest.raises(DataError, match="Struct schemas do not match"):
        Struct(ORDER).put("items", [wrong])


def test_struct_put_get_by_name_and_field():
    struct = Struct(ORDER).put("items", [_item("2.50")])
    assert struct.get("items") == [_item("2.50")]
    assert struct.get(ORDER.field("items")) == [_item("2.50")]
    struct.put(ORDER.field("tags"), {"a": None})
    assert struct.get_without_default("tags") == {"a": None}
    assert struct.schema is ORDER


def test_struct_rejects_unknown_fields_and_foreign_field_objects():
    with pytest.raises(
        DataError, match="'nope' is not a valid field name; the fields are: items, tags"
    ):
        Struct(ORDER).put("nope", 1)
    foreign = SchemaBuilder.struct().field("items", S.INT32_SCHEMA).build().field("items")
    with pytest.raises(DataError, match="not a field"):
        Struct(ORDER).get(foreign)


def test_struct_put_validates_and_names_the_field():
    with pytest.raises(DataError, match='field "price"'):
        Struct(ITEM).put("price", "1.00")


def test_get_applies_defaults_get_without_default_does_not():
    schema = (
        SchemaBuilder.struct()
        .field("n", SchemaBuilder.int32().default_value(5))
        .field("s", S.OPTIONAL_STRING_SCHEMA)
        .build()
    )
    struct = Struct(schema)
    assert (struct.get("n"), struct.get_without_default("n"), struct.get("s")) == (5, None, None)
    struct.validate()  # a default satisfies a required field
    struct.put("n", 6)
    assert struct.get("n") == 6


def test_validate_names_the_first_missing_required_field():
    with pytest.raises(DataError, match='required field "items"'):
        Struct(ORDER).validate()


def test_putting_an_incomplete_nested_struct_fails():
    outer = SchemaBuilder.struct().field("item", ITEM).build()
    with pytest.raises(DataError, match=r'field "item\.price"'):
        Struct(outer).put("item", Struct(ITEM))


def test_struct_needs_a_struct_schema():
    with pytest.raises(DataError):
        Struct(S.STRING_SCHEMA)


def test_struct_equality_repr_and_unhashability():
    assert _item("1.5") == _item("1.5")
    assert _item("1.5") != _item("2.5")
    assert repr(_item("1.5")) == "Struct(price=Decimal('1.5'))"
    with pytest.raises(TypeError):
        hash(_item("1"))


def _holder(schema: Schema) -> Schema:
    return SchemaBuilder.struct().field("f", schema).build()


@pytest.mark.parametrize("schema, value", VALID)
def test_put_and_from_values_accept_what_validate_accepts(schema, value):
    holder = _holder(schema)
    assert Struct(holder).put("f", value).get("f") is value
    assert Struct.from_values(holder, [value]).get("f") is value


@pytest.mark.parametrize("schema, value, message", INVALID)
def test_put_and_from_values_reject_what_validate_rejects(schema, value, message):
    # Struct.put and from_values check with a compiled fast path first; on a miss they
    # fall back to the full check, so the verdict and message are validate_value's.
    holder = _holder(schema)
    with pytest.raises(DataError, match=message):
        Struct(holder).put("f", value)
    with pytest.raises(DataError, match=message):
        Struct.from_values(holder, [value])


_ANY = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**64), 2**64) | st.floats()
    | st.text(max_size=3) | st.binary(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner,
                                                                 max_size=3),
    max_leaves=6,
)
_SCHEMAS = [
    S.INT8_SCHEMA, S.OPTIONAL_INT32_SCHEMA, S.INT64_SCHEMA, S.FLOAT32_SCHEMA,
    S.OPTIONAL_FLOAT64_SCHEMA, S.BOOLEAN_SCHEMA, S.STRING_SCHEMA, S.OPTIONAL_BYTES_SCHEMA,
    SchemaBuilder.array(S.OPTIONAL_INT16_SCHEMA).build(),
    SchemaBuilder.map(S.STRING_SCHEMA, SchemaBuilder.array(S.BOOLEAN_SCHEMA).build()).build(),
]


@pytest.mark.parametrize("schema", _SCHEMAS, ids=repr)
@given(value=_ANY)
def test_fast_path_verdict_equals_the_full_check(schema, value):
    try:
        validate(schema, value)
        expected = None
    except DataError as exc:
        expected = str(exc)
    try:
        Struct(_holder(schema)).put("f", value)
        got = None
    except DataError as exc:
        got = str(exc)
    assert (got is None) == (expected is None), (got, expected)


def test_from_values_checks_the_count_and_can_trust_its_caller():
    schema = SchemaBuilder.struct().field("a", S.INT32_SCHEMA).field(
        "b", S.OPTIONAL_STRING_SCHEMA).build()
    with pytest.raises(DataError, match="1 values given for a struct of 2 fields"):
        Struct.from_values(schema, [1])
    with pytest.raises(DataError, match='field "a"'):
        Struct.from_values(schema, ["x", None])
    # validate=False skips the checks (for copies between equal field schemas); the
    # struct's own validation still catches a wrong value later.
    trusted = Struct.from_values(schema, ["x", None], validate=False)
    with pytest.raises(DataError, match='field "a"'):
        trusted.validate()


def test_values_lists_fields_in_order_with_or_without_defaults():
    schema = (SchemaBuilder.struct().field("a", S.INT32_SCHEMA)
              .field("b", SchemaBuilder.string().optional().default_value("d").build()).build())
    struct = Struct(schema).put("a", 1)
    assert struct.values() == [1, None]
    assert struct.values(with_defaults=True) == [1, "d"]
    copy = struct.values()
    copy[0] = 2
    assert struct.get("a") == 1, "values() returns a new list"
