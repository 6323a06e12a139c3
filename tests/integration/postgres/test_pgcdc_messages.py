"""Logical decoding messages (``pg_logical_emit_message``) as Debezium's op ``m`` events,
against a real PostgreSQL: transactional and not, prefix filters, binary handling,
transaction metadata, and no repeat after a restart."""

from __future__ import annotations

import base64

import pytest

psycopg = pytest.importorskip("psycopg")

from pgcdc_driver import Driver, props, sql  # noqa: E402
from postgres_process import postgres_fixture  # noqa: E402

pytestmark = pytest.mark.integration


pg = postgres_fixture()


def test_transactional_and_non_transactional_messages(pg, db):
    sql(pg, "CREATE TABLE items (id int PRIMARY KEY)", dbname=db)
    d = Driver(props(pg, db, **{"message.prefix.exclude.list": "secret.*"}))
    try:
        assert d.quiet() == []
        with psycopg.connect(pg.dsn(db)) as conn:  # one transaction
            conn.execute("INSERT INTO items VALUES (1)")
            conn.execute("SELECT pg_logical_emit_message(true, 'audit', 'in tx')")
            conn.execute("SELECT pg_logical_emit_message(true, 'secret.x', 'hidden')")
            conn.execute("SELECT pg_logical_emit_message(false, 'outbox', '\\x00ff'::bytea)")
        records = d.poll_until(3)
        assert [r.topic for r in records] == [
            "dbserver1.message", "dbserver1.public.items", "dbserver1.message"]
        # The non-transactional message is decoded at once, before the transaction
        # (sent at its commit).
        outside, row, inside = records
        assert outside.key_schema.name == "io.debezium.connector.postgresql.MessageKey"
        assert outside.value_schema.name == "io.debezium.connector.postgresql.MessageValue"
        assert outside.key.get("prefix") == "outbox"
        p = d.payload(outside)
        assert p["op"] == "m" and p["message"] == {
            "prefix": "outbox", "content": base64.b64encode(b"\x00\xff").decode()}
        assert p["source"]["txId"] is None and p["source"]["table"] == ""
        assert p["source"]["schema"] == "" and p["source"]["lsn"] > 0
        q = d.payload(inside)
        assert q["message"]["prefix"] == "audit"
        assert base64.b64decode(q["message"]["content"]) == b"in tx"
        assert q["source"]["txId"] == d.payload(row)["source"]["txId"]
        assert q["source"]["ts_ms"] == d.payload(row)["source"]["ts_ms"]
        assert q["transaction"] is None
        assert d.quiet() == []
    finally:
        d.stop()


def test_prefix_include_list_binary_mode_and_transaction_metadata(pg, db):
    d = Driver(props(pg, db, **{"message.prefix.include.list": "keep,also.*",
                                "binary.handling.mode": "hex",
                                "provide.transaction.metadata": "true"}))
    try:
        assert d.quiet() == []
        with psycopg.connect(pg.dsn(db)) as conn:
            conn.execute("SELECT pg_logical_emit_message(true, 'keep', 'a')")
            conn.execute("SELECT pg_logical_emit_message(true, 'drop', 'b')")
            conn.execute("SELECT pg_logical_emit_message(true, 'also.this', 'c')")
        records = d.poll_until(4)
        assert [r.topic for r in records] == ["dbserver1.transaction", "dbserver1.message",
                                              "dbserver1.message", "dbserver1.transaction"]
        msgs = [d.payload(r) for r in records[1:3]]
        assert [(m["message"]["prefix"], m["message"]["content"]) for m in msgs] == [
            ("keep", "61"), ("also.this", "63")]
        assert [m["transaction"]["total_order"] for m in msgs] == [1, 2]
        end = d.payload(records[3])
        assert end["data_collections"] == [
            {"data_collection": "LOGICAL_DECODING_MESSAGE", "event_count": 2}]
    finally:
        d.stop()


def test_messages_are_not_repeated_after_a_restart(pg, db):
    p = props(pg, db)
    d = Driver(p)
    try:
        assert d.quiet() == []
        sql(pg, "SELECT pg_logical_emit_message(false, 'n', '1')",
            "SELECT pg_logical_emit_message(true, 't', '2')", dbname=db)
        first = d.poll_until(2)
        d.commit(first)
    finally:
        d.stop()
    d = Driver(p, d.store)
    try:
        sql(pg, "SELECT pg_logical_emit_message(false, 'n', '3')", dbname=db)
        again = d.poll_until(1) + d.quiet()
        assert [base64.b64decode(d.payload(r)["message"]["content"]) for r in again] == [b"3"]
    finally:
        d.stop()


def test_both_prefix_lists_are_refused(pg, db):
    from connect.api import ConfigError
    from connectors.postgres.config import PostgresConfig
    with pytest.raises(ConfigError) as err:
        PostgresConfig.parse(props(pg, db, **{"message.prefix.include.list": "a",
                                              "message.prefix.exclude.list": "b"}))
    assert "message.prefix.exclude.list" in str(err.value)
