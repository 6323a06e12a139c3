"""Java's ``Double.toString`` and ``Float.toString``, the number text Kafka writes.

Jackson (and so Kafka's JsonConverter) writes a Java ``double`` with ``Double.toString``
and a ``float`` with ``Float.toString``; Kafka's ``Values`` (SimpleHeaderConverter,
StringConverter) does the same. Matching Kafka byte for byte needs both:

* the digits: the shortest decimal that reads back as the same binary number, the one
  closest to it among those (ties: even last digit); when a single digit would do, Java
  picks the closest decimal of one *or two* digits (``4.9E-324``, not ``5E-324``). This
  is the JDK 19+ specification (JDK-4511638); JDK 17 and older occasionally printed a
  longer, non-shortest string for rare values, which no rule reproduces;
* the layout: plain notation with at least one fractional digit for magnitudes in
  ``[1e-3, 1e7)`` (``0.001``, ``1.0``, ``1234567.0``), otherwise ``d.dddEn``
  (``1.0E7``, ``1.0E-4``, ``-1.23456789E8``); ``NaN``, ``Infinity``, ``-Infinity``,
  ``0.0`` and ``-0.0``.

For a float64, Python's ``repr`` already gives the shortest closest digits; only the
one-or-two-digit rule needs work. A float32 is searched digit count by digit count.
"""

from __future__ import annotations

import decimal
import math
import struct
from collections.abc import Callable
from functools import lru_cache

__all__ = ["format_double", "format_float", "to_float32"]

_F32 = struct.Struct(">f")
_U32 = struct.Struct(">I")
# Enough digits to hold any float64 exactly (at most 767 significant digits), so distance
# comparisons between candidates and the binary value are exact.
_EXACT = decimal.Context(prec=800, rounding=decimal.ROUND_HALF_EVEN)

#: Whether a decimal text reads back as the binary number being printed.
_Acceptor = Callable[[str], bool]


