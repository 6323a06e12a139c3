"""Logical types: Kafka-compatible encodings of Decimal, Date, Time and Timestamp."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from connect.api.data import Date, Decimal, Schema, Time, Timestamp, Type
from connect.api.errors import DataError

UTC = dt.UTC


def test_logical_schemas_carry_kafkas_names():
    assert Decimal.schema(3).name == "org.apache.kafka.connect.data.Decimal"
    assert Decimal.schema(3).parameters == {"scale": "3"}
    assert (Decimal.schema(3).type, Decimal.schema(3).version) == (Type.BYTES, 1)
    assert (Date.SCHEMA.type, Date.SCHEMA.name) == (Type.INT32, Date.LOGICAL_NAME)
    assert (Time.SCHEMA.type, Time.SCHEMA.name) == (Type.INT32, Time.LOGICAL_NAME)
    assert (Timestamp.SCHEMA.type, Timestamp.SCHEMA.name) == (Type.INT64, Timestamp.LOGICAL_NAME)
    assert Timestamp.LOGICAL_NAME == "org.apache.kafka.connect.data.Timestamp"
    assert Decimal.builder(2).optional().build().optional


# (value, scale, bytes as Java's BigInteger.toByteArray writes the unscaled value)
DECIMAL_VECTORS = [
    ("0", 0, b"\x00"),
    ("1.27", 2, b"\x7f"),
    ("1.28", 2, b"\x00\x80"),
    ("-1.28", 2, b"\x80"),
    ("-1.29", 2, b"\xff\x7f"),
    ("-0.01", 2, b"\xff"),
    ("12345.678", 3, (12345678).to_bytes(4, "big", signed=True)),
    ("1.5", 2, b"\x00\x96"),  # fewer fractional digits than the scale: exact, 150
    ("1E+3", -2, b"\x0a"),  # negative scale: 1000 = 10 * 10**2
]


@pytest.mark.parametrize("text, scale, encoded", DECIMAL_VECTORS)
def test_decimal_encoding_matches_kafka(text, scale, encoded):
    schema = Decimal.schema(scale)
    assert Decimal.from_logical(schema, decimal.Decimal(text)) == encoded
    decoded = Decimal.to_logical(schema, encoded)
    assert decoded == decimal.Decimal(text)
    assert decoded.as_tuple().exponent == -scale


@given(unscaled=st.integers(min_value=-(10**60), max_value=10**60), scale=st.integers(-5, 40))
def test_decimal_round_trip_is_exact_and_minimal(unscaled, scale):
    value = decimal.Decimal(unscaled).scaleb(-scale, decimal.Context(prec=200))
    schema = Decimal.schema(scale)
    encoded = Decimal.from_logical(schema, value)
    assert int.from_bytes(encoded, "big", signed=True) == unscaled
    assert Decimal.to_logical(schema, encoded) == value
    if len(encoded) > 1:  # no redundant sign byte, as BigInteger.toByteArray
        assert not (encoded[0] == 0x00 and encoded[1] < 0x80)
        assert not (encoded[0] == 0xFF and encoded[1] >= 0x80)


def test_decimal_is_never_rounded():
    with pytest.raises(DataError, match="more fractional digits than the schema's scale 2"):
        Decimal.from_logical(Decimal.schema(2), decimal.Decimal("0.125"))
    assert Decimal.from_logical(Decimal.schema(2), decimal.Decimal("0.120")) == b"\x0c"


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "sNaN"])
def test_decimal_rejects_non_finite_values(value):
    with pytest.raises(DataError, match="not finite"):
        Decimal.from_logical(Decimal.schema(2), decimal.Decimal(value))


def test_decimal_needs_its_scale_parameter_and_name():
    broken = Schema(Type.BYTES, name=Decimal.LOGICAL_NAME)
    with pytest.raises(DataError, match="scale"):
        Decimal.from_logical(broken, decimal.Decimal(1))
    with pytest.raises(DataError, match="schema does not match"):
        Decimal.to_logical(Schema.BYTES_SCHEMA, b"\x01")
    with pytest.raises(DataError, match="at least one byte"):
        Decimal.to_logical(Decimal.schema(0), b"")


@pytest.mark.parametrize(
    "date, days",
    [
        (dt.date(1970, 1, 1), 0),
        (dt.date(1969, 12, 31), -1),
        (dt.date(2000, 1, 1), 10957),
        (dt.date(2024, 2, 29), 19782),
    ],
)
def test_date_is_days_since_the_epoch(date, days):
    assert Date.from_logical(Date.SCHEMA, date) == days
    assert Date.to_logical(Date.SCHEMA, days) == date


def test_date_rejects_datetimes_and_out_of_range_days():
    with pytest.raises(DataError, match=r"value\.date\(\)"):
        Date.from_logical(Date.SCHEMA, dt.datetime(2024, 1, 1))
    with pytest.raises(DataError, match="years 1-9999"):
        Date.to_logical(Date.SCHEMA, 10**7)
    with pytest.raises(DataError, match="schema does not match"):
        Date.from_logical(Schema.INT32_SCHEMA, dt.date(2024, 1, 1))


@pytest.mark.parametrize(
    "time, millis",
    [
        (dt.time(0, 0), 0),
        (dt.time(23, 59, 59, 999_000), 86_399_999),
        (dt.time(1, 2, 3, 4_999), 3_723_004),
        (dt.time(12, 0, tzinfo=UTC), 43_200_000),
    ],
)
def test_time_is_millis_since_midnight(time, millis):
    assert Time.from_logical(Time.SCHEMA, time) == millis


def test_time_decodes_to_a_naive_utc_time_of_day():
    assert Time.to_logical(Time.SCHEMA, 3_723_004) == dt.time(1, 2, 3, 4_000)
    for bad in (-1, 86_400_000):
        with pytest.raises(DataError, match="not a time of day"):
            Time.to_logical(Time.SCHEMA, bad)


def test_time_with_a_non_utc_offset_is_refused():
    with pytest.raises(DataError, match="UTC offset"):
        Time.from_logical(Time.SCHEMA, dt.time(10, tzinfo=dt.timezone(dt.timedelta(hours=-5))))


def test_timestamp_is_utc_millis():
    schema = Timestamp.SCHEMA
    assert Timestamp.from_logical(schema, dt.datetime(2020, 1, 1, tzinfo=UTC)) == 1_577_836_800_000
    assert Timestamp.from_logical(schema, dt.datetime(2020, 1, 1)) == 1_577_836_800_000  # naive=UTC
    plus_one = dt.timezone(dt.timedelta(hours=1))
    assert Timestamp.from_logical(schema, dt.datetime(2020, 1, 1, 1, tzinfo=plus_one)) == (
        1_577_836_800_000
    )
    decoded = Timestamp.to_logical(schema, 1_577_836_800_123)
    assert decoded == dt.datetime(2020, 1, 1, 0, 0, 0, 123_000, tzinfo=UTC)
    assert decoded.tzinfo is UTC


def test_timestamp_truncates_sub_millisecond_digits_towards_the_past():
    before_epoch = dt.datetime(1969, 12, 31, 23, 59, 59, 999_500, tzinfo=UTC)
    assert Timestamp.from_logical(Timestamp.SCHEMA, before_epoch) == -1
    after = dt.datetime(1970, 1, 1, 0, 0, 0, 1_999, tzinfo=UTC)
    assert Timestamp.from_logical(Timestamp.SCHEMA, after) == 1


@given(millis=st.integers(min_value=-62_135_596_800_000, max_value=253_402_300_799_999))
def test_timestamp_round_trip(millis):
    value = Timestamp.to_logical(Timestamp.SCHEMA, millis)
    assert Timestamp.from_logical(Timestamp.SCHEMA, value) == millis


def test_timestamp_out_of_range_and_wrong_types():
    with pytest.raises(DataError, match="years 1-9999"):
        Timestamp.to_logical(Timestamp.SCHEMA, 2**62)
    with pytest.raises(DataError, match="expected int"):
        Timestamp.to_logical(Timestamp.SCHEMA, True)
    with pytest.raises(DataError, match=r"expected datetime\.datetime"):
        Timestamp.from_logical(Timestamp.SCHEMA, 1_000)


@given(coefficient=st.integers(-(10**45), 10**45), exponent=st.integers(-50, 50),
       scale=st.integers(-5, 40))
def test_decimal_encoding_is_exact_for_any_exponent(coefficient, exponent, scale):
    # Whatever the value's own exponent (trailing zeros, more digits than the default
    # context's 28): the unscaled integer or a refusal, never a rounded value.
    value = decimal.Decimal(coefficient).scaleb(exponent, decimal.Context(prec=100))
    shift = exponent + scale
    schema = Decimal.schema(scale)
    if shift < 0 and coefficient % 10**-shift:
        with pytest.raises(DataError, match="more fractional digits"):
            Decimal.from_logical(schema, value)
        return
    expected = coefficient * 10**shift if shift >= 0 else coefficient // 10**-shift
    encoded = Decimal.from_logical(schema, value)
    assert int.from_bytes(encoded, "big", signed=True) == expected


@given(value=st.datetimes(), zone=st.sampled_from([None, UTC, dt.timezone(
    dt.timedelta(hours=-7, minutes=-30))]))
def test_timestamp_of_naive_and_aware_datetimes(value, zone):
    # A naive datetime is UTC; an aware one is converted; both truncate towards the past.
    instant = value.replace(tzinfo=zone or UTC)
    micros = (instant - dt.datetime(1970, 1, 1, tzinfo=UTC)) // dt.timedelta(microseconds=1)
    assert Timestamp.from_logical(Timestamp.SCHEMA, value.replace(tzinfo=zone)) == \
        micros // 1000
