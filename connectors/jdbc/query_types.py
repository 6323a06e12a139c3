"""Column types of a custom query (``query`` mode), which has no table to reflect.

PostgreSQL describes a result's columns (psycopg's ``type_display``, e.g.
``numeric(10,2)``, ``int4``), mapped to SQLAlchemy types here.
SQLite reports the declared types of a temporary view over the query. Elsewhere (or for
computed SQLite columns) the types come from the Python values of the query's first row.
Every column of a query is optional.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

__all__ = ["query_column_types"]


def query_column_types(conn: Connection, query: str) -> list[sa.ColumnClause[Any]]:
    """Typed columns (name, SQLAlchemy type) of ``query``'s result."""
    if conn.dialect.name == "sqlite":
        declared = _sqlite_declared(conn, query)
        if declared:
            return declared
    wrapped = sa.text(f"SELECT * FROM ({query}) ferry_probe LIMIT "
                      f"{0 if conn.dialect.name == 'postgresql' else 1}")
    result = conn.execute(wrapped)
    try:
        description = result.cursor.description
        if conn.dialect.name == "postgresql":
            return [sa.column(d.name, _pg_type(d)) for d in description]
        row = result.fetchone()
        return [sa.column(d[0], _value_type(None if row is None else row[i]))
                for i, d in enumerate(description)]
    finally:
        result.close()


def _sqlite_declared(conn: Connection, query: str) -> list[sa.ColumnClause[Any]]:
    # A temporary view's columns carry the declared types of the table columns they
    # select, which SQLite's reflection reads back (computed columns have none).
    conn.exec_driver_sql("DROP VIEW IF EXISTS temp.ferry_probe")
    conn.exec_driver_sql(f"CREATE TEMP VIEW ferry_probe AS {query}")
    try:
        columns = sa.inspect(conn).get_columns("ferry_probe", schema="temp")
    finally:
        conn.exec_driver_sql("DROP VIEW IF EXISTS temp.ferry_probe")
    conn.commit()
    if any(isinstance(c["type"], sa.types.NullType) for c in columns):
        return []
    return [sa.column(c["name"], c["type"]) for c in columns]


#: PostgreSQL's internal type names (as psycopg describes result columns).
_PG_TYPES: dict[str, Any] = {
    "int2": sa.SmallInteger, "int4": sa.Integer, "int8": sa.BigInteger,
    "float4": sa.REAL, "float8": sa.Double, "bool": sa.Boolean, "text": sa.Text,
    "varchar": sa.String, "bpchar": sa.String, "name": sa.String, "bytea": sa.LargeBinary,
    "date": sa.Date, "time": sa.Time, "timestamp": sa.DateTime, "uuid": sa.Uuid,
    "json": sa.JSON, "jsonb": sa.JSON,
}


def _pg_type(described: Any) -> sa.types.TypeEngine[Any]:
    display = getattr(described, "type_display", None) or ""
    base = re.sub(r"\(.*\)", "", display).strip()
    if base.endswith("[]"):
        return sa.types.NullType()
    if base == "numeric":
        return sa.Numeric(precision=described.precision, scale=described.scale)
    if base == "timestamptz":
        return sa.DateTime(timezone=True)
    cls = _PG_TYPES.get(base)
    return sa.types.NullType() if cls is None else cls()


def _value_type(value: Any) -> sa.types.TypeEngine[Any]:
    if isinstance(value, bool):
        return sa.Boolean()
    if isinstance(value, int):
        return sa.BigInteger()
    if isinstance(value, float):
        return sa.Double()
    if isinstance(value, decimal.Decimal):
        exponent = value.as_tuple().exponent
        scale = -exponent if isinstance(exponent, int) and exponent < 0 else 0
        return sa.Numeric(precision=38, scale=scale)
    if isinstance(value, dt.datetime):
        return sa.DateTime(timezone=value.tzinfo is not None)
    if isinstance(value, dt.date):
        return sa.Date()
    if isinstance(value, dt.time):
        return sa.Time()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return sa.LargeBinary()
    return sa.String()
