"""PostgreSQL column types to Connect schemas and values, as Debezium maps them.

Both the snapshot (columns read as ``::text``) and pgoutput (text tuples) hand values
over in PostgreSQL's text form, under the session settings ``PostgresConfig.conninfo``
fixes (ISO dates, UTC); one converter per column turns that text into the Connect
value. Schema names are Debezium's (``io.debezium.time.MicroTimestamp`` ...), so
consumers of Debezium's topics read ours unchanged.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from connect.api import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp, Type
from connectors.postgres import special_types as special
from connectors.postgres.defaults import default_text

log = logging.getLogger(__name__)

__all__ = ["ColumnType", "PgType", "TypeMapper"]

Converter = Callable[[str], Any]

# Built-in type OIDs (pg_type.dat).
BOOL, BYTEA, CHAR, NAME, INT8, INT2, INT4, TEXT, OID, JSON, XML = (
    16, 17, 18, 19, 20, 21, 23, 25, 26, 114, 142)
FLOAT4, FLOAT8, BPCHAR, VARCHAR, DATE, TIME, TIMESTAMP, TIMESTAMPTZ = (
    700, 701, 1042, 1043, 1082, 1083, 1114, 1184)
TIMETZ, NUMERIC, UUID, JSONB, INET, CIDR, MACADDR, MACADDR8 = (
    1266, 1700, 2950, 3802, 869, 650, 829, 774)
_STRINGS = {TEXT, VARCHAR, BPCHAR, NAME, CHAR, INET, CIDR, MACADDR, MACADDR8}

_BUILTIN_NAMES = {BOOL: "bool", BPCHAR: "bpchar", VARCHAR: "varchar", TEXT: "text",
                  NUMERIC: "numeric", FLOAT4: "float4", FLOAT8: "float8", INT2: "int2",
                  INT4: "int4", INT8: "int8", JSON: "json", JSONB: "jsonb", XML: "xml",
                  UUID: "uuid", DATE: "date", TIME: "time", TIMESTAMP: "timestamp",
                  TIMESTAMPTZ: "timestamptz"}

EPOCH = dt.datetime(1970, 1, 1)
EPOCH_TZ = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
ONE_US = dt.timedelta(microseconds=1)
UNIX_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)


@dataclass(frozen=True, slots=True)
class PgType:
    """What the catalog says about a type (``pg_type``, ``pg_enum``)."""

    oid: int
    name: str
    typtype: str  # b base, e enum, d domain, c composite, ...
    elem: int  # element type of an array type, else 0
    base: int  # base type of a domain, else 0
    enum_labels: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ColumnType:
    """A column's Connect schema, its text converter and its TOAST placeholder."""

    schema: Schema
    convert: Converter
    placeholder: Any


def _bool(text: str) -> bool:
    return text[:1] == "t"  # 't' on the wire, 'true' in a default expression


def _days(text: str) -> int:
    if text in ("infinity", "-infinity"):
        return 2**31 - 1 if text[0] == "i" else -(2**31)
    return dt.date.fromisoformat(text).toordinal() - UNIX_EPOCH_ORDINAL


def _time_micros(text: str) -> int:
    hms, _, frac = text.partition(".")
    h, m, s = hms.split(":")
    return ((int(h) * 60 + int(m)) * 60 + int(s)) * 1_000_000 + int((frac + "000000")[:6])


def _ts_micros(text: str) -> int:
    if text in ("infinity", "-infinity"):
        return INT64_MAX if text[0] == "i" else INT64_MIN
    return (dt.datetime.fromisoformat(text) - EPOCH) // ONE_US


