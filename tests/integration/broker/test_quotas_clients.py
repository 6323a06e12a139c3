"""Client quotas against real clients, measured by the clients' own throttle reports:
librdkafka's statistics (``brokers.*.throttle``) and kafka-python's metrics
(``throttle-time-max`` of the producer's and the consumer's network metrics).

Quotas are set per client id with ``ferry quotas`` (users need authentication); a client
without a quota on the same broker, at the same time, is never throttled (KIP-219: the
broker answers at once and mutes only the noisy connection).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from broker_process import BrokerProcess
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer

from core.cli.main import main as ferry

RECORD = b"x" * 10_000


def _quota(broker: BrokerProcess, *args: str) -> None:
    assert ferry(["quotas", "alter", "--bootstrap-server", broker.bootstrap, *args]) == 0


@pytest.fixture
def quota_broker(tmp_path: Path):
    broker = BrokerProcess(tmp_path / "data", {"quota.window.num": "3"}, tmp_path / "b.log")
    broker.start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for f in admin.create_topics([NewTopic("noisy", 1), NewTopic("quiet", 1)]).values():
            f.result(30)
        yield broker
    finally:
        broker.stop()


def _produce(bootstrap: str, client_id: str, topic: str, count: int) -> int:
    """Produce ``count`` records with librdkafka; the largest throttle time (ms) its
    statistics reported."""
    worst = [0]

    def stats(text: str) -> None:
        for b in json.loads(text)["brokers"].values():
            worst[0] = max(worst[0], b["throttle"]["max"])

    p = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 0,
                  "batch.size": 20_000, "statistics.interval.ms": 100, "stats_cb": stats})
    for _ in range(count):
        p.produce(topic, RECORD)
        p.poll(0)
    assert p.flush(60) == 0
    for _ in range(3):  # the last statistics window
        p.poll(0.15)
    return worst[0]


def test_produce_byte_rate_throttles_only_the_client_over_its_quota(quota_broker) -> None:
    _quota(quota_broker, "--client-id", "noisy-app", "--add-config",
           "producer_byte_rate=100000")
    results: dict[str, int] = {}
    quiet = threading.Thread(target=lambda: results.__setitem__(
        "quiet", _produce(quota_broker.bootstrap, "quiet-app", "quiet", 60)))
    quiet.start()
    results["noisy"] = _produce(quota_broker.bootstrap, "noisy-app", "noisy", 60)
    quiet.join(60)
    assert results["noisy"] > 0, "the client over its quota saw no throttle"
    assert results["quiet"] == 0, "a client without a quota was throttled"


def test_kafka_python_sees_produce_and_fetch_throttles(quota_broker) -> None:
    _quota(quota_broker, "--client-default", "--add-config", "producer_byte_rate=200000")
    _quota(quota_broker, "--client-id", "reader", "--add-config", "consumer_byte_rate=50000")
    producer = KafkaProducer(bootstrap_servers=quota_broker.bootstrap, client_id="writer",
                             linger_ms=0, batch_size=20_000)
    try:
        for _ in range(60):
            producer.send("noisy", RECORD)
        producer.flush(60)
        assert producer.metrics()["producer-metrics"]["throttle-time-max"] > 0
    finally:
        producer.close()
    consumer = KafkaConsumer("noisy", bootstrap_servers=quota_broker.bootstrap,
                             client_id="reader", group_id=None,
                             auto_offset_reset="earliest", max_partition_fetch_bytes=50_000,
                             consumer_timeout_ms=20_000)
    try:
        seen = 0
        for _ in consumer:
            seen += 1
            if seen == 60:
                break
        assert seen == 60  # throttled, not starved: every record arrives
        assert consumer.metrics()["consumer-metrics"]["throttle-time-max"] > 0
    finally:
        consumer.close()


def test_quotas_are_described_and_removed(quota_broker, capsys) -> None:
    _quota(quota_broker, "--user", "alice", "--client-default", "--add-config",
           "producer_byte_rate=1048576,request_percentage=12.5")
    capsys.readouterr()
    assert ferry(["quotas", "describe", "--bootstrap-server", quota_broker.bootstrap,
                  "--user", "alice"]) == 0
    out = capsys.readouterr().out
    assert "user-principal 'alice', client-id '<default>'" in out
    assert "producer_byte_rate=1048576" in out and "request_percentage=12.5" in out
    _quota(quota_broker, "--user", "alice", "--client-default", "--delete-config",
           "producer_byte_rate,request_percentage")
    capsys.readouterr()
    assert ferry(["quotas", "describe", "--bootstrap-server", quota_broker.bootstrap]) == 0
    assert capsys.readouterr().out == ""
    assert ferry(["quotas", "alter", "--bootstrap-server", quota_broker.bootstrap,
                  "--client-id", "x", "--add-config", "producer_byte_rate=fast"]) == 1
    assert "KEY=NUMBER" in capsys.readouterr().err
