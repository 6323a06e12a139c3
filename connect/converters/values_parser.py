"""Parsing Kafka's ``Values`` text back into a schema and value (``Values.parseString``).

How SimpleHeaderConverter reads a header. The text is split into tokens at the
delimiters ``: , { } [ ] "`` (a backslash escapes one), then read as, in this order:

* ``null``, ``true``, ``false`` (the whole text, or one element inside brackets);
* ``[a,b,...]`` as an ARRAY and ``{k:v,...}`` as a MAP, elements parsed recursively,
  with a common schema: integers widen (int8 < int16 < int32 < int64 < float32 <
  float64), ``null`` elements make it optional; ``"..."`` inside brackets is a string;
* ``yyyy-MM-dd``, ``HH:mm:ss.SSSZ``, ``yyyy-MM-ddTHH:mm:ss.SSSZ`` as Date, Time and
  Timestamp (UTC);
* numbers (first character a digit or sign): an integral value as the smallest of
  INT8..INT64 that holds it (so ``1.0`` is INT8 1), else FLOAT32 when it fits, else
  FLOAT64, else a Decimal of the number's own scale (also for integers beyond int64);
* anything else as the STRING itself, untouched (so is text that does not parse whole).

Where Ferry differs from Kafka, it keeps information Kafka would lose: escapes inside
quoted strings are undone (``\\"`` reads as ``"``); text with anything after a complete
value (``12,5``, ``[1]x``) stays a string, where Kafka returns the leading value; an
empty array or map, or one whose elements share no schema, has no schema (Kafka's
"array of null" schema cannot be built in Ferry); numbers in an array are converted to
the common type from their text (Kafka widens the already-rounded float32); dates are
checked strictly (Kafka's lenient parser reads 2020-02-30 as March 1st).
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from typing import Any, NamedTuple

from connect.api.data import (
    Date,
    Decimal,
    Schema,
    SchemaAndValue,
    SchemaBuilder,
    Time,
    Timestamp,
    Type,
)
from connect.api.errors import DataError
from connect.converters.java_number import to_float32

__all__ = ["parse_string"]

_DELIMITERS = frozenset(':,{}[]"')
# Java's String.trim(): every character up to and including the space.
_JAVA_WHITESPACE = "".join(chr(c) for c in range(0x21))
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_TIME = re.compile(r"(\d\d):(\d\d):(\d\d)\.(\d\d\d)Z")
_DATE = re.compile(r"(\d\d\d\d)-(\d\d)-(\d\d)")
_TIMESTAMP = re.compile(r"(\d\d\d\d)-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d\d\d)Z")
_INTEGERS = (
    (Schema.INT8_SCHEMA, 2**7),
    (Schema.INT16_SCHEMA, 2**15),
    (Schema.INT32_SCHEMA, 2**31),
    (Schema.INT64_SCHEMA, 2**63),
)
_NUMERIC_ORDER = {
    Type.INT8: 0,
    Type.INT16: 1,
    Type.INT32: 2,
    Type.INT64: 3,
    Type.FLOAT32: 4,
    Type.FLOAT64: 5,
}


class _Item(NamedTuple):
    """One parsed value; ``number`` keeps a number's exact text value for widening."""

    schema: Schema | None
    value: Any
    number: decimal.Decimal | None = None


def parse_string(text: str) -> SchemaAndValue:
    """The schema and value ``text`` denotes (``SchemaAndValue.NULL`` for ``null``)."""
    if text == "":
        return SchemaAndValue(Schema.STRING_SCHEMA, text)
    parser = _Tokens(text)
    try:
        item = _parse(parser, embedded=False)
    except DataError:
        item = _Item(Schema.STRING_SCHEMA, text)
    if parser.has_next() or (item is not None and item.schema is Schema.STRING_SCHEMA):
        # Text that is not one complete value is a string, kept as written (untrimmed).
        return SchemaAndValue(Schema.STRING_SCHEMA, text)
    if item is None:
        return SchemaAndValue.NULL
    return SchemaAndValue(item.schema, item.value)


