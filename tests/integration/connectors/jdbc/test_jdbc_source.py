"""The JDBC source task and connector against SQLite files and a real PostgreSQL: every
mode, restart resume, rows sharing a timestamp, rows committed out of order, custom
queries, table discovery, reflected types and bad config."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import threading
from typing import Any

import pytest
import sqlalchemy as sa
from jdbc_support import ConnectorCtx, Runner, execute
from polling import wait_for

from connect.api import ConfigError, Date, Decimal, Schema, Time, Timestamp, Type
from connectors.jdbc import JdbcSourceConnector

pytestmark = pytest.mark.integration

UTC = dt.UTC
T0 = dt.datetime(2024, 5, 1, 12, 0, 0)


def make_table(url: str, count: int, ts_of=lambda i: T0 + dt.timedelta(seconds=i)) -> sa.Engine:
    engine = sa.create_engine(url)
    md = sa.MetaData()
    sa.Table("orders", md, sa.Column("id", sa.Integer, primary_key=True),
                     sa.Column("item", sa.String(40)),
                     sa.Column("updated", sa.DateTime, nullable=False))
    md.create_all(engine)
    insert_rows(engine, range(count), ts_of)
    return engine


def insert_rows(engine: sa.Engine, ids, ts_of=lambda i: T0 + dt.timedelta(seconds=i)) -> None:
    table = sa.Table("orders", sa.MetaData(), autoload_with=engine)
    with engine.begin() as conn:
        conn.execute(table.insert(), [{"id": i, "item": f"item-{i}", "updated": ts_of(i)}
                                      for i in ids])


def props(url: str, mode: str, **extra: str) -> dict[str, str]:
    return {"connection.url": url, "mode": mode, "incrementing.column.name": "id",
            "timestamp.column.name": "updated", "topic.prefix": "db-",
            "poll.interval.ms": "50", "batch.max.rows": "3",
            "tables": json.dumps([[None, "orders"]]), **extra}


def ids(records: list[Any]) -> list[int]:
    return [r.value.get("id") for r in records]


@pytest.mark.parametrize("mode", ["incrementing", "timestamp", "timestamp+incrementing"])
def test_incremental_modes_read_everything_once_and_resume_after_restart(db, mode):
    engine = make_table(db, 7)
    run = Runner(props(db, mode))
    run.start()
    first = run.poll()
    assert ids(first) == [0, 1, 2]
    assert first[0].topic == "db-orders"
    assert first[0].source_partition == {"protocol": "1", "table": first[0]
                                         .source_partition["table"]}
    assert first[0].source_partition["table"].endswith("orders")
    run.restart()  # after 3 of 7 rows
    rest = run.drain()
    assert ids(rest) == [3, 4, 5, 6]
    insert_rows(engine, [7, 8])
    run.restart()
    assert ids(run.drain()) == [7, 8]
    offset = run.store.offset(first[0].source_partition)
    if "incrementing" in mode:
        assert offset["incrementing"] == 8
    if mode.startswith("timestamp"):
        expected = (T0 + dt.timedelta(seconds=8)).replace(tzinfo=UTC)
        assert offset["timestamp"] == int(expected.timestamp() * 1000)
        assert offset["timestamp_nanos"] == 0
    run.stop()
    engine.dispose()


def test_bulk_mode_reads_the_whole_table_every_poll_interval(db):
    engine = make_table(db, 4)
    run = Runner(props(db, "bulk", **{"batch.max.rows": "10", "poll.interval.ms": "1500"}))
    run.start()
    assert ids(run.drain()) == [0, 1, 2, 3]
    insert_rows(engine, [4])
    again = wait_for(lambda: run.poll(), "the next bulk read")
    assert sorted(ids(again)) == [0, 1, 2, 3, 4]
    assert again[0].source_offset is None
    run.stop()
    engine.dispose()


@pytest.mark.parametrize("mode", ["timestamp", "timestamp+incrementing"])
def test_rows_sharing_a_timestamp_are_never_lost_across_polls_and_restarts(db, mode):
    # Eight rows, five of them at one instant; two rows per poll and a restart after
    # every poll, so the shared timestamp is split over polls and restarts.
    engine = make_table(db, 8, ts_of=lambda i: T0 + dt.timedelta(
        seconds=0 if i < 1 else 1 if i < 6 else i))
    run = Runner(props(db, mode, **{"batch.max.rows": "2"}))
    seen: list[int] = []
    for _ in range(12):
        run.start()
        seen += ids(run.poll())
        run.stop()
        if set(seen) == set(range(8)):
            break
    assert set(seen) == set(range(8))
    if mode == "timestamp+incrementing":
        assert seen == list(range(8))  # and exactly once
    engine.dispose()


def test_timestamp_initial_and_coalesced_timestamp_columns(db):
    engine = sa.create_engine(db)
    execute(engine, "CREATE TABLE events (id INTEGER PRIMARY KEY, created TIMESTAMP NOT NULL,"
                    " modified TIMESTAMP)")
    table = sa.Table("events", sa.MetaData(), autoload_with=engine)
    with engine.begin() as conn:
        conn.execute(table.insert(), [
            {"id": 1, "created": T0, "modified": None},
            {"id": 2, "created": T0, "modified": T0 + dt.timedelta(days=2)},
            {"id": 3, "created": T0 + dt.timedelta(days=3), "modified": None}])
    start_ms = int((T0 + dt.timedelta(days=1)).replace(tzinfo=UTC).timestamp() * 1000)
    p = props(db, "timestamp", **{"timestamp.column.name": "modified,created",
                                  "tables": json.dumps([[None, "events"]]),
                                  "validate.non.null": "false",
                                  "timestamp.initial": str(start_ms)})
    run = Runner(p)
    run.start()
    # Row 1 (only created, before the start) is skipped; 2 by modified, then 3.
    assert ids(run.drain()) == [2, 3]
    run.stop()
    engine.dispose()


def test_a_nullable_incrementing_column_is_refused_unless_validation_is_off(db):
    engine = sa.create_engine(db)
    execute(engine, "CREATE TABLE loose (id INTEGER, v TEXT)")
    execute(engine, "INSERT INTO loose VALUES (1, 'a')")
    p = props(db, "incrementing", **{"tables": json.dumps([[None, "loose"]])})
    run = Runner(p)
    run.start()
    with pytest.raises(Exception, match="nullable"):
        run.poll()
    run.stop()
    run = Runner({**p, "validate.non.null": "false"})
    run.start()
    assert ids(run.drain()) == [1]
    run.stop()
    engine.dispose()


def test_query_mode_wraps_the_select_and_keys_offsets_by_query(db):
    engine = make_table(db, 6)
    query = "SELECT id, item, updated FROM orders WHERE id % 2 = 0"
    p = props(db, "incrementing", query=query, **{"topic.prefix": "evens"})
    del p["tables"]
    run = Runner(p)
    run.start()
    got = run.drain()
    assert ids(got) == [0, 2, 4]
    assert got[0].topic == "evens"
    assert got[0].source_partition == {"query": query}
    assert got[0].value_schema.field("updated").schema.name == Timestamp.LOGICAL_NAME
    insert_rows(engine, [6, 7, 8])
    run.restart()
    assert ids(run.drain()) == [6, 8]
    run.stop()
    engine.dispose()


def test_connector_discovers_filters_and_spreads_tables_and_sees_new_ones(db):
    engine = sa.create_engine(db)
    for name in ("a1", "a2", "a3", "skip_me"):
        execute(engine, f"CREATE TABLE {name} (id INTEGER PRIMARY KEY)")
    connector = JdbcSourceConnector()
    ctx = ConnectorCtx()
    connector.initialize(ctx)
    connector.start({"connection.url": db, "mode": "bulk", "table.poll.interval.ms": "100",
                     "table.exclude.list": "skip_me"})
    try:
        configs = connector.task_configs(2)
        tables = [[t[1] for t in json.loads(c["tables"])] for c in configs]
        assert tables == [["a1", "a2"], ["a3"]]
        execute(engine, "CREATE TABLE a4 (id INTEGER PRIMARY KEY)")
        wait_for(lambda: ctx.reconfigurations >= 1, "a reconfiguration for the new table")
        tables = [t[1] for c in connector.task_configs(5) for t in json.loads(c["tables"])]
        assert tables == ["a1", "a2", "a3", "a4"]
    finally:
        connector.stop()
    engine.dispose()


def test_include_list_and_the_older_whitelist(db):
    engine = sa.create_engine(db)
    for name in ("x", "y", "z"):
        execute(engine, f"CREATE TABLE {name} (id INTEGER PRIMARY KEY)")
    for key in ("table.include.list", "table.whitelist"):
        connector = JdbcSourceConnector()
        connector.initialize(ConnectorCtx())
        connector.start({"connection.url": db, "mode": "bulk", key: "x,z"})
        try:
            configs = connector.task_configs(4)
            assert [t[1] for c in configs for t in json.loads(c["tables"])] == ["x", "z"]
        finally:
            connector.stop()
    engine.dispose()


def test_postgres_types_become_connect_schemas(pg):
    url = pg.url()
    engine = sa.create_engine(url)
    execute(engine, """CREATE TABLE typed (
        id bigint PRIMARY KEY, s smallint, i integer NOT NULL, n numeric(10,2),
        n0 numeric(8,0), r real, d double precision, b boolean, t text, v varchar(10),
        by bytea, dt date, tm time, ts timestamp, tz timestamptz)""")
    execute(engine, """INSERT INTO typed VALUES (1, 2, 3, 12.34, 99, 1.5, 2.25, true, 'x',
        'y', '\\x0102', '2024-02-29', '13:14:15', '2024-02-29 13:14:15.123456',
        '2024-02-29 13:14:15+02')""")
    for mapping, n_type, n0_type in (("none", "decimal", "decimal"),
                                     ("best_fit", Type.FLOAT64, Type.INT32),
                                     ("precision_only", "decimal", Type.INT32)):
        run = Runner(props(url, "bulk", **{"tables": json.dumps([["public", "typed"]]),
                                           "numeric.mapping": mapping,
                                           "poll.interval.ms": "60000"}))
        run.start()
        (record,) = run.poll()
        run.stop()
        schema: Schema = record.value_schema
        f = {fld.name: fld.schema for fld in schema.fields}
        assert f["id"].type is Type.INT64 and not f["id"].optional
        assert f["s"].type is Type.INT16 and f["s"].optional
        assert f["i"].type is Type.INT32 and not f["i"].optional
        assert f["r"].type is Type.FLOAT32 and f["d"].type is Type.FLOAT64
        assert f["b"].type is Type.BOOLEAN and f["t"].type is Type.STRING
        assert f["v"].type is Type.STRING and f["by"].type is Type.BYTES
        assert f["dt"].name == Date.LOGICAL_NAME and f["tm"].name == Time.LOGICAL_NAME
        assert f["ts"].name == Timestamp.LOGICAL_NAME
        assert f["tz"].name == Timestamp.LOGICAL_NAME
        for name, expected in (("n", n_type), ("n0", n0_type)):
            if expected == "decimal":
                assert f[name].name == Decimal.LOGICAL_NAME
            else:
                assert f[name].type is expected
        v = record.value
        assert v.get("by") == b"\x01\x02" and v.get("dt") == dt.date(2024, 2, 29)
        # Naive is UTC in Connect (db.timezone is UTC here); with a zone it is converted.
        assert v.get("ts") == dt.datetime(2024, 2, 29, 13, 14, 15, 123456)
        assert v.get("tz") == dt.datetime(2024, 2, 29, 11, 14, 15, tzinfo=UTC)
        if mapping == "none":
            assert v.get("n") == decimal.Decimal("12.34") and Decimal.scale(f["n"]) == 2
    engine.dispose()


def test_postgres_rows_committed_out_of_order(pg):
    """Incrementing mode skips a row whose transaction commits after a later id was
    read (documented); timestamp+incrementing with a delay longer than the transaction
    reads both."""
    url = pg.url()
    engine = sa.create_engine(url)
    execute(engine, "CREATE TABLE late (id serial PRIMARY KEY, "
                    "ts timestamp NOT NULL DEFAULT (now() AT TIME ZONE 'UTC'))")
    results: dict[str, list[int]] = {}
    for mode, delay in (("incrementing", "0"), ("timestamp+incrementing", "3000")):
        execute(engine, "TRUNCATE late RESTART IDENTITY")
        run = Runner({**props(url, mode, **{"timestamp.column.name": "ts",
                                            "timestamp.delay.interval.ms": delay}),
                      "tables": json.dumps([["public", "late"]])})
        run.start()
        slow = engine.connect()
        slow_tx = slow.begin()
        slow.execute(sa.text("INSERT INTO late DEFAULT VALUES"))  # id 1, not committed
        execute(engine, "INSERT INTO late DEFAULT VALUES")  # id 2, committed
        # One poll (at most a second) while the first transaction is open: shorter
        # than the delay, as the docs require of transactions.
        seen = ids(run.poll())
        slow_tx.commit()
        slow.close()
        done = threading.Event()
        deadline = dt.datetime.now() + dt.timedelta(seconds=6)
        while dt.datetime.now() < deadline and not done.is_set():
            seen += ids(run.poll())
            if len(set(seen)) == 2:
                done.set()
        results[mode] = sorted(seen)
        run.stop()
    assert results["incrementing"] == [2]
    assert results["timestamp+incrementing"] == [1, 2]
    engine.dispose()


@pytest.mark.parametrize(("overrides", "key"), [
    ({"connection.url": "nosuchdb://x/y"}, "connection.url"),
    ({"connection.url": "jdbc:informix://h/db"}, "connection.url"),
    ({"mode": "sometimes"}, "mode"),
    ({"mode": "incrementing", "incrementing.column.name": ""}, "incrementing.column.name"),
    ({"db.timezone": "Mars/Olympus"}, "db.timezone"),
])
def test_bad_source_config_names_the_key(tmp_path, overrides, key):
    p = {"connection.url": f"sqlite:///{tmp_path / 'x.db'}", "mode": "bulk", **overrides}
    result = JdbcSourceConnector().validate(p)
    errors = {v.name: v.errors for v in result.config_values if v.errors}
    assert key in errors, errors
    with pytest.raises(ConfigError):
        connector = JdbcSourceConnector()
        connector.initialize(ConnectorCtx())
        connector.start(p)


def test_unreachable_database_is_reported_on_connection_url(pg):
    from broker_process import free_port

    p = {"connection.url": f"jdbc:postgresql://127.0.0.1:{free_port()}/postgres",
         "connection.user": "postgres", "connection.password": "secret", "mode": "bulk"}
    result = JdbcSourceConnector().validate(p)
    errors = {v.name: v.errors for v in result.config_values if v.errors}
    assert list(errors) == ["connection.url"]
    assert "Could not connect" in errors["connection.url"][0]
    assert "secret" not in json.dumps(errors)


def test_schema_pattern_views_and_db_timezone_on_postgres(pg):
    url = pg.url()
    engine = sa.create_engine(url)
    execute(engine, "CREATE SCHEMA inventory")
    execute(engine, "CREATE TABLE inventory.stock (id integer PRIMARY KEY, "
                    "at timestamp NOT NULL)")
    execute(engine, "CREATE VIEW inventory.stock_view AS SELECT * FROM inventory.stock")
    execute(engine, "INSERT INTO inventory.stock VALUES (1, '2024-07-01 14:00:00')")
    connector = JdbcSourceConnector()
    connector.initialize(ConnectorCtx())
    connector.start({"connection.url": url, "mode": "bulk", "schema.pattern": "inventory",
                     "table.types": "TABLE,VIEW"})
    try:
        (config,) = connector.task_configs(1)
    finally:
        connector.stop()
    assert json.loads(config["tables"]) == [["inventory", "stock"],
                                            ["inventory", "stock_view"]]
    run = Runner({**config, "db.timezone": "Europe/Paris", "poll.interval.ms": "60000",
                  "batch.max.rows": "10"})
    run.start()
    got = run.poll() + run.poll()
    run.stop()
    assert {r.topic for r in got} == {"stock", "stock_view"}
    # 14:00 wall time in Paris (summer, UTC+2) is 12:00 UTC.
    assert {r.value.get("at") for r in got} == {dt.datetime(2024, 7, 1, 12, tzinfo=UTC)}
    assert got[0].source_partition["table"].startswith("inventory.")
    engine.dispose()
