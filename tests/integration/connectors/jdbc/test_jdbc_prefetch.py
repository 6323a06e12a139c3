"""The JDBC source's read-ahead of a running query's batches on a thread (``RowReader``
over ``Prefetcher``) against a real PostgreSQL: order across any batch sizes, errors and
a lost connection raised on the task thread after the rows before them, closing
mid-query and while a FETCH is blocked in the server, the task's stop() then, and a
restart resuming with prefetched batches dropped."""

from __future__ import annotations

import datetime as dt
import json
import threading
import time

import pytest
import sqlalchemy as sa
from jdbc_support import OffsetStore, Runner, SourceContext, execute
from polling import wait_for

from connectors.jdbc import JdbcSourceTask
from connectors.jdbc.row_reader import QueryInterrupted, RowReader

pytestmark = pytest.mark.integration

#: Rows past this one take 30 s each in ``slow(g)``: a FETCH reaching them blocks.
SLOW_AFTER = 1500


@pytest.fixture()
def engine(pg):
    engine = sa.create_engine(pg.url())
    execute(engine, "CREATE OR REPLACE FUNCTION slow(g int) RETURNS int LANGUAGE sql "
            f"VOLATILE AS $$ SELECT pg_sleep(CASE WHEN g > {SLOW_AFTER} THEN 30 ELSE 0 "
            "END); SELECT g $$")
    yield engine
    engine.dispose()


def _reader(conn: sa.Connection, sql: str, batch: int,
            stop: threading.Event | None = None) -> RowReader:
    result = conn.execution_options(stream_results=True, yield_per=batch).execute(
        sa.text(sql))
    return RowReader(result, [], conn.dialect, prefetch_rows=batch, stop=stop)


def _thread_of(reader: RowReader) -> threading.Thread:
    assert reader._prefetcher is not None
    return reader._prefetcher._thread


