"""At-least-once into Elasticsearch across a crash: ``ferry connect standalone`` (against a
``ferry broker`` subprocess) runs the sink while a producer updates 150 keys; the worker
is SIGKILLed mid-stream and started again the same way. The final index holds exactly
the latest value of every key (versions = the offset of that record), whatever was
replayed, because the offsets committed never passed a record that was not indexed."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from broker_process import BrokerProcess
from connect_process import ConnectProcess
from es_support import Http

from core.backends import ProducerRecord, TopicPartition, open_backend

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOPIC = "updates"
KEYS = 150
CHUNKS, CHUNK = 30, 200  # 6000 updates
DEADLINE_S = 60.0


class Worker(ConnectProcess):
    def __init__(self, tmp: Path, bootstrap: str, es_url: str) -> None:
        super().__init__(
            tmp,
            "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
            "value.converter=org.apache.kafka.connect.json.JsonConverter\n"
            "value.converter.schemas.enable=false\n"
            "offset.flush.interval.ms=200\n",
            {"es": {"name": "es", "config": {
                "connector.class":
                    "io.confluent.connect.elasticsearch.ElasticsearchSinkConnector",
                "topics": TOPIC, "connection.url": es_url, "schema.ignore": "true",
                "batch.size": "50", "max.in.flight.requests": "3", "linger.ms": "5",
                # The killed worker's group member expires after this, not Kafka's 45 s.
                "consumer.override.session.timeout.ms": "6000",
                "consumer.override.heartbeat.interval.ms": "500"}}},
            log=f"kafka://{bootstrap}", timeout=DEADLINE_S, poll=0.1)

    def task_state(self) -> str | None:
        body = self.get("/connectors/es/status") or {}
        tasks = body.get("tasks") or [{}]
        return tasks[0].get("state")


def test_sigkill_mid_stream_then_restart_leaves_the_latest_value_per_key(
        tmp_path, es_url) -> None:
    broker = BrokerProcess(tmp_path / "broker-data", {}, tmp_path / "broker.log")
    broker.start()
    backend = open_backend(f"kafka://{broker.bootstrap}")
    worker = Worker(tmp_path, broker.bootstrap, es_url)
    tps = [TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)]
    latest: dict[str, tuple[int, int]] = {}  # key → (seq, partition, offset) of its last
    produced = threading.Event()
    errors: list[BaseException] = []

    def produce() -> None:
        try:
            seq = 0
            for _ in range(CHUNKS):
                batch = []
                for _ in range(CHUNK):
                    key = f"key{seq % KEYS}"
                    batch.append(ProducerRecord(key.encode(),
                                                json.dumps({"key": key, "seq": seq}).encode()))
                    seq += 1
                for r, meta in zip(batch, backend.produce(TOPIC, batch), strict=True):
                    latest[r.key.decode()] = (json.loads(r.value)["seq"], meta.offset)
                time.sleep(0.05)
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)
        finally:
            produced.set()

    def committed() -> int:
        got = backend.fetch_offsets("connect-es", tps)
        return sum(o.offset for o in got.values() if o is not None)

    try:
        backend.create_topic(TOPIC, 2)
        producer = threading.Thread(target=produce, daemon=True)
        producer.start()
        worker.start(wait=False)
        worker.wait(lambda: committed() >= 1500, "1500 committed before the kill")
        worker.kill()
        at_kill = committed()
        assert at_kill < CHUNKS * CHUNK or not produced.is_set()
        worker.start(wait=False)
        assert produced.wait(DEADLINE_S) and not errors, errors
        total = CHUNKS * CHUNK
        worker.wait(lambda: committed() == total, f"all {total} committed")
        assert worker.task_state() == "RUNNING"
        http = Http(es_url)
        docs = http.docs(TOPIC)
        assert {k: d["seq"] for k, d in docs.items()} == {k: s for k, (s, _) in latest.items()}
        assert http.versions(TOPIC) == {k: o for k, (_, o) in latest.items()}
    finally:
        worker.stop()
        backend.close()
        broker.stop()
