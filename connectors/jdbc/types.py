"""SQL column types <-> Connect schemas, and the value conversions between them.

Source side: a reflected column gives a Connect field schema and a function turning the
DBAPI value into the Connect value. Sink side: a Connect field schema gives the SQLAlchemy
type ``auto.create``/``auto.evolve`` declare and a function turning the Connect value into
a bind parameter.
"""

from __future__ import annotations

import datetime as dt
import decimal
import logging
import zoneinfo
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from connect.api import (
    ConnectError,
    DataError,
    Date,
    Decimal,
    Schema,
    SchemaBuilder,
    Time,
    Timestamp,
    Type,
)

__all__ = ["ColumnMapping", "column_mapping", "identity", "sql_type", "to_db_value"]

log = logging.getLogger(__name__)

Convert = Callable[[Any], Any]


def identity(value: Any) -> Any:
    """The conversion of columns whose DBAPI values are already Connect values."""
    return value


_same = identity


class ColumnMapping:
    """How one source column becomes one Connect field."""

    __slots__ = ("convert", "name", "schema")

    def __init__(self, name: str, schema: Schema, convert: Convert) -> None:
        self.name = name
        self.schema = schema
        self.convert = convert


def column_mapping(column: sa.ColumnElement[Any], numeric_mapping: str,
                   tz: zoneinfo.ZoneInfo, dialect: str = "",
                   granularity: str = "connect_logical") -> ColumnMapping | None:
    """The Connect field for a reflected column, or None (with a warning) for a type
    Connect has no counterpart for (the column is left out, as Confluent does).
    ``granularity`` is ``timestamp.granularity``, applied to every timestamp column."""
    t = column.type
    builder, convert = _builder(t, numeric_mapping, tz)
    if isinstance(t, sa.DateTime) and granularity != "connect_logical":
        builder, convert = _granular_timestamp(granularity, convert, tz)
    if convert is not identity and dialect == "postgresql" and \
            isinstance(t, sa.Numeric) and not isinstance(t, sa.Float) and t.scale is not None \
            and builder is not None and builder.build().name == Decimal.LOGICAL_NAME:
        # psycopg returns NUMERIC(p, s) values at scale s already: no conversion.
        convert = identity
    if builder is None:
        log.warning("column %s has type %s, which has no Connect type; it is skipped",
                    column.name, t)
        return None
    if getattr(column, "nullable", True):
        builder.optional()
    return ColumnMapping(column.name, builder.build(), convert)


def _builder(t: sa.types.TypeEngine[Any], numeric_mapping: str,
             tz: zoneinfo.ZoneInfo) -> tuple[SchemaBuilder | None, Convert]:
    # Order matters: Boolean before Integer (some dialects subclass), Numeric's float
    # subclasses before Numeric, DateTime before Date.
    if isinstance(t, sa.Boolean):
        return SchemaBuilder.boolean(), _to_bool
    if isinstance(t, sa.SmallInteger):
        return SchemaBuilder.int16(), _same
    if isinstance(t, sa.BigInteger):
        return SchemaBuilder.int64(), _same
    if isinstance(t, sa.Integer):
        return SchemaBuilder.int32(), _same
    if isinstance(t, sa.Float):
        # REAL is 4 bytes, DOUBLE PRECISION 8; reflected REAL has precision <= 24.
        single = type(t).__name__.upper() == "REAL" or (t.precision or 53) <= 24
        return (SchemaBuilder.float32() if single else SchemaBuilder.float64()), _to_float
    if isinstance(t, sa.Numeric):
        return _numeric(t.precision, t.scale, numeric_mapping)
    if isinstance(t, sa.DateTime):
        if t.timezone:
            return Timestamp.builder(), _aware
        if tz.key == "UTC":
            # Connect reads a naive datetime as UTC: the column's values already are
            # Connect values, and skipping a replace() per value is measurable.
            return Timestamp.builder(), identity
        return Timestamp.builder(), lambda v: _naive_to_utc(v, tz)
    if isinstance(t, sa.Date):
        return Date.builder(), _to_date
    if isinstance(t, sa.Time):
        return Time.builder(), _same
    if isinstance(t, (sa.String, sa.Enum)):
        return SchemaBuilder.string(), _same
    if isinstance(t, (sa.LargeBinary, sa.types._Binary)):
        return SchemaBuilder.bytes(), _to_bytes
    if isinstance(t, sa.Uuid):
        return SchemaBuilder.string(), _to_str
    if isinstance(t, sa.JSON):
        import json

        return SchemaBuilder.string(), lambda v: None if v is None else json.dumps(v)
    return None, _same


def _numeric(precision: int | None, scale: int | None,
             mapping: str) -> tuple[SchemaBuilder, Convert]:
    scale = 0 if scale is None else scale
    if precision and mapping in ("best_fit", "precision_only") and scale == 0:
        if precision < 3:
            return SchemaBuilder.int8(), _to_int
        if precision < 5:
            return SchemaBuilder.int16(), _to_int
        if precision < 10:
            return SchemaBuilder.int32(), _to_int
        if precision < 19:
            return SchemaBuilder.int64(), _to_int
    if precision and mapping == "best_fit" and scale > 0 and precision <= 15:
        return SchemaBuilder.float64(), _to_float
    if not precision:
        # NUMERIC without precision and scale holds any value, but a Connect Decimal has
        # one fixed scale: a double keeps fractions that scale 0 would cut off.
        return SchemaBuilder.float64(), _to_float
    return Decimal.builder(scale), lambda v: _to_decimal(v, scale)


def _to_bool(v: Any) -> Any:
    return None if v is None else bool(v)


def _to_int(v: Any) -> Any:
    return None if v is None else int(v)


