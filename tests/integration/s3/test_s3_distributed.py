"""The S3 sink on a ``ferry connect distributed`` cluster (two workers on a ``ferry
broker``): its two tasks spread over both workers; one worker is SIGKILLed mid-stream, its
task moves to the survivor, and the objects still hold every record of every partition
exactly once."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "connect"))
from dist_cluster import Cluster, wait_for

from core.backends import ProducerRecord, TopicPartition, open_backend

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DELAY_MS = 4000
PARTITIONS = 4
FLUSH = 25
WORKER_PROPS = {
    "session.timeout.ms": "6000", "heartbeat.interval.ms": "1000",
    "scheduled.rebalance.max.delay.ms": str(DELAY_MS), "offset.flush.interval.ms": "500",
    "offset.storage.partitions": "2", "status.storage.partitions": "2",
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false", "task.shutdown.graceful.timeout.ms": "3000",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("s3-dist"), 2, WORKER_PROPS)
    try:
        c.start()
        yield c
    finally:
        c.close()


def test_tasks_spread_and_survive_a_killed_worker(cluster: Cluster, moto) -> None:
    moto.create_bucket("dist")
    url = f"kafka://{cluster.broker.bootstrap}"
    sent = 0

    def produce(per_partition: int) -> None:
        nonlocal sent
        with open_backend(url) as log:
            for p in range(PARTITIONS):
                log.produce("events", [ProducerRecord(
                    value=json.dumps({"p": p, "i": sent + i}).encode(), partition=p)
                    for i in range(per_partition)])
        sent += per_partition

    with open_backend(url) as log:
        log.create_topic("events", PARTITIONS, replication_factor=1)
    produce(5 * FLUSH)
    first = cluster.workers[0]
    cluster.call_until(first, "POST", "/connectors", {"name": "lake", "config": {
        "connector.class": "io.confluent.connect.s3.S3SinkConnector", "topics": "events",
        "tasks.max": "2", "s3.bucket.name": "dist", "store.url": moto.url,
        "s3.region": "us-east-1", "aws.access.key.id": "t", "aws.secret.access.key": "t",
        "format.class": "JsonFormat", "flush.size": str(FLUSH),
        "consumer.override.session.timeout.ms": "6000",
        "consumer.override.heartbeat.interval.ms": "1000"}})
    status = wait_for(lambda: cluster.running(first, "lake", 2), "two RUNNING tasks",
                      detail=cluster.logs)
    task_workers = {t["worker_id"] for t in status["tasks"]}
    assert len(task_workers) == 2, status  # spread over both workers
    wait_for(lambda: len(moto.keys("dist")) >= PARTITIONS, "first objects")

    victim = next(w for w in cluster.workers if w is not first)
    produce(4 * FLUSH)
    victim.kill()
    killed_at = time.monotonic()
    produce(3 * FLUSH)
    wait_for(lambda: cluster.running(first, "lake", 2, not_on=victim.worker_id),
             "both tasks RUNNING on the survivor",
             timeout=DELAY_MS / 1000 + 30 - (time.monotonic() - killed_at),
             detail=cluster.logs)
    per_partition = sent
    wait_for(lambda: len(moto.keys("dist")) == PARTITIONS * per_partition // FLUSH,
             "every object", timeout=60, detail=cluster.logs)

    objects = moto.objects("dist")
    for p in range(PARTITIONS):
        prefix = f"topics/events/partition={p}/events+{p}+"
        keys = sorted(k for k in objects if k.startswith(prefix))
        assert keys == [f"{prefix}{o:010d}.json" for o in range(0, per_partition, FLUSH)]
        rows = [json.loads(line) for k in keys for line in objects[k].decode().splitlines()]
        assert rows == [{"p": p, "i": i} for i in range(per_partition)]
    with open_backend(url) as log:
        tps = [TopicPartition("events", p) for p in range(PARTITIONS)]
        wait_for(lambda: [o.offset for o in log.fetch_offsets("connect-lake", tps).values()]
                 == [per_partition] * PARTITIONS, "every partition committed to its end",
                 detail=lambda: log.fetch_offsets("connect-lake", tps))
