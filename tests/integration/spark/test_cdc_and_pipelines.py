"""``format("ferry-cdc")`` on Debezium-shaped change events, the streaming CDC pipeline
(state per key on a compacted topic, windowed totals per customer through a restart),
and ``ferry pipeline run`` / ``list`` as a user runs them.

The events are produced by the test in exactly the JSON envelope Debezium's PostgreSQL
connector writes (see ``debezium_events.py``); ``test_cdc_from_postgres.py`` runs the
pipeline on the real Postgres CDC connector's topic.
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import json
import subprocess
import sys

import pytest
from debezium_events import order_event
from spark_helpers import TEST_JVM_FLAGS, latest_by_key

from core.backends import TopicPartition, open_backend
from pipelines import cdc_order_totals

T0 = dt.datetime(2026, 1, 1, 10, 0, tzinfo=dt.UTC)
SOURCE = "pg.public.orders"


@pytest.fixture(scope="module")
def changes(log_url: str) -> str:
    with open_backend(log_url) as backend:
        backend.create_topic(SOURCE, 1)
        backend.create_topic("orders-state", 1, {"cleanup.policy": "compact"})
        backend.create_topic("order-totals", 1, {"cleanup.policy": "compact"})
        records = [
            *order_event("r", 1, 10, "5.00", T0, lsn=1),
            *order_event("c", 2, 10, "7.50", T0 + dt.timedelta(minutes=1), lsn=2),
            *order_event("c", 3, 20, "1.25", T0 + dt.timedelta(minutes=2), lsn=3),
            *order_event("u", 2, 10, "8.00", T0 + dt.timedelta(minutes=1), lsn=4),
            *order_event("d", 3, 20, "1.25", T0 + dt.timedelta(minutes=2), lsn=5),
        ]
        backend.produce(SOURCE, records)
    return SOURCE


def test_cdc_rows_have_op_and_typed_columns(spark, log_url, changes):
    df = (spark.read.format("ferry-cdc").option("log", log_url).option("subscribe", changes)
          .load())
    assert df.schema.simpleString() == (
        "struct<op:string,id:int,customer_id:int,amount:decimal(38,2),created_at:timestamp,"
        "_source_ts_ms:bigint,_topic:string,_partition:int,_offset:bigint,"
        "_timestamp:timestamp>")
    rows = df.orderBy("_offset").collect()
    assert [(r.op, r.id, r.customer_id, r.amount) for r in rows] == [
        ("r", 1, 10, decimal.Decimal("5.00")), ("c", 2, 10, decimal.Decimal("7.50")),
        ("c", 3, 20, decimal.Decimal("1.25")), ("u", 2, 10, decimal.Decimal("8.00")),
        ("d", 3, 20, decimal.Decimal("1.25"))]  # the tombstone after the delete is skipped
    assert rows[1].created_at.replace(tzinfo=None) + (
        rows[1].created_at.astimezone().utcoffset() or dt.timedelta()) == \
        (T0 + dt.timedelta(minutes=1)).replace(tzinfo=None)
    assert rows[0]._source_ts_ms == int(T0.timestamp() * 1000)


def test_cdc_user_schema_and_empty_topic(spark, log_url):
    from pyspark.errors import PySparkException

    with open_backend(log_url) as backend:
        backend.create_topic("pg.public.empty", 1)
    base = spark.read.format("ferry-cdc").option("log", log_url) \
        .option("subscribe", "pg.public.empty")
    with pytest.raises(PySparkException, match="no change event to learn"):
        base.load()
    assert base.schema("op string, id int").load().count() == 0


def test_cdc_pipeline_state_and_windowed_totals_across_restart(spark, log_url, changes,
                                                              tmp_path):
    parser = argparse.ArgumentParser()
    parser.add_argument("--log")
    parser.add_argument("--checkpoint")
    cdc_order_totals.add_arguments(parser)
    args = parser.parse_args(["--log", log_url, "--checkpoint", str(tmp_path / "ckpt"),
                              "--trigger", "available-now", "--timeout", "120"])
    assert cdc_order_totals.main(spark, args) == 0

    state = latest_by_key(log_url, "orders-state")
    assert json.loads(state["1"])["amount"] == 5.0
    assert json.loads(state["2"])["amount"] == 8.0
    assert state["3"] is None  # deleted: a tombstone for compaction
    totals = {k: json.loads(v) for k, v in latest_by_key(log_url, "order-totals").items()}
    assert totals["10|2026-01-01T10:00:00Z"]["orders"] == 2
    assert decimal.Decimal(totals["10|2026-01-01T10:00:00Z"]["total"]) == decimal.Decimal("12.50")
    assert totals["20|2026-01-01T10:00:00Z"]["orders"] == 1

    with open_backend(log_url) as backend:  # a new order while the pipeline is down
        backend.produce(SOURCE, order_event("c", 4, 20, "2.00", T0 + dt.timedelta(minutes=3),
                                            lsn=6))
    assert cdc_order_totals.main(spark, args) == 0
    totals = {k: json.loads(v) for k, v in latest_by_key(log_url, "order-totals").items()}
    assert totals["20|2026-01-01T10:00:00Z"]["orders"] == 2  # window state kept
    assert decimal.Decimal(totals["20|2026-01-01T10:00:00Z"]["total"]) == decimal.Decimal("3.25")
    assert json.loads(latest_by_key(log_url, "orders-state")["4"])["customer_id"] == 20


def _ferry(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "core.cli", *args], capture_output=True,
                          text=True, timeout=timeout)


def test_ferry_pipeline_list():
    done = _ferry("pipeline", "list")
    assert done.returncode == 0
    names = [line.split()[0] for line in done.stdout.splitlines()]
    assert names == ["cdc_order_totals", "topic_to_parquet"]


def test_ferry_pipeline_run_topic_to_parquet(log_url, changes, tmp_path):
    import pyarrow.parquet as pq

    out = tmp_path / "parquet"
    done = _ferry("pipeline", "run", "topic_to_parquet", "--log", log_url,
                  "--master", "local[2]", "--topic", SOURCE, "--output", str(out),
                  "--strings", "--conf", "spark.ui.enabled=false",
                  "--conf", f"spark.driver.extraJavaOptions={TEST_JVM_FLAGS}")
    assert done.returncode == 0, done.stderr[-3000:]
    with open_backend(log_url) as backend:
        end = backend.list_offsets([TopicPartition(SOURCE, 0)], -1)[TopicPartition(SOURCE, 0)]
    table = pq.read_table(out)
    assert set(table.column("topic").to_pylist()) == {SOURCE}
    assert sorted(table.column("offset").to_pylist()) == list(range(end))

    done = _ferry("pipeline", "run", "topic_to_parquet", "--log", log_url,
                  "--master", "local[1]", "--topic", "no-such-topic", "--output",
                  str(tmp_path / "x"), "--conf", "spark.ui.enabled=false",
                  "--conf", f"spark.driver.extraJavaOptions={TEST_JVM_FLAGS}")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == ("ferry: error: pipeline topic_to_parquet failed: option 'subscribe': "
                    f"topic 'no-such-topic' does not exist on {log_url}")


def test_ferry_pipeline_run_without_java_says_so_in_one_line(tmp_path):
    import os

    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # no java on it
    done = subprocess.run([sys.executable, "-m", "core.cli", "pipeline", "run",
                           "topic_to_parquet", "--log", "kafka://127.0.0.1:1", "--topic", "t",
                           "--output", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "ferry: error: PySpark needs a Java 17 runtime and none was found: install one "
        "(Debian: apt-get install openjdk-17-jre-headless) or set JAVA_HOME"]
