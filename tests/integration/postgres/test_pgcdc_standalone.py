"""The Postgres CDC source end to end: ``ferry connect standalone`` with Debezium's
connector JSON and JsonConverter, a SIGKILL of the worker mid-stream, and PostgreSQL
restarted under the running connector."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

psycopg = pytest.importorskip("psycopg")

from pgcdc_worker import CdcWorker, read_topic, stored_offset  # noqa: E402
from postgres_process import PASSWORD, PostgresProcess, postgres_fixture  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "dbserver1.public.acct"


pg = postgres_fixture()


_dbs = iter(range(100))


@pytest.fixture
def db(pg):
    name = f"e{next(_dbs)}"
    with psycopg.connect(pg.dsn(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    with psycopg.connect(pg.dsn(name), autocommit=True) as conn:
        conn.execute("CREATE TABLE acct (id int PRIMARY KEY, n int NOT NULL)")
        conn.execute("INSERT INTO acct SELECT g, 0 FROM generate_series(1, 200) g")
    return name


def debezium_json(pg: PostgresProcess, db: str, **extra: str) -> dict[str, Any]:
    """The connector JSON a Debezium user posts, unchanged."""
    return {"name": "inventory-connector", "config": {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "tasks.max": "1", "plugin.name": "pgoutput",
        "database.hostname": "127.0.0.1", "database.port": str(pg.port),
        "database.user": "postgres", "database.password": PASSWORD,
        "database.dbname": db, "topic.prefix": "dbserver1", "slot.name": f"s_{db}",
        "table.include.list": "public.acct", "publication.autocreate.mode": "filtered",
        "poll.interval.ms": "100", "topic.creation.default.partitions": "1",
        "topic.creation.default.replication.factor": "1", **extra}}


class Writer(threading.Thread):
    """Autocommit writes (one change per transaction): new rows and increments of
    existing ones; records each write's (txid, id, n)."""

    def __init__(self, pg: PostgresProcess, db: str) -> None:
        super().__init__(daemon=True)
        self.dsn = pg.dsn(db)
        self.done: list[tuple[int, int, int]] = []
        self.halt = threading.Event()
        self.next_id = 201
        self.counts = {i: 0 for i in range(1, 201)}

    def run(self) -> None:
        deadline = time.monotonic() + 120
        conn = None
        i = 0
        while not self.halt.is_set() and time.monotonic() < deadline:
            try:
                if conn is None:
                    conn = psycopg.connect(self.dsn, autocommit=True)
                    # The test server runs synchronous_commit=off, which may lose
                    # acknowledged commits in a crash; these writes must survive one.
                    conn.execute("SET synchronous_commit = on")
                if i % 2:
                    key = self.next_id
                    row = conn.execute("INSERT INTO acct VALUES (%s, 0) RETURNING "
                                       "txid_current()", (key,)).fetchone()
                    self.next_id += 1
                    self.counts[key] = 0
                else:
                    key = 1 + (i // 2) % 200
                    row = conn.execute("UPDATE acct SET n = n + 1 WHERE id = %s RETURNING "
                                       "txid_current()", (key,)).fetchone()
                    self.counts[key] += 1
                self.done.append((row[0], key, self.counts[key]))
                i += 1
                time.sleep(0.002)
            except psycopg.OperationalError:
                conn = None  # PostgreSQL restarting: the write did not happen
                time.sleep(0.1)


def identity(value: dict[str, Any]) -> tuple[Any, ...]:
    p = value["payload"]
    return (p["op"], p["source"]["txId"], p["source"]["lsn"], p["after"]["id"],
            p["after"]["n"])


def check_events(events: list[dict[str, Any]], writes: list[tuple[int, int, int]]) -> None:
    """Every write is there once its duplicates are dropped, and per key in order."""
    ops = [e["payload"]["op"] for e in events]
    assert ops[:200] == ["r"] * 200
    streamed = {(e["payload"]["source"]["txId"], e["payload"]["after"]["id"],
                 e["payload"]["after"]["n"]) for e in events[200:]}
    missing = [w for w in writes if w not in streamed]
    assert not missing, f"{len(missing)} writes missing, first {missing[:3]}"
    last: dict[int, int] = {}
    for e in events:
        after = e["payload"]["after"]
        prev = last.get(after["id"], -1)
        assert after["n"] >= prev or after["n"] == prev, (after, prev)
        last[after["id"]] = max(prev, after["n"])


def test_sigkill_of_the_worker_loses_nothing_and_repeats_only_uncommitted(
        pg, db, tmp_path: Path) -> None:
    """Let A be the topic when the worker was SIGKILLed and i the index in A of the
    record whose offset was stored last. After the restart the topic is A + B where B
    starts with exactly A[i+1:] (what was produced but not committed) and holds nothing
    else already in A; every write is in the topic, per key in order."""
    worker = CdcWorker(tmp_path, [debezium_json(pg, db)])
    writer = Writer(pg, db)
    worker.start()
    try:
        worker.wait(lambda: (worker.offset("inventory-connector") or {}).get(
            "snapshot_completed"), "the snapshot to be stored")
        writer.start()
        worker.wait(lambda: (worker.offset("inventory-connector") or {}).get("txId")
                    and len(writer.done) > 300 and "lsn_commit" in (
                        worker.offset("inventory-connector") or {}), "streamed offsets")
        worker.kill()
    finally:
        if worker.proc is not None and worker.proc.poll() is None:
            worker.kill()
    committed = stored_offset(worker.data, "inventory-connector", {"server": "dbserver1"})
    before = [v for _, v in read_topic(worker.data, TOPIC)]
    assert committed is not None and "lsn_commit" in committed
    i = max(k for k, v in enumerate(before)
            if v["payload"]["source"]["txId"] == committed["txId"])
    worker.start()
    try:
        time.sleep(0.5)
        writer.halt.set()
        writer.join(30)
        last_tx = writer.done[-1][0]
        worker.wait(lambda: (worker.offset("inventory-connector") or {}).get("txId", 0)
                    >= last_tx, "the last write's offset")
    finally:
        assert worker.stop() == 0, worker.output()
    everything = [v for _, v in read_topic(worker.data, TOPIC)]
    assert everything[:len(before)] == before
    after_restart = everything[len(before):]
    replayed = len(before) - i - 1
    assert [identity(v) for v in after_restart[:replayed]] == [
        identity(v) for v in before[i + 1:]]
    seen = {identity(v) for v in before}
    assert not [v for v in after_restart[replayed:] if identity(v) in seen]
    check_events(everything, writer.done)
    # The schema a Debezium consumer reads: Envelope with the Source block.
    schema = everything[-1]["schema"]
    assert schema["name"] == "dbserver1.public.acct.Envelope"
    assert [f["field"] for f in schema["fields"]] == [
        "before", "after", "source", "transaction", "op", "ts_ms", "ts_us", "ts_ns"]
    with psycopg.connect(pg.dsn(db), autocommit=True) as conn:
        slot = conn.execute("SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
                            "WHERE slot_name = %s", (f"s_{db}",)).fetchone()
    assert slot is not None


def test_postgres_restarted_under_the_connector(pg, db, tmp_path: Path) -> None:
    worker = CdcWorker(tmp_path, [debezium_json(pg, db)])
    writer = Writer(pg, db)
    worker.start()
    try:
        worker.wait(lambda: (worker.offset("inventory-connector") or {}).get(
            "snapshot_completed"), "the snapshot to be stored")
        writer.start()
        worker.wait(lambda: len(writer.done) > 100, "100 writes")
        pg.restart("immediate")
        worker.wait(lambda: len(writer.done) > 400, "400 writes")
        writer.halt.set()
        writer.join(30)
        last_tx = writer.done[-1][0]
        worker.wait(lambda: (worker.offset("inventory-connector") or {}).get("txId", 0)
                    >= last_tx, "the last write's offset", timeout=60)
        status = worker.get("/connectors/inventory-connector/status")
        assert status["tasks"][0]["state"] == "RUNNING"
    finally:
        assert worker.stop() == 0, worker.output()
    check_events([v for _, v in read_topic(worker.data, TOPIC)], writer.done)


def test_extract_new_record_state_feeds_a_file_sink(pg, db, tmp_path: Path) -> None:
    """Debezium's usual CDC → sink pipeline: the sink unwraps the envelope with
    io.debezium.transforms.ExtractNewRecordState (deletes rewritten, ``__op`` added)."""
    out = tmp_path / "rows.txt"
    sink = {"name": "rows", "config": {
        "connector.class": "FileStreamSink", "file": str(out), "topics": TOPIC,
        "transforms": "unwrap",
        "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
        "transforms.unwrap.delete.tombstone.handling.mode": "rewrite",
        "transforms.unwrap.add.fields": "op"}}
    worker = CdcWorker(tmp_path, [debezium_json(pg, db, **{
        "table.include.list": "public.acct"}), sink])
    worker.start()
    try:
        def lines() -> list[str]:
            return out.read_text().splitlines() if out.exists() else []
        worker.wait(lambda: len(lines()) >= 200, "the snapshot in the file")
        with psycopg.connect(pg.dsn(db), autocommit=True) as conn:
            conn.execute("UPDATE acct SET n = 5 WHERE id = 7")
            conn.execute("DELETE FROM acct WHERE id = 8")
        worker.wait(lambda: len(lines()) >= 202, "the update and the delete")
    finally:
        assert worker.stop() == 0, worker.output()
    got = lines()
    assert got[0] == "Struct(id=1, n=0, __op='r', __deleted='false')"
    assert got[200:] == ["Struct(id=7, n=5, __op='u', __deleted='false')",
                         "Struct(id=8, n=0, __op='d', __deleted='true')"]


def test_rest_validate_names_the_key_and_masks_the_password(pg, db, tmp_path: Path) -> None:
    import requests

    worker = CdcWorker(tmp_path, [])
    worker.start()
    try:
        config = {**debezium_json(pg, db)["config"], "connector.class": "postgres",
                  "name": "inventory-connector"}

        def validate(**changes: str) -> dict[str, Any]:
            response = requests.put(
                f"{worker.base}/connector-plugins/postgres/config/validate",
                json={**config, **changes}, timeout=30)
            assert response.status_code == 200, response.text
            return response.json()

        good = validate()
        assert good["error_count"] == 0, [c["value"] for c in good["configs"]
                                          if c["value"]["errors"]]
        bad = validate(**{"database.password": "wrong-secret"})
        errors = {c["value"]["name"]: c["value"] for c in bad["configs"]
                  if c["value"]["errors"]}
        assert list(errors) == ["database.password"]
        assert "wrong-secret" not in json_dump(bad)
        assert validate(**{"plugin.name": "decoderbufs"})["error_count"] == 1
        missing = validate(**{"table.include.list": "public.nothere"})
        assert [c["value"]["name"] for c in missing["configs"] if c["value"]["errors"]] == [
            "table.include.list"]
    finally:
        assert worker.stop() == 0, worker.output()


def json_dump(value: Any) -> str:
    import json

    return json.dumps(value)


def test_database_gone_fails_the_task_with_a_trace_then_a_restart_resumes(
        pg, db, tmp_path: Path) -> None:
    import requests

    worker = CdcWorker(tmp_path, [debezium_json(pg, db, **{"errors.retry.timeout": "3000"})])
    worker.start()
    name = "inventory-connector"
    try:
        worker.wait(lambda: (worker.offset(name) or {}).get("snapshot_completed"),
                    "the snapshot to be stored")
        started = time.monotonic()
        pg.stop()  # fast shutdown: waits for the connector to confirm all WAL sent
        assert time.monotonic() - started < 20
        try:
            def failed() -> Any:
                status = worker.get(f"/connectors/{name}/status") or {}
                tasks = status.get("tasks") or [{}]
                return tasks[0] if tasks[0].get("state") == "FAILED" else None
            task = worker.wait(failed, "the task to fail")
            assert "errors.retry.timeout=3000" in task["trace"]
            assert "unavailable" in task["trace"]
        finally:
            pg.start()
        with psycopg.connect(pg.dsn(db), autocommit=True) as conn:
            conn.execute("INSERT INTO acct VALUES (999, 1)")
        requests.post(f"{worker.base}/connectors/{name}/tasks/0/restart",
                      timeout=10).raise_for_status()
        worker.wait(lambda: (worker.offset(name) or {}).get("lsn_commit"),
                    "the insert streamed after the restart")
    finally:
        assert worker.stop() == 0, worker.output()
    events = [v["payload"] for _, v in read_topic(worker.data, TOPIC)]
    assert [e["after"]["id"] for e in events if e["op"] == "c"] == [999]
