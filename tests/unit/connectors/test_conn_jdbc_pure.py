"""The JDBC connectors' pure parts: JDBC URL translation, Confluent's offset shape, the
MERGE statement for databases without a native upsert, config cross-checks, and the
source's generated batch builder."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import mssql, oracle, postgresql

from connect.api import ConfigError, Password, Schema, SchemaBuilder
from connectors.jdbc.config import SinkConfig, SourceConfig
from connectors.jdbc.database import to_sqlalchemy_url
from connectors.jdbc.offsets import TableOffset
from connectors.jdbc.record_builder import batch_builder
from connectors.jdbc.sink_statements import merge_sql, upsert_statement
from connectors.jdbc.types import identity


@pytest.mark.parametrize(("jdbc", "expected"), [
    ("jdbc:postgresql://db.example:5433/shop?user=app&password=pw&ssl=true",
     "postgresql+psycopg://app:pw@db.example:5433/shop"),
    ("jdbc:postgresql://localhost/shop", "postgresql+psycopg://localhost/shop"),
    ("jdbc:mysql://h:3306/db?user=u", "mysql+pymysql://u@h:3306/db"),
    ("jdbc:mariadb://h/db", "mariadb+pymysql://h/db"),
    ("jdbc:sqlite:/var/data/shop.db", "sqlite:////var/data/shop.db"),
    ("jdbc:sqlite:relative.db", "sqlite:///relative.db"),
    ("jdbc:sqlite::memory:", "sqlite://"),
    ("jdbc:sqlserver://h:1433;databaseName=d;user=u",
     "mssql+pyodbc://u@h:1433/d?driver=ODBC+Driver+18+for+SQL+Server"),
    ("jdbc:oracle:thin:@//h:1521/svc", "oracle+oracledb://h:1521?service_name=svc"),
    ("postgresql+psycopg://u:p@h/db", "postgresql+psycopg://u:p@h/db"),
    ("sqlite:///x.db", "sqlite:///x.db"),
])
def test_jdbc_urls_are_translated(jdbc, expected):
    assert to_sqlalchemy_url(jdbc).render_as_string(hide_password=False) == expected


@pytest.mark.parametrize("bad", ["jdbc:informix://h/db", "not a url", "jdbc:db2:x"])
def test_unknown_urls_name_connection_url(bad):
    with pytest.raises(ConfigError) as info:
        to_sqlalchemy_url(bad)
    assert info.value.name == "connection.url"


def test_offsets_have_confluents_shape_and_round_trip():
    ts = dt.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=dt.UTC)
    stored = TableOffset(42, ts).to_map()
    assert stored == {"incrementing": 42, "timestamp": 1714564800123,
                      "timestamp_nanos": 123456000}
    assert TableOffset.from_map(stored) == TableOffset(42, ts)
    # Written by Confluent's connector (a Java Timestamp's millis and nanos).
    assert TableOffset.from_map({"timestamp": 1714564800123, "timestamp_nanos": 123456789}) \
        == TableOffset(None, ts)
    assert TableOffset.from_map({"timestamp": 1714564800123}).timestamp == \
        ts.replace(microsecond=123000)
    assert TableOffset.from_map(None) == TableOffset()


def _table() -> sa.Table:
    return sa.Table("orders", sa.MetaData(), sa.Column("id", sa.BigInteger, primary_key=True),
                    sa.Column("item", sa.Text), sa.Column("qty", sa.Integer))


def test_merge_for_sql_server_and_oracle():
    # The same statement runs for real on PostgreSQL 15 (test_jdbc_sink_merge.py).
    sql = merge_sql(_table(), ["id"], mssql.dialect())
    assert sql == ("MERGE INTO orders WITH (HOLDLOCK) t USING (SELECT CAST(:id AS BIGINT) "
                   "AS id, CAST(:item AS TEXT) AS item, CAST(:qty AS INTEGER) AS qty) s ON "
                   "(t.id = s.id) WHEN MATCHED THEN UPDATE SET item = s.item, qty = s.qty "
                   "WHEN NOT MATCHED THEN INSERT (id, item, qty) VALUES "
                   "(s.id, s.item, s.qty);")
    oracle_sql = merge_sql(_table(), ["id"], oracle.dialect())
    assert "CAST(:id AS NUMBER(19)) AS id" in oracle_sql
    assert "FROM dual) s ON" in oracle_sql and not oracle_sql.endswith(";")


def test_postgres_upsert_is_on_conflict_do_update():
    stmt = upsert_statement(_table(), ["id"], postgresql.dialect())
    sql = str(stmt.compile(dialect=postgresql.dialect()))
    assert "ON CONFLICT (id) DO UPDATE SET item = excluded.item, qty = excluded.qty" in sql


def test_password_stays_hidden_and_cross_checks_name_keys():
    config = SourceConfig.parse({"connection.url": "sqlite://", "mode": "bulk",
                                 "connection.password": "s3cret"})
    assert isinstance(config.connection.password, Password)
    assert "s3cret" not in repr(config)
    with pytest.raises(ConfigError) as info:
        SourceConfig.parse({"connection.url": "sqlite://", "mode": "timestamp"})
    assert info.value.name == "timestamp.column.name"
    with pytest.raises(ConfigError) as info:
        SinkConfig.parse({"connection.url": "sqlite://", "pk.mode": "kafka",
                          "pk.fields": "a,b"})
    assert info.value.name == "pk.fields"


def test_passwords_are_declared_as_password_keys():
    from connect.api import ConfigType
    from connectors.jdbc.config import SINK_CONFIG_DEF, SOURCE_CONFIG_DEF

    for definition in (SOURCE_CONFIG_DEF, SINK_CONFIG_DEF):
        assert definition.config_keys["connection.password"].type is ConfigType.PASSWORD


@pytest.mark.parametrize("bad", ["jdbc:postgresql://h:port/db", "sqlite://h:x/y",
                                 "jdbc:oracle:thin:@h"])
def test_malformed_urls_are_config_errors_not_crashes(bad):
    with pytest.raises(ConfigError) as info:
        to_sqlalchemy_url(bad)
    assert info.value.name == "connection.url"


def test_batch_builder_converts_only_where_needed_and_reads_offsets_inline():
    schema = (SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA)
              .field("name", Schema.OPTIONAL_STRING_SCHEMA).build())
    part = {"protocol": "1", "table": "t"}
    rows = [(1, "a", object()), (2, None, object())]  # column 2 has no Connect type
    build = batch_builder(topic="db-t", schema=schema, partition=part, width=3,
                          indexes=[0, 1], converts=[identity, lambda v: v and v.upper()],
                          inc_index=0, inc_needs_int=False)
    got = build(rows, None)
    assert [(r.value.get("id"), r.value.get("name")) for r in got] == [(1, "A"), (2, None)]
    assert [r.source_offset for r in got] == [{"incrementing": 1}, {"incrementing": 2}]
    assert {r.topic for r in got} == {"db-t"} and got[0].source_partition is part
    # Every column passed as is: the row itself is the struct's values; a NUMERIC
    # incrementing column's offset is made an int.
    same = batch_builder(topic="t", schema=schema, partition=part, width=2, indexes=[0, 1],
                         converts=[identity, identity], inc_index=0)
    record = same([(decimal.Decimal(7), "x")], None)[0]
    assert record.source_offset == {"incrementing": 7}
    assert type(record.source_offset["incrementing"]) is int
    assert record.value.get("name") == "x"
    given = batch_builder(topic="t", schema=schema, partition=part, width=2, indexes=[0, 1],
                          converts=[identity, identity], inline_offsets=False)
    offsets = [{"timestamp": 5, "timestamp_nanos": 0}, {"timestamp": 6, "timestamp_nanos": 0}]
    assert [r.source_offset for r in given([(1, "a"), (2, "b")], offsets)] == offsets
    bulk = batch_builder(topic="t", schema=schema, partition=part, width=2, indexes=[0, 1],
                         converts=[identity, identity])
    assert bulk([(1, "a")], None)[0].source_offset is None
