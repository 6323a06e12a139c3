"""Reading a running query's rows in batches: straight from the DBAPI cursor when
SQLAlchemy would not change the driver's values, through SQLAlchemy's result otherwise.

SQLAlchemy wraps each fetched tuple in a ``Row`` and runs the column types' result
processors on it (SQLite's datetimes come back as text and are parsed there, for
instance). Where no column has a processor (the usual case on PostgreSQL with psycopg)
the ``Row`` adds nothing but cost: about 0.2 us of CPU per row against 0.6 us for the
fetch itself (``bench/jdbc_throughput.py --source-breakdown``), so such queries are read
from the result's DBAPI cursor instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import CursorResult, Dialect

__all__ = ["RowReader"]


class RowReader:
    """``fetchmany``/``fetchone`` over one executed SELECT, whose rows are indexable by
    column position either way. Owned by the querier's thread."""

    def __init__(self, result: CursorResult[Any], columns: Sequence[Any],
                 dialect: Dialect) -> None:
        self._result = result
        self._dialect = dialect
        description = result.cursor.description if result.cursor is not None else None
        self._raw_ok = description is not None and len(description) == len(columns) and \
            all(c.type.dialect_impl(dialect).result_processor(dialect, d[1]) is None
                for c, d in zip(columns, description, strict=True))
        self._cursor: Any = None
        self._first = True

    @property
    def raw(self) -> bool:
        """Whether rows now come straight from the DBAPI cursor."""
        return self._cursor is not None

    def fetchmany(self, size: int) -> Sequence[Any]:
        if size <= 0:
            # A DBAPI cursor reads ``arraysize`` rows for 0, not none.
            return []
        if self._cursor is not None:
            return self._raw_call(self._cursor.fetchmany, size)
        rows = self._result.fetchmany(size)
        if self._first and self._raw_ok and len(rows) == size:
            # SQLAlchemy reads at most one row ahead of the first fetchmany() on a
            # server-side cursor, and that call hands it out; after it the rows still to
            # come are all in the cursor. A short first batch is the end of the result
            # (SQLAlchemy may have closed the cursor then): it stays on the result.
            self._cursor = self._result.cursor
        self._first = False
        return rows

    def fetchone(self) -> Any:
        if self._cursor is not None:
            return self._raw_call(self._cursor.fetchone)
        self._first = False
        return self._result.fetchone()

    def _raw_call(self, call: Any, *args: Any) -> Any:
        """A DBAPI call, its driver errors raised as SQLAlchemy's (as the result would),
        so that a lost connection reads as one to the task's retry logic."""
        dbapi = self._dialect.dbapi
        if dbapi is None:
            return call(*args)
        try:
            return call(*args)
        except dbapi.Error as exc:
            lost = self._dialect.is_disconnect(exc, getattr(self._cursor, "connection", None),
                                             self._cursor)
            raise sa_exc.DBAPIError.instance(
                None, None, exc, dbapi.Error, connection_invalidated=lost,
                dialect=self._dialect) from exc
