"""The JDBC connectors in the real Connect worker (``ferry connect standalone`` as a
subprocess on ``embedded:``): a SQLite table into a topic into PostgreSQL with upserts,
through a PostgreSQL restart and a SIGKILL of the worker (the target ends equal to the
source); a typed PostgreSQL table copied into SQLite compares equal; a constraint
violation goes to the dead letter queue, or fails the task naming the record."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import requests
import sqlalchemy as sa
from connect_process import ConnectProcess
from jdbc_support import execute, rows

from core.backends import OffsetSpec, TopicPartition, open_backend

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DEADLINE_S = 90.0


_counter = iter(range(1000))


def new_database(pg) -> str:
    name = f"pipe{next(_counter)}"
    admin = sa.create_engine(pg.url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    admin.dispose()
    return name


class Worker(ConnectProcess):
    """``ferry connect standalone`` with connector configs given as files (so a restart
    after SIGKILL runs the same connectors, resuming from the stored offsets)."""

    def __init__(self, tmp: Path, connectors: dict[str, dict[str, str]]) -> None:
        super().__init__(
            tmp,
            "key.converter=org.apache.kafka.connect.json.JsonConverter\n"
            "value.converter=org.apache.kafka.connect.json.JsonConverter\n"
            "offset.flush.interval.ms=200\noffset.storage.partitions=1\n",
            {name: {"name": name, "config": config} for name, config in connectors.items()},
            timeout=DEADLINE_S, poll=0.1, tail=6000)

    def status(self, name: str) -> dict[str, Any]:
        return self.get(f"/connectors/{name}/status") or {}


def _count(engine: sa.Engine, table: str) -> int:
    try:
        return rows(engine, f"SELECT count(*) FROM {table}")[0][0]
    except sa.exc.SQLAlchemyError:
        return 0


def test_sqlite_to_postgres_upserts_survive_a_database_restart_and_a_worker_sigkill(
        pg, tmp_path):
    from postgres_process import PASSWORD

    source_url = f"sqlite:///{tmp_path / 'shop.db'}"
    source = sa.create_engine(source_url)
    execute(source, "CREATE TABLE orders (id INTEGER PRIMARY KEY NOT NULL, item TEXT, "
                    "qty INTEGER, price NUMERIC(10,2))")
    target_db = new_database(pg)
    target = sa.create_engine(pg.url(target_db), pool_pre_ping=True)
    worker = Worker(tmp_path, {
        "shop-source": {
            "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
            "connection.url": f"jdbc:sqlite:{tmp_path / 'shop.db'}", "mode": "incrementing",
            "incrementing.column.name": "id", "topic.prefix": "shop-",
            "poll.interval.ms": "100", "batch.max.rows": "200",
            "topic.creation.default.partitions": "1",
            "topic.creation.default.replication.factor": "1"},
        "pg-sink": {
            "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
            "topics": "shop-orders",
            "connection.url": f"jdbc:postgresql://127.0.0.1:{pg.port}/{target_db}",
            "connection.user": "postgres", "connection.password": PASSWORD,
            "insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id",
            "auto.create": "true", "table.name.format": "orders",
            "max.retries": "100", "retry.backoff.ms": "300", "batch.size": "100"}})
    total = 6000
    stop_writing = threading.Event()

    def write_rows() -> None:
        at = 0
        while at < total and not stop_writing.is_set():
            execute(source, "INSERT INTO orders VALUES " + ",".join(
                f"({i}, 'item-{i}', {i % 7}, {i}.25)" for i in range(at, at + 100)))
            at += 100
            time.sleep(0.02)

    worker.start()
    writer = threading.Thread(target=write_rows)
    writer.start()
    try:
        worker.wait(lambda: _count(target, "orders") >= 500, "the first rows in PostgreSQL")
        pg.restart("fast")  # the sink retries through it
        worker.wait(lambda: _count(target, "orders") >= 2500, "rows after the restart")
        worker.kill()  # mid-stream: offsets of both connectors are behind the data
        worker.start()
        writer.join(120)
        assert not writer.is_alive()
        expected = rows(source, "SELECT id, item, qty, price FROM orders ORDER BY id")
        assert len(expected) == total
        worker.wait(lambda: _count(target, "orders") == total, "every row in PostgreSQL")
        worker.wait(lambda: rows(target, "SELECT id, item, qty, price FROM orders "
                                         "ORDER BY id") == expected, "equal tables")
        status = worker.status("pg-sink")
        assert status["tasks"][0]["state"] == "RUNNING", status
    finally:
        stop_writing.set()
        writer.join(30)
        worker.stop()
        source.dispose()
        target.dispose()


def test_a_typed_postgres_table_copied_into_sqlite_compares_equal(pg, tmp_path):
    db = new_database(pg)
    source = sa.create_engine(pg.url(db), pool_pre_ping=True)
    execute(source, """CREATE TABLE typed (
        id bigserial PRIMARY KEY, s smallint, i integer NOT NULL, n numeric(10,2),
        r real, d double precision, b boolean, t text, by bytea, day date,
        ts timestamp NOT NULL, tz timestamptz)""")
    execute(source, """INSERT INTO typed (s, i, n, r, d, b, t, by, day, ts, tz)
        SELECT g, g * 1000, g + 0.25, g / 2.0, g / 3.0, g % 2 = 0, 'row ' || g,
               decode(lpad(to_hex(g), 4, '0'), 'hex'), DATE '2024-01-01' + g,
               TIMESTAMP '2024-01-01 00:00:00.5' + g * INTERVAL '1 minute',
               TIMESTAMPTZ '2024-01-01 00:00:00+00' + g * INTERVAL '1 hour'
        FROM generate_series(1, 300) g""")
    execute(source, "INSERT INTO typed (i, ts) VALUES (-1, '2020-02-02 02:02:02')")  # nulls
    target_url = f"sqlite:///{tmp_path / 'copy.db'}"
    worker = Worker(tmp_path, {
        "pg-source": {
            "connector.class": "jdbc-source", "connection.url": pg.url(db),
            "mode": "timestamp+incrementing", "incrementing.column.name": "id",
            "timestamp.column.name": "ts", "table.include.list": "public.typed",
            "poll.interval.ms": "100", "batch.max.rows": "50",
            "topic.creation.default.partitions": "1",
            "topic.creation.default.replication.factor": "1"},
        "sqlite-sink": {
            "connector.class": "jdbc-sink", "topics": "typed", "connection.url": target_url,
            "auto.create": "true", "insert.mode": "upsert", "pk.mode": "record_value",
            "pk.fields": "id"}})
    worker.start()
    target = sa.create_engine(target_url)
    try:
        worker.wait(lambda: _count(target, "typed") >= 100, "the first rows in SQLite")
        pg.restart("fast")  # the source re-queries from its last offset
        worker.wait(lambda: _count(target, "typed") == 301, "every row in SQLite")
    finally:
        worker.stop()
    src_table = sa.Table("typed", sa.MetaData(), autoload_with=source)
    dst_table = sa.Table("typed", sa.MetaData(), autoload_with=target)
    with source.connect() as conn:
        expected = [dict(r._mapping) for r in conn.execute(
            sa.select(src_table).order_by(src_table.c.id))]
    with target.connect() as conn:
        got = [dict(r._mapping) for r in conn.execute(
            sa.select(dst_table).order_by(dst_table.c.id))]
    assert len(got) == len(expected) == 301
    for want, have in zip(expected, got, strict=True):
        if want["tz"] is not None:
            # Written as UTC wall time (db.timezone=UTC) into a column without a zone.
            want["tz"] = want["tz"].astimezone(dt.UTC).replace(tzinfo=None)
        if want["by"] is not None:
            want["by"], have["by"] = bytes(want["by"]), bytes(have["by"])
        if have["n"] is not None:
            have["n"] = decimal.Decimal(str(have["n"])).quantize(decimal.Decimal("0.01"))
        assert have == want
    source.dispose()
    target.dispose()


def _dlq(data: Path) -> list[Any]:
    with open_backend(f"embedded:{data}") as log:
        if "dlq" not in log.list_topics():
            return []
        tp = TopicPartition("dlq", 0)
        end = log.list_offsets([tp], OffsetSpec.LATEST)[tp]
        return log.fetch({tp: 0}, max_wait_ms=100)[tp].records if end else []


def test_constraint_violations_go_to_the_dlq_or_fail_naming_the_record(pg, tmp_path):
    db = new_database(pg)
    target = sa.create_engine(pg.url(db))
    execute(target, "CREATE TABLE orders (id bigint PRIMARY KEY, item text, "
                    "qty integer CHECK (qty >= 0), price numeric(10,2))")
    source_url = f"sqlite:///{tmp_path / 'shop.db'}"
    source = sa.create_engine(source_url)
    execute(source, "CREATE TABLE orders (id INTEGER PRIMARY KEY NOT NULL, item TEXT, "
                    "qty INTEGER, price NUMERIC(10,2))")
    execute(source, "INSERT INTO orders VALUES (1, 'a', 1, 1.00), (2, 'bad', -1, 2.00), "
                    "(3, 'c', 3, 3.00)")
    common = {"connector.class": "jdbc-sink", "topics": "shop-orders",
              "connection.url": pg.url(db), "table.name.format": "orders"}
    worker = Worker(tmp_path, {
        "src": {"connector.class": "jdbc-source", "connection.url": source_url,
                "mode": "incrementing", "incrementing.column.name": "id",
                "topic.prefix": "shop-", "poll.interval.ms": "100",
                "topic.creation.default.partitions": "1",
                "topic.creation.default.replication.factor": "1"},
        "tolerant": {**common, "errors.tolerance": "all",
                     "errors.deadletterqueue.topic.name": "dlq",
                     "errors.deadletterqueue.topic.replication.factor": "1",
                     "errors.deadletterqueue.context.headers.enable": "true"}})
    worker.start()
    try:
        worker.wait(lambda: _count(target, "orders") == 2, "the good rows")
        assert rows(target, "SELECT id FROM orders ORDER BY id") == [(1,), (3,)]
    finally:
        worker.stop()  # the embedded log is the worker's until it exits
    dead = _dlq(tmp_path / "data")
    assert len(dead) == 1 and json.loads(dead[0].value)["payload"]["id"] == 2
    headers = dict(dead[0].headers)
    assert headers["__connect.errors.topic"] == b"shop-orders"
    assert headers["__connect.errors.offset"] == b"1"
    execute(target, "TRUNCATE orders")
    (tmp_path / "strict").mkdir()
    strict = Worker(tmp_path / "strict", {
        "src": {"connector.class": "jdbc-source", "connection.url": source_url,
                "mode": "incrementing", "incrementing.column.name": "id",
                "topic.prefix": "shop-", "poll.interval.ms": "100",
                "topic.creation.default.partitions": "1",
                "topic.creation.default.replication.factor": "1"},
        "strict": common})
    strict.start()
    try:
        status = strict.wait(lambda: (s := strict.status("strict")) and s.get("tasks") and
                             s["tasks"][0]["state"] == "FAILED" and s, "the sink to fail")
        assert "shop-orders-0@1" in status["tasks"][0]["trace"]
        assert rows(target, "SELECT id FROM orders ORDER BY id") == [(1,)]
    finally:
        strict.stop()
    source.dispose()
    target.dispose()


def test_tables_created_while_running_get_tasks(tmp_path):
    db = tmp_path / "lite.db"
    engine = sa.create_engine(f"sqlite:///{db}")
    execute(engine, "CREATE TABLE first (id INTEGER PRIMARY KEY NOT NULL)")
    worker = Worker(tmp_path, {"lite": {
        "connector.class": "jdbc-source", "connection.url": f"jdbc:sqlite:{db}",
        "mode": "incrementing", "incrementing.column.name": "id", "topic.prefix": "lite-",
        "table.poll.interval.ms": "300", "tasks.max": "2",
        "topic.creation.default.partitions": "1",
        "topic.creation.default.replication.factor": "1"}})
    worker.start()

    def tables() -> list[str]:
        response = requests.get(f"{worker.base}/connectors/lite/tasks", timeout=5)
        if response.status_code != 200:
            return []
        return sorted(t[1] for task in response.json()
                      for t in json.loads(task["config"].get("tables", "[]")))

    try:
        worker.wait(lambda: tables() == ["first"], "a task for the first table")
        execute(engine, "CREATE TABLE second (id INTEGER PRIMARY KEY NOT NULL)")
        worker.wait(lambda: tables() == ["first", "second"], "a task for the new table")
        worker.wait(lambda: (s := worker.status("lite")) and len(s.get("tasks", [])) == 2
                    and all(t["state"] == "RUNNING" for t in s["tasks"]),
                    "two running tasks")
    finally:
        worker.stop()
        engine.dispose()


def test_cdc_envelopes_unwrapped_into_sqlite_leave_the_target_equal_to_the_source(
        pg, tmp_path):
    """The real Postgres CDC source (Debezium's connector JSON) into the JDBC sink with
    ``ExtractNewRecordState`` (deletes become tombstones): upserts keyed by the record key,
    tombstones deleting by key, a primary-key change (delete + create), Debezium's types
    (Decimal, Connect times, Uuid, Json, ZonedTimestamp, bytes); the SQLite table ends
    equal to the PostgreSQL one."""
    from postgres_process import PASSWORD

    db = new_database(pg)
    source = sa.create_engine(pg.url(db))
    execute(source, "CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, "
                    "price numeric(10,2), active boolean, placed timestamp, day date, "
                    "score double precision, ref uuid, doc jsonb, raw bytea, at timestamptz)")
    execute(source, """INSERT INTO items SELECT g, 'item ' || g, g + 0.25, g % 2 = 0,
        TIMESTAMP '2024-01-01 00:00:00.125' + g * INTERVAL '1 minute',
        DATE '2024-01-01' + g, g / 3.0, md5(g::text)::uuid,
        jsonb_build_object('g', g, 'tags', jsonb_build_array('a', g)),
        decode(lpad(to_hex(g), 4, '0'), 'hex'),
        TIMESTAMPTZ '2024-01-01 00:00:00.5+02' + g * INTERVAL '1 hour'
        FROM generate_series(1, 100) g""")
    target_url = f"sqlite:///{tmp_path / 'mirror.db'}"
    worker = Worker(tmp_path, {
        "inventory-connector": {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "plugin.name": "pgoutput", "database.hostname": "127.0.0.1",
            "database.port": str(pg.port), "database.user": "postgres",
            "database.password": PASSWORD, "database.dbname": db, "topic.prefix": "dbserver1",
            "slot.name": f"s_{db}", "table.include.list": "public.items",
            "publication.autocreate.mode": "filtered", "time.precision.mode": "connect",
            "poll.interval.ms": "100", "topic.creation.default.partitions": "1",
            "topic.creation.default.replication.factor": "1"},
        "mirror": {
            "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
            "topics": "dbserver1.public.items",
            "connection.url": f"jdbc:sqlite:{tmp_path / 'mirror.db'}",
            "table.name.format": "items", "auto.create": "true", "insert.mode": "upsert",
            "pk.mode": "record_key", "pk.fields": "id", "delete.enabled": "true",
            "transforms": "unwrap",
            "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
            "transforms.unwrap.delete.tombstone.handling.mode": "tombstone"}})
    target = sa.create_engine(target_url)
    columns = "id, name, price, active, placed, day, score, ref, doc, raw, at"

    def mirrored() -> list[dict[str, Any]]:
        try:
            with target.connect() as conn:
                got = [dict(r._mapping) for r in conn.execute(
                    sa.text(f"SELECT {columns} FROM items ORDER BY id"))]
        except sa.exc.SQLAlchemyError:
            return []
        for row in got:  # SQLite hands back its storage classes
            if row["price"] is not None:
                row["price"] = decimal.Decimal(str(row["price"])).quantize(
                    decimal.Decimal("0.01"))
            for name, parse in (("placed", dt.datetime.fromisoformat),
                                ("day", dt.date.fromisoformat)):
                if isinstance(row[name], str):
                    row[name] = parse(row[name])
            if row["active"] is not None:
                row["active"] = bool(row["active"])
            if isinstance(row["doc"], str):  # io.debezium.data.Json: the document's text
                row["doc"] = json.loads(row["doc"])
            if isinstance(row["at"], str):  # io.debezium.time.ZonedTimestamp: ISO 8601
                row["at"] = dt.datetime.fromisoformat(row["at"])
        return got

    def expected() -> list[dict[str, Any]]:
        with source.connect() as conn:
            want = [dict(r._mapping) for r in conn.execute(
                sa.text(f"SELECT {columns} FROM items ORDER BY id"))]
        for row in want:  # uuid as io.debezium.data.Uuid's string, bytea as bytes
            row["ref"] = None if row["ref"] is None else str(row["ref"])
            row["raw"] = None if row["raw"] is None else bytes(row["raw"])
        return want

    worker.start()
    try:
        worker.wait(lambda: mirrored() == expected(), "the snapshot in SQLite")
        execute(source, """INSERT INTO items SELECT g, 'item ' || g, g + 0.5, true,
            TIMESTAMP '2024-02-01 12:00:00' + g * INTERVAL '1 second', NULL, NULL
            FROM generate_series(101, 150) g""")
        execute(source, "UPDATE items SET price = price * 2, active = NOT active "
                        "WHERE id % 4 = 0")
        execute(source, "UPDATE items SET name = 'renamed', placed = NULL WHERE id = 9")
        execute(source, """UPDATE items SET doc = '{"x": [1, null]}', ref = NULL,
            at = at + INTERVAL '1 day', raw = '\\x00ff' WHERE id % 5 = 0""")
        execute(source, "DELETE FROM items WHERE id % 7 = 0")
        execute(source, "UPDATE items SET id = 1000 WHERE id = 10")  # a key change
        execute(source, "DELETE FROM items WHERE id = 11")
        execute(source, "INSERT INTO items (id, name) VALUES (11, 'again')")
        want = expected()
        assert 10 not in {r["id"] for r in want} and 1000 in {r["id"] for r in want}
        worker.wait(lambda: mirrored() == want, "the changes in SQLite")
        status = worker.status("mirror")
        assert status["tasks"][0]["state"] == "RUNNING", status
    finally:
        worker.stop()
        source.dispose()
        target.dispose()
    assert mirrored() == want