class _Tokens:
    """The text's tokens and a read position; ``mark``/``rewind`` allow backtracking."""

    __slots__ = ("position", "tokens")

    def __init__(self, text: str) -> None:
        self.tokens = _tokenize(text)
        self.position = 0

    def has_next(self) -> bool:
        """Whether a token other than whitespace is left."""
        return any(t.strip(_JAVA_WHITESPACE) for t in self.tokens[self.position :])

    def can_consume(self, expected: str) -> bool:
        """Consume the next non-blank token if, trimmed, it is ``expected``."""
        tokens, i = self.tokens, self.position
        while i < len(tokens) and not tokens[i].strip(_JAVA_WHITESPACE):
            i += 1
        if i < len(tokens) and tokens[i].strip(_JAVA_WHITESPACE) == expected:
            self.position = i + 1
            return True
        return False

    def peek_is(self, expected: str) -> bool:
        mark = self.position
        found = self.can_consume(expected)
        self.position = mark
        return found

    def next(self) -> str:
        token = self.tokens[self.position]
        self.position += 1
        return token

    def raw(self, count: int) -> str | None:
        """The next ``count`` tokens joined, without consuming them, or None."""
        end = self.position + count
        return "".join(self.tokens[self.position : end]) if end <= len(self.tokens) else None


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    start, escaped = 0, False
    for i, char in enumerate(text):
        if char == "\\":
            escaped = not escaped
            continue
        if char in _DELIMITERS and not escaped:
            if start < i:
                tokens.append(text[start:i])
            tokens.append(char)
            start = i + 1
        escaped = False
    if start < len(text):
        tokens.append(text[start:])
    return tokens


def _parse(tokens: _Tokens, embedded: bool) -> _Item | None:
    """The next value; None for a ``null`` literal. Raises ``DataError`` when embedded
    text is not a value (the enclosing array or map then falls back to a string)."""
    if not tokens.has_next():
        raise DataError("Expected a value but the text ended")
    if embedded and tokens.can_consume('"'):
        return _quoted(tokens)
    for literal, item in (("null", None), ("true", _TRUE), ("false", _FALSE)):
        if tokens.peek_is(literal):
            tokens.can_consume(literal)
            return item
    mark = tokens.position
    try:
        if tokens.can_consume("["):
            return _array(tokens)
        if tokens.can_consume("{"):
            return _map(tokens)
    except (DataError, TypeError):  # TypeError: an unhashable (list or map) map key
        tokens.position = mark
    while not tokens.tokens[tokens.position].strip(_JAVA_WHITESPACE):
        tokens.position += 1
    token = tokens.next().strip(_JAVA_WHITESPACE)
    if token[0].isdigit():
        # An unescaped colon splits a time into five tokens: "12" ":" "34" ":" "56.789Z".
        joined = tokens.raw(4)
        temporal = _temporal(token + joined) if joined is not None else None
        if temporal is not None:
            tokens.position += 4
            return temporal
        temporal = _temporal(token)
        if temporal is not None:
            return temporal
    if (token[0].isdigit() or token[0] in "+-") and _NUMBER.fullmatch(token):
        return _number(decimal.Decimal(token))
    if embedded:
        raise DataError(f"Failed to parse embedded value {token!r}")
    return _Item(Schema.STRING_SCHEMA, token)


_TRUE = _Item(Schema.BOOLEAN_SCHEMA, True)
_FALSE = _Item(Schema.BOOLEAN_SCHEMA, False)


def _quoted(tokens: _Tokens) -> _Item:
    parts: list[str] = []
    while tokens.position < len(tokens.tokens):
        token = tokens.next()
        if token == '"':
            content = re.sub(r"\\(.)", r"\1", "".join(parts))
            # Quoted temporal text keeps its temporal type, as in Kafka.
            temporal = _temporal(content)
            return temporal if temporal is not None else _Item(Schema.STRING_SCHEMA, content)
        parts.append(token)
    raise DataError("A quoted string is missing its closing quote")


def _array(tokens: _Tokens) -> _Item:
    items: list[_Item | None] = []
    while tokens.has_next():
        if tokens.can_consume("]"):
            schema = _common_schema(items)
            return _Item(
                None if schema is None else SchemaBuilder.array(schema).build(),
                _aligned(schema, items),
            )
        if tokens.peek_is(","):
            raise DataError("Unable to parse an empty array element")
        items.append(_parse(tokens, embedded=True))
        if not tokens.peek_is("]") and not tokens.can_consume(","):
            raise DataError("Array elements missing ',' delimiter")
    raise DataError("Array is missing terminating ']'")


