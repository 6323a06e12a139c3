"""The Postgres CDC source on a two-worker ``ferry connect distributed`` cluster: the worker
running its task is SIGKILLed mid-stream and the survivor takes the task over, resuming
from the stored offset; a FileStreamSink (with ExtractNewRecordState) shows no row lost."""

from __future__ import annotations

import re
import sys
import threading
import time
from pathlib import Path

import pytest

psycopg = pytest.importorskip("psycopg")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "connect"))

from dist_cluster import Cluster, wait_for  # noqa: E402
from postgres_process import PASSWORD, postgres_fixture  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DELAY_MS = 3000
WORKER_PROPS = {
    "session.timeout.ms": "6000", "heartbeat.interval.ms": "1000",
    "scheduled.rebalance.max.delay.ms": str(DELAY_MS), "offset.flush.interval.ms": "500",
    "offset.storage.partitions": "1", "status.storage.partitions": "1",
    "key.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "task.shutdown.graceful.timeout.ms": "3000",
}


pg = postgres_fixture()


def test_failover_to_the_other_worker_loses_no_change(pg, tmp_path: Path) -> None:
    (tmp_path / "cluster").mkdir()
    cluster = Cluster(tmp_path / "cluster", 2, WORKER_PROPS)
    out = tmp_path / "rows.txt"
    halt = threading.Event()
    written: list[int] = []

    def write() -> None:
        with psycopg.connect(pg.dsn(), autocommit=True) as conn:
            i = 1
            deadline = time.monotonic() + 120
            while not halt.is_set() and time.monotonic() < deadline:
                conn.execute("INSERT INTO t VALUES (%s)", (i,))
                written.append(i)
                i += 1
                time.sleep(0.01)

    def ids() -> set[int]:
        text = out.read_text() if out.exists() else ""
        return {int(m) for m in re.findall(r"Struct\(id=(\d+)", text)}

    writer = threading.Thread(target=write, daemon=True)
    try:
        with psycopg.connect(pg.dsn(), autocommit=True) as conn:
            conn.execute("CREATE TABLE t (id int PRIMARY KEY)")
        cluster.start()
        w0, w1 = cluster.workers
        cluster.call_until(w0, "POST", "/connectors", {"name": "cdc", "config": {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "database.hostname": "127.0.0.1", "database.port": str(pg.port),
            "database.user": "postgres", "database.password": PASSWORD,
            "database.dbname": "postgres", "topic.prefix": "dbserver1",
            "table.include.list": "public.t", "publication.autocreate.mode": "filtered",
            "slot.retry.delay.ms": "500", "slot.max.retries": "60",
            "poll.interval.ms": "100", "topic.creation.default.partitions": "1",
            "topic.creation.default.replication.factor": "1"}})
        cluster.call_until(w1, "POST", "/connectors", {"name": "rows", "config": {
            "connector.class": "FileStreamSink", "topics": "dbserver1.public.t",
            "file": str(out), "transforms": "unwrap",
            "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
            "consumer.override.session.timeout.ms": "6000",
            "consumer.override.heartbeat.interval.ms": "1000"}})
        status = wait_for(lambda: cluster.running(w0, "cdc", 1), "cdc RUNNING",
                          detail=cluster.logs)
        writer.start()
        wait_for(lambda: len(ids()) > 100, "rows in the sink file", detail=cluster.logs)
        victim = cluster.by_id(status["tasks"][0]["worker_id"])
        survivor = next(w for w in cluster.workers if w is not victim)
        victim.kill()
        wait_for(lambda: cluster.running(survivor, "cdc", 1, not_on=victim.worker_id),
                 "cdc RUNNING on the survivor", timeout=DELAY_MS / 1000 + 30,
                 detail=cluster.logs)
        time.sleep(1)
        halt.set()
        writer.join(30)
        wait_for(lambda: ids() >= set(written), "every written row in the file", timeout=90,
                 detail=lambda: f"missing {len(set(written) - ids())}; {cluster.logs()}")
    finally:
        halt.set()
        cluster.close()
