"""The ``cdc_order_totals`` pipeline and ``format("ferry-cdc")`` fed by the real Postgres
CDC source: ``ferry connect standalone`` with Debezium's connector JSON and JsonConverter
(schemas on) writes an ``orders`` table's snapshot and changes to the suite's broker; the
pipeline's state topic then equals the table and its windowed totals equal the table's
aggregate over the orders placed."""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import json
import sys
from pathlib import Path

import pytest
from spark_helpers import latest_by_key

psycopg = pytest.importorskip("psycopg")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "postgres"))

from pgcdc_worker import CdcWorker  # noqa: E402
from postgres_process import PASSWORD, postgres_fixture  # noqa: E402

from core.backends import open_backend  # noqa: E402
from pipelines import cdc_order_totals  # noqa: E402

pytestmark = pytest.mark.slow  # a JVM (the suite's session) and a Connect worker

SOURCE = "shop.public.orders"
CONNECTOR = "orders-cdc"


pg = postgres_fixture()


def _placed_totals(conn) -> dict[str, tuple[int, decimal.Decimal]]:
    """Orders and their sum per customer per hour, keyed as the pipeline keys them."""
    rows = conn.execute(
        "SELECT customer_id, to_char(date_trunc('hour', created_at AT TIME ZONE 'UTC'), "
        "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), count(*), sum(amount) FROM orders "
        "GROUP BY 1, 2").fetchall()
    return {f"{c}|{start}": (n, total) for c, start, n, total in rows}


def test_cdc_order_totals_on_the_postgres_connectors_topic_matches_the_table(
        spark, pg, log_url, tmp_path) -> None:
    with psycopg.connect(pg.dsn(), autocommit=True) as conn:
        # created_at (the event time) is a timestamptz, as order tables usually have it
        # (Debezium's ZonedTimestamp); shipped a timestamp (MicroTimestamp).
        conn.execute("CREATE TABLE orders (id int PRIMARY KEY, customer_id int NOT NULL, "
                     "amount numeric(10,2) NOT NULL, created_at timestamptz NOT NULL, "
                     "shipped timestamp)")
        conn.execute("INSERT INTO orders SELECT g, g % 4, g * 1.25, TIMESTAMPTZ "
                     "'2026-01-01 12:00:00.25+02' + g * INTERVAL '4 minutes', "
                     "TIMESTAMP '2026-01-02 08:00:00.123456' + g * INTERVAL '1 second' "
                     "FROM generate_series(1, 40) g")
    with open_backend(log_url) as backend:
        backend.create_topic("orders-state", 1, {"cleanup.policy": "compact"})
        backend.create_topic("order-totals", 1, {"cleanup.policy": "compact"})
    worker = CdcWorker(tmp_path, [{"name": CONNECTOR, "config": {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "plugin.name": "pgoutput", "database.hostname": "127.0.0.1",
        "database.port": str(pg.port), "database.user": "postgres",
        "database.password": PASSWORD, "database.dbname": "postgres", "topic.prefix": "shop",
        "slot.name": "spark_cdc", "table.include.list": "public.orders",
        "publication.autocreate.mode": "filtered", "poll.interval.ms": "100",
        "topic.creation.default.partitions": "1",
        "topic.creation.default.replication.factor": "1"}}], log=log_url)
    worker.start()
    try:
        worker.wait(lambda: (worker.offset(CONNECTOR) or {}).get("snapshot_completed"),
                    "the snapshot to be stored")
        with psycopg.connect(pg.dsn(), autocommit=True) as conn:
            conn.execute("INSERT INTO orders SELECT g, g % 4, g * 0.5, TIMESTAMPTZ "
                         "'2026-01-01 10:00:00Z' + g * INTERVAL '3 minutes', NULL "
                         "FROM generate_series(41, 60) g")
            placed = _placed_totals(conn)  # totals count each order once, when placed
            conn.execute("UPDATE orders SET amount = amount + 100 WHERE id % 3 = 0")
            conn.execute("DELETE FROM orders WHERE id % 7 = 0")
            last_tx = conn.execute("UPDATE orders SET amount = 1 WHERE id = 1 "
                                   "RETURNING txid_current()").fetchone()[0]
            table = {str(i): row for i, *row in conn.execute(
                "SELECT id, customer_id, amount, created_at, shipped FROM orders").fetchall()}
        worker.wait(lambda: (worker.offset(CONNECTOR) or {}).get("txId", 0) >= last_tx,
                    "the last change's offset")
    finally:
        assert worker.stop() == 0, worker.output()

    changes = (spark.read.format("ferry-cdc").option("log", log_url)
               .option("subscribe", SOURCE).load())
    ops = {r.op: r["count"] for r in changes.groupBy("op").count().collect()}
    assert ops == {"r": 40, "c": 20, "u": 20 + 1, "d": 8}

    parser = argparse.ArgumentParser()
    parser.add_argument("--log")
    parser.add_argument("--checkpoint")
    cdc_order_totals.add_arguments(parser)
    args = parser.parse_args(["--log", log_url, "--checkpoint", str(tmp_path / "ckpt"),
                              "--source", SOURCE, "--trigger", "available-now",
                              "--timeout", "120"])
    assert cdc_order_totals.main(spark, args) == 0

    state = latest_by_key(log_url, "orders-state")
    assert {k for k, v in state.items() if v is None} == {
        str(i) for i in range(1, 61) if i % 7 == 0}
    rows = {k: json.loads(v) for k, v in state.items() if v is not None}
    assert set(rows) == set(table)
    for key, (customer, amount, created, shipped) in table.items():
        got = rows[key]
        assert (got["id"], got["customer_id"]) == (int(key), customer)
        assert decimal.Decimal(str(got["amount"])) == amount, key
        assert dt.datetime.fromisoformat(got["created_at"]) == created, key
        if shipped is None:
            assert "shipped" not in got, key  # to_json leaves nulls out
        else:
            at = dt.datetime.fromisoformat(got["shipped"])
            assert at.astimezone(dt.UTC).replace(tzinfo=None) == shipped, key

    totals = {k: json.loads(v) for k, v in latest_by_key(log_url, "order-totals").items()}
    assert {k: (t["orders"], decimal.Decimal(t["total"])) for k, t in totals.items()} == placed