def _map(tokens: _Tokens) -> _Item:
    keys: list[_Item | None] = []
    values: list[_Item | None] = []
    while tokens.has_next():
        if tokens.can_consume("}"):
            key_schema, value_schema = _common_schema(keys), _common_schema(values)
            aligned = dict(
                zip(_aligned(key_schema, keys), _aligned(value_schema, values), strict=True)
            )
            if key_schema is None or value_schema is None:
                return _Item(None, aligned)
            return _Item(SchemaBuilder.map(key_schema, value_schema).build(), aligned)
        if tokens.peek_is(","):
            raise DataError("Unable to parse a map entry with no key or value")
        key = _parse(tokens, embedded=True)
        if key is None:
            raise DataError("Map entry may not have a null key")
        if not tokens.can_consume(":"):
            raise DataError("Map entry is missing ':'")
        keys.append(key)
        values.append(_parse(tokens, embedded=True))
        tokens.can_consume(",")
    raise DataError("Map is missing terminating '}'")


def _common_schema(items: list[_Item | None]) -> Schema | None:
    """The schema every item fits (optional if one is null), or None if there is none."""
    common: Schema | None = None
    optional = False
    for item in items:
        if item is None:
            optional = True
            continue
        if item.schema is None:
            return None
        if common is None or common == item.schema:
            common = item.schema
            continue
        rank_a, rank_b = _NUMERIC_ORDER.get(common.type), _NUMERIC_ORDER.get(item.schema.type)
        if rank_a is None or rank_b is None or common.name or item.schema.name:
            return None
        common = common if rank_a >= rank_b else item.schema
    if common is None or not optional:
        return common
    return SchemaBuilder.from_schema(common).optional().build()


def _aligned(schema: Schema | None, items: list[_Item | None]) -> list[Any]:
    if schema is None or schema.type not in _NUMERIC_ORDER or schema.name:
        return [None if item is None else item.value for item in items]
    return [None if item is None else _as_number(schema.type, item) for item in items]


def _as_number(type_: Type, item: _Item) -> Any:
    exact = item.number if item.number is not None else decimal.Decimal(item.value)
    if type_ is Type.FLOAT64:
        return float(exact)
    if type_ is Type.FLOAT32:
        return to_float32(float(exact))
    return item.value


def _number(exact: decimal.Decimal) -> _Item:
    # Integral values first, bounded so that 1E+999999 never becomes a huge int.
    if exact.adjusted() < 19 and exact == exact.to_integral_value():
        integral = int(exact)
        for schema, bound in _INTEGERS:
            if -bound <= integral < bound:
                return _Item(schema, integral, exact)
    scale = -int(exact.as_tuple().exponent)
    if scale != 0:
        single = to_float32(float(exact))
        if single not in (float("inf"), float("-inf")):
            return _Item(Schema.FLOAT32_SCHEMA, single, exact)
        double = float(exact)
        if double not in (float("inf"), float("-inf")):
            return _Item(Schema.FLOAT64_SCHEMA, double, exact)
    return _Item(Decimal.schema(scale), exact, exact)


def _temporal(text: str) -> _Item | None:
    text = text.replace("\\:", ":")
    try:
        if len(text) == 13 and (match := _TIME.fullmatch(text)):
            hour, minute, second, millis = map(int, match.groups())
            return _Item(Time.SCHEMA, dt.time(hour, minute, second, millis * 1000))
        if len(text) == 24 and (match := _TIMESTAMP.fullmatch(text)):
            y, mo, d, h, mi, s, ms = map(int, match.groups())
            return _Item(Timestamp.SCHEMA, dt.datetime(y, mo, d, h, mi, s, ms * 1000, dt.UTC))
        if len(text) == 10 and (match := _DATE.fullmatch(text)):
            return _Item(Date.SCHEMA, dt.date(*map(int, match.groups())))
    except ValueError:  # a month 13, a day 30 in February ...
        return None
    return None
