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

On a database with server-side cursors (PostgreSQL, MySQL, ...) the cursor's next
batches are read ahead by a ``Prefetcher`` thread, so that the server produces the next
batch while the task builds the records of this one. Not on SQLite: its rows are made
in this process, under the GIL, so a thread has nothing to overlap.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import CursorResult, Dialect

from connectors.jdbc.prefetch import Prefetcher, QueryInterrupted

__all__ = ["QueryInterrupted", "RowReader"]

#: Batches read ahead of the task: one waiting, and one being fetched (see prefetch.py).
_AHEAD = 1


class RowReader:
    """``fetchmany``/``fetchone`` over one executed ``SELECT *``, whose rows are indexable
    by column position and hold ``columns``' Python values.

    Owned by the querier's thread; ``close`` before closing the result or its connection.
    With ``prefetch_rows`` (> 0) and a server-side cursor, batches of that many rows are
    read ahead on a thread once the rows come from the DBAPI cursor; waiting for one
    raises ``QueryInterrupted`` when ``stop`` is set."""

    def __init__(self, result: CursorResult[Any], columns: Sequence[Any],
                 dialect: Dialect, *, prefetch_rows: int = 0,
                 stop: threading.Event | None = None, name: str = "query") -> None:
        self._result = result
        self._dialect = dialect
        description = result.cursor.description if result.cursor is not None else None
        processors: list[Callable[[Any], Any] | None] = [
            c.type.dialect_impl(dialect).result_processor(dialect, d[1])
            for c, d in zip(columns, description or (), strict=False)]
        self._processors = processors if any(processors) else None
        self._cursor: Any = None
        self._first = True
        self._prefetch_rows = prefetch_rows if (
            dialect.supports_server_side_cursors and dialect.name != "sqlite") else 0
        self._stop = stop
        self._name = name
        self._prefetcher: Prefetcher | None = None
        # Rows taken from the prefetcher and not yet handed out: _buffer[_at:].
        self._buffer: Sequence[Any] = ()
        self._at = 0

    @property
    def raw(self) -> bool:
        """Whether rows now come straight from the DBAPI cursor."""
        return self._cursor is not None

    @property
    def prefetching(self) -> bool:
        """Whether a thread reads the next batches ahead."""
        return self._prefetcher is not None

    def fetchmany(self, size: int) -> Sequence[Any]:
        if size <= 0:
            # A DBAPI cursor reads ``arraysize`` rows for 0, not none.
            return []
        if self._prefetcher is not None:
            rows = self._take(size)
        elif self._cursor is not None:
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
                self._start_prefetch()
            self._first = False
        return rows if self._processors is None else self._process(rows)

    def fetchone(self) -> Any:
        if self._prefetcher is not None:
            taken = self._take(1)
            row = taken[0] if taken else None
        elif self._cursor is not None:
            row = self._raw_call(self._cursor.fetchone)
        else:
            self._first = False
            row = self._result.fetchone()
        if row is None or self._processors is None:
            return row
        return self._process([row])[0]

    def close(self) -> None:
        """End the prefetch thread, if any (bounded: a FETCH it is blocked in is
        cancelled); the result and its connection may then be closed. Should the
        thread outlive that, use ``close_then`` instead."""
        self.close_then(lambda: None)

    def close_then(self, release: Callable[[], None]) -> None:
        """End the prefetch thread, then call ``release`` (closing the result and its
        connection): right away, or on that thread should it still be in a FETCH that
        could not be cancelled, so that no two threads ever use the connection."""
        prefetcher, self._prefetcher = self._prefetcher, None
        self._buffer, self._at = (), 0
        if prefetcher is None:
            release()
        else:
            prefetcher.close(release)

    def _start_prefetch(self) -> None:
        if self._prefetch_rows <= 0:
            return
        cursor, size = self._cursor, self._prefetch_rows
        connection = getattr(cursor, "connection", None)
        self._prefetcher = Prefetcher(
            lambda: self._raw_call(cursor.fetchmany, size), depth=_AHEAD, name=self._name,
            cancel=_canceller(connection), stop=self._stop)
        self._prefetcher.start()

    def _take(self, size: int) -> Sequence[Any]:
        """Up to ``size`` rows from the prefetched batches (fewer only at the end)."""
        prefetcher = self._prefetcher
        assert prefetcher is not None
        buffer, at = self._buffer, self._at
        if at >= len(buffer):
            buffer, at = prefetcher.next_batch(), 0
            if len(buffer) == size:
                # The usual case: the batch asked for is the batch fetched, as it is.
                self._buffer, self._at = (), 0
                return buffer
        out = list(buffer[at:at + size])
        at += len(out)
        while len(out) < size and buffer:
            buffer, at = prefetcher.next_batch(), 0
            need = size - len(out)
            out += buffer[:need]
            at = min(need, len(buffer))
        self._buffer, self._at = buffer, at
        return out

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


def _canceller(connection: Any) -> Callable[[], None] | None:
    """How to cancel the statement running on a DBAPI connection from another thread
    (psycopg's ``cancel_safe``, bounded, or ``cancel``), if the driver can."""
    cancel_safe = getattr(connection, "cancel_safe", None)
    if cancel_safe is not None:
        return lambda: cancel_safe(timeout=5.0)
    cancel = getattr(connection, "cancel", None)
    return cancel if callable(cancel) else None