def _to_float(v: Any) -> Any:
    return None if v is None else float(v)


def _to_str(v: Any) -> Any:
    return None if v is None else str(v)


def _to_bytes(v: Any) -> Any:
    return None if v is None else bytes(v)


def _to_date(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        return v.date()
    return v


def _to_decimal(v: Any, scale: int) -> Any:
    if v is None:
        return None
    d = v if isinstance(v, decimal.Decimal) else decimal.Decimal(str(v))
    # Connect's Decimal has a fixed scale: align (NUMERIC values keep trailing zeros as
    # stored, SQLite's come back as floats).
    return d.quantize(decimal.Decimal(1).scaleb(-scale))


def _aware(v: Any) -> Any:
    if v is None:
        return None
    return v.astimezone(dt.UTC) if v.tzinfo else v.replace(tzinfo=dt.UTC)


def _naive_to_utc(v: Any, tz: zoneinfo.ZoneInfo) -> Any:
    if v is None:
        return None
    if v.tzinfo is not None:
        return v.astimezone(dt.UTC)
    return v.replace(tzinfo=tz).astimezone(dt.UTC)


def _granular_timestamp(granularity: str, to_instant: Convert,
                        tz: zoneinfo.ZoneInfo) -> tuple[SchemaBuilder, Convert]:
    """Confluent's non-logical ``timestamp.granularity`` forms: epoch nanos or micros as
    INT64 or as a decimal string, or the wall time in ``db.timezone`` as
    ``yyyy-MM-ddTHH:mm:ss`` with 9 or 6 fraction digits (Python datetimes stop at
    microseconds, so nanosecond forms end in 000)."""
    nanos = granularity.startswith("nanos")

    def epoch(v: Any) -> int | None:
        instant = to_instant(v)
        if instant is None:
            return None
        if instant.tzinfo is None:  # the identity conversion: naive UTC
            instant = instant.replace(tzinfo=dt.UTC)
        delta = instant - _EPOCH
        micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
        return micros * 1000 if nanos else micros

    if granularity.endswith("_long"):
        return SchemaBuilder.int64(), epoch
    if granularity.endswith("_iso_datetime_string"):
        digits = "000" if nanos else ""

        def iso(v: Any) -> str | None:
            instant = to_instant(v)
            if instant is None:
                return None
            if instant.tzinfo is None:
                instant = instant.replace(tzinfo=dt.UTC)
            return instant.astimezone(tz).strftime("%Y-%m-%dT%H:%M:%S.%f") + digits
        return SchemaBuilder.string(), iso

    def text(v: Any) -> str | None:
        value = epoch(v)
        return None if value is None else str(value)
    return SchemaBuilder.string(), text


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


# ----------------------------------------------------------------------------- sink side

def sql_type(schema: Schema, *, key: bool, dialect: str) -> sa.types.TypeEngine[Any]:
    """The column type ``auto.create``/``auto.evolve`` declare for a Connect field.
    ``DataError`` for arrays, maps and nested structs (Flatten them first)."""
    name = schema.name
    if name == Decimal.LOGICAL_NAME:
        scale = Decimal.scale(schema)
        return sa.Numeric(precision=38 if dialect != "sqlite" else None, scale=scale,
                          asdecimal=True)
    if name == Date.LOGICAL_NAME:
        return sa.Date()
    if name == Time.LOGICAL_NAME:
        return sa.Time()
    if name == Timestamp.LOGICAL_NAME:
        return sa.DateTime()
    t = schema.type
    if t in (Type.INT8, Type.INT16):
        return sa.SmallInteger()
    if t is Type.INT32:
        return sa.Integer()
    if t is Type.INT64:
        return sa.BigInteger()
    if t is Type.FLOAT32:
        return sa.REAL()
    if t is Type.FLOAT64:
        return sa.Double()
    if t is Type.BOOLEAN:
        return sa.Boolean()
    if t is Type.STRING:
        # Key columns need a bounded type on MySQL and SQL Server.
        return sa.String(256) if key and dialect not in ("sqlite", "postgresql") else sa.Text()
    if t is Type.BYTES:
        return sa.LargeBinary()
    raise DataError(f"{t.value} fields cannot be written to a column; flatten nested "
                    "structs with the Flatten transformation (transforms=flatten, "
                    "transforms.flatten.type=org.apache.kafka.connect.transforms."
                    "Flatten$Value) and drop or serialize arrays and maps")


def to_db_value(schema: Schema, tz: zoneinfo.ZoneInfo) -> Convert:
    """The conversion of a Connect value of ``schema`` into a bind parameter."""
    if schema.name == Timestamp.LOGICAL_NAME:
        utc = zoneinfo.ZoneInfo("UTC")

        def ts(v: Any) -> Any:
            if v is None:
                return None
            if isinstance(v, int):
                v = Timestamp.to_logical(schema, v)
            if v.tzinfo is None:
                v = v.replace(tzinfo=utc)
            # DateTime columns without a zone hold wall time in db.timezone.
            return v.astimezone(tz).replace(tzinfo=None)
        return ts
    if schema.name == Date.LOGICAL_NAME:
        return lambda v: Date.to_logical(schema, v) if isinstance(v, int) else v
    if schema.name == Time.LOGICAL_NAME:
        return lambda v: Time.to_logical(schema, v) if isinstance(v, int) else v
    if schema.name == Decimal.LOGICAL_NAME:
        return lambda v: Decimal.to_logical(schema, v) if isinstance(v, (bytes, bytearray)) \
            else v
    if schema.type in (Type.STRUCT, Type.ARRAY, Type.MAP):
        raise ConnectError("unreachable: nested types are refused before conversion")
    return _same
