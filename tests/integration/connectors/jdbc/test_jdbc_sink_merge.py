"""The sink's MERGE upsert (the form of SQL Server, Oracle and every dialect without an
upsert of its own) run for real on PostgreSQL 15+, which has MERGE: PostgreSQL is taken
out of the native-upsert table for these tests, so the sink task generates and sends
exactly the statement those dialects get. Shows insert-or-update, NULLs and every
column type through the MERGE's CASTs, composite keys, and idempotent replays."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pytest
import sqlalchemy as sa
from jdbc_support import started_sink, url_rows

from connect.api import (
    Date,
    Decimal,
    Schema,
    SchemaBuilder,
    SinkRecord,
    Struct,
    Timestamp,
)
from connectors.jdbc import JdbcSinkTask, sink_statements

pytestmark = pytest.mark.integration

VALUE = (SchemaBuilder.struct().name("row")
         .field("id", Schema.INT64_SCHEMA).field("name", Schema.OPTIONAL_STRING_SCHEMA)
         .field("qty", Schema.OPTIONAL_INT32_SCHEMA).field("i8", Schema.INT8_SCHEMA)
         .field("f32", Schema.FLOAT32_SCHEMA).field("f64", Schema.OPTIONAL_FLOAT64_SCHEMA)
         .field("flag", Schema.BOOLEAN_SCHEMA).field("raw", Schema.OPTIONAL_BYTES_SCHEMA)
         .field("money", Decimal.builder(2).build()).field("day", Date.SCHEMA)
         .field("at", Timestamp.SCHEMA).build())
AT = dt.datetime(2024, 3, 1, 10, 20, 30, 123000, tzinfo=dt.UTC)


def record(offset: int, oid: int, name: str | None, qty: int | None,
           partition: int = 0) -> SinkRecord:
    value = (Struct(VALUE).put("id", oid).put("name", name).put("qty", qty).put("i8", -3)
             .put("f32", 0.5).put("f64", None if qty is None else qty / 4)
             .put("flag", qty is not None).put("raw", None if name is None else b"\x00\xff")
             .put("money", decimal.Decimal(f"{oid}.25")).put("day", dt.date(2024, 2, 29))
             .put("at", AT + dt.timedelta(seconds=oid)))
    return SinkRecord(topic="merged", kafka_partition=partition, kafka_offset=offset,
                      value_schema=VALUE, value=value)


@pytest.fixture
def merge_db(pg, monkeypatch) -> Any:
    """A fresh database on the module's PostgreSQL with the sink using MERGE there, and
    the statements the sink sends (to show MERGE reached the server)."""
    admin = sa.create_engine(pg.url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        version = conn.execute(sa.text("SHOW server_version_num")).scalar_one()
        if int(version) < 150000:
            pytest.skip(f"PostgreSQL {version} has no MERGE (15 and later do)")
        conn.exec_driver_sql("DROP DATABASE IF EXISTS merge_test")
        conn.exec_driver_sql("CREATE DATABASE merge_test")
    admin.dispose()
    monkeypatch.delitem(sink_statements.NATIVE_UPSERTS, "postgresql")
    sent: list[str] = []

    def seen(conn, cursor, statement, parameters, context, executemany) -> None:
        sent.append(statement)
    sa.event.listen(sa.engine.Engine, "before_cursor_execute", seen)
    try:
        yield pg.url("merge_test"), sent
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", seen)


def start(url: str, **extra: str) -> JdbcSinkTask:
    return started_sink({"connection.url": url, "auto.create": "true", "insert.mode": "upsert",
                         "table.name.format": "merged", **extra})


def test_merge_inserts_or_updates_and_a_replay_changes_nothing(merge_db):
    url, sent = merge_db
    first = [record(0, 1, "a", 1), record(1, 2, "b", None), record(2, 1, "a2", 5)]
    task = start(url, **{"pk.mode": "record_value", "pk.fields": "id"})
    task.put(first)
    assert [s for s in sent if s.startswith("MERGE INTO")], sent
    assert not any("ON CONFLICT" in s for s in sent)
    query = "SELECT id, name, qty, f64, flag FROM merged ORDER BY id"
    assert url_rows(url, query) == [(1, "a2", 5, 1.25, True), (2, "b", None, None, False)]
    second = [record(3, 2, None, 7), record(4, 3, "c", 0)]
    task.put(second)
    after = url_rows(url, query)
    assert after == [(1, "a2", 5, 1.25, True), (2, None, 7, 1.75, True),
                     (3, "c", 0, 0.0, True)]
    task.put(first + second)  # redelivered after a crash: the same final rows
    task.stop()
    assert url_rows(url, query) == after


def test_merge_carries_every_column_type_and_a_composite_kafka_key(merge_db):
    url, _ = merge_db
    task = start(url, **{"pk.mode": "kafka"})
    batch = [record(10, 1, "x", 2), record(10, 1, "y", 3, partition=1),
             record(11, 2, None, None)]
    task.put(batch)
    task.put(batch)
    task.stop()
    engine = sa.create_engine(url)
    reflected = sa.Table("merged", sa.MetaData(), autoload_with=engine)
    with engine.connect() as conn:
        got = [r._mapping for r in conn.execute(sa.select(reflected).order_by(
            reflected.c.__connect_partition, reflected.c.__connect_offset))]
    engine.dispose()
    assert [(r["__connect_partition"], r["__connect_offset"], r["name"]) for r in got] == \
        [(0, 10, "x"), (0, 11, None), (1, 10, "y")]
    row = got[0]
    assert (row["id"], row["qty"], row["i8"], row["f32"], row["f64"]) == (1, 2, -3, 0.5, 0.5)
    assert row["flag"] is True and bytes(row["raw"]) == b"\x00\xff"
    assert row["money"] == decimal.Decimal("1.25")
    assert row["day"] == dt.date(2024, 2, 29)
    assert row["at"] == (AT + dt.timedelta(seconds=1)).replace(tzinfo=None)
    assert got[1]["raw"] is None and got[1]["f64"] is None and got[1]["flag"] is False


def test_merge_into_a_table_of_key_columns_only_inserts_once(merge_db):
    url, sent = merge_db
    task = start(url, **{"pk.mode": "record_value", "pk.fields": "id",
                         "fields.include.list": "id"})
    task.put([record(0, 1, "a", 1), record(1, 2, "b", 2)])
    task.put([record(0, 1, "a", 1), record(2, 3, "c", 3)])
    task.stop()
    merges = [s for s in sent if s.startswith("MERGE INTO")]
    assert merges and all("WHEN MATCHED" not in s for s in merges)
    assert url_rows(url, "SELECT id FROM merged ORDER BY id") == [(1,), (2,), (3,)]
