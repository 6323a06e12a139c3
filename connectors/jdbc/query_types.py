"""Column types of a custom query (``query`` mode), which has no table to reflect.

PostgreSQL describes a result's columns (psycopg's ``type_display``, e.g.
``numeric(10,2)``), mapped through SQLAlchemy's own PostgreSQL type names. Other
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
    if any(isinstance(c["type"], sa.NullType) for c in columns):
        return []
    return [sa.column(c["name"], c["type"]) for c in columns]


def _pg_type(described: Any) -> sa.types.TypeEngine[Any]:
    from sqlalchemy.dialects.postgresql.base import ischema_names

    display = getattr(described, "type_display", None) or ""
    base = re.sub(r"\(.*\)", "", display).replace("[]", "").strip()
    cls = ischema_names.get(base)
    if cls is None:
        return sa.NullType()
    if issubclass(cls, sa.Numeric) and not issubclass(cls, sa.Float):
        return cls(precision=described.precision, scale=described.scale)
    if base == "timestamp with time zone":
        return sa.DateTime(timezone=True)
    return cls()


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