def _zoned(width: int) -> Converter:
    """timestamptz as Debezium's ZonedTimestamp: ISO 8601 in UTC with ``width`` fraction
    digits (the column's precision)."""
    cut = 20 + width if width > 0 else 19  # the end of the fraction kept, or of hh:mm:ss

    def convert(text: str) -> str:
        # The session's TimeZone is UTC: '2024-03-01 08:11:12.5+00' is only re-punctuated.
        # Most often with all six fraction digits: one slice of them.
        if len(text) == 29 and text[26:] == "+00" and text[19] == "." and text[10] == " ":
            return f"{text[:10]}T{text[11:cut]}Z"
        if text.endswith("+00") and len(text) >= 22 and text[4] == "-":
            date, _, clock = text[:-3].partition(" ")
            hms, _, frac = clock.partition(".")
            if width > 0:
                return f"{date}T{hms}.{(frac + '000000')[:width]}Z"
            return f"{date}T{hms}Z"
        if text in ("infinity", "-infinity"):
            return text
        value = dt.datetime.fromisoformat(text).astimezone(dt.UTC).replace(tzinfo=None)
        base = value.isoformat(timespec="seconds")
        if width > 0:
            base += "." + f"{value.microsecond:06d}"[:width]
        return base + "Z"
    return convert


def _zoned_time(text: str) -> str:
    value = dt.time.fromisoformat(text)
    offset = value.utcoffset() or dt.timedelta()
    day = dt.datetime.combine(dt.date(2000, 1, 1), value.replace(tzinfo=None)) - offset
    frac = f".{day.microsecond:06d}".rstrip("0").rstrip(".")
    return day.strftime("%H:%M:%S") + frac + "Z"


def _bytea(text: str) -> bytes:
    return bytes.fromhex(text[2:]) if text.startswith("\\x") else text.encode()


def _unscaled(value: decimal.Decimal, scale: int) -> bytes:
    unscaled = int(value.scaleb(scale))
    length = (unscaled.bit_length() + 8) // 8
    return unscaled.to_bytes(length, "big", signed=True)


def parse_array(text: str) -> list[str | None]:
    """A one-dimensional PostgreSQL array literal (``{a,"b c",NULL}``) into its elements'
    text (None for NULL)."""
    if not text.startswith("{"):  # e.g. '[0:1]={...}', custom bounds
        text = text[text.index("=") + 1:]
    out: list[str | None] = []
    i, n = 1, len(text) - 1
    if n <= 1:
        return out
    while i < n:
        if text[i] == '"':
            i += 1
            chars = []
            while text[i] != '"':
                if text[i] == "\\":
                    i += 1
                chars.append(text[i])
                i += 1
            out.append("".join(chars))
            i += 1
        else:
            j = text.find(",", i)
            j = n if j < 0 else j
            if text[i] == "{":
                raise ValueError("multi-dimensional arrays are not supported")
            token = text[i:j]
            out.append(None if token == "NULL" else token)
            i = j
        i += 1  # the comma
    return out