def _sleeping(engine: sa.Engine) -> int:
    """How many backends are in a ``pg_sleep`` now (of ``slow(g)``: its FETCH)."""
    with engine.connect() as conn:
        return conn.execute(sa.text(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'")
        ).scalar_one()


def test_prefetched_rows_come_in_order_whatever_sizes_are_asked(engine):
    with engine.connect() as conn:
        reader = _reader(conn, "SELECT g FROM generate_series(1, 10000) g", 1000)
        got = list(reader.fetchmany(1000))
        assert reader.prefetching and _thread_of(reader).is_alive()
        sizes = [999, 1, 1000, 2500, 1000, 3, 1]
        while True:
            size = sizes[len(got) % len(sizes)]
            if size == 1:
                row = reader.fetchone()
                if row is None:
                    break
                got.append(row)
            else:
                rows = reader.fetchmany(size)
                assert len(rows) == size or reader.fetchmany(size) == []
                if not rows:
                    break
                got += rows
        assert [r[0] for r in got] == list(range(1, 10001))
        assert reader.fetchmany(10) == [] and reader.fetchone() is None
        _thread_of(reader).join(5)
        assert not _thread_of(reader).is_alive()  # it ended with the result
        reader.close()


def test_an_error_in_a_prefetched_batch_is_raised_after_the_rows_before_it(engine):
    with engine.connect() as conn:
        reader = _reader(conn, "SELECT g, 10 / (4500 - g) FROM generate_series(1, 9000) g",
                         1000)
        got = []
        with pytest.raises(sa.exc.DBAPIError, match="division by zero") as caught:
            while rows := reader.fetchmany(1000):
                got += rows
        assert not caught.value.connection_invalidated
        # The FETCH of rows 4001-5000 failed whole: every row before it arrived.
        assert [r[0] for r in got] == list(range(1, 4001))
        reader.close()


def test_a_connection_lost_under_the_prefetch_thread_reads_as_a_disconnect(engine):
    with engine.connect() as conn:
        pid = conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()
        reader = _reader(conn, "SELECT g FROM generate_series(1, 200000) g", 1000)
        assert len(reader.fetchmany(1000)) == 1000
        execute(engine, f"SELECT pg_terminate_backend({pid})")
        with pytest.raises(sa.exc.DBAPIError) as caught:
            deadline = time.monotonic() + 30
            while reader.fetchmany(1000) and time.monotonic() < deadline:
                pass
        assert caught.value.connection_invalidated
        reader.close()
        conn.invalidate()  # the pool then drops it, as the task's retry does


def test_closing_mid_query_ends_the_thread_and_leaves_the_connection_usable(engine):
    with engine.connect() as conn:
        reader = _reader(conn, "SELECT g FROM generate_series(1, 100000) g", 1000)
        reader.fetchmany(1000)
        thread = _thread_of(reader)
        reader.close()
        assert not thread.is_alive() and not reader.prefetching
        conn.rollback()
        assert conn.execute(sa.text("SELECT 1")).scalar_one() == 1


def test_closing_while_a_fetch_is_blocked_in_the_server_cancels_it(engine):
    with engine.connect() as conn:
        reader = _reader(conn, "SELECT slow(g) FROM generate_series(1, 5000) g", 1000)
        try:
            assert len(reader.fetchmany(1000)) == 1000
            wait_for(lambda: _sleeping(engine) == 1, "the prefetch thread's FETCH to block")
            thread = _thread_of(reader)
            started = time.monotonic()
        finally:
            reader.close()
        assert time.monotonic() - started < 10 and not thread.is_alive()
        wait_for(lambda: _sleeping(engine) == 0, "the cancelled FETCH to end")
        conn.rollback()
        assert conn.execute(sa.text("SELECT 2")).scalar_one() == 2


def test_a_wait_for_a_blocked_fetch_ends_when_the_stop_event_is_set(engine):
    stop = threading.Event()
    with engine.connect() as conn:
        reader = _reader(conn, "SELECT slow(g) FROM generate_series(1, 5000) g", 1000,
                         stop=stop)
        try:
            reader.fetchmany(1000)
            threading.Timer(0.3, stop.set).start()
            with pytest.raises(QueryInterrupted):
                reader.fetchmany(1000)  # rows 1001-1500 then the blocked one
            thread = _thread_of(reader)
        finally:
            reader.close()
        assert not thread.is_alive() and not reader.prefetching


def test_stopping_the_task_while_its_query_blocks_the_server_returns_poll(pg, engine):
    props = {"connection.url": pg.url(), "mode": "bulk", "batch.max.rows": "1000",
             "query": "SELECT slow(g) AS id FROM generate_series(1, 5000) g",
             "topic.prefix": "slow", "poll.interval.ms": "60000"}
    task = JdbcSourceTask()
    task.initialize(SourceContext(props, OffsetStore()))
    task.start(props)
    try:
        assert len(task.poll() or []) == 1000
        polled: list[object] = []
        poller = threading.Thread(target=lambda: polled.append(task.poll()), daemon=True)
        poller.start()  # gets rows 1001-1500 or waits on the blocked FETCH
        wait_for(lambda: _sleeping(engine) == 1, "the FETCH to block")
        started = time.monotonic()
    finally:
        task.stop()
    poller.join(15)
    assert not poller.is_alive() and time.monotonic() - started < 15
    assert polled == [None]  # the wait was interrupted: no records, no error
    assert not [t for t in threading.enumerate() if t.name.startswith("jdbc-prefetch")
                and t.is_alive()]
    wait_for(lambda: _sleeping(engine) == 0, "the cancelled FETCH to end")


@pytest.mark.parametrize("mode", ["incrementing", "timestamp", "timestamp+incrementing"])
def test_restarts_with_batches_read_ahead_lose_and_double_nothing(engine, pg, mode):
    # 6,000 rows, seven per timestamp, read 500 per poll (so batches are prefetched and
    # a timestamp's rows straddle batches) with a restart after every other poll.
    table = f"ahead_{mode.replace('+', '_')}"
    execute(engine, f"CREATE TABLE {table} (id integer PRIMARY KEY, at timestamp NOT NULL)")
    t0 = dt.datetime(2024, 1, 1)
    execute(engine, f"INSERT INTO {table} SELECT g, :t0 + (g / 7) * interval '1 second' "
            "FROM generate_series(0, 5999) g", {"t0": t0})
    run = Runner({"connection.url": pg.url(), "mode": mode,
                  "incrementing.column.name": "id", "timestamp.column.name": "at",
                  "batch.max.rows": "500", "poll.interval.ms": "50",
                  "tables": json.dumps([["public", table]])})
    seen: list[int] = []
    for _ in range(60):
        run.start()
        for _ in range(2):
            seen += [r.value.get("id") for r in run.poll()]
        run.stop()
        if len(set(seen)) == 6000:
            break
    assert sorted(set(seen)) == list(range(6000))
    if mode != "timestamp":
        assert seen == list(range(6000))  # in order, exactly once