def to_float32(x: float) -> float:
    """The float32 nearest to ``x`` (ties to even), as a Python float: Java's ``(float) x``.

    Values beyond float32's range become infinities, as in Java.
    """
    try:
        return _F32.unpack(_F32.pack(x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def format_double(x: float) -> str:
    """``Double.toString(x)``."""
    if 1e-3 <= x < 1e7 or -1e7 < x <= -1e-3:
        # Plain notation in both languages, and repr's shortest digits are Java's: a
        # one-digit repr is within an ulp of d.0, so no two-digit decimal is closer.
        return repr(x)
    special = _special(x)
    if special is not None:
        return special
    negative = x < 0
    magnitude = -x if negative else x
    digits, exponent = _split(repr(magnitude))
    if len(digits) == 1:
        digits, exponent = _two_digits_double(magnitude)
    return _layout(negative, digits, exponent)


def format_float(x: float) -> str:
    """``Float.toString((float) x)``: ``x`` is first rounded to float32."""
    x32 = to_float32(x)
    special = _special(x32)
    if special is not None:
        return special
    negative = x32 < 0
    digits, exponent = _float32_digits(-x32 if negative else x32)
    return _layout(negative, digits, exponent)


def _special(x: float) -> str | None:
    if x != x:
        return "NaN"
    if x == math.inf:
        return "Infinity"
    if x == -math.inf:
        return "-Infinity"
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    return None


def _split(text: str) -> tuple[str, int]:
    """Significant digits and decimal exponent of a positive number's repr or ``%e``
    text: ``"0.0015"`` -> ``("15", -3)``, meaning 1.5E-3."""
    mantissa, _, exp_text = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    all_digits = whole + fraction
    stripped = all_digits.lstrip("0")
    leading_zeros = len(all_digits) - len(stripped)
    exponent = (int(exp_text) if exp_text else 0) + len(whole) - 1 - leading_zeros
    return stripped.rstrip("0") or "0", exponent


def _layout(negative: bool, digits: str, exponent: int) -> str:
    if -3 <= exponent < 7:
        if exponent >= 0:
            whole_len = exponent + 1
            if len(digits) <= whole_len:
                text = digits + "0" * (whole_len - len(digits)) + ".0"
            else:
                text = digits[:whole_len] + "." + digits[whole_len:]
        else:
            text = "0." + "0" * (-exponent - 1) + digits
    else:
        text = digits[0] + "." + (digits[1:] or "0") + "E" + str(exponent)
    return "-" + text if negative else text


@lru_cache(maxsize=4096)
def _two_digits_double(x: float) -> tuple[str, int]:
    # Reached only when one digit reads back as x (1.0, 0.1, 3e10 ...): Java then picks
    # the closest decimal of one or two digits, which the two-digit rounding of x is
    # whenever it reads back as x.
    nearest = f"{x:.1e}"
    if float(nearest) == x:
        return _split(nearest)
    found = _other_neighbour(x, 2, lambda c: float(c) == x)
    if found is not None:
        return found
    return _split(repr(x))


def _float32_digits(x32: float) -> tuple[str, int]:
    accepts = _float32_acceptor(x32)
    bits = _U32.unpack(_F32.pack(x32))[0]
    # Only at a power of two is the rounding interval lopsided, so that the nearest
    # n-digit decimal may miss it while the neighbour on the wide side hits it.
    lopsided = bits & 0x7FFFFF == 0
    for length in range(1, 10):
        nearest = f"{x32:.{length - 1}e}"
        if accepts(nearest):
            if length == 1:
                return _float32_two_digits(x32, accepts, lopsided, nearest)
            return _split(nearest)
        if lopsided:
            found = _other_neighbour(x32, length, accepts)
            if found is not None:
                if length == 1:
                    return _float32_two_digits(x32, accepts, lopsided, nearest)
                return found
    raise AssertionError(f"no decimal of 9 digits reads back as float32 {x32!r}")


def _float32_two_digits(
    x32: float, accepts: _Acceptor, lopsided: bool, one_digit: str
) -> tuple[str, int]:
    nearest = f"{x32:.1e}"
    if accepts(nearest):
        return _split(nearest)
    if lopsided:
        found = _other_neighbour(x32, 2, accepts)
        if found is not None:
            return found
    return _split(one_digit)


def _float32_acceptor(x32: float) -> _Acceptor:
    """A test of whether a decimal text reads back (Java's ``Float.parseFloat``, exact
    round-half-even) as ``x32``. Midpoints between neighbouring float32s are exact
    doubles, so most decimals are decided with one ``float()``; a decimal whose nearest
    double is a midpoint is compared exactly."""
    bits = _U32.unpack(_F32.pack(x32))[0]
    below = _F32.unpack(_U32.pack(bits - 1))[0] if bits > 0 else 0.0
    above = _F32.unpack(_U32.pack(bits + 1))[0]
    low = (below + x32) / 2
    # Above the largest float32 the next value is infinity; Java rounds to infinity from
    # the midpoint to where the next float32 would be.
    high = x32 + (x32 - below) / 2 if math.isinf(above) else (x32 + above) / 2
    even = bits % 2 == 0

    def accepts(text: str) -> bool:
        value = float(text)
        if low < value < high:
            return True
        if value != low and value != high:
            return False
        exact = decimal.Decimal(text)
        bound = decimal.Decimal(value)
        if exact == bound:
            return even
        return exact > bound if value == low else exact < bound

    return accepts


def _other_neighbour(x: float, length: int, accepts: _Acceptor) -> tuple[str, int] | None:
    """The ``length``-digit decimal next to ``x`` on the side away from the nearest one,
    if it reads back as ``x``."""
    exact = decimal.Decimal(x)
    unit = decimal.Decimal(1).scaleb(exact.adjusted() - (length - 1))
    below = exact.quantize(unit, rounding=decimal.ROUND_FLOOR, context=_EXACT)
    above = _EXACT.add(below, unit)
    nearest = decimal.Decimal(f"{x:.{length - 1}e}")
    other = above if nearest == below else below
    text = f"{other:e}"
    return _split(text) if accepts(text) else None