class TypeMapper:
    """Maps columns to ``ColumnType`` under the connector's handling modes."""

    def __init__(self, *, decimal_mode: str, time_mode: str, binary_mode: str,
                 include_unknown: bool, placeholder: str, types: dict[int, PgType],
                 interval_mode: str = "numeric", money_digits: int = 2) -> None:
        self.decimal_mode = decimal_mode
        self.interval_mode = interval_mode
        self.money_digits = money_digits
        self.time_mode = time_mode
        self.binary_mode = binary_mode
        self.include_unknown = include_unknown
        self.placeholder = placeholder
        self.types = types  # filled by the catalog for non-built-in OIDs

    def map(self, type_oid: int, typmod: int, optional: bool,
            default_expr: str | None = None) -> ColumnType | None:
        """The column's type, or None for a type without a mapping when
        ``include.unknown.datatypes`` is false (the column is then left out). A default
        expression gives the schema a default value, as Debezium's does."""
        found = self._builder(type_oid, typmod)
        if found is None:
            return None
        builder, convert, placeholder = found
        if optional:
            builder.optional()
        if default_expr is not None:
            default = self._default(type_oid, typmod, default_expr, convert)
            # Debezium sets no Struct default (KAFKA-12694): VariableScaleDecimal has none.
            if default is not None and not isinstance(default, Struct):
                builder.default_value(default)
        schema = builder.build()
        if schema.type is Type.STRUCT:
            # Struct values must carry the column's own (optional or not) schema.
            inner = convert

            def convert(text: str, inner: Converter = inner) -> Struct | None:
                value = inner(text)
                return None if value is None else Struct.from_values(
                    schema, value.values(), validate=False)
        return ColumnType(schema, convert, placeholder)

    def _default(self, oid: int, typmod: int, expr: str, convert: Converter) -> Any:
        info = self.types.get(oid)
        while info is not None and info.typtype == "d" and info.base:
            oid, info = info.base, self.types.get(info.base)
        name = _BUILTIN_NAMES.get(oid) or (info.name if info is not None else "")
        text = default_text(name, expr, is_enum=info is not None and info.typtype == "e")
        if text is None:
            return None
        try:
            value = convert(text)
        except (ValueError, ArithmeticError):
            log.warning("cannot use the default %r of a %s column; none is set", expr, name)
            return None
        if oid == NUMERIC and isinstance(value, decimal.Decimal) and typmod >= 0:
            value = value.quantize(decimal.Decimal(1).scaleb(-((typmod - 4) & 0xFFFF)))
        return value

    def _builder(self, oid: int, typmod: int
                 ) -> tuple[SchemaBuilder, Converter, Any] | None:
        ph = self.placeholder
        if oid in (INT2,):
            return SchemaBuilder.int16(), int, None
        if oid == INT4:
            return SchemaBuilder.int32(), int, None
        if oid in (INT8, OID):
            return SchemaBuilder.int64(), int, None
        if oid == FLOAT4:
            return SchemaBuilder.float32(), float, None
        if oid == FLOAT8:
            return SchemaBuilder.float64(), float, None
        if oid == BOOL:
            return SchemaBuilder.boolean(), _bool, None
        if oid in _STRINGS:
            return SchemaBuilder.string(), str, ph
        if oid == NUMERIC:
            return self._numeric(typmod)
        if oid == BYTEA:
            return self._binary()
        if oid == DATE:
            if self.time_mode == "connect":
                return Date.builder(), dt.date.fromisoformat, None
            return (SchemaBuilder.int32().name("io.debezium.time.Date").version(1), _days,
                    None)
        if oid == TIME:
            precision = typmod if typmod >= 0 else 6
            if self.time_mode == "connect":
                return Time.builder(), dt.time.fromisoformat, None
            if self.time_mode == "adaptive" and precision <= 3:
                return (SchemaBuilder.int32().name("io.debezium.time.Time").version(1),
                        lambda t: _time_micros(t) // 1000, None)
            return (SchemaBuilder.int64().name("io.debezium.time.MicroTime").version(1),
                    _time_micros, None)
        if oid == TIMESTAMP:
            precision = typmod if typmod >= 0 else 6
            if self.time_mode == "connect":
                return (Timestamp.builder(),
                        lambda t: dt.datetime.fromisoformat(t).replace(tzinfo=dt.UTC),
                        None)
            if precision <= 3:
                return (SchemaBuilder.int64().name("io.debezium.time.Timestamp").version(1),
                        lambda t: _ts_micros(t) // 1000, None)
            return (SchemaBuilder.int64().name("io.debezium.time.MicroTimestamp").version(1),
                    _ts_micros, None)
        if oid == TIMESTAMPTZ:
            width = typmod if typmod >= 0 else 6
            return (SchemaBuilder.string().name("io.debezium.time.ZonedTimestamp").version(1),
                    _zoned(width), ph)
        if oid == TIMETZ:
            return (SchemaBuilder.string().name("io.debezium.time.ZonedTime").version(1),
                    _zoned_time, ph)
        if oid == UUID:
            return SchemaBuilder.string().name("io.debezium.data.Uuid").version(1), str, ph
        if oid in (JSON, JSONB):
            return SchemaBuilder.string().name("io.debezium.data.Json").version(1), str, ph
        if oid == XML:
            return SchemaBuilder.string().name("io.debezium.data.Xml").version(1), str, ph
        if oid == special.INTERVAL:
            return special.interval_builder(self.interval_mode, ph)
        if oid in special.RANGES:
            return SchemaBuilder.string(), str, ph
        if oid == special.POINT:
            return special.point_builder()
        if oid == special.MONEY:
            return special.money_builder(self.decimal_mode, self.money_digits, ph)
        if oid in (special.BIT, special.VARBIT):
            return special.bits_builder(typmod)
        info = self.types.get(oid)
        if info is not None:
            if info.name == "citext":  # the extension's case-insensitive text
                return SchemaBuilder.string(), str, ph
            if info.name == "ltree":
                return (SchemaBuilder.string().name("io.debezium.data.Ltree").version(1), str,
                        ph)
            if info.typtype == "e":
                return (SchemaBuilder.string().name("io.debezium.data.Enum").version(1)
                        .parameter("allowed", ",".join(info.enum_labels)), str, ph)
            if info.typtype == "d" and info.base:
                return self._builder(info.base, typmod)
            # Fixed-length types such as box and lseg name an element type too (point),
            # but only true arrays (named _elem) have array text forms.
            if info.elem and info.name.startswith("_"):
                element = self.map(info.elem, -1 if info.elem != NUMERIC else typmod, True)
                if element is not None:
                    conv = element.convert
                    elem_ph = element.placeholder

                    def convert_array(text: str, conv: Converter = conv) -> list[Any]:
                        return [None if e is None else conv(e) for e in parse_array(text)]
                    return (SchemaBuilder.array(element.schema), convert_array,
                            None if elem_ph is None else [elem_ph])
        if self.include_unknown:
            return SchemaBuilder.bytes(), str.encode, ph.encode()
        return None

    def _numeric(self, typmod: int) -> tuple[SchemaBuilder, Converter, Any]:
        if self.decimal_mode == "double":
            return SchemaBuilder.float64(), float, None
        if self.decimal_mode == "string":
            return SchemaBuilder.string(), str, self.placeholder
        if typmod < 0:
            # numeric without a declared scale: Debezium's VariableScaleDecimal.
            def builder() -> SchemaBuilder:
                return (SchemaBuilder.struct().name("io.debezium.data.VariableScaleDecimal")
                        .version(1).doc("Variable scaled decimal")
                        .field("scale", Schema.INT32_SCHEMA)
                        .field("value", Schema.BYTES_SCHEMA))
            schema, built = builder(), builder().build()

            def variable(text: str) -> Struct | None:
                if text == "NaN":
                    return None
                value = decimal.Decimal(text)
                scale = max(0, -value.as_tuple().exponent)  # type: ignore[operator]
                return Struct.from_values(built, [scale, _unscaled(value, scale)],
                                          validate=False)
            return schema, variable, None
        precision = ((typmod - 4) >> 16) & 0xFFFF
        scale = (typmod - 4) & 0xFFFF
        builder = Decimal.builder(scale).parameter("connect.decimal.precision", str(precision))

        def fixed(text: str) -> decimal.Decimal | None:
            return None if text == "NaN" else decimal.Decimal(text)
        return builder, fixed, None

    def _binary(self) -> tuple[SchemaBuilder, Converter, Any]:
        ph = self.placeholder
        mode = self.binary_mode
        if mode == "base64":
            return (SchemaBuilder.string(),
                    lambda t: base64.b64encode(_bytea(t)).decode(), ph)
        if mode == "base64-url-safe":
            return (SchemaBuilder.string(),
                    lambda t: base64.urlsafe_b64encode(_bytea(t)).decode(), ph)
        if mode == "hex":
            return SchemaBuilder.string(), lambda t: _bytea(t).hex(), ph
        return SchemaBuilder.bytes(), _bytea, ph.encode()
