"""Reading a running query's rows in batches, straight from the DBAPI cursor, with the
column types' result processors applied here where a column has one.

The querier's SELECT lists ``*`` (so the result's description shows the table's columns
as they are now, see ``querier.py``), which leaves SQLAlchemy's result without column
types: it hands out the driver's values. Where a column's type has a result processor
(SQLite's datetimes come back as text and are parsed there, for instance) it is applied
here, from the reflected columns. Where none has one (the usual case on PostgreSQL with
psycopg) a fetched tuple is the row: SQLAlchemy's ``Row`` would add about 0.2 us of CPU
per row against 0.6 us for the fetch itself (``bench/jdbc_throughput.py
--source-breakdown``), so rows are read from the result's DBAPI cursor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import CursorResult, Dialect

__all__ = ["RowReader"]


class RowReader:
    """``fetchmany``/``fetchone`` over one executed ``SELECT *``, whose rows are indexable
    by column position and hold ``columns``' Python values. Owned by the querier's
    thread."""

    def __init__(self, result: CursorResult[Any], columns: Sequence[Any],
                 dialect: Dialect) -> None:
        self._result = result
        self._dialect = dialect
        description = result.cursor.description if result.cursor is not None else None
        processors: list[Callable[[Any], Any] | None] = [
            c.type.dialect_impl(dialect).result_processor(dialect, d[1])
            for c, d in zip(columns, description or (), strict=False)]
        self._processors = processors if any(processors) else None
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
            rows = self._raw_call(self._cursor.fetchmany, size)
        else:
            rows = self._result.fetchmany(size)
            if self._first and len(rows) == size:
                # SQLAlchemy reads at most one row ahead of the first fetchmany() on a
                # server-side cursor, and that call hands it out; after it the rows still
                # to come are all in the cursor. A short first batch is the end of the
                # result (SQLAlchemy may have closed the cursor then): it stays on the
                # result.
                self._cursor = self._result.cursor
            self._first = False
        return rows if self._processors is None else self._process(rows)

    def fetchone(self) -> Any:
        if self._cursor is not None:
            row = self._raw_call(self._cursor.fetchone)
        else:
            self._first = False
            row = self._result.fetchone()
        if row is None or self._processors is None:
            return row
        return self._process([row])[0]

    def _process(self, rows: Sequence[Any]) -> list[tuple[Any, ...]]:
        procs = self._processors
        assert procs is not None
        return [tuple([v if p is None else p(v) for p, v in zip(procs, row, strict=True)])
                for row in rows]

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
