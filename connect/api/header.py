"""Record headers in Connect's data model: typed values in an ordered multi-map."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from connect.api.data import Date, Decimal, Schema, Struct, Time, Timestamp, validate_value
from connect.api.errors import DataError

__all__ = ["Header", "HeaderTransform", "Headers"]


@dataclass(frozen=True, slots=True)
class Header:
    """One header: a key, and a value with its schema (``None`` when schemaless)."""

    key: str
    schema: Schema | None
    value: Any

    def with_value(self, schema: Schema | None, value: Any) -> Header:
        """The same key with another schema and value."""
        return Header(self.key, schema, value)

    def rename(self, key: str) -> Header:
        """The same schema and value under another key."""
        return Header(key, self.schema, self.value)


#: Called for each header by ``Headers.apply``; returns the replacement, or None to drop it.
HeaderTransform = Callable[[Header], Header | None]


def _checked(header: Header) -> Header:
    if not isinstance(header, Header):
        raise DataError(f"Expected a Header, got {type(header).__name__}")
    if not isinstance(header.key, str):
        raise DataError(f"Header keys are strings, not {type(header.key).__name__}")
    if header.schema is not None:
        try:
            validate_value(header.schema, header.value)
        except DataError as exc:
            raise DataError(f"Header {header.key!r}: {exc}") from None
    return header


class Headers:
    """An ordered multi-map of ``Header`` (Kafka's ``ConnectHeaders``).

    A key may occur several times; order is insertion order, and ``last_with_name`` is the
    value that wins when only one is wanted. Every ``add`` with a schema validates the
    value against it (``DataError`` otherwise). Mutators return ``self`` so calls chain.
    Not thread-safe: headers belong to the thread processing their record. An empty
    ``Headers`` is falsy.
    """

    __slots__ = ("_headers",)

    def __init__(self, headers: Iterable[Header] = ()) -> None:
        self._headers: list[Header] = []
        if headers != ():  # most records have none: skip the loop's setup
            for header in headers:
                self.add_header(header)

    # -- adding -------------------------------------------------------------------------

    def add_header(self, header: Header) -> Headers:
        """Append a header, validating its value against its schema."""
        self._headers.append(_checked(header))
        return self

    def add(self, key: str, value: Any, schema: Schema | None = None) -> Headers:
        """Append a header. With a schema the value must be valid for it (``None`` needs
        an optional schema); without one the value is schemaless."""
        self._headers.append(_checked(Header(key, schema, value)))
        return self

    def _typed(self, key: str, value: Any, schema: Schema, optional: Schema) -> Headers:
        return self.add(key, value, optional if value is None else schema)

    def add_boolean(self, key: str, value: bool | None) -> Headers:
        return self._typed(key, value, Schema.BOOLEAN_SCHEMA, Schema.OPTIONAL_BOOLEAN_SCHEMA)

    def add_int8(self, key: str, value: int | None) -> Headers:
        return self._typed(key, value, Schema.INT8_SCHEMA, Schema.OPTIONAL_INT8_SCHEMA)

    def add_int16(self, key: str, value: int | None) -> Headers:
        return self._typed(key, value, Schema.INT16_SCHEMA, Schema.OPTIONAL_INT16_SCHEMA)

    def add_int32(self, key: str, value: int | None) -> Headers:
        return self._typed(key, value, Schema.INT32_SCHEMA, Schema.OPTIONAL_INT32_SCHEMA)

    def add_int64(self, key: str, value: int | None) -> Headers:
        return self._typed(key, value, Schema.INT64_SCHEMA, Schema.OPTIONAL_INT64_SCHEMA)

    def add_float32(self, key: str, value: float | None) -> Headers:
        return self._typed(key, value, Schema.FLOAT32_SCHEMA, Schema.OPTIONAL_FLOAT32_SCHEMA)

    def add_float64(self, key: str, value: float | None) -> Headers:
        return self._typed(key, value, Schema.FLOAT64_SCHEMA, Schema.OPTIONAL_FLOAT64_SCHEMA)

    def add_string(self, key: str, value: str | None) -> Headers:
        return self._typed(key, value, Schema.STRING_SCHEMA, Schema.OPTIONAL_STRING_SCHEMA)

    def add_bytes(self, key: str, value: bytes | bytearray | memoryview | None) -> Headers:
        return self._typed(key, value, Schema.BYTES_SCHEMA, Schema.OPTIONAL_BYTES_SCHEMA)

    def add_list(self, key: str, value: list[Any] | None, schema: Schema) -> Headers:
        """Append an ARRAY header; ``schema`` describes the whole list."""
        return self.add(key, value, schema)

    def add_map(self, key: str, value: dict[Any, Any] | None, schema: Schema) -> Headers:
        """Append a MAP header; ``schema`` describes the whole map."""
        return self.add(key, value, schema)

    def add_struct(self, key: str, value: Struct) -> Headers:
        """Append a STRUCT header; its schema is the struct's, and it must be complete."""
        if not isinstance(value, Struct):
            raise DataError(f"Header {key!r}: add_struct needs a Struct, got {value!r}")
        return self.add(key, value, value.schema)

    def add_decimal(self, key: str, value: decimal.Decimal) -> Headers:
        """Append a Decimal header whose scale is the value's own exponent."""
        if not isinstance(value, decimal.Decimal) or not value.is_finite():
            raise DataError(f"Header {key!r}: add_decimal needs a finite Decimal, got {value!r}")
        exponent = value.as_tuple().exponent
        assert isinstance(exponent, int)
        return self.add(key, value, Decimal.schema(-exponent))

    def add_date(self, key: str, value: dt.date) -> Headers:
        return self.add(key, value, Date.SCHEMA)

    def add_time(self, key: str, value: dt.time) -> Headers:
        return self.add(key, value, Time.SCHEMA)

    def add_timestamp(self, key: str, value: dt.datetime) -> Headers:
        return self.add(key, value, Timestamp.SCHEMA)

    # -- reading ------------------------------------------------------------------------

    def all_with_name(self, key: str) -> Iterator[Header]:
        """Every header with ``key``, in order."""
        return (h for h in list(self._headers) if h.key == key)

    def last_with_name(self, key: str) -> Header | None:
        """The last header with ``key``, or None."""
        for header in reversed(self._headers):
            if header.key == key:
                return header
        return None

    def __iter__(self) -> Iterator[Header]:
        return iter(list(self._headers))

    def __len__(self) -> int:
        return len(self._headers)

    def is_empty(self) -> bool:
        return not self._headers

    # -- changing -----------------------------------------------------------------------

    def remove(self, key: str) -> Headers:
        """Remove every header with ``key``."""
        self._headers = [h for h in self._headers if h.key != key]
        return self

    def retain_latest(self, key: str | None = None) -> Headers:
        """Keep only the last header with ``key`` (with no key: the last of every key);
        the kept headers keep their relative order."""
        seen: set[str] = set()
        kept: list[Header] = []
        for header in reversed(self._headers):
            if (key is None or header.key == key) and header.key in seen:
                continue
            seen.add(header.key)
            kept.append(header)
        kept.reverse()
        self._headers = kept
        return self

    def clear(self) -> Headers:
        self._headers = []
        return self

    def apply(self, transform: HeaderTransform, key: str | None = None) -> Headers:
        """Replace each header (each with ``key``, when given) by ``transform(header)``;
        a None result removes the header. Results are validated as by ``add``."""
        result: list[Header] = []
        for header in self._headers:
            if key is not None and header.key != key:
                result.append(header)
                continue
            replacement = transform(header)
            if replacement is not None:
                result.append(_checked(replacement))
        self._headers = result
        return self

    def duplicate(self) -> Headers:
        """An independent copy (headers themselves are immutable and shared)."""
        copy = object.__new__(Headers)
        copy._headers = self._headers.copy()
        return copy

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Headers):
            return NotImplemented
        return self._headers == other._headers

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"Headers({self._headers!r})"
