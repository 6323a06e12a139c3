"""Incremental snapshots through the signal table, against a real PostgreSQL: chunks by
primary key with watermarks, the stream's changes winning inside a window, additional
conditions, stop-snapshot, and a restart that resumes the snapshot from its offset."""

from __future__ import annotations

import json

import pytest

psycopg = pytest.importorskip("psycopg")

from pgcdc_driver import Driver, props, sql  # noqa: E402
from postgres_process import PostgresProcess, postgres_fixture  # noqa: E402

pytestmark = pytest.mark.integration

SIGNAL = "CREATE TABLE debezium_signal (id varchar(64) PRIMARY KEY, type varchar(32) " \
         "NOT NULL, data varchar(2048))"


pg = postgres_fixture()


def signal(pg: PostgresProcess, db: str, sid: str, kind: str, data: dict) -> None:
    with psycopg.connect(pg.dsn(db), autocommit=True) as conn:
        conn.execute("INSERT INTO debezium_signal VALUES (%s, %s, %s)",
                     (sid, kind, json.dumps(data)))


def incr_props(pg: PostgresProcess, db: str, **extra: str) -> dict[str, str]:
    settings = {"signal.data.collection": "public.debezium_signal",
                "incremental.snapshot.chunk.size": "100", "snapshot_mode": "no_data",
                "table_include_list": "public.items", **extra}
    return props(pg, db, **settings)


def by_topic(records: list, topic: str) -> list:
    return [r for r in records if r.topic == topic and r.value is not None]


