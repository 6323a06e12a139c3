"""The JDBC sink task against SQLite files and a real PostgreSQL: insert, upsert and
update modes, every pk mode, deletes, auto.create and auto.evolve, nested structs,
constraint violations (DLQ or failure naming the record) and a database restart."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pytest
import sqlalchemy as sa
from jdbc_support import Reporter, SinkContext, execute, started_sink, url_rows

from connect.api import (
    ConfigError,
    ConnectError,
    Date,
    Decimal,
    RetriableError,
    Schema,
    SchemaBuilder,
    SinkRecord,
    Struct,
    Timestamp,
)
from connectors.jdbc import JdbcSinkConnector, JdbcSinkTask

pytestmark = pytest.mark.integration

VALUE = (SchemaBuilder.struct().name("order")
         .field("id", Schema.INT64_SCHEMA)
         .field("item", Schema.OPTIONAL_STRING_SCHEMA)
         .field("qty", Schema.INT32_SCHEMA)
         .build())
KEY = SchemaBuilder.struct().name("key").field("id", Schema.INT64_SCHEMA).build()


def order(offset: int, oid: int, item: str | None, qty: int, *, topic: str = "orders",
          key: bool = True, partition: int = 0) -> SinkRecord:
    value = Struct(VALUE).put("id", oid).put("item", item).put("qty", qty)
    return SinkRecord(topic=topic, kafka_partition=partition, kafka_offset=offset,
                      key_schema=KEY if key else None,
                      key=Struct(KEY).put("id", oid) if key else None,
                      value_schema=VALUE, value=value)


def tombstone(offset: int, oid: int) -> SinkRecord:
    return SinkRecord(topic="orders", kafka_partition=0, kafka_offset=offset,
                      key_schema=KEY, key=Struct(KEY).put("id", oid))


def start(url: str, reporter: Reporter | None = None, **extra: str) -> JdbcSinkTask:
    return started_sink({"connection.url": url, "auto.create": "true", **extra}, reporter)


def table(url: str, sql: str = "SELECT id, item, qty FROM orders ORDER BY id") -> list[Any]:
    return url_rows(url, sql)


def test_insert_without_key_creates_the_table(db):
    task = start(db)
    task.put([order(0, 1, "a", 2), order(1, 2, None, 3)])
    task.stop()
    assert table(db) == [(1, "a", 2), (2, None, 3)]
    inspector = sa.inspect(sa.create_engine(db))
    assert inspector.get_pk_constraint("orders")["constrained_columns"] == []
    nullable = {c["name"]: c["nullable"] for c in inspector.get_columns("orders")}
    assert nullable == {"id": False, "item": True, "qty": False}


def test_upsert_by_record_value_replays_idempotently_within_and_across_batches(db):
    batch = [order(0, 1, "a", 1), order(1, 2, "b", 1), order(2, 1, "a2", 5)]
    task = start(db, **{"insert.mode": "upsert", "pk.mode": "record_value",
                        "pk.fields": "id"})
    task.put(batch)
    assert table(db) == [(1, "a2", 5), (2, "b", 1)]
    task.put(batch)  # a redelivery after a crash
    task.put([order(3, 2, "b2", 7)])
    task.stop()
    assert table(db) == [(1, "a2", 5), (2, "b2", 7)]
    pk = sa.inspect(sa.create_engine(db)).get_pk_constraint("orders")
    assert pk["constrained_columns"] == ["id"]


def test_pk_mode_kafka_names_rows_by_coordinates(db):
    task = start(db, **{"insert.mode": "upsert", "pk.mode": "kafka"})
    task.put([order(10, 1, "a", 1), order(11, 1, "b", 2, partition=0)])
    task.put([order(10, 1, "a", 1)])  # replayed: same coordinates, same row
    task.stop()
    got = table(db, "SELECT __connect_topic, __connect_partition, __connect_offset, item "
                    "FROM orders ORDER BY __connect_offset")
    assert got == [("orders", 0, 10, "a"), ("orders", 0, 11, "b")]


def test_record_key_upserts_and_tombstones_delete(db):
    task = start(db, **{"insert.mode": "upsert", "pk.mode": "record_key",
                        "delete.enabled": "true"})
    task.put([order(0, 1, "a", 1), order(1, 2, "b", 1), order(2, 3, "c", 1)])
    task.put([tombstone(3, 2), order(4, 3, "c2", 2), tombstone(5, 1), order(6, 1, "back", 9)])
    task.stop()
    assert table(db) == [(1, "back", 9), (3, "c2", 2)]


def test_primitive_key_column_and_update_mode(db):
    engine = sa.create_engine(db)
    execute(engine, "CREATE TABLE orders (k BIGINT PRIMARY KEY, id BIGINT, item TEXT, "
                    "qty INTEGER)")
    execute(engine, "INSERT INTO orders VALUES (1, 1, 'old', 0), (2, 2, 'keep', 0)")
    engine.dispose()
    record = order(0, 1, "new", 4)
    record = record.new_record(key_schema=Schema.INT64_SCHEMA, key=1)
    missing = order(1, 9, "nobody", 1).new_record(key_schema=Schema.INT64_SCHEMA, key=9)
    task = start(db, **{"insert.mode": "update", "pk.mode": "record_key", "pk.fields": "k"})
    task.put([record, missing])
    task.stop()
    assert table(db, "SELECT k, item, qty FROM orders ORDER BY k") == [
        (1, "new", 4), (2, "keep", 0)]


def test_table_name_format_and_fields_include_list(db):
    task = start(db, **{"table.name.format": "kafka_${topic}", "fields.include.list": "id,qty"})
    task.put([order(0, 1, "dropped", 2)])
    task.stop()
    assert table(db, "SELECT * FROM kafka_orders") == [(1, 2)]


def test_auto_evolve_adds_optional_columns_and_refuses_required_ones(db):
    task = start(db, **{"auto.evolve": "true"})
    task.put([order(0, 1, "a", 1)])
    wider = (SchemaBuilder.struct().name("order").field("id", Schema.INT64_SCHEMA)
             .field("item", Schema.OPTIONAL_STRING_SCHEMA).field("qty", Schema.INT32_SCHEMA)
             .field("note", Schema.OPTIONAL_STRING_SCHEMA).build())
    value = Struct(wider).put("id", 2).put("item", "b").put("qty", 2).put("note", "hi")
    task.put([SinkRecord(topic="orders", kafka_partition=0, kafka_offset=1,
                         value_schema=wider, value=value)])
    assert table(db, "SELECT id, note FROM orders ORDER BY id") == [(1, None), (2, "hi")]
    required = (SchemaBuilder.struct().name("order").field("id", Schema.INT64_SCHEMA)
                .field("item", Schema.OPTIONAL_STRING_SCHEMA)
                .field("qty", Schema.INT32_SCHEMA).field("must", Schema.INT32_SCHEMA).build())
    value = Struct(required).put("id", 3).put("item", "c").put("qty", 3).put("must", 1)
    with pytest.raises(ConnectError, match="'must', as it is not optional"):
        task.put([SinkRecord(topic="orders", kafka_partition=0, kafka_offset=2,
                             value_schema=required, value=value)])
    task.stop()


def test_a_missing_table_without_auto_create_and_a_new_field_without_auto_evolve(db):
    task = start(db, **{"auto.create": "false"})
    with pytest.raises(ConnectError, match=r"missing and auto\.create is disabled"):
        task.put([order(0, 1, "a", 1)])
    task.stop()
    engine = sa.create_engine(db)
    execute(engine, "CREATE TABLE orders (id BIGINT, qty INTEGER)")
    engine.dispose()
    task = start(db, **{"auto.create": "false"})
    with pytest.raises(ConnectError, match=r"lacks column.*item.*auto\.evolve"):
        task.put([order(0, 1, "a", 1)])
    task.stop()


def test_nested_structs_are_refused_with_a_flatten_hint(db):
    inner = SchemaBuilder.struct().name("addr").field("city", Schema.STRING_SCHEMA).build()
    schema = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field("addr", inner).build()
    value = Struct(schema).put("id", 1).put("addr", Struct(inner).put("city", "Oslo"))
    record = SinkRecord(topic="people", kafka_partition=2, kafka_offset=7,
                        value_schema=schema, value=value)
    task = start(db)
    with pytest.raises(ConnectError, match=r"people-2@7.*Flatten"):
        task.put([record])
    task.stop()


def test_constraint_violation_goes_to_the_dlq_and_the_rest_is_written(db):
    engine = sa.create_engine(db)
    execute(engine, "CREATE TABLE orders (id BIGINT PRIMARY KEY, item TEXT, "
                    "qty INTEGER CHECK (qty >= 0))")
    engine.dispose()
    reporter = Reporter()
    task = start(db, reporter)
    task.put([order(0, 1, "a", 1), order(1, 2, "bad", -5), order(2, 3, "c", 1)])
    task.flush({})
    task.stop()
    assert table(db) == [(1, "a", 1), (3, "c", 1)]
    assert [(r.kafka_offset, type(e).__name__) for r, e in reporter.reported] == \
        [(1, "IntegrityError")]


def test_constraint_violation_without_tolerance_names_topic_partition_offset(db):
    task = start(db, **{"pk.mode": "record_value", "pk.fields": "id"})
    task.put([order(0, 1, "a", 1)])
    with pytest.raises(ConnectError, match=r"orders-0@1 to table 'orders'"):
        task.put([order(1, 1, "dup", 1)])
    task.stop()


def test_types_round_trip_through_auto_created_columns(db):
    schema = (SchemaBuilder.struct().name("t")
              .field("i8", Schema.INT8_SCHEMA).field("i16", Schema.INT16_SCHEMA)
              .field("f32", Schema.FLOAT32_SCHEMA).field("f64", Schema.FLOAT64_SCHEMA)
              .field("flag", Schema.BOOLEAN_SCHEMA).field("raw", Schema.BYTES_SCHEMA)
              .field("money", Decimal.builder(2).build()).field("day", Date.SCHEMA)
              .field("at", Timestamp.SCHEMA).build())
    at = dt.datetime(2024, 3, 1, 10, 20, 30, 123000, tzinfo=dt.UTC)
    value = (Struct(schema).put("i8", 7).put("i16", -300).put("f32", 1.5).put("f64", 2.25)
             .put("flag", True).put("raw", b"\x00\xff").put("money", decimal.Decimal("12.34"))
             .put("day", dt.date(2024, 2, 29)).put("at", at))
    task = start(db)
    task.put([SinkRecord(topic="typed", kafka_partition=0, kafka_offset=0,
                         value_schema=schema, value=value)])
    task.stop()
    engine = sa.create_engine(db)
    reflected = sa.Table("typed", sa.MetaData(), autoload_with=engine)
    with engine.connect() as conn:
        row = conn.execute(sa.select(reflected)).one()._mapping
    engine.dispose()
    assert (row["i8"], row["i16"], row["f32"], row["f64"]) == (7, -300, 1.5, 2.25)
    assert bool(row["flag"]) is True and bytes(row["raw"]) == b"\x00\xff"
    assert decimal.Decimal(str(row["money"])) == decimal.Decimal("12.34")
    assert row["day"] == dt.date(2024, 2, 29)
    assert row["at"] == at.replace(tzinfo=None)  # UTC wall time, as db.timezone says


def test_database_restart_is_retried_and_nothing_is_lost_or_doubled(pg):
    url = pg.url()
    task = JdbcSinkTask()
    props = {"connection.url": url, "auto.create": "true", "insert.mode": "upsert",
             "pk.mode": "record_value", "pk.fields": "id", "max.retries": "5",
             "retry.backoff.ms": "100", "table.name.format": "restarted"}
    context = SinkContext(props)
    task.initialize(context)
    task.start(props)
    task.put([order(i, i, "x", i) for i in range(50)])
    pg.stop("fast")  # an immediate stop may lose commits: the test server runs fsync=off
    batch = [order(i, i, "y", i) for i in range(25, 100)]
    with pytest.raises(RetriableError):
        task.put(batch)
    assert context.timeout_ms == 100
    pg.start()
    task.put(batch)  # the runtime redelivers the same records
    task.stop()
    got = table(url, "SELECT id, item FROM restarted ORDER BY id")
    assert got == [(i, "x" if i < 25 else "y") for i in range(100)]


@pytest.mark.parametrize(("overrides", "key"), [
    ({"delete.enabled": "true", "pk.mode": "record_value"}, "delete.enabled"),
    ({"insert.mode": "upsert"}, "pk.mode"),
    ({"insert.mode": "merge"}, "insert.mode"),
    ({"connection.url": "jdbc:nosuch://h/db"}, "connection.url"),
])
def test_bad_sink_config_names_the_key(tmp_path, overrides, key):
    props = {"connection.url": f"sqlite:///{tmp_path / 'x.db'}", "topics": "t", **overrides}
    result = JdbcSinkConnector().validate(props)
    errors = {v.name: v.errors for v in result.config_values if v.errors}
    assert key in errors, errors
    with pytest.raises(ConfigError):
        JdbcSinkConnector().start(props)


def test_identifiers_are_quoted_and_timestamps_written_in_db_timezone(pg):
    url = pg.url()
    schema = (SchemaBuilder.struct().name("Ev").field("Id", Schema.INT64_SCHEMA)
              .field("At", Timestamp.SCHEMA).build())
    value = Struct(schema).put("Id", 1).put("At", dt.datetime(2024, 7, 1, 12, tzinfo=dt.UTC))
    task = start(url, **{"db.timezone": "Europe/Paris", "insert.mode": "upsert",
                         "pk.mode": "record_value", "pk.fields": "Id"})
    task.put([SinkRecord(topic="MixedCase", kafka_partition=0, kafka_offset=0,
                         value_schema=schema, value=value)])
    task.stop()
    assert table(url, 'SELECT "Id", "At" FROM "MixedCase"') == [
        (1, dt.datetime(2024, 7, 1, 14, 0))]


def test_retries_run_out_and_the_task_fails_naming_the_database(tmp_path, pg):
    from broker_process import free_port

    url = f"postgresql+psycopg://postgres:x@127.0.0.1:{free_port()}/none"
    props = {"connection.url": url, "max.retries": "1", "retry.backoff.ms": "10",
             "auto.create": "true"}
    task = JdbcSinkTask()
    task.initialize(SinkContext(props))
    task.start(props)
    with pytest.raises(RetriableError):
        task.put([order(0, 1, "a", 1)])
    with pytest.raises(ConnectError, match=r"failed after 1 retries") as info:
        task.put([order(0, 1, "a", 1)])
    assert not isinstance(info.value, RetriableError)
    assert ":x@" not in str(info.value)
    task.stop()


def test_a_tombstone_before_the_table_exists_creates_nothing(db):
    task = start(db, **{"insert.mode": "upsert", "pk.mode": "record_key",
                        "delete.enabled": "true"})
    task.put([tombstone(0, 1)])
    assert not sa.inspect(sa.create_engine(db)).has_table("orders")
    task.put([order(1, 1, "a", 1), tombstone(2, 1), order(3, 2, "b", 2)])
    task.stop()
    assert table(db) == [(2, "b", 2)]
