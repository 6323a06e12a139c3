"""Exactly-once objects across crashes: ``ferry connect standalone`` runs a FileStreamSource
(a growing input file to a topic) and the S3 sink (topic to moto_server); the worker is
SIGKILLed mid-stream and restarted, several times, while lines keep arriving. The final
objects hold every record of the topic up to the sink's committed offset exactly once,
in offset order, under the keys the rotation rule gives."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
from connect_process import ConnectProcess

from core.backends import OffsetSpec, TopicPartition, open_backend

pytestmark = [pytest.mark.integration, pytest.mark.slow]

FLUSH = 50
KILLS = 4
SESSION_MS = 6000  # the broker's group.min.session.timeout.ms


class Worker(ConnectProcess):
    def __init__(self, tmp: Path, moto_url: str) -> None:
        super().__init__(
            tmp,
            "key.converter=org.apache.kafka.connect.converters.ByteArrayConverter\n"
            "value.converter=org.apache.kafka.connect.converters.ByteArrayConverter\n"
            "offset.flush.interval.ms=100\noffset.storage.partitions=1\n",
            {"source": {"name": "source", "config": {
                "connector.class": "FileStreamSource", "file": str(tmp / "in.txt"),
                "topic": "lines", "batch.size": "200",
                "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                "topic.creation.default.partitions": "1",
                "topic.creation.default.replication.factor": "1"}},
             "sink": {"name": "s3", "config": {
                "connector.class": "s3", "topics": "lines", "s3.bucket.name": "crash",
                "store.url": moto_url, "aws.access.key.id": "test",
                "aws.secret.access.key": "test", "s3.region": "us-east-1",
                "format.class": "ByteArrayFormat", "flush.size": str(FLUSH),
                # The killed worker's member leaves the group only when its session expires.
                "consumer.override.session.timeout.ms": str(SESSION_MS),
                "consumer.override.heartbeat.interval.ms": "1000"}}},
            tail=3000)

    def offset(self, connector: str, field: str) -> int | None:
        offsets = (self.get(f"/connectors/{connector}/offsets") or {}).get("offsets", [])
        return offsets[0]["offset"][field] if offsets else None


def test_sigkill_repeatedly_leaves_every_record_in_exactly_one_object(moto, tmp_path) -> None:
    moto.create_bucket("crash")
    rng = random.Random(13)
    source = tmp_path / "in.txt"
    written = 0

    def append(n: int) -> None:
        nonlocal written
        with open(source, "a", encoding="ascii") as fh:
            fh.write("".join(f"line-{i:06d}\n" for i in range(written, written + n)))
        written += n

    append(500)
    worker = Worker(tmp_path, moto.url)
    try:
        for _ in range(KILLS):
            worker.start()
            deadline = time.monotonic() + rng.uniform(1.0, 2.5)
            while time.monotonic() < deadline:  # records keep flowing up to the kill
                append(rng.randint(20, 120))
                time.sleep(0.05)
            worker.kill()
        append(300)
        worker.start()
        size = source.stat().st_size
        worker.wait(lambda: worker.offset("source", "position") == size,
                    "the source to read the whole file", timeout=90)
        # The topic is complete: wait for the sink's offset to settle (longer than the
        # rejoin after the last kill can take).
        last, since = -1, time.monotonic()
        while time.monotonic() - since < SESSION_MS / 1000 + 3:
            now = worker.offset("s3", "kafka_offset")
            if now != last:
                last, since = now, time.monotonic()
            time.sleep(0.1)
    finally:
        worker.stop()

    with open_backend(f"embedded:{tmp_path / 'data'}") as log:
        tp = TopicPartition("lines", 0)
        end = log.list_offsets([tp], OffsetSpec.LATEST)[tp]
        topic: list[bytes] = []
        while len(topic) < end:
            topic += [r.value for r in log.fetch({tp: len(topic)}, max_wait_ms=100)[tp].records]
        committed = log.fetch_offsets("connect-s3", [tp])[tp].offset

    objects = moto.objects("crash")
    prefix = "topics/lines/partition=0/lines+0+"
    expected_keys = [f"{prefix}{o:010d}.bin" for o in range(0, committed, FLUSH)]
    # Flush-size rotation: object k holds offsets [k*FLUSH, (k+1)*FLUSH), whatever the
    # kills did; the group's offset is at an object boundary.
    assert committed % FLUSH == 0 and end - FLUSH < committed <= end
    assert sorted(objects)[:len(expected_keys)] == expected_keys
    assert len(objects) - len(expected_keys) <= 1  # at most a batch uploaded, not committed
    for k, key in enumerate(sorted(objects)):
        assert objects[key] == b"".join(v + b"\n" for v in topic[k * FLUSH:(k + 1) * FLUSH])
    assert moto.client.list_multipart_uploads(Bucket="crash").get("Uploads", []) == []
