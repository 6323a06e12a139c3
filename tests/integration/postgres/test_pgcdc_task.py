"""The Postgres CDC source task against a real PostgreSQL (``PostgresProcess``): snapshot
seam, every kind of change event, schema changes, resume without loss, and bad input.

The task is driven in-process with the fake offset store of the connector unit tests
(the Connect runtime is what the standalone tests add); PostgreSQL is real.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

psycopg = pytest.importorskip("psycopg")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "unit" / "connectors"))

from pgcdc_driver import DEADLINE_S, Driver, props, sql  # noqa: E402
from postgres_process import PASSWORD, PostgresProcess, postgres_fixture  # noqa: E402

from connect.api import ConnectError, RetriableError  # noqa: E402
from connectors.postgres import PostgresConnector  # noqa: E402

pytestmark = pytest.mark.integration


pg = postgres_fixture()


def test_snapshot_then_stream_has_no_gap_and_no_overlap(pg, db):
    """Rows committed while the snapshot is read arrive once, as stream events."""
    sql(pg, "CREATE TABLE items (id int PRIMARY KEY, v text)",
        "INSERT INTO items SELECT g, 'v' || g FROM generate_series(1, 500) g", dbname=db)
    d = Driver(props(pg, db, max_batch_size="50", max_queue_size="100",
                     snapshot_fetch_size="20"))
    try:
        first = d.poll_until(1)  # the slot now exists and the snapshot is open
        inserts = [f"INSERT INTO items VALUES ({500 + i}, 'new')" for i in range(1, 51)]
        writer = threading.Thread(target=sql, args=(pg, *inserts), kwargs={"dbname": db})
        writer.start()
        rest = d.poll_until(550 - len(first))
        writer.join()
        records = first + rest
        ops = [d.payload(r)["op"] for r in records]
        ids = [r.key.get("id") for r in records]
        assert ops[:500] == ["r"] * 500 and ops[500:] == ["c"] * 50
        assert sorted(ids) == list(range(1, 551)) and len(set(ids)) == 550
        markers = [d.payload(r)["source"]["snapshot"] for r in records[:500]]
        assert markers[0] == "first" and markers[-1] == "last"
        assert set(markers[1:-1]) == {"true"}
        assert d.quiet() == []
    finally:
        d.stop()


def test_snapshot_markers_over_several_tables(pg, db):
    sql(pg, "CREATE TABLE a (id int PRIMARY KEY)", "CREATE TABLE b (id int PRIMARY KEY)",
        "CREATE TABLE c (id int PRIMARY KEY)", "INSERT INTO a VALUES (1), (2), (3)",
        "INSERT INTO b VALUES (1), (2)", dbname=db)
    d = Driver(props(pg, db))
    try:
        records = d.poll_until(5)
        got = [(r.topic, d.payload(r)["source"]["snapshot"]) for r in records]
        assert got == [("dbserver1.public.a", "first"), ("dbserver1.public.a", "true"),
                       ("dbserver1.public.a", "last_in_data_collection"),
                       ("dbserver1.public.b", "first_in_data_collection"),
                       ("dbserver1.public.b", "last")]
        offset = records[-1].source_offset
        assert offset["snapshot_completed"] is True and offset["last_snapshot_record"] is True
    finally:
        d.stop()


def test_every_kind_of_change(pg, db):
    sql(pg, "CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL, email text)",
        "CREATE TABLE full_t (id int PRIMARY KEY, v text, doc text)",
        "ALTER TABLE full_t REPLICA IDENTITY FULL",
        "CREATE TABLE nopk (v text)", "ALTER TABLE nopk REPLICA IDENTITY FULL",
        dbname=db)
    d = Driver(props(pg, db, skipped_operations="none"))
    try:
        assert d.quiet() == []
        big = "x" * 20000  # TOASTed (compressible, but over the 2 kB threshold stored out of line)
        sql(pg, "INSERT INTO customers VALUES (1, 'a', 'a@x')",
            "UPDATE customers SET email = 'b@x' WHERE id = 1",
            "UPDATE customers SET id = 2 WHERE id = 1",
            "DELETE FROM customers WHERE id = 2",
            "ALTER TABLE full_t ALTER COLUMN doc SET STORAGE EXTERNAL",
            f"INSERT INTO full_t VALUES (1, 'one', '{big}')",
            "UPDATE full_t SET v = 'uno' WHERE id = 1",
            "INSERT INTO nopk VALUES ('k')",
            "TRUNCATE customers",
            dbname=db)
        records = d.poll_until(11)
        truncate = records[10:]
        records = records[:10]
        got = [(r.topic.split(".")[-1], None if r.value is None else d.payload(r)["op"],
                None if r.key is None else r.key.values()) for r in records]
        assert got == [
            ("customers", "c", [1]), ("customers", "u", [1]),
            ("customers", "d", [1]), ("customers", None, [1]), ("customers", "c", [2]),
            ("customers", "d", [2]), ("customers", None, [2]),
            ("full_t", "c", [1]), ("full_t", "u", [1]), ("nopk", "c", None),
        ]
        update = d.payload(records[1])
        assert update["before"] is None  # REPLICA IDENTITY DEFAULT, key unchanged
        assert update["after"] == {"id": 1, "name": "a", "email": "b@x"}
        assert [h.key for h in records[2].headers] == ["__debezium.newkey"]
        assert records[2].headers.last_with_name("__debezium.newkey").value.get("id") == 2
        assert [h.key for h in records[4].headers] == ["__debezium.oldkey"]
        delete = d.payload(records[5])
        assert delete["before"] == {"id": 2, "name": "", "email": None}  # key only
        full = d.payload(records[8])
        # FULL: the before image is whole and the unchanged TOASTed value is copied in.
        assert full["before"] == {"id": 1, "v": "one", "doc": big}
        assert full["after"] == {"id": 1, "v": "uno", "doc": big}
        assert d.quiet() == []
        assert [(r.key, d.payload(r)["op"], d.payload(r)["source"]["table"])
                for r in truncate] == [(None, "t", "customers")]
    finally:
        d.stop()


def test_unchanged_toast_under_default_identity_is_the_placeholder(pg, db):
    big = "y" * 20000
    sql(pg, "CREATE TABLE docs (id int PRIMARY KEY, title text, body text)",
        "ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL", dbname=db)
    d = Driver(props(pg, db))
    try:
        assert d.quiet() == []
        sql(pg, f"INSERT INTO docs VALUES (1, 't', '{big}')",
            "UPDATE docs SET title = 'u' WHERE id = 1", dbname=db)
        records = d.poll_until(2)
        assert d.payload(records[0])["after"]["body"] == big
        assert d.payload(records[1])["after"] == {
            "id": 1, "title": "u", "body": "__debezium_unavailable_value"}
    finally:
        d.stop()


def test_added_and_dropped_columns_change_the_schema(pg, db):
    sql(pg, "CREATE TABLE t (id int PRIMARY KEY, a text)", dbname=db)
    d = Driver(props(pg, db))
    try:
        assert d.quiet() == []
        sql(pg, "INSERT INTO t VALUES (1, 'x')", "ALTER TABLE t ADD COLUMN b int NOT NULL "
            "DEFAULT 5", "INSERT INTO t VALUES (2, 'y', 7)", "ALTER TABLE t DROP COLUMN a",
            "INSERT INTO t VALUES (3, 9)", dbname=db)
        records = d.poll_until(3)
        assert [d.payload(r)["after"] for r in records] == [
            {"id": 1, "a": "x"}, {"id": 2, "a": "y", "b": 7}, {"id": 3, "b": 9}]
        assert [f.name for f in records[1].value_schema.field("after").schema.fields] == [
            "id", "a", "b"]
        assert records[1].value_schema.field("after").schema.field("b").schema.optional \
            is False
    finally:
        d.stop()


def test_types_map_as_debezium_maps_them(pg, db):
    sql(pg, "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')",
        "CREATE TABLE ty (id bigint PRIMARY KEY, s smallint, f4 real, f8 double precision,"
        " n numeric(10,2), nv numeric, b boolean, c char(3), by bytea, d date, t time,"
        " t3 time(3), ts timestamp, ts3 timestamp(3), tz timestamptz, u uuid, j jsonb,"
        " m mood, ia int[], ta text[])",
        "INSERT INTO ty VALUES (1, 2, 1.5, 2.25, 12.34, 3.14159, true, 'ab', '\\x0102',"
        " '2024-03-01', '10:11:12.123456', '10:11:12.123', '2024-03-01 10:11:12.123456',"
        " '2024-03-01 10:11:12.123', '2024-03-01 10:11:12.5+02', "
        " 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"k\": [1]}', 'ok', '{1,NULL,3}',"
        " '{\"a b\",c}')", dbname=db)
    d = Driver(props(pg, db))
    try:
        record = d.poll_until(1)[0]
        after = d.payload(record)["after"]
        assert after == {
            "id": 1, "s": 2, "f4": 1.5, "f8": 2.25, "n": "BNI=", "nv": {"scale": 5,
                                                                          "value": "BMsv"},
            "b": True, "c": "ab ", "by": "AQI=", "d": 19783, "t": 36672123456,
            "t3": 36672123, "ts": 1709287872123456, "ts3": 1709287872123,
            "tz": "2024-03-01T08:11:12.500000Z", "u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "j": '{"k": [1]}', "m": "ok", "ia": [1, None, 3], "ta": ["a b", "c"]}
        fields = {f.name: f.schema for f in record.value_schema.field("after").schema.fields}
        assert fields["t"].name == "io.debezium.time.MicroTime"
        assert fields["t3"].name == "io.debezium.time.Time"
        assert fields["ts"].name == "io.debezium.time.MicroTimestamp"
        assert fields["ts3"].name == "io.debezium.time.Timestamp"
        assert fields["d"].name == "io.debezium.time.Date"
        assert fields["tz"].name == "io.debezium.time.ZonedTimestamp"
        assert fields["m"].name == "io.debezium.data.Enum"
        assert fields["m"].parameters == {"allowed": "sad,ok,happy"}
        assert fields["n"].parameters == {"scale": "2", "connect.decimal.precision": "10"}
        assert fields["nv"].name == "io.debezium.data.VariableScaleDecimal"
        assert fields["s"].type.name == "INT16" and fields["id"].type.name == "INT64"
    finally:
        d.stop()


def test_filters_key_columns_and_handling_modes(pg, db):
    sql(pg, "CREATE TABLE keep (id int PRIMARY KEY, code text, secret text, n numeric(6,1),"
        " raw bytea)", "CREATE TABLE skip (id int PRIMARY KEY)",
        "INSERT INTO keep VALUES (1, 'K1', 's', 2.5, '\\xff')", "INSERT INTO skip VALUES (1)",
        dbname=db)
    d = Driver(props(pg, db, **{"table.include.list": "public.keep",
                                "column.exclude.list": "public.keep.secret",
                                "message.key.columns": "public.keep:code",
                                "decimal.handling.mode": "string",
                                "binary.handling.mode": "hex",
                                "publication.autocreate.mode": "filtered"}))
    try:
        records = d.poll_until(1)
        assert d.quiet() == []
        assert [r.topic for r in records] == ["dbserver1.public.keep"]
        assert records[0].key.values() == ["K1"]
        assert d.payload(records[0])["after"] == {"id": 1, "code": "K1", "n": "2.5",
                                                  "raw": "ff"}
        sql(pg, "INSERT INTO skip VALUES (2)", "INSERT INTO keep VALUES (2, 'K2', 's', 1, "
            "NULL)", dbname=db)
        records = d.poll_until(1)
        assert [r.key.values() for r in records] == [["K2"]]
    finally:
        d.stop()


def test_restart_resumes_after_the_stored_offset_and_advances_the_slot(pg, db):
    sql(pg, "CREATE TABLE r (id int PRIMARY KEY)", dbname=db)
    p = props(pg, db)
    d = Driver(p)
    store = d.store
    try:
        assert d.quiet() == []
        sql(pg, "INSERT INTO r SELECT generate_series(1, 10)",
            "INSERT INTO r SELECT generate_series(11, 20)", dbname=db)
        records = d.poll_until(20)
        # Only the first 15 records reach the offsets; the rest were "in flight".
        d.commit(records[:15])
    finally:
        d.stop()
    with psycopg.connect(pg.dsn(db), autocommit=True) as conn:
        confirmed = conn.execute("SELECT confirmed_flush_lsn FROM pg_replication_slots "
                                 "WHERE slot_name = %s", (p["slot.name"],)).fetchone()[0]
    assert confirmed is not None
    sql(pg, "INSERT INTO r VALUES (21)", dbname=db)
    d2 = Driver(p, store)
    try:
        again = d2.poll_until(6)
        assert [r.key.get("id") for r in again] == [16, 17, 18, 19, 20, 21]
        assert d2.quiet() == []
        d2.commit(again)
    finally:
        d2.stop()
    with psycopg.connect(pg.dsn(db), autocommit=True) as conn:
        later = conn.execute("SELECT confirmed_flush_lsn FROM pg_replication_slots "
                             "WHERE slot_name = %s", (p["slot.name"],)).fetchone()[0]
    assert later > confirmed


def test_heartbeats_advance_the_slot_on_an_idle_database(pg, db):
    sql(pg, "CREATE TABLE hb (id int PRIMARY KEY)", "CREATE TABLE other (id int)", dbname=db)
    p = props(pg, db, **{"heartbeat.interval.ms": "200", "table.include.list": "public.hb",
                         "publication.autocreate.mode": "filtered"})
    d = Driver(p)
    try:
        d.quiet(0.5)
        with psycopg.connect(pg.dsn(db), autocommit=True) as conn:
            def confirmed() -> Any:
                return conn.execute("SELECT confirmed_flush_lsn FROM pg_replication_slots "
                                    "WHERE slot_name = %s", (p["slot.name"],)).fetchone()[0]
            before = confirmed()
            for i in range(50):  # WAL the connector does not capture
                conn.execute(f"INSERT INTO other VALUES ({i})")
            deadline = time.monotonic() + DEADLINE_S
            beats: list[Any] = []
            while time.monotonic() < deadline:
                got = d.quiet(0.3)
                beats += got
                d.commit(got)
                if confirmed() > before:
                    break
            assert confirmed() > before
            assert beats and {r.topic for r in beats} == {"__debezium-heartbeat.dbserver1"}
            assert beats[0].key.get("serverName") == "dbserver1"
    finally:
        d.stop()


def test_transaction_metadata(pg, db):
    sql(pg, "CREATE TABLE a (id int PRIMARY KEY)", "CREATE TABLE b (id int PRIMARY KEY)",
        dbname=db)
    d = Driver(props(pg, db, **{"provide.transaction.metadata": "true"}))
    try:
        assert d.quiet() == []
        with psycopg.connect(pg.dsn(db)) as conn:
            conn.execute("INSERT INTO a VALUES (1)")
            conn.execute("INSERT INTO b VALUES (1)")
            conn.execute("INSERT INTO a VALUES (2)")
        records = d.poll_until(5)
        assert [r.topic for r in records] == [
            "dbserver1.transaction", "dbserver1.public.a", "dbserver1.public.b",
            "dbserver1.public.a", "dbserver1.transaction"]
        begin, end = d.payload(records[0]), d.payload(records[-1])
        assert begin["status"] == "BEGIN" and end["status"] == "END"
        assert end["event_count"] == 3 and begin["id"] == end["id"]
        assert end["data_collections"] == [{"data_collection": "public.a", "event_count": 2},
                                           {"data_collection": "public.b", "event_count": 1}]
        blocks = [d.payload(r)["transaction"] for r in records[1:4]]
        assert [(b["total_order"], b["data_collection_order"]) for b in blocks] == [
            (1, 1), (2, 1), (3, 2)]
        assert blocks[0]["id"] == begin["id"]
    finally:
        d.stop()


def test_postgres_restart_under_the_task_loses_nothing(pg, db):
    sql(pg, "CREATE TABLE pr (id int PRIMARY KEY)", dbname=db)
    d = Driver(props(pg, db))
    try:
        assert d.quiet() == []
        sql(pg, "INSERT INTO pr VALUES (1)", dbname=db)
        seen = d.poll_until(1)
        d.commit(seen)
        pg.restart("immediate")
        sql(pg, "INSERT INTO pr VALUES (2)", "INSERT INTO pr VALUES (3)", dbname=db)
        seen += d.poll_until(2, timeout=40)
        ids = [r.key.get("id") for r in seen]
        assert ids[0] == 1 and sorted(set(ids)) == [1, 2, 3]
        assert ids.count(2) == 1 and ids.count(3) == 1
    finally:
        d.stop()


def test_unreachable_database_fails_after_the_retry_timeout(pg, db):
    p = props(pg, db, **{"errors.retry.timeout": "1500"})
    p["database.port"] = "1"  # nothing listens there
    d = Driver(p)
    deadline = time.monotonic() + DEADLINE_S
    with pytest.raises(ConnectError, match=r"errors\.retry\.timeout"):
        while time.monotonic() < deadline:
            with contextlib.suppress(RetriableError):
                d.task.poll()
    d.stop()


def test_wrong_password_fails_at_once(pg, db):
    p = props(pg, db)
    p["database.password"] = "wrong"
    d = Driver(p)
    with pytest.raises(ConnectError, match="password authentication failed"):
        d.task.poll()
    d.stop()


def test_slot_active_elsewhere_is_reported(pg, db):
    p = props(pg, db, **{"slot.max.retries": "1", "slot.retry.delay.ms": "10"})
    d = Driver(p)
    try:
        d.quiet(0.3)
        other = Driver(p)
        with pytest.raises(ConnectError, match="is active for PID"):
            deadline = time.monotonic() + DEADLINE_S
            while time.monotonic() < deadline:
                try:
                    other.task.poll()
                except RetriableError:
                    time.sleep(0.02)
        other.stop()
    finally:
        d.stop()


def test_validate_names_the_failing_key(pg, db):
    c = PostgresConnector()

    def errors(config: dict[str, str]) -> dict[str, list[str]]:
        return {v.name: v.errors for v in c.validate(config).config_values if v.errors}

    assert errors(props(pg, db)) == {}
    bad = errors({**props(pg, db), "database.password": "nope"})
    assert list(bad) == ["database.password"] and "password" in bad["database.password"][0]
    assert list(errors({**props(pg, db), "plugin.name": "decoderbufs"})) == ["plugin.name"]
    assert list(errors({**props(pg, db), "snapshot.mode": "sometimes"})) == ["snapshot.mode"]
    missing = errors({**props(pg, db), "table.include.list": "public.nothere"})
    assert list(missing) == ["table.include.list"] and "nothere" in missing[
        "table.include.list"][0]
    sql(pg, "CREATE ROLE plain LOGIN PASSWORD 'pw'") if not _role_exists(pg) else None
    plain = errors({**props(pg, db), "database.user": "plain", "database.password": "pw"})
    assert "database.user" in plain and "REPLICATION" in plain["database.user"][0]


def _role_exists(pg: PostgresProcess) -> bool:
    with psycopg.connect(pg.dsn(), autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'plain'").fetchone() \
            is not None


def test_wal_level_not_logical_is_named(tmp_path):
    server = PostgresProcess(settings={"wal_level": "replica"})
    server.start()
    try:
        c = PostgresConnector()
        config = {"database.hostname": "127.0.0.1", "database.port": str(server.port),
                  "database.user": "postgres", "database.password": PASSWORD,
                  "database.dbname": "postgres", "topic.prefix": "x"}
        errors = {v.name: v.errors for v in c.validate(config).config_values if v.errors}
        assert "wal_level" in " ".join(m for ms in errors.values() for m in ms)
    finally:
        server.close()


def test_a_lost_slot_fails_with_an_explanation_or_is_recovered_by_when_needed(pg, db):
    sql(pg, "CREATE TABLE ls (id int PRIMARY KEY)", "INSERT INTO ls VALUES (1)", dbname=db)
    p = props(pg, db)
    d = Driver(p)
    try:
        d.commit(d.poll_until(1))
        sql(pg, "INSERT INTO ls VALUES (2)", dbname=db)
        d.commit(d.poll_until(1))
    finally:
        d.stop()
    sql(pg, f"SELECT pg_drop_replication_slot('{p['slot.name']}')")
    sql(pg, "INSERT INTO ls VALUES (3)", dbname=db)  # lost with the slot
    again = Driver(p, d.store)
    with pytest.raises(ConnectError, match=r"does not exist .*when_needed"):
        again.task.poll()
    again.stop()
    recovered = Driver({**p, "snapshot.mode": "when_needed"}, d.store)
    try:
        records = recovered.poll_until(3)
        assert [(r.key.get("id"), recovered.payload(r)["op"]) for r in records] == [
            (1, "r"), (2, "r"), (3, "r")]
        sql(pg, "INSERT INTO ls VALUES (4)", dbname=db)
        assert [r.key.get("id") for r in recovered.poll_until(1)] == [4]
    finally:
        recovered.stop()


@pytest.mark.parametrize("include", ["false", "true"])
def test_types_without_a_mapping(pg, db, include):
    # box has no mapping in Debezium 3.2 either (only point among the geometric types)
    sql(pg, "CREATE TABLE unk (id int PRIMARY KEY, span box)",
        "INSERT INTO unk VALUES (1, '((0,0),(1,1))')", dbname=db)
    d = Driver(props(pg, db, **{"include.unknown.datatypes": include}))
    try:
        [record] = d.poll_until(1)
        after = record.value.get("after")
        if include == "false":
            assert [f.name for f in after.schema.fields] == ["id"]
        else:
            assert after.get("span") == b"(1,1),(0,0)"  # its text form
    finally:
        d.stop()


def test_an_interrupted_snapshot_restarts_cleanly(pg, db):
    """A crash mid-snapshot: the next run snapshots again on a fresh slot, so rows
    written in between are read once (as snapshot rows) and nothing is streamed twice."""
    sql(pg, "CREATE TABLE big (id int PRIMARY KEY)",
        "INSERT INTO big SELECT generate_series(1, 300)", dbname=db)
    p = props(pg, db, max_batch_size="100", max_queue_size="200", snapshot_fetch_size="50")
    d = Driver(p)
    first = d.poll_until(100)
    d.commit(first)
    assert first[-1].source_offset["snapshot_completed"] is False
    d.stop()  # as if the worker died here
    sql(pg, "INSERT INTO big VALUES (301)", "DELETE FROM big WHERE id = 1", dbname=db)
    again = Driver(p, d.store)
    try:
        records = again.poll_until(300)
        assert [again.payload(r)["op"] for r in records] == ["r"] * 300
        assert sorted(r.key.get("id") for r in records) == list(range(2, 302))
        assert again.quiet() == []
        sql(pg, "INSERT INTO big VALUES (302)", dbname=db)
        assert [r.key.get("id") for r in again.poll_until(1)] == [302]
    finally:
        again.stop()


def test_slot_drop_on_stop(pg, db):
    p = props(pg, db, **{"slot.drop.on.stop": "true"})
    d = Driver(p)
    d.quiet(0.3)
    d.stop()
    with psycopg.connect(pg.dsn(), autocommit=True) as conn:
        assert conn.execute("SELECT 1 FROM pg_replication_slots WHERE slot_name = %s",
                            (p["slot.name"],)).fetchone() is None


def test_an_idle_slot_advances_without_heartbeats_and_a_restart_still_resumes(pg, db):
    sql(pg, "CREATE TABLE idle (id int PRIMARY KEY)", "CREATE TABLE noise (id int)",
        dbname=db)
    p = props(pg, db, **{"table.include.list": "public.idle",
                         "publication.autocreate.mode": "filtered",
                         "status.update.interval.ms": "100"})
    d = Driver(p)
    try:
        assert d.quiet() == []
        sql(pg, "INSERT INTO idle VALUES (1)", dbname=db)
        d.commit(d.poll_until(1))
        with psycopg.connect(pg.dsn(db), autocommit=True) as conn:
            def confirmed() -> Any:
                return conn.execute("SELECT confirmed_flush_lsn FROM pg_replication_slots "
                                    "WHERE slot_name = %s", (p["slot.name"],)).fetchone()[0]
            before = confirmed()
            for i in range(20):
                conn.execute(f"INSERT INTO noise VALUES ({i})")
            deadline = time.monotonic() + DEADLINE_S
            while confirmed() <= before and time.monotonic() < deadline:
                assert d.quiet(0.3) == []
            assert confirmed() > before
    finally:
        d.stop()
    sql(pg, "INSERT INTO idle VALUES (2)", dbname=db)
    again = Driver(p, d.store)
    try:
        assert [r.key.get("id") for r in again.poll_until(1)] == [2]
        assert again.quiet() == []
    finally:
        again.stop()


def test_the_slot_never_passes_what_the_offsets_hold(pg, db):
    """Records returned by poll() but whose offsets are not stored keep the slot behind
    their transaction, however long the task keeps streaming; commit() releases them."""
    sql(pg, "CREATE TABLE held (id int PRIMARY KEY)", dbname=db)
    p = props(pg, db, **{"status.update.interval.ms": "50"})
    d = Driver(p)
    try:
        assert d.quiet() == []
        with psycopg.connect(pg.dsn(db), autocommit=True) as conn:
            def confirmed() -> int:
                text = conn.execute("SELECT confirmed_flush_lsn::text FROM "
                                    "pg_replication_slots WHERE slot_name = %s",
                                    (p["slot.name"],)).fetchone()[0]
                high, low = text.split("/")
                return (int(high, 16) << 32) | int(low, 16)
            conn.execute("INSERT INTO held VALUES (1)")
            [record] = d.poll_until(1)
            # The server resends every transaction whose commit is at or after the
            # confirmed LSN; the change's own LSN is before its commit.
            change_lsn = record.value.get("source").get("lsn")
            for i in range(2, 30):  # more WAL and keepalives while the record is unstored
                conn.execute(f"INSERT INTO held VALUES ({i})")
            held = d.poll_until(28)
            d.quiet(1.0)
            assert confirmed() <= change_lsn
            d.commit([record, *held])
            d.quiet(0.5)
            assert confirmed() >= held[-1].value.get("source").get("lsn")
    finally:
        d.stop()


def test_column_defaults_are_schema_defaults_as_in_debezium(pg, db):
    sql(pg, "CREATE TYPE tone AS ENUM ('low', 'high')",
        "CREATE TABLE df (id serial PRIMARY KEY, n int NOT NULL DEFAULT 42, "
        "s text DEFAULT 'it''s', f numeric(5,2) DEFAULT 1.5, b boolean DEFAULT true, "
        "at timestamptz DEFAULT now(), d date DEFAULT '2024-02-03', t tone DEFAULT 'high', "
        "neg bigint DEFAULT -7, nul text DEFAULT NULL, raw bytea DEFAULT '\\x00')",
        "INSERT INTO df (nul) VALUES (NULL)", dbname=db)
    d = Driver(props(pg, db))
    try:
        [record] = d.poll_until(1)
        fields = {f.name: f.schema for f in record.value_schema.field("after").schema.fields}
        import decimal
        assert {name: s.default_value for name, s in fields.items()} == {
            "id": 0, "n": 42, "s": "it's", "f": decimal.Decimal("1.50"), "b": True,
            "at": "1970-01-01T00:00:00.000000Z", "d": 19756, "t": "high", "neg": -7,
            "nul": None, "raw": None}
        assert record.key_schema.field("id").schema.default_value == 0
        sql(pg, "ALTER TABLE df ADD COLUMN extra int NOT NULL DEFAULT 9",
            "INSERT INTO df (nul) VALUES ('x')", dbname=db)
        [streamed] = d.poll_until(1)
        assert streamed.value_schema.field("after").schema.field(
            "extra").schema.default_value == 9
    finally:
        d.stop()