def test_chunks_by_key_with_the_stream_winning_inside_the_window(pg, db):
    # A trigger updates row 5 in the transaction of the first chunk's open marker: that
    # change is streamed inside the window, so it must replace row 5 of the chunk.
    sql(pg, SIGNAL, "CREATE TABLE items (id int PRIMARY KEY, v text)",
        "INSERT INTO items SELECT g, 'v' || g FROM generate_series(1, 250) g",
        "CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "IF NEW.type = 'snapshot-window-open' AND NOT EXISTS (SELECT 1 FROM items "
        "WHERE id = 5 AND v = 'changed') THEN UPDATE items SET v = 'changed' WHERE id = 5;"
        " END IF; RETURN NEW; END $$",
        "CREATE TRIGGER touch AFTER INSERT ON debezium_signal FOR EACH ROW "
        "EXECUTE FUNCTION touch()", dbname=db)
    d = Driver(incr_props(pg, db))
    try:
        assert d.quiet() == []
        signal(pg, db, "ad-hoc-1", "execute-snapshot",
               {"data-collections": ["public.items"], "type": "incremental"})
        records = d.poll_until(250)
        records += d.quiet()
        items = by_topic(records, "dbserver1.public.items")
        payloads = [d.payload(r) for r in items]
        ops = [(p["op"], p["after"]["id"]) for p in payloads]
        assert ops[0] == ("u", 5)  # streamed inside the first window
        reads = [i for op, i in ops if op == "r"]
        assert reads == [i for i in range(1, 251) if i != 5]  # in key order, 5 superseded
        assert all(p["source"]["snapshot"] == "incremental" for p in payloads[1:])
        assert payloads[0]["source"]["snapshot"] == "false"
        assert payloads[0]["after"]["v"] == "changed"
        assert items[1].key.get("id") == 1 and items[1].key_schema.name == \
            "dbserver1.public.items.Key"
        offsets = [r.source_offset for r in items[1:]]
        assert json.loads(offsets[0]["incremental_snapshot_collections"])[0][
            "incremental_snapshot_collections_id"] == "public.items"
        assert json.loads(offsets[0]["incremental_snapshot_primary_key"]) == ["1"]
        assert json.loads(offsets[0]["incremental_snapshot_maximum_key"]) == ["250"]
        assert offsets[0]["incremental_snapshot_correlation_id"] == "ad-hoc-1"
        # The signal table is not captured: its markers are not events.
        assert {r.topic for r in records} == {"dbserver1.public.items"}
        # Once done, offsets no longer carry the snapshot.
        sql(pg, "INSERT INTO items VALUES (1000, 'after')", dbname=db)
        later = d.poll_until(1)
        assert d.payload(later[0])["op"] == "c"
        assert "incremental_snapshot_collections" not in later[0].source_offset
    finally:
        d.stop()


def test_additional_conditions_and_stop_snapshot(pg, db):
    sql(pg, SIGNAL, "CREATE TABLE items (id int PRIMARY KEY, color text)",
        "INSERT INTO items SELECT g, CASE WHEN g % 3 = 0 THEN 'blue' ELSE 'red' END "
        "FROM generate_series(1, 600) g", dbname=db)
    d = Driver(incr_props(pg, db, **{"incremental.snapshot.chunk.size": "50"}))
    try:
        assert d.quiet() == []
        signal(pg, db, "s1", "execute-snapshot", {
            "data-collections": ["public\\.it.*"], "type": "INCREMENTAL",
            "additional-conditions": [{"data-collection": "public.items",
                                       "filter": "color = 'blue'"}]})
        records = d.poll_until(200) + d.quiet()
        ids = [r.key.get("id") for r in by_topic(records, "dbserver1.public.items")]
        assert ids == list(range(3, 601, 3))
        # A second snapshot, stopped after its first window: nothing more comes.
        signal(pg, db, "s2", "execute-snapshot", {"data-collections": ["public.items"]})
        first = d.poll_until(50)
        signal(pg, db, "s3", "stop-snapshot", {"data-collections": ["public.items"],
                                               "type": "incremental"})
        rest = d.quiet(1.5)
        got = len(by_topic(first + rest, "dbserver1.public.items"))
        assert 50 <= got < 600
        sql(pg, "INSERT INTO items VALUES (1000, 'green')", dbname=db)
        after = d.poll_until(1)
        assert "incremental_snapshot_collections" not in after[-1].source_offset
    finally:
        d.stop()


def test_a_restart_resumes_the_incremental_snapshot_after_the_last_stored_row(pg, db):
    sql(pg, SIGNAL, "CREATE TABLE items (id int PRIMARY KEY, v text)",
        "INSERT INTO items SELECT g, 'v' || g FROM generate_series(1, 500) g", dbname=db)
    p = incr_props(pg, db, max_batch_size="30", max_queue_size="60")
    d = Driver(p)
    try:
        assert d.quiet() == []
        signal(pg, db, "r1", "execute-snapshot", {"data-collections": ["public.items"]})
        first = d.poll_until(130)
        delivered = first[:130]
        d.commit(delivered)  # the runtime stored the offsets of 130 rows
    finally:
        d.stop()
    last = delivered[-1].key.get("id")
    assert last == 130
    d = Driver(p, d.store)
    try:
        rest = d.poll_until(500 - last) + d.quiet()
        ids = [r.key.get("id") for r in by_topic(rest, "dbserver1.public.items")]
        assert ids == list(range(last + 1, 501))
        assert all(d.payload(r)["source"]["snapshot"] == "incremental" for r in rest)
    finally:
        d.stop()


def test_bad_signals_are_ignored_and_streaming_goes_on(pg, db):
    sql(pg, SIGNAL, "CREATE TABLE items (id int PRIMARY KEY)", dbname=db)
    d = Driver(incr_props(pg, db))
    try:
        assert d.quiet() == []
        with psycopg.connect(pg.dsn(db), autocommit=True) as conn:
            conn.execute("INSERT INTO debezium_signal VALUES ('b1', 'execute-snapshot', "
                         "'not json')")
        signal(pg, db, "b2", "execute-snapshot", {"data-collections": []})
        signal(pg, db, "b3", "execute-snapshot", {"data-collections": ["public.nothing"]})
        signal(pg, db, "b4", "execute-snapshot", {"data-collections": ["public.items"],
                                                  "type": "blocking"})
        sql(pg, "INSERT INTO items VALUES (1)", dbname=db)
        records = d.poll_until(1)
        assert [(r.topic, d.payload(r)["op"]) for r in records] == [
            ("dbserver1.public.items", "c")]
    finally:
        d.stop()


def test_signal_data_collection_must_name_schema_and_table(pg, db):
    from connect.api import ConfigError
    from connectors.postgres.config import PostgresConfig
    with pytest.raises(ConfigError) as err:
        PostgresConfig.parse(props(pg, db, **{"signal.data.collection": "debezium_signal"}))
    assert "signal.data.collection" in str(err.value)


def test_a_filter_that_is_not_sql_skips_its_table_only(pg, db):
    sql(pg, SIGNAL, "CREATE TABLE items (id int PRIMARY KEY)",
        "CREATE TABLE other (id int PRIMARY KEY)", "INSERT INTO items VALUES (1), (2)",
        "INSERT INTO other VALUES (7)", dbname=db)
    d = Driver(incr_props(pg, db, table_include_list="public.items,public.other"))
    try:
        assert d.quiet() == []
        signal(pg, db, "f1", "execute-snapshot", {
            "data-collections": ["public.items", "public.other"],
            "additional-conditions": [{"data-collection": "public.items",
                                       "filter": "no such column = 1"}]})
        records = d.poll_until(1) + d.quiet()
        assert [(r.topic, r.key.get("id")) for r in records] == [("dbserver1.public.other", 7)]
        sql(pg, "INSERT INTO items VALUES (3)", dbname=db)
        assert [d.payload(r)["op"] for r in d.poll_until(1)] == ["c"]
    finally:
        d.stop()
