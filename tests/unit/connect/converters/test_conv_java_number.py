"""Java's Double.toString / Float.toString, as Jackson and Kafka's Values write numbers."""

from __future__ import annotations

import decimal
import math
import struct

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from connect.converters.java_number import format_double, format_float, to_float32

# Printed by OpenJDK 17.0.15 (Double.toString / Float.toString of these exact values).
JAVA17_DOUBLES = [
    (1.0, "1.0"),
    (-1.0, "-1.0"),
    (1e10, "1.0E10"),
    (0.001, "0.001"),
    (1e-4, "1.0E-4"),
    (123456789.0, "1.23456789E8"),
    (0.1, "0.1"),
    (1 / 3, "0.3333333333333333"),
    (100.0, "100.0"),
    (1e7, "1.0E7"),
    (9999999.0, "9999999.0"),
    (1234567.0, "1234567.0"),
    (0.0015, "0.0015"),
    (12345.678, "12345.678"),
    (-273.15, "-273.15"),
    (math.pi, "3.141592653589793"),
    (0.000999, "9.99E-4"),
    (1e21, "1.0E21"),
    (1e22, "1.0E22"),
    (5e-324, "4.9E-324"),
    (1.7976931348623157e308, "1.7976931348623157E308"),
    (2.2250738585072014e-308, "2.2250738585072014E-308"),
    (1e-5, "1.0E-5"),
    (6.02214076e23, "6.02214076E23"),
    (-2.5e-7, "-2.5E-7"),
    (9007199254740992.0, "9.007199254740992E15"),
    (0.1 + 0.2, "0.30000000000000004"),
    (1.23e20, "1.23E20"),
    (0.0, "0.0"),
    (-0.0, "-0.0"),
    (math.nan, "NaN"),
    (math.inf, "Infinity"),
    (-math.inf, "-Infinity"),
]
JAVA17_FLOATS = [
    (1.0, "1.0"),
    (0.1, "0.1"),
    (1.1, "1.1"),
    (0.3, "0.3"),
    (1 / 3, "0.33333334"),
    (3.4028234663852886e38, "3.4028235E38"),
    (1.401298464324817e-45, "1.4E-45"),
    (1e10, "1.0E10"),
    (1e-4, "1.0E-4"),
    (16777216.0, "1.6777216E7"),
    (16777217.0, "1.6777216E7"),  # rounds to float32 first
    (0.001, "0.001"),
    (3.14159265, "3.1415927"),
    (-2.5, "-2.5"),
    (9999999.0, "9999999.0"),
    (33554432.0, "3.3554432E7"),
    (math.nan, "NaN"),
    (-math.inf, "-Infinity"),
]
# Values where JDK 17's FloatingDecimal printed a longer string than the shortest one
# (JDK-4511638); JDK 19+ follows the specification these expectations derive from.
JDK19_ONLY = [
    (format_double, 1e23, "1.0E23"),  # JDK 17: 9.999999999999999E22
    (format_double, 2 * 5e-324, "9.9E-324"),  # JDK 17: 1.0E-323; 9.9 is closer
    (format_float, 123456789.0, "1.2345679E8"),  # JDK 17: 1.23456792E8
    (format_float, 1.1754943508222875e-38, "1.1754944E-38"),  # JDK 17: 1.17549435E-38
]


@pytest.mark.parametrize(("value", "text"), JAVA17_DOUBLES)
def test_double_matches_java(value, text):
    assert format_double(value) == text


@pytest.mark.parametrize(("value", "text"), JAVA17_FLOATS)
def test_float_matches_java(value, text):
    assert format_float(value) == text


@pytest.mark.parametrize(("fmt", "value", "text"), JDK19_ONLY)
def test_shortest_digits_as_jdk19_specifies(fmt, value, text):
    assert fmt(value) == text


def test_to_float32_rounds_and_overflows_like_a_java_cast():
    assert to_float32(0.1) == struct.unpack(">f", struct.pack(">f", 0.1))[0]
    assert to_float32(1e39) == math.inf
    assert to_float32(-1e39) == -math.inf


def _significant_digits(text: str) -> str:
    mantissa = text.lstrip("-").split("E")[0].replace(".", "")
    return mantissa.strip("0")


def _reference_shortest(x: float, reads_back) -> str:
    """The Java specification by brute force: the shortest decimals that read back as
    ``x``, the closest of them (one or two digits when one suffices)."""
    exact = decimal.Decimal(x)
    with decimal.localcontext(decimal.Context(prec=1200)):
        for length in range(1, 18):
            unit = decimal.Decimal(1).scaleb(exact.adjusted() - length + 1)
            below = exact.quantize(unit, rounding=decimal.ROUND_FLOOR)
            candidates = [c for c in (below, below + unit) if reads_back(c)]
            if candidates:
                if length == 1:
                    return _reference_shortest_of_length(exact, 2, reads_back)
                return _reference_shortest_of_length(exact, length, reads_back)
    raise AssertionError(x)


def _reference_shortest_of_length(exact, length, reads_back) -> str:
    unit = decimal.Decimal(1).scaleb(exact.adjusted() - length + 1)
    below = exact.quantize(unit, rounding=decimal.ROUND_FLOOR)
    above = below + unit
    candidates = [c for c in (below, above) if reads_back(c)]
    best = min(candidates, key=lambda c: (abs(c - exact), int(c.scaleb(-unit.adjusted())) % 2))
    return str(best.normalize()).replace("E+", "E").split("E")[0].replace(".", "").lstrip("0")


def _float_reads_back(x32: float):
    """Whether a decimal rounds (exactly, half to even) to the float32 ``x32`` > 0."""
    bits = struct.unpack(">I", struct.pack(">f", x32))[0]
    below = decimal.Decimal(struct.unpack(">f", struct.pack(">I", bits - 1))[0])
    above = decimal.Decimal(
        2**128 if bits + 1 == 0x7F800000 else struct.unpack(">f", struct.pack(">I", bits + 1))[0]
    )
    exact = decimal.Decimal(x32)
    with decimal.localcontext(decimal.Context(prec=1200)):  # exact midpoints
        low, high = (below + exact) / 2, (exact + above) / 2
    even = bits % 2 == 0
    return lambda c: low < c < high or (even and c in (low, high))


@given(st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: x > 0))
@example(1e23)
@example(5e-324)
@example(2.0**-1022)
def test_double_digits_are_the_closest_shortest(x):
    expected = _reference_shortest(x, lambda c: float(c) == x).rstrip("0")
    assert _significant_digits(format_double(x)) == expected


@given(st.floats(width=32, allow_nan=False, allow_infinity=False).filter(lambda x: x > 0))
@example(2.0**-149)
@example(2.0**100)
@example(3.4028234663852886e38)
def test_float_digits_are_the_closest_shortest(x):
    expected = _reference_shortest(x, _float_reads_back(x)).rstrip("0")
    assert _significant_digits(format_float(x)) == expected


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_double_text_reads_back(x):
    text = format_double(x)
    assert float(text) == x
    assert "." in text.split("E")[0] and text.count("E") <= 1


@given(st.floats(width=32, allow_nan=False))
def test_float_text_reads_back_as_the_same_float32(x):
    assert to_float32(float(format_float(x))) == x


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_layout_switches_to_e_notation_outside_1e_minus_3_to_1e7(x):
    text = format_double(x)
    plain = x == 0 or 1e-3 <= abs(x) < 1e7
    assert ("E" not in text) == plain
